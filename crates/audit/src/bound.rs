//! Typed results. A lower bound on ε never shares a type with an upper bound
//! or with a measurement that is not a bound (PANORAMIA's ε̃).

use serde::Serialize;

use crate::scores::{Method, Selection};

/// A lower bound on ε: with probability at least `confidence` (when
/// `valid_at_confidence` is true), the audited mechanism is not
/// (ε′, δ)-DP for any ε′ < `epsilon`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpsilonLowerBound {
    /// The lower bound on ε (≥ 0).
    pub epsilon: f64,
    /// The confidence level the bound was computed at.
    pub confidence: f64,
    /// The δ at which ε is bounded.
    pub delta: f64,
    /// The statistical method.
    pub method: Method,
    /// How the threshold / guess counts were chosen.
    pub selection: Selection,
    /// False for `same-data` selection: the maximum over candidates is not
    /// a valid bound at `confidence` (it is what the papers report).
    pub valid_at_confidence: bool,
    /// What produced the number.
    pub evidence: Evidence,
}

/// Method-specific evidence behind a bound.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Evidence {
    /// Threshold test with Clopper–Pearson upper bounds on both error rates
    /// (eps-delta and GDP methods).
    Threshold(ThresholdEvidence),
    /// One-run guesses (Steinke et al. 2023).
    OneRun(OneRunEvidence),
}

/// A threshold test "member iff score > threshold" and its error counts,
/// on the data the bound was computed from (the evaluation half for `split`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThresholdEvidence {
    /// Predict "member" iff `score > threshold`.
    pub threshold: f64,
    /// Non-members predicted member.
    pub false_positives: u64,
    /// Number of non-member scores.
    pub nonmembers: u64,
    /// Members predicted non-member.
    pub false_negatives: u64,
    /// Number of member scores.
    pub members: u64,
    /// Clopper–Pearson upper bound on the false-positive rate.
    pub fpr_upper: f64,
    /// Clopper–Pearson upper bound on the false-negative rate.
    pub fnr_upper: f64,
    /// Tail probability of each of the two one-sided upper bounds
    /// (`(1 − confidence)/2`: union bound over the two rates).
    pub tail_per_rate: f64,
    /// GDP method only: the μ lower bound `Φ⁻¹(1 − FPR̄) − Φ⁻¹(FNR̄)`, floored at 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mu_lower: Option<f64>,
    /// Candidate thresholds searched (on the selection data).
    pub candidates: u64,
}

/// The guesses of a one-run audit and the test that rejected.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OneRunEvidence {
    /// Randomized canaries in the bounded set (`m` of Thm 3.1).
    pub canaries: u64,
    /// Positive guesses (largest scores).
    pub k_plus: u64,
    /// Negative guesses (smallest scores).
    pub k_minus: u64,
    /// `r = k+ + k−`.
    pub guesses: u64,
    /// Correct guesses `v`.
    pub correct: u64,
    /// Level each candidate was tested at (`1 − confidence`, or divided by the
    /// number of candidates for `bonferroni`).
    pub level: f64,
    /// Number of (k+, k−) candidates searched.
    pub candidates: u64,
}
