//! Empirical error points with Clopper–Pearson upper bounds, for plots.

use super::sweep::Sorted;
use crate::clopper_pearson::upper_unchecked;
use crate::error::{check_confidence, AuditError, Result};
use crate::observations::Observations;

/// One point of an empirical trade-off curve.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ErrorPoint {
    /// Threshold (member iff score > threshold).
    pub threshold: f64,
    /// Empirical false-positive rate.
    pub fpr: f64,
    /// Empirical false-negative rate.
    pub fnr: f64,
    /// Clopper–Pearson upper bound on the FPR (tail `(1 − confidence)/2`).
    pub fpr_upper: f64,
    /// Clopper–Pearson upper bound on the FNR (tail `(1 − confidence)/2`).
    pub fnr_upper: f64,
}

/// Empirical (FPR, FNR) points at about `max_points` thresholds, with their
/// Clopper–Pearson upper bounds at tail `(1 − confidence)/2` (the pointwise
/// bounds of `split`); see [`error_points`].
pub fn empirical_points(
    obs: &Observations,
    confidence: f64,
    max_points: usize,
) -> Result<Vec<ErrorPoint>> {
    check_confidence(confidence)?;
    error_points(obs, (1.0 - confidence) / 2.0, max_points)
}

/// Empirical (FPR, FNR) points with upper bounds at `tail` each. The
/// thresholds are non-member scores whose false-positive counts are spread
/// evenly on a linear and on a logarithmic scale (half of `max_points`
/// each), so both a linear trade-off plot and a log–log ROC plot are
/// resolved down to one false positive; the first point is the threshold
/// −∞ (everything called member).
pub fn error_points(obs: &Observations, tail: f64, max_points: usize) -> Result<Vec<ErrorPoint>> {
    if !(tail.is_finite() && tail > 0.0 && tail < 1.0) {
        return Err(AuditError::InvalidParameter {
            name: "tail",
            value: tail.to_string(),
            expected: "a tail probability strictly between 0 and 1",
        });
    }
    let sorted = Sorted::of(obs);
    let (n_pos, n_neg) = (sorted.members.len() as u64, sorted.nonmembers.len() as u64);
    let ln_tail = tail.ln();
    let half = (max_points / 2).max(2);
    let last = n_neg - 1;
    // False-positive counts k ∈ [0, n₀ − 1]; the threshold of count k is the
    // (k+1)-th largest non-member score.
    let mut ks: Vec<u64> = (0..half as u64)
        .map(|i| i * last / (half as u64 - 1))
        .collect();
    let top = (last.max(1) as f64).ln();
    ks.extend((0..half).map(|i| (top * i as f64 / (half - 1) as f64).exp().round() as u64 - 1));
    ks.push(0);
    ks.sort_unstable();
    ks.dedup();
    let mut out = Vec::with_capacity(ks.len() + 1);
    let mut push = |t: f64| {
        let (fp, fnn) = sorted.counts(t);
        out.push(ErrorPoint {
            threshold: t,
            fpr: fp as f64 / n_neg as f64,
            fnr: fnn as f64 / n_pos as f64,
            fpr_upper: upper_unchecked(fp, n_neg, ln_tail),
            fnr_upper: upper_unchecked(fnn, n_pos, ln_tail),
        });
    };
    push(f64::NEG_INFINITY);
    for &k in ks.iter().rev() {
        push(sorted.nonmembers[(last - k.min(last)) as usize]);
    }
    out.dedup_by(|a, b| a.threshold == b.threshold);
    Ok(out)
}
