//! PANORAMIA (Kazmi et al. 2024, "PANORAMIA: Privacy Auditing of Machine
//! Learning Models without Retraining"): measure how much one trained model
//! leaks about its training data, with no retraining and no canaries, by
//! telling its training records from generated non-members.
//!
//! - [`config`]: the TOML configuration, validated once.
//! - [`vae`], [`dcgan`]: the generative models (a convolutional VAE; a
//!   class-conditional DCGAN, Radford et al. 2016).
//! - [`filter`]: the optional real-vs-generated filter of generated records
//!   (Kazmi et al. 2024, Appendix B.1), and the draws of every generated set.
//! - [`task`]: the labeler and the helper `h` (the target's architecture),
//!   and per-record losses of `f` and `h`.
//! - [`classifier`]: the baseline `b` and the MIA (one architecture), and
//!   the real-vs-generated quality check.
//! - [`pipeline`]: Algorithm 1 end to end with resumable stages, the one-run
//!   audit beside it, `audit.json` and `summary.md`.
//! - [`figures`]: precision–recall SVGs and PNG sample grids.
//!
//! The measurement itself (`c_lb`, `{c+ε}_lb`, ε̃) is
//! [`dpaudit_audit::panoramia`]; ε̃ is not a lower bound on ε and has its own
//! type there.
//!
//! Library code calls libtorch only through tch's fallible API, as in
//! `dpaudit-train` (the same `clippy.toml`; tests allow the lints).

#![deny(clippy::disallowed_methods, clippy::arithmetic_side_effects)]

pub mod classifier;
pub mod config;
pub mod dcgan;
pub mod error;
pub mod figures;
pub mod filter;
pub mod nn;
pub mod pipeline;
pub mod progress;
pub mod records;
pub mod reference;
pub mod stack;
pub mod task;
pub mod vae;

pub use config::PanoramiaConfig;
pub use error::{PanoramiaError, Result};
pub use pipeline::{run, AuditReport, Progress, Quiet};
