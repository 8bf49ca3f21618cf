//! What a training run is, before libtorch is loaded.
//!
//! - [`config`]: the training configuration (TOML), validated at load.
//! - [`dp_sgd`]: the DP-SGD hyperparameters and their one range check.
//! - [`memory`]: memory estimates and the refusal of what cannot fit.

pub mod config;
pub mod dp_sgd;
pub mod memory;
