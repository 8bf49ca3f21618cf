//! DP-SGD on libtorch: per-sample gradients, clipping, noise, replicas.
//!
//! The crate that owns libtorch (experiments and PANORAMIA reach it through
//! this crate and its fallible discipline). Pipeline (see
//! [`engine`]): one forward pass records every trainable layer ([`layers`]),
//! one backward pass gives each layer's backprop, and per layer the engine
//! derives per-sample squared norms → clip coefficients → the clipped sum
//! (book-keeping) → the noisy sum → an SGD step. Every model ([`models`]) is a
//! stack of `M ≥ 1` independent replicas trained in the same kernels.
//!
//! Library code calls libtorch only through tch's fallible `f_` API, with
//! numbers passed as 0-dim tensors (`scalar`), and returns its errors as
//! [`TrainError::Torch`] with what the engine was doing, so a shape error or
//! running out of memory never panics. Clippy enforces it (the two lints
//! below, configured in `clippy.toml`; ARCHITECTURE.md says what they miss).

#![deny(clippy::disallowed_methods, clippy::arithmetic_side_effects)]

pub mod architecture;
pub mod bench;
pub mod checkpoint;
pub mod claim;
/// The training configuration (TOML), validated once at load: plain data,
/// `dpaudit_plan`'s (no libtorch needed), under its old path.
pub use dpaudit_plan::train::config;
pub mod engine;
pub mod error;
pub mod gather;
pub mod init;
pub mod layers;
pub mod models;
pub mod noise;
pub mod op_count;
pub mod philox;
pub mod preflight;
pub mod runtime;
pub mod scalar;
pub mod testing;
pub mod trainer;

pub use engine::{
    forward_backward, Backprops, Batch, ClipCoefficients, ClippedSum, DpSgd, DpSgdConfig, Fault,
    GradientRows, NoisySum, Normaliser, Override, PerSampleNorms, Sgd, SlotOverride, StepReport,
};
pub use error::{Result, TrainError};
pub use init::Init;
pub use models::Model;
pub use noise::NoiseStreams;
