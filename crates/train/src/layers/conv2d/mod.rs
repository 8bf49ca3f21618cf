//! `nn.Conv2d` (stride, padding, groups) with per-sample gradients, stacked over
//! replicas as one grouped convolution.
//!
//! One file per way of forming the per-sample weight gradients (as Opacus
//! keeps one file per layer in `grad_sample/`), and the shared part:
//!
//! | file            | what                                                             |
//! |-----------------|------------------------------------------------------------------|
//! | `layer`         | the layer, its config and the enums that choose a formulation    |
//! | `per_sample`    | the choice of formulation, the forward pass, [`PerSampleGrad`](super::PerSampleGrad) |
//! | `expanded`      | [`PerSampleMethod::ExpandedWeights`]: one convolution per sample  |
//! | `grouped`       | [`PerSampleMethod::GroupedConvolution`]: input ⋆ backprop         |
//! | `unfold`        | [`PerSampleMethod::Unfold`]: `δ Uᵀ` on `U = im2col(x)`            |
//! | `direct`        | [`PerSampleMethod::Direct`]: dpaudit's own CPU kernel             |
//! | `ghost`         | [`NormStrategy::Ghost`]: norms without the gradients              |
//! | `layout`        | [`ConvLayout`]: contiguous or channels last                       |

mod direct;
mod expanded;
mod ghost;
mod grouped;
mod layer;
mod layout;
mod per_sample;
mod unfold;

pub use expanded::{EXPANDED_MAX_BYTES, EXPANDED_MIN_CHANNELS};
pub use grouped::GROUPED_MAX_OUTPUTS;
pub use layer::{Conv2d, Conv2dConfig, ConvLayout, NormStrategy, PerSampleMethod};
pub use layout::{conv_layout, set_conv_layout, CHANNELS_LAST_BELOW_INPUTS};
