//! The canary experiment (`dpaudit run`): canaries inserted into DP-SGD
//! training runs, scored on the device and audited.
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

pub mod audit_report;
pub mod book;
pub mod canaries;
pub mod chunk;
pub mod runner;
pub mod settings;
pub mod throughput;
