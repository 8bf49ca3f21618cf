//! The out-dir store of dpaudit's experiments, free of libtorch: an out-dir
//! that defends itself (one writer, atomic checksummed files, a format
//! version), work split into resumable units, shards and their merge, and
//! Slurm job arrays. Canary and BGM audits (`dpaudit-experiment`) and
//! PANORAMIA (`dpaudit-panoramia`) keep their results here.
//!
//! - [`outdir`]: the exclusive lock, atomic and checksummed writes, the
//!   format version.
//! - [`store`]: one out-dir store, generic over the unit of work: claim,
//!   plan, checksummed unit files, resume, shards, finalize, merge.
//! - [`shard`]: which units a process computes (`i/n`, or `auto` from the
//!   scheduler's variables).
//! - [`kind`]: the `kind` line of an experiment file (`canary`, `bgm`,
//!   `panoramia`), read before the file is parsed, which picks the runner.
//! - [`job_array`]: Slurm job arrays: the array and merge scripts, and their
//!   submission.
//! - [`error`]: [`StoreError`], which names the file or field at fault.

#![deny(clippy::arithmetic_side_effects)]

pub mod error;
pub mod job_array;
pub mod kind;
pub mod outdir;
pub mod shard;
pub mod store;

pub use error::{Result, StoreError};
pub use outdir::{Checked, OutDir, FORMAT_VERSION};
pub use shard::Shard;
