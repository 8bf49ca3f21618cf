//! Audit statistics: ε lower bounds, valid at a stated confidence, from
//! membership scores (Clopper–Pearson (ε,δ) region, GDP, one-run, PANORAMIA).
//!
//! This crate never depends on tch.

pub mod bound;
pub mod clopper_pearson;
pub mod curves;
pub mod error;
pub mod io;
pub mod normal;
pub mod one_run;
pub mod panoramia;
pub mod region;
pub mod scores;
mod sort;
pub mod special;

pub use error::{AuditError, Result};
