//! Experiments: audits as many training runs, resumable, shardable and
//! mergeable, in an out-dir that defends itself, and as Slurm job arrays.
//!
//! - [`settings`]: the experiment file and the claimed ε of one canary.
//! - [`canaries`]: canaries, their insertion and inclusion bits, and the
//!   scores of every threat model, computed on the device.
//! - [`chunk`]: a chunk of runs trained as one replica stack, a pure function
//!   of the config and the chunk index.
//! - [`throughput`]: the training loop against the engine alone, and its
//!   cost per step as replicas grow (`dpaudit bench --end-to-end`,
//!   `--overhead`).
//! - [`book`]: the score rows of chunk files and `scores.csv`.
//! - [`audit_report`]: the statistics of a finished experiment (`audit.json`,
//!   `summary.md`, plots).
//! - [`runner`]: a canary experiment in the out-dir store
//!   ([`dpaudit_store::store`]: lock, checksummed units, resume, shards,
//!   merge; a unit is a chunk of training runs), and in memory.
//! - [`bgm_audit`]: shuffling audits of the Batched Gaussian Mechanism
//!   (settings, validation, the guess search, the report), on any
//!   [`bgm_engine::BgmEngine`]: the pure-Rust [`bgm_engine::CpuBgmEngine`] or
//!   the libtorch [`bgm_engine::TensorBgmEngine`] ([`bgm_tensor`]).
//! - [`bgm_counts`]: BGM audits in bounded memory (a threshold chosen on
//!   separate selection runs, the evaluation runs counted on a grid fixed in
//!   advance), for 10⁸–10⁹ observations.
//! - [`bgm_runner`]: a BGM experiment in the store, its units
//!   ([`bgm_unit`]) slices of a setting's simulated runs.
//!
//! Library code calls libtorch only through tch's fallible API, as in
//! `dpaudit-train` (the same `clippy.toml`; tests allow the lints).

#![deny(clippy::disallowed_methods, clippy::arithmetic_side_effects)]

pub mod audit_report;
pub mod bgm_audit;
pub mod bgm_counts;
pub mod bgm_engine;
pub mod bgm_runner;
pub mod bgm_tensor;
pub mod bgm_unit;
pub mod book;
pub mod canaries;
pub mod chunk;
pub mod error;
pub mod runner;
pub mod settings;
pub mod throughput;

pub use error::{ExperimentError, Result};
pub use runner::{merge, run_in_memory, ExperimentDir, Finalized, Manifest, Merged, Plan};
