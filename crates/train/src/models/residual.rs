//! The layer builders the residual networks share ([`super::resnet18`],
//! [`super::wrn`]): GroupNorm capped at `groups` groups, the bias-free 3×3
//! and 1×1 convolutions of their blocks, and the linear head. Each builds
//! one layer with one call of its constructor, so a model draws its
//! parameters in the order it calls them.

use crate::error::Result;
use crate::init::Init;
use crate::layers::{Conv2d, Conv2dConfig, GroupNorm, GroupNormConfig, Linear, LinearConfig};

/// GroupNorm over `c` channels with `min(groups, c)` groups.
pub(super) fn gn(init: &mut Init, groups: i64, c: i64) -> Result<GroupNorm> {
    GroupNorm::new(init, GroupNormConfig::capped(groups, c))
}

/// A 3×3 convolution of stride `stride`, padding 1, no bias.
pub(super) fn conv3x3(init: &mut Init, cin: i64, cout: i64, stride: i64) -> Result<Conv2d> {
    Conv2d::new(
        init,
        Conv2dConfig::new(cin, cout, 3)
            .stride(stride)
            .padding(1)
            .no_bias(),
    )
}

/// A 1×1 convolution of stride `stride`, no bias (a shortcut's).
pub(super) fn conv1x1(init: &mut Init, cin: i64, cout: i64, stride: i64) -> Result<Conv2d> {
    Conv2d::new(
        init,
        Conv2dConfig::new(cin, cout, 1).stride(stride).no_bias(),
    )
}

/// The classifier: `features → classes`, with bias.
pub(super) fn head(init: &mut Init, features: i64, classes: i64) -> Result<Linear> {
    Linear::new(
        init,
        LinearConfig {
            in_features: features,
            out_features: classes,
            bias: true,
        },
    )
}
