//! `nn.Linear` with per-sample gradients, stacked over replicas.

use tch::Tensor;

use super::per_sample::PerSampleGrad;
use super::tape::{LayerId, Recorded, Tape};
use crate::error::{torch, Result};
use crate::init::Init;

/// Shape of a Linear layer (PyTorch `nn.Linear(in_features, out_features, bias)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinearConfig {
    /// Input features.
    pub in_features: i64,
    /// Output features.
    pub out_features: i64,
    /// Whether the layer has a bias.
    pub bias: bool,
}

/// `y = x Wᵀ + b` for every replica: `weight` is `[M, out, in]`, `bias` `[M, out]`;
/// the input is `[B, M, in]`, the output `[B, M, out]`.
///
/// Per-sample gradient of slot `i`: `∇W = δ_i x_iᵀ`, `∇b = δ_i`, so its squared
/// norm is `‖x_i‖²‖δ_i‖² + ‖δ_i‖²` (the ghost norm of Goodfellow 2015 / Li et al.
/// 2022 for sequence length 1) and the weighted sum is `(c ⊙ δ)ᵀ x`, one batched
/// matmul (book-keeping, Bu et al. 2023).
#[derive(Debug)]
pub struct Linear {
    /// `[M, out, in]`.
    pub weight: Tensor,
    /// `[M, out]`.
    pub bias: Option<Tensor>,
    /// The shape.
    pub config: LinearConfig,
}

impl Linear {
    /// PyTorch default initialisation: weight and bias `U(±1/√in)`.
    pub fn new(init: &mut Init, config: LinearConfig) -> Result<Self> {
        let bound = 1.0 / (config.in_features as f64).sqrt();
        let weight = init.uniform(&[config.out_features, config.in_features], bound)?;
        let bias = match config.bias {
            true => Some(init.uniform(&[config.out_features], bound)?),
            false => None,
        };
        Ok(Self {
            weight,
            bias,
            config,
        })
    }
}

impl PerSampleGrad for Linear {
    fn parameters(&self) -> Vec<(&'static str, &Tensor)> {
        let mut p = vec![("weight", &self.weight)];
        if let Some(b) = &self.bias {
            p.push(("bias", b));
        }
        p
    }

    fn forward(&self, x: &Tensor, tape: &mut Tape) -> Result<Tensor> {
        let y = torch("the forward pass of a Linear layer", || {
            // [B, M, in] → [M, B, in] ×bmm [M, in, out] → [M, B, out] → [B, M, out]
            let xt = x.f_transpose(0, 1)?;
            let wt = self.weight.f_transpose(1, 2)?;
            match &self.bias {
                // `bias + x Wᵀ`: baddbmm in place on the bias broadcast to
                // [M, B, out], which is what the out-of-place baddbmm
                // computes (tch's out-of-place one takes β, α as numbers; see
                // `crate::scalar`).
                Some(b) => {
                    let s = xt.size();
                    let (m, batch) = (
                        s.first().copied().unwrap_or(0),
                        s.get(1).copied().unwrap_or(0),
                    );
                    let bias = b
                        .f_unsqueeze(1)?
                        .f_expand([m, batch, self.config.out_features], false)?;
                    let mut y = bias.f_empty_like()?;
                    y.f_copy_(&bias)?;
                    let _ = y.f_baddbmm_(&xt, &wt)?;
                    Ok(y)
                }
                None => xt.f_bmm(&wt),
            }?
            .f_transpose(0, 1)
        })?;
        tape.record(LayerId::of(self), x, &y)?;
        Ok(y)
    }

    fn per_sample_grads(&self, rec: &Recorded, backprop: &Tensor) -> Result<Vec<Tensor>> {
        torch("the per-sample gradients of a Linear layer", || {
            let mut g = vec![Tensor::f_einsum(
                "bmo,bmi->bmoi",
                &[backprop, &rec.input],
                None::<i64>,
            )?];
            if self.bias.is_some() {
                g.push(backprop.shallow_clone());
            }
            Ok(g)
        })
    }

    fn per_sample_sq_norms(&self, rec: &Recorded, backprop: &Tensor) -> Result<Tensor> {
        torch("the per-sample squared norms of a Linear layer", || {
            let d2 = backprop.f_square()?.f_sum_dim_intlist(-1, false, None)?;
            let x2 = rec.input.f_square()?.f_sum_dim_intlist(-1, false, None)?;
            let w = x2.f_mul(&d2)?;
            if self.bias.is_some() {
                w.f_add(&d2)
            } else {
                Ok(w)
            }
        })
    }

    fn clipped_sum(&self, rec: &Recorded, backprop: &Tensor, coef: &Tensor) -> Result<Vec<Tensor>> {
        torch("the clipped sum of a Linear layer", || {
            let cd = backprop.f_mul(&coef.f_unsqueeze(-1)?)?; // [B, M, out]
                                                              // [M, out, B] × [M, B, in] → [M, out, in]
            let gw = cd
                .f_permute([1, 2, 0])?
                .f_bmm(&rec.input.f_transpose(0, 1)?)?;
            let mut g = vec![gw];
            if self.bias.is_some() {
                g.push(cd.f_sum_dim_intlist(0, false, None)?);
            }
            Ok(g)
        })
    }
}
