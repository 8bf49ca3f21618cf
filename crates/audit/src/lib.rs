//! Audit statistics: ε lower bounds, valid at a stated confidence, from
//! membership scores (Clopper–Pearson (ε,δ) region, GDP, one-run, f-DP
//! one-run, PANORAMIA).
//!
//! This crate never depends on tch (nor on `accounting`: the little GDP
//! conversion it needs lives in [`gaussian`]).
//!
//! # Inputs
//! [`observations::Observations`]: finite scores, each labelled member (the
//! target/canary was included) or not. **Higher score = more likely a
//! member**; pass `−loss` for loss scores. [`io::read_scores`] reads CSV
//! (`score` and `member` columns) or NPY (`(N, 2)` float64).
//!
//! # Methods (one entry point each)
//! | entry point | paper | output |
//! |---|---|---|
//! | [`region::eps_delta_lower_bound`] | Annamalai et al. 2024, Eq. (1), Alg. 5 | [`bound::EpsilonLowerBound`] |
//! | [`region::gdp_lower_bound`] | Cebere et al. 2024, App. A (Lemma 1, Cor. 1) | [`bound::EpsilonLowerBound`] (+ μ⁻) |
//! | [`one_run::one_run_lower_bound`] | Steinke, Nasr & Jagielski 2023, Thm 3.1 | [`bound::EpsilonLowerBound`] |
//! | [`one_run_fdp::one_run_fdp_lower_bound`] | Mahloujifar, Melis & Chaudhuri 2024 | [`bound::EpsilonLowerBound`] (+ μ⁻) |
//! | [`gaussian_scores::gaussian_scores_lower_bound`] | after Agrawal et al. 2026; **assumes Gaussian scores** | [`bound::EpsilonLowerBound`] (+ μ⁻) |
//! | [`one_run_order::one_run_order_lower_bound`] | Xiang, Wang, Xiao, Tian & Wang 2025 | [`bound::EpsilonLowerBound`] (+ μ⁻) |
//! | [`panoramia::panoramia`] | Kazmi et al. 2024 | [`panoramia::PanoramiaMeasurement`] (not a bound) |
//!
//! Every bound carries [`metrics::Metrics`] (AUC, TPR at FPR = 10⁻³ and
//! 10⁻² with Clopper–Pearson intervals, class sizes) and says which
//! observations it was computed on ([`bound::BoundedOn`]).
//!
//! Building blocks: [`special`] (log-space ln Γ, incomplete beta, binomial
//! tails), [`clopper_pearson`] (one- and two-sided limits, tails to 1e-300),
//! [`gaussian`] (the `dpaudit-gaussian` crate: Φ, Φ⁻¹ accurate in the tails; μ-GDP δ(ε) and ε(δ)),
//! [`figures`] (apart from the statistics, which never call it: trade-off
//! curves, ROC and one-run plots, score histograms, ε bar plots and the one
//! SVG writer, as SVG).
//!
//! # Selection is explicit
//! Every bound names its [`observations::Selection`]: `bonferroni` (all data, a
//! union bound over a family fixed without looking at the labels), `split` (choose on a seeded
//! random half, bound on the other half), `multi-split` (several halvings,
//! the median-rank bound at half the level), `fixed` (one-run guess counts
//! given in advance), or `same-data` (the papers' practice; flagged
//! `valid_at_confidence = false`). [`policy::default_selection`] picks the
//! default from the method and the number of observations alone. The
//! arguments for each policy's validity are in `docs/audit-statistics.md`.
//!
//! # Architecture invariants
//! - Lower bounds ([`bound::EpsilonLowerBound`]) never share a type with
//!   upper bounds or with PANORAMIA's measurement.
//! - Every rounding in a bound goes the conservative way (Clopper–Pearson
//!   limits return the outer end of the final bracket, ε bisections the
//!   lower end).
//! - Library code returns [`AuditError`] on bad input; it never panics on it.
//! - Long computations ask the caller's [`interrupt::Interrupt`] whether to
//!   stop between units of work, and refuse absurd amounts of work (a
//!   `multi-split` of too many halvings, [`policy::check_split_work`]) with
//!   an estimate before starting.
//! - A reported ε is finite: where a conversion would give ∞ (GDP at δ = 0)
//!   the input is refused with the reason.

pub mod bound;
pub mod clopper_pearson;
pub mod design;
pub mod error;
pub mod estimate;
pub mod figures;
pub mod gaussian_scores;
pub mod interrupt;
pub mod io;
pub mod method;
pub mod metrics;
/// The standard normal and the μ-GDP curve (`dpaudit-gaussian`, shared with the accountant).
pub use dpaudit_gaussian as gaussian;
pub mod observations;
pub mod one_run;
pub mod one_run_fdp;
pub mod one_run_order;
pub mod panoramia;
pub mod policy;
pub mod rank_test;
pub(crate) mod ranked;
pub mod region;
pub mod report;
mod sort;
pub mod special;
pub mod tie_break;

pub use error::{AuditError, Result};
