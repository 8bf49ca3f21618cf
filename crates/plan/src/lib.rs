//! dpaudit experiments without libtorch: what an experiment is (its files,
//! checked once) and what it concludes (its out-dir finalized: scores, the
//! audit report, plots), so that the pure `dpaudit` binary merges the shards
//! of an experiment without loading libtorch.
//!
//! - [`train`]: the training configuration (`dpaudit train`'s TOML and the
//!   `[train]` table of experiment files), the DP-SGD hyperparameters' one
//!   range check, and memory estimates.
//! - [`canary`]: the canary experiment's file, its canaries' settings and
//!   inclusion bits, the score book, the audit report, and its out-dir in the
//!   store of [`dpaudit_store`] (manifest, chunk files, finalization, merge).
//! - [`bgm`]: the BGM shuffling audit (settings, the CPU engine, counts
//!   mode, its out-dir, finalization and merge).
//!
//! Training itself (`dpaudit_train`), the canary runs on the device and the
//! libtorch BGM engine (`dpaudit_experiment`) build on these and re-export
//! them under their old paths.

pub mod bgm;
pub mod canary;
pub mod error;
pub mod train;

pub use error::{PlanError, Result};
