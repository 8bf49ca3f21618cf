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

pub mod conv2d;
pub mod group_norm;
pub mod linear;
pub mod ops;
mod per_sample;
mod tape;

pub use conv2d::{Conv2d, Conv2dConfig};
pub use group_norm::{GroupNorm, GroupNormConfig};
pub use linear::{Linear, LinearConfig};
pub use per_sample::PerSampleGrad;
pub(crate) use per_sample::{float_bytes, weighted_sums};
pub use tape::{LayerId, Recorded, Tape};
