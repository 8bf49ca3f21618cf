//! The canary experiment (`dpaudit run`) without its training: what
//! `dpaudit_experiment::canary` trains on the device is written into and read
//! back from these.
//!
//! - [`settings`]: the experiment file and the claimed ε of one canary.
//! - [`canaries`]: the `[canary]` table, the scores, when canaries are in a
//!   batch and their inclusion bits.
//! - [`book`]: the score rows of chunk files and `scores.csv`.
//! - [`audit_report`]: the statistics of a finished experiment (`audit.json`,
//!   `summary.md`, plots).
//! - [`outdir`]: a canary experiment in the out-dir store
//!   ([`dpaudit_store::store`]: manifest, inclusion bits, chunk files,
//!   finalization and the merge of shards).
//! - [`reader`]: a canary out-dir read back and checked, for analysis
//!   (`dpaudit.runs`).

pub mod audit_report;
pub mod book;
pub mod canaries;
pub mod outdir;
pub mod reader;
pub mod settings;
