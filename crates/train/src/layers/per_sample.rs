//! The per-sample-gradient interface every trainable layer implements, and
//! the helpers the layers share.

use tch::{TchError, Tensor};

use super::tape::{Recorded, Tape};
use crate::error::Result;

/// The per-sample-gradient interface every trainable layer implements
/// (Opacus' `(layer, activations, backprops) → per-sample gradients`, plus a
/// norms-only path and a book-keeping clipped sum).
///
/// Shapes: parameters are `[M, <PyTorch shape>]`; per-sample gradients
/// `[B, M, <PyTorch shape>]`; norms and coefficients `[B, M]`; clipped sums
/// `[M, <PyTorch shape>]`.
///
/// Every method that calls into libtorch returns its error (a shape mismatch,
/// an allocation that fails) as [`crate::TrainError::Torch`], never panics.
pub trait PerSampleGrad: std::fmt::Debug {
    /// Parameters in PyTorch registration order with their PyTorch names
    /// (`weight`, `bias`).
    fn parameters(&self) -> Vec<(&'static str, &Tensor)>;

    /// One forward pass; records itself on `tape`.
    fn forward(&self, x: &Tensor, tape: &mut Tape) -> Result<Tensor>;

    /// Per-sample gradients of every parameter, `[B, M, ...]` each.
    fn per_sample_grads(&self, rec: &Recorded, backprop: &Tensor) -> Result<Vec<Tensor>>;

    /// Per-sample squared gradient norms over all parameters of this layer,
    /// `[B, M]`; ghost norms where they are cheaper.
    fn per_sample_sq_norms(&self, rec: &Recorded, backprop: &Tensor) -> Result<Tensor>;

    /// [`PerSampleGrad::per_sample_sq_norms`], and with them this layer's
    /// per-sample gradients (as [`PerSampleGrad::per_sample_grads`] gives them)
    /// when the layer materialised them to compute the norms and they take at
    /// most `keep_bytes`. The engine then forms the clipped sum from them, one
    /// contraction `Σ_b c_b g_b`, instead of calling
    /// [`PerSampleGrad::clipped_sum`] (the mixed strategy: what the norms
    /// already paid for is not computed again). The default keeps nothing.
    fn sq_norms_keeping_grads(
        &self,
        rec: &Recorded,
        backprop: &Tensor,
        keep_bytes: i64,
    ) -> Result<(Tensor, Option<Vec<Tensor>>)> {
        let _ = keep_bytes;
        Ok((self.per_sample_sq_norms(rec, backprop)?, None))
    }

    /// `Σ_b coef[b, m] · g[b, m]` for every parameter, `[M, ...]` each, without
    /// materialising the per-sample gradients where possible.
    fn clipped_sum(&self, rec: &Recorded, backprop: &Tensor, coef: &Tensor) -> Result<Vec<Tensor>>;
}

/// `Σ_b coef[b, m] · g[b, m, ...]` for each `[B, M, ...]` tensor, `[M, ...]`
/// each: the clipped sum of materialised per-sample gradients.
pub(crate) fn weighted_sums(grads: &[Tensor], coef: &Tensor) -> Result<Vec<Tensor>, TchError> {
    grads
        .iter()
        .map(|g| {
            let s = g.size();
            let flat = g.f_reshape([s[0], s[1], s[2..].iter().product()])?;
            Tensor::f_einsum("bm,bmp->mp", &[coef, &flat], None::<i64>)?.f_reshape(&s[1..])
        })
        .collect()
}

/// Bytes of a float32 tensor of this shape (saturating).
pub(crate) fn float_bytes(shape: &[i64]) -> i64 {
    shape.iter().fold(4i64, |n, d| n.saturating_mul(*d))
}

/// The number of replicas `M` of a parameter tensor `[M, ...]`.
pub(crate) fn replicas_of(t: &Tensor) -> i64 {
    t.size()[0]
}
