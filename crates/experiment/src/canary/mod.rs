//! The canary experiment (`dpaudit run`): canaries inserted into DP-SGD
//! training runs, scored on the device and audited.
//!
//! - [`settings`]: the experiment file and the claimed ε of one canary.
//! - [`canaries`]: canaries and the scores of every threat model, computed on
//!   the device (their settings, insertion and inclusion bits are
//!   `dpaudit_plan::canary::canaries`).
//! - [`chunk`]: a chunk of runs trained as one replica stack, a pure function
//!   of the config and the chunk index.
//! - [`throughput`]: the training loop against the engine alone, and its
//!   cost per step as replicas grow (`dpaudit bench --end-to-end`,
//!   `--overhead`).
//! - [`book`]: the score rows of chunk files and `scores.csv`.
//!
//! [`settings`], [`audit_report`] and most of [`book`] and [`runner`] (the
//! out-dir, finalization and merge) live in `dpaudit_plan::canary`, without
//! libtorch, so that the pure `dpaudit` merges shards; they are re-exported
//! here under their old paths.
//! - [`audit_report`]: the statistics of a finished experiment (`audit.json`,
//!   `summary.md`, plots).
//! - [`runner`]: a canary experiment in the out-dir store
//!   ([`dpaudit_store::store`]: lock, checksummed units, resume, shards,
//!   merge; a unit is a chunk of training runs), and in memory.

pub mod book;
pub mod canaries;
pub mod chunk;
pub mod runner;
pub mod throughput;

/// The statistics of a finished experiment: `dpaudit_plan`'s (no libtorch).
pub use dpaudit_plan::canary::audit_report;
/// The experiment file and the claimed ε: `dpaudit_plan`'s (no libtorch).
pub use dpaudit_plan::canary::settings;
