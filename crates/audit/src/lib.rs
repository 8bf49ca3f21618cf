//! Audit statistics: ε lower bounds, valid at a stated confidence, from
//! membership scores (Clopper–Pearson (ε,δ) region, GDP, one-run, PANORAMIA).
//!
//! This crate never depends on tch (nor on `accounting`: the little GDP
//! conversion it needs lives in [`normal`]).
//!
//! # Inputs
//! [`scores::Observations`]: finite scores, each labelled member (the
//! target/canary was included) or not. **Higher score = more likely a
//! member**; pass `−loss` for loss scores. [`io::read_scores`] reads CSV
//! (`score` and `member` columns) or NPY (`(N, 2)` float64).
//!
//! # Methods (one entry point each)
//! | entry point | paper / spec | output |
//! |---|---|---|
//! | [`region::eps_delta_lower_bound`] | spec 000 §1.3, §2.7 Alg. 5; lecture 004 D.5 | [`bound::EpsilonLowerBound`] |
//! | [`region::gdp_lower_bound`] | spec 001 §4 (Nasr et al. 2023 App. A); lecture 004 D.5 | [`bound::EpsilonLowerBound`] (+ μ⁻) |
//! | [`one_run::one_run_lower_bound`] | spec 002 Thm 3.1 + §3 (Steinke et al. 2023) | [`bound::EpsilonLowerBound`] |
//! | [`panoramia::panoramia`] | spec 003 A.4–A.6 (Kazmi et al.) | [`panoramia::PanoramiaMeasurement`] (not a bound) |
//!
//! Building blocks: [`special`] (log-space ln Γ, incomplete beta, binomial
//! tails), [`clopper_pearson`] (one- and two-sided limits, tails to 1e-300),
//! [`normal`] (Φ, Φ⁻¹ accurate in the tails; μ-GDP δ(ε) and ε(δ)),
//! [`curves`] (trade-off curves and a hand-written SVG plot), [`plots`]
//! (score histograms and ε lower-vs-upper bar plots, hand-written SVG).
//!
//! # Selection is explicit
//! Every bound names its [`scores::Selection`]: `split` (default in the CLI;
//! choose the threshold / guess counts on a seeded random half, bound on the
//! other half), `same-data` (the papers' practice; flagged
//! `valid_at_confidence = false`), `bonferroni` (fixed candidate families
//! only) or `fixed` (one-run guess counts given in advance).
//!
//! # Architecture invariants
//! - Lower bounds ([`bound::EpsilonLowerBound`]) never share a type with
//!   upper bounds or with PANORAMIA's measurement.
//! - Every rounding in a bound goes the conservative way (Clopper–Pearson
//!   limits return the outer end of the final bracket, ε bisections the
//!   lower end).
//! - Library code returns [`AuditError`] on bad input; it never panics on it.

pub mod bound;
pub mod clopper_pearson;
pub mod curves;
pub mod error;
pub mod io;
pub mod normal;
pub mod one_run;
pub mod panoramia;
pub mod plots;
pub mod region;
pub mod scores;
mod sort;
pub mod special;

pub use error::{AuditError, Result};
