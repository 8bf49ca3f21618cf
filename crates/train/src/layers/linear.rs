//! `nn.Linear` with per-sample gradients, stacked over replicas.

use tch::Tensor;

use super::{PerSampleGrad, Recorded, Tape};
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
    pub fn new(init: &mut Init, config: LinearConfig) -> Self {
        let bound = 1.0 / (config.in_features as f64).sqrt();
        let weight = init.uniform(&[config.out_features, config.in_features], bound);
        let bias = config
            .bias
            .then(|| init.uniform(&[config.out_features], bound));
        Self {
            weight,
            bias,
            config,
        }
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

    fn forward(&self, x: &Tensor, tape: &mut Tape) -> Tensor {
        // [B, M, in] → [M, B, in] ×bmm [M, in, out] → [M, B, out] → [B, M, out]
        let xt = x.transpose(0, 1);
        let wt = self.weight.transpose(1, 2);
        let y = match &self.bias {
            Some(b) => b.unsqueeze(1).baddbmm(&xt, &wt, 1.0, 1.0),
            None => xt.bmm(&wt),
        }
        .transpose(0, 1);
        tape.record(super::LayerId::of(self), x, &y);
        y
    }

    fn per_sample_grads(&self, rec: &Recorded, backprop: &Tensor) -> Vec<Tensor> {
        let mut g = vec![Tensor::einsum(
            "bmo,bmi->bmoi",
            &[backprop, &rec.input],
            None::<i64>,
        )];
        if self.bias.is_some() {
            g.push(backprop.shallow_clone());
        }
        g
    }

    fn per_sample_sq_norms(&self, rec: &Recorded, backprop: &Tensor) -> Tensor {
        let d2 = backprop.square().sum_dim_intlist(-1, false, None);
        let x2 = rec.input.square().sum_dim_intlist(-1, false, None);
        let w = &x2 * &d2;
        if self.bias.is_some() {
            w + d2
        } else {
            w
        }
    }

    fn clipped_sum(&self, rec: &Recorded, backprop: &Tensor, coef: &Tensor) -> Vec<Tensor> {
        let cd = backprop * coef.unsqueeze(-1); // [B, M, out]
                                                // [M, out, B] × [M, B, in] → [M, out, in]
        let gw = cd.permute([1, 2, 0]).bmm(&rec.input.transpose(0, 1));
        let mut g = vec![gw];
        if self.bias.is_some() {
            g.push(cd.sum_dim_intlist(0, false, None));
        }
        g
    }
}
