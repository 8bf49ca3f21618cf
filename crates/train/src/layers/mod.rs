//! Layers with per-sample gradients.
//!
//! Every activation carries two leading axes, `[B, M, ...]`: `B` batch slots and
//! `M` independent replicas. A slot `(b, m)` is one sample of
//! replica `m`; replicas never mix. `M = 1` is ordinary training.
//!
//! A trainable layer records its (detached) input and its output on a [`Tape`]
//! during the forward pass. One backward pass then gives `∂loss/∂output` (the
//! *backprop*) of every layer, from which each layer derives, without another
//! backward pass through the network (Opacus' `grad_sample` formulation,
//! Yousefpour et al. 2021):
//! per-sample gradients, per-sample squared norms and the coefficient-weighted
//! sum `Σ_i c_i g_i` (book-keeping, Bu et al. 2023). A convolution's weighted
//! sum is the weight gradient of its own recorded node for the output gradient
//! `c ⊙ δ`, which libtorch's convolution backward computes from the kept graph
//! (a backward through that one node, not through the network).

use tch::{TchError, Tensor};

use crate::error::{torch, Result};

pub mod conv2d;
pub mod group_norm;
pub mod linear;
pub mod ops;

pub use conv2d::{Conv2d, Conv2dConfig};
pub use group_norm::{GroupNorm, GroupNormConfig};
pub use linear::{Linear, LinearConfig};

/// The identity of a layer object: its address. Records are matched to the
/// layers of [`crate::Model::layers`] by identity, never by position, so a
/// model whose forward pass visits its layers in another order than it lists
/// them is still paired correctly, and one that skips, repeats or adds a
/// layer is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LayerId(usize);

impl LayerId {
    /// The identity of `layer` (the address of the object; layers are never
    /// zero-sized).
    pub fn of<T: ?Sized>(layer: &T) -> Self {
        LayerId((layer as *const T).cast::<()>() as usize)
    }
}

/// What a trainable layer saw in the forward pass.
#[derive(Debug)]
pub struct Recorded {
    /// Which layer recorded it.
    pub layer: LayerId,
    /// The layer's input as the per-sample formulas need it (detached), e.g. the
    /// `[B, M·C, H, W]` view for a convolution or the normalised input `x̂` of a
    /// GroupNorm.
    pub input: Tensor,
    /// The layer's output, still attached to the autograd graph.
    pub output: Tensor,
    /// A convolution computed as one convolution per sample records the
    /// per-sample copies of its weight, the leaf whose gradient is the
    /// per-sample gradient ([`conv2d::PerSampleMethod::ExpandedWeights`]).
    pub expanded_weight: Option<Tensor>,
}

/// Where trainable layers record themselves during a forward pass.
#[derive(Debug, Default)]
pub struct Tape {
    records: Option<Vec<Recorded>>,
}

impl Tape {
    /// A tape that records every trainable layer.
    pub fn recording() -> Self {
        Self {
            records: Some(Vec::new()),
        }
    }

    /// A tape that records nothing (evaluation, non-private training).
    pub fn off() -> Self {
        Self { records: None }
    }

    /// Whether this tape records (a DP-SGD forward pass).
    pub fn is_recording(&self) -> bool {
        self.records.is_some()
    }

    /// Record one trainable layer (called by the layers themselves, with
    /// `LayerId::of(self)`).
    pub fn record(&mut self, layer: LayerId, input: &Tensor, output: &Tensor) -> Result<()> {
        self.record_expanded(layer, input, output, None)
    }

    /// [`Tape::record`] for a layer that computed its output from per-sample
    /// copies of its weight, `expanded_weight` (a leaf that requires grad).
    pub fn record_expanded(
        &mut self,
        layer: LayerId,
        input: &Tensor,
        output: &Tensor,
        expanded_weight: Option<Tensor>,
    ) -> Result<()> {
        if let Some(r) = self.records.as_mut() {
            r.push(Recorded {
                layer,
                input: torch("recording a layer's input", || input.f_detach())?,
                output: output.shallow_clone(),
                expanded_weight,
            });
        }
        Ok(())
    }

    /// The records, in forward order.
    pub fn into_records(self) -> Vec<Recorded> {
        self.records.unwrap_or_default()
    }
}

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
