//! `nn.GroupNorm` with per-sample gradients, stacked over replicas.
//!
//! GroupNorm normalises each sample on its own, so per-sample gradients exist
//! (unlike BatchNorm, which mixes samples and is refused by the engine).

use tch::Tensor;

use super::per_sample::{replicas_of, PerSampleGrad};
use super::tape::{LayerId, Recorded, Tape};
use crate::error::{torch, Result};
use crate::init::Init;

/// Shape of a GroupNorm layer (PyTorch `nn.GroupNorm(num_groups, num_channels, eps)`,
/// affine).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupNormConfig {
    /// Groups; divides `num_channels`.
    pub num_groups: i64,
    /// Channels.
    pub num_channels: i64,
    /// Added to the variance (PyTorch default `1e-5`).
    pub eps: f64,
}

impl GroupNormConfig {
    /// `min(groups, channels)` groups over `channels` with PyTorch's default
    /// `eps = 1e-5`: the GroupNorm the residual models put in place of BatchNorm.
    pub fn capped(groups: i64, channels: i64) -> Self {
        Self {
            num_groups: groups.min(channels),
            num_channels: channels,
            eps: 1e-5,
        }
    }
}

/// `y = x̂ ⊙ γ + β` with `x̂` the input normalised over each group of each sample.
/// `weight` (γ) and `bias` (β) are `[M, C]`; the input is `[B, M, C, ...]`.
/// Replicas run as one `group_norm` with `M·G` groups.
///
/// Per-sample gradients: `∇γ_i = Σ_s δ_i ⊙ x̂_i`, `∇β_i = Σ_s δ_i` over spatial
/// positions `s`; the tape records `x̂`.
#[derive(Debug)]
pub struct GroupNorm {
    /// γ, `[M, C]`.
    pub weight: Tensor,
    /// β, `[M, C]`.
    pub bias: Tensor,
    /// The shape.
    pub config: GroupNormConfig,
}

impl GroupNorm {
    /// PyTorch default initialisation: γ = 1, β = 0.
    pub fn new(init: &mut Init, config: GroupNormConfig) -> Result<Self> {
        let weight = init.constant(&[config.num_channels], 1.0)?;
        let bias = init.constant(&[config.num_channels], 0.0)?;
        Ok(Self {
            weight,
            bias,
            config,
        })
    }

    fn m(&self) -> i64 {
        replicas_of(&self.weight)
    }
}

impl PerSampleGrad for GroupNorm {
    fn parameters(&self) -> Vec<(&'static str, &Tensor)> {
        vec![("weight", &self.weight), ("bias", &self.bias)]
    }

    fn forward(&self, x: &Tensor, tape: &mut Tape) -> Result<Tensor> {
        let m = self.m();
        let c = self.config.num_channels;
        let shape = x.size();
        if shape.len() < 3 {
            return Err(crate::error::TrainError::Shape {
                what: "GroupNorm input".into(),
                got: shape,
                expected: "[B, M, C, ...]".into(),
            });
        }
        let b = shape[0];
        let spatial: i64 = shape[3..].iter().product();
        let (xhat, y) = torch("the forward pass of a GroupNorm layer", || {
            let xin = x.f_reshape([b, m * c, spatial])?;
            let xhat = xin.f_group_norm(
                m * self.config.num_groups,
                None::<Tensor>,
                None::<Tensor>,
                self.config.eps,
                true,
            )?;
            let y = xhat
                .f_mul(&self.weight.f_reshape([1, m * c, 1])?)?
                .f_add(&self.bias.f_reshape([1, m * c, 1])?)?;
            Ok((xhat, y))
        })?;
        tape.record(LayerId::of(self), &xhat, &y)?;
        torch("the forward pass of a GroupNorm layer", || {
            y.f_reshape(shape.as_slice())
        })
    }

    fn per_sample_grads(&self, rec: &Recorded, backprop: &Tensor) -> Result<Vec<Tensor>> {
        torch("the per-sample gradients of a GroupNorm layer", || {
            self.grads(rec, backprop)
        })
    }

    fn per_sample_sq_norms(&self, rec: &Recorded, backprop: &Tensor) -> Result<Tensor> {
        torch("the per-sample squared norms of a GroupNorm layer", || {
            let g = self.grads(rec, backprop)?;
            g[0].f_square()?
                .f_add(&g[1].f_square()?)?
                .f_sum_dim_intlist(-1, false, None)
        })
    }

    fn clipped_sum(&self, rec: &Recorded, backprop: &Tensor, coef: &Tensor) -> Result<Vec<Tensor>> {
        torch("the clipped sum of a GroupNorm layer", || {
            let g = self.grads(rec, backprop)?;
            let c = coef.f_unsqueeze(-1)?;
            g.iter()
                .map(|t| t.f_mul(&c)?.f_sum_dim_intlist(0, false, None))
                .collect()
        })
    }
}

impl GroupNorm {
    /// `[∇γ, ∇β]`, `[B, M, C]` each.
    fn grads(&self, rec: &Recorded, backprop: &Tensor) -> Result<Vec<Tensor>, tch::TchError> {
        let b = backprop.size()[0];
        let (m, c) = (self.m(), self.config.num_channels);
        let gw = backprop
            .f_mul(&rec.input)?
            .f_sum_dim_intlist(-1, false, None)?
            .f_reshape([b, m, c])?;
        let gb = backprop
            .f_sum_dim_intlist(-1, false, None)?
            .f_reshape([b, m, c])?;
        Ok(vec![gw, gb])
    }
}
