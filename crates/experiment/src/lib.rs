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
//! - [`outdir`]: the exclusive lock, atomic and checksummed writes, the
//!   format version.
//! - [`shard`]: which chunks a process trains (`i/n`, or `auto` from the
//!   scheduler's variables).
//! - [`slurm`]: the array and merge scripts, and their submission.
//! - [`book`]: the score rows of chunk files and `scores.csv`.
//! - [`report`]: the statistics of a finished experiment (`audit.json`,
//!   `summary.md`, plots).
//! - [`runner`]: an experiment bound to its out-dir: claim, resume,
//!   finalize, merge; and in memory.

// The training modules call libtorch only through its fallible API, as
// `dpaudit-train` does (the same `clippy.toml`; tests allow the lints).
#![deny(clippy::disallowed_methods)]

pub mod book;
#[deny(clippy::arithmetic_side_effects)]
pub mod canaries;
#[deny(clippy::arithmetic_side_effects)]
pub mod chunk;
pub mod error;
pub mod outdir;
pub mod report;
pub mod runner;
pub mod settings;
pub mod shard;
pub mod slurm;
#[deny(clippy::arithmetic_side_effects)]
pub mod throughput;

pub use error::{ExperimentError, Result};
pub use outdir::{Checked, OutDir, FORMAT_VERSION};
pub use runner::{merge, run_in_memory, ExperimentDir, Finalized, Manifest, Merged, Plan};
pub use shard::Shard;
