//! Clip coefficients `c_i = min(1, C/‖g_i‖)`, never rounded above `C`.

use tch::{Kind, Tensor};

use super::backprop::Backprops;
use super::batch::Batch;
use super::norms::PerSampleNorms;
use crate::error::{torch, Result};
use crate::models::Model;
use crate::scalar::WithNumber;

/// `c_i = min(1, C/‖g_i‖)`, `[B, M]`, zero where the computed gradient does not
/// count.
#[derive(Debug)]
pub struct ClipCoefficients {
    /// Coefficients of the computed per-sample gradients.
    pub computed: Tensor,
    /// Coefficients of the overriding gradients, `[K]`, in the rank-major
    /// order of [`GradientRows`](super::GradientRows) (batch order when no replica has two
    /// overrides); `None` without overrides.
    pub overrides: Option<Tensor>,
}

/// The clip coefficients of squared norms `sq` (float32 `[B, M]`):
/// `c = min(1, C/‖g‖)` as float32, with `‖g‖ = √sq` in float64, and
/// `c·‖g‖ ≤ C` guaranteed: where the float64 product `c·‖g‖` exceeds `C`
/// (the quotient rounded up to the next float32, which happens for about half
/// of the norms above `C`), `c` steps one float32 ulp toward zero, which puts
/// the product about 2⁻²⁴ below `C`. (A product that rounds to `C` is within
/// 2⁻⁵³ of it.) A norm of exactly `C` keeps `c = 1`, so a canary of norm `C`
/// passes unchanged. `c = 1` where `‖g‖ = 0` (`C/0 = +∞`); NaN where `sq` is
/// NaN, which [`DpSgd::step`](super::DpSgd::step) reports.
///
/// The norm is itself a float32 sum and carries a relative rounding error of
/// order 10⁻⁶ against the exact norm of the gradient; the sensitivity of the
/// sum is therefore `C` up to that relative error, which moves ε by the same
/// relative amount (Opacus divides by `‖g‖ + 10⁻⁶` for the same reason).
pub fn clip_coefficients(sq: &Tensor, max_grad_norm: f64) -> Result<Tensor> {
    torch("the clip coefficients", || {
        let norm = sq.f_to_kind(Kind::Double)?.f_sqrt()?;
        let c = norm
            .f_reciprocal()?
            .mul_f64(max_grad_norm)?
            .clamp_max_f64(1.0)?
            .f_to_kind(Kind::Float)?;
        let over = c
            .f_to_kind(Kind::Double)?
            .f_mul(&norm)?
            .gt_f64(max_grad_norm)?;
        let down = c.f_nextafter(&c.f_zeros_like()?)?;
        c.f_where_self(&over.f_logical_not()?, &down)
    })
}

impl PerSampleNorms {
    /// `c_i = min(1, C/‖g_i‖)` (1 where `‖g_i‖ = 0`), never rounded above `C`
    /// ([`clip_coefficients`]), times the computed mask; overriding gradients
    /// get their own coefficient by the same rule.
    pub fn clip(
        &self,
        max_grad_norm: f64,
        backprops: &Backprops,
        model: &dyn Model,
        batch: &Batch,
    ) -> Result<ClipCoefficients> {
        let all = clip_coefficients(&self.sq, max_grad_norm)?;
        // The overrides are those of `backprops`' table (built from `batch`).
        let _ = (model, batch);
        let (computed, overrides) = torch("masking the clip coefficients", || {
            let computed = all.f_mul(&backprops.computed)?;
            let overrides = match &backprops.overrides {
                Some(t) => Some(all.f_index(&[Some(&t.slots), Some(&t.replicas)])?),
                None => None,
            };
            Ok((computed, overrides))
        })?;
        Ok(ClipCoefficients {
            computed,
            overrides,
        })
    }
}
