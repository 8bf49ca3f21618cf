//! DP-SGD on libtorch: per-sample gradients, clipping, noise, replicas.
//!
//! The only crate of the workspace that links libtorch.

pub mod runtime;
