//! Experiments: audits as many training runs, resumable, shardable and
//! mergeable, in an out-dir that defends itself, and as Slurm job arrays.
//!
//! Two rooms, one per kind of experiment, sharing only [`error`]:
//! - [`canary`]: the canary experiment (`dpaudit run`): canaries inserted
//!   into DP-SGD training runs, their scores and the audit of a finished
//!   experiment.
//! - [`bgm`]: the shuffling game of the Batched Gaussian Mechanism
//!   (`dpaudit bgm`): simulated runs, no training.
//!
//! Both keep their out-dirs in the store of [`dpaudit_store`] (lock,
//! checksummed units, resume, shards, merge).
//!
//! Library code calls libtorch only through tch's fallible API, as in
//! `dpaudit-train` (the same `clippy.toml`; tests allow the lints).

#![deny(clippy::disallowed_methods, clippy::arithmetic_side_effects)]

pub mod bgm;
pub mod canary;
pub mod error;

pub use canary::runner::{merge, run_in_memory, ExperimentDir, Finalized, Manifest, Merged, Plan};
pub use error::{ExperimentError, Result};
