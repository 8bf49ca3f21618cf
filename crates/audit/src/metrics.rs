//! The membership-inference metrics reported beside every bound: the area
//! under the ROC curve and the true-positive rate at fixed low false-positive
//! rates, with Clopper–Pearson intervals (the convention of Carlini et al.
//! 2022, "Membership Inference Attacks From First Principles", §III-C: TPR
//! at FPR = 10⁻³ and 10⁻², ROC curves on log–log axes).
//!
//! These describe the scores; they are not ε bounds.
//!
//! **TPR at FPR = f.** With `n₀` non-member scores, the threshold is the
//! `(k+1)`-th largest non-member score, `k = ⌊f·n₀⌋`, and the rule is
//! "member iff score > threshold", so at most `k` non-members are called
//! members. The threshold depends on the non-member scores only, so the
//! number of members above it is binomial given the threshold, and its
//! two-sided Clopper–Pearson interval is exact. The realised FPR is reported
//! with its own interval. When `n₀ < 1/f` no false positive is allowed
//! (`k = 0`) and the entry says `resolvable: false`: the data cannot show an
//! FPR as small as `f`.
//!
//! [`tpr_at_fprs`] gives the same entry at any target FPRs and [`roc`] the
//! whole empirical ROC curve. Both are **same-data** descriptions: the
//! threshold is chosen on the very scores whose rates are reported, so the
//! rates are not bounds (the intervals hold for the TPR given the threshold,
//! which depends on the non-member scores only).

use crate::error::AuditError;
use serde::{Deserialize, Serialize};

use crate::clopper_pearson::{lower_unchecked, upper_unchecked, Interval};
use crate::error::{check_confidence, Result};
use crate::observations::Observations;
use crate::sort::sorted_classes;

/// The FPRs at which the TPR is reported.
pub const LOW_FPRS: [f64; 2] = [1e-3, 1e-2];

/// Metrics of a set of scores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Number of member scores.
    pub members: u64,
    /// Number of non-member scores.
    pub nonmembers: u64,
    /// Area under the ROC curve (ties count ½): the probability that a
    /// random member outscores a random non-member.
    pub auc: f64,
    /// Confidence of every interval below (two-sided).
    pub interval_confidence: f64,
    /// TPR at each of [`LOW_FPRS`].
    pub tpr_at_fpr: Vec<TprAtFpr>,
}

/// The TPR of the threshold test at one target FPR.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TprAtFpr {
    /// The target false-positive rate.
    pub target_fpr: f64,
    /// Whether there are enough non-members to allow one false positive at
    /// this FPR (`n₀ ≥ 1/target`).
    pub resolvable: bool,
    /// Predict "member" iff `score > threshold`.
    pub threshold: f64,
    /// Non-members above the threshold.
    pub false_positives: u64,
    /// Realised FPR `false_positives / n₀`.
    pub fpr: f64,
    /// Clopper–Pearson interval of the FPR.
    pub fpr_interval: Interval,
    /// Members above the threshold.
    pub true_positives: u64,
    /// `true_positives / n₁`.
    pub tpr: f64,
    /// Clopper–Pearson interval of the TPR.
    pub tpr_interval: Interval,
}

/// Metrics of `obs` with intervals at `confidence` (two-sided).
pub fn metrics(obs: &Observations, confidence: f64) -> Result<Metrics> {
    check_confidence(confidence)?;
    let (pos, neg) = sorted_classes(obs.scores(), obs.members());
    Ok(metrics_sorted(&pos, &neg, confidence))
}

/// The [`TprAtFpr`] entry at each of `targets` (each in `[0, 1]`), with
/// intervals at `confidence`: the rule of [`metrics`] at any FPR.
pub fn tpr_at_fprs(obs: &Observations, targets: &[f64], confidence: f64) -> Result<Vec<TprAtFpr>> {
    check_confidence(confidence)?;
    if let Some(&bad) = targets.iter().find(|t| !(0.0..=1.0).contains(*t)) {
        return Err(AuditError::InvalidParameter {
            name: "fpr",
            value: bad.to_string(),
            expected: "a false-positive rate in [0, 1] (e.g. 1e-4)",
        });
    }
    let (pos, neg) = sorted_classes(obs.scores(), obs.members());
    Ok(tpr_at_sorted(&pos, &neg, targets, confidence))
}

/// The empirical ROC curve of the rule "member iff score > threshold".
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Roc {
    /// Decreasing: every distinct score, then −∞ (every row a member).
    pub thresholds: Vec<f64>,
    /// Non-members above each threshold over n₀ (non-decreasing, 0 to 1).
    pub fpr: Vec<f64>,
    /// Members above each threshold over n₁ (non-decreasing, 0 to 1).
    pub tpr: Vec<f64>,
}

/// The ROC of `obs`: one point per distinct score (ties form one step),
/// from (0, 0) at the largest score to (1, 1) at −∞. The trapezoid area
/// under it is the AUC of [`metrics`] (ties count ½).
pub fn roc(obs: &Observations) -> Result<Roc> {
    let (pos, neg) = sorted_classes(obs.scores(), obs.members());
    let mut all: Vec<f64> = pos.iter().chain(neg.iter()).copied().collect();
    all.sort_by(|a, b| b.total_cmp(a));
    all.dedup();
    all.push(f64::NEG_INFINITY);
    let above = |sorted: &[f64], t: f64| sorted.len() - sorted.partition_point(|&x| x <= t);
    let (n1, n0) = (pos.len() as f64, neg.len() as f64);
    let fpr = all.iter().map(|&t| above(&neg, t) as f64 / n0).collect();
    let tpr = all.iter().map(|&t| above(&pos, t) as f64 / n1).collect();
    Ok(Roc {
        thresholds: all,
        fpr,
        tpr,
    })
}

/// [`metrics`] for both classes sorted ascending (each non-empty).
pub(crate) fn metrics_sorted(pos: &[f64], neg: &[f64], confidence: f64) -> Metrics {
    Metrics {
        members: pos.len() as u64,
        nonmembers: neg.len() as u64,
        auc: auc_sorted(pos, neg),
        interval_confidence: confidence,
        tpr_at_fpr: tpr_at_sorted(pos, neg, &LOW_FPRS, confidence),
    }
}

/// [`tpr_at_fprs`] for both classes sorted ascending (each non-empty).
fn tpr_at_sorted(pos: &[f64], neg: &[f64], targets: &[f64], confidence: f64) -> Vec<TprAtFpr> {
    let (n1, n0) = (pos.len() as u64, neg.len() as u64);
    let ln_tail = ((1.0 - confidence) / 2.0).ln();
    let interval = |k: u64, n: u64| Interval {
        lower: lower_unchecked(k, n, ln_tail),
        upper: upper_unchecked(k, n, ln_tail),
    };
    targets
        .iter()
        .map(|&target| {
            let k = ((target * n0 as f64).floor() as u64).min(n0 - 1);
            let threshold = neg[(n0 - 1 - k) as usize];
            let fp = n0 - neg.partition_point(|&x| x <= threshold) as u64;
            let tp = n1 - pos.partition_point(|&x| x <= threshold) as u64;
            TprAtFpr {
                target_fpr: target,
                resolvable: k >= 1,
                threshold,
                false_positives: fp,
                fpr: fp as f64 / n0 as f64,
                fpr_interval: interval(fp, n0),
                true_positives: tp,
                tpr: tp as f64 / n1 as f64,
                tpr_interval: interval(tp, n1),
            }
        })
        .collect()
}

/// Mann–Whitney AUC of sorted classes: P[member > non-member] + ½ P[tie].
fn auc_sorted(pos: &[f64], neg: &[f64]) -> f64 {
    let (mut below, mut upto) = (0_usize, 0_usize);
    let mut twice_wins: u128 = 0;
    for &y in pos {
        while below < neg.len() && neg[below] < y {
            below += 1;
        }
        upto = upto.max(below);
        while upto < neg.len() && neg[upto] <= y {
            upto += 1;
        }
        // below: non-members strictly under y; upto − below: ties.
        twice_wins += 2 * below as u128 + (upto - below) as u128;
    }
    twice_wins as f64 / (2.0 * pos.len() as f64 * neg.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auc_counts_ties_as_half() {
        // Members {1, 2, 3}, non-members {0, 2}: pairs (m > n) = 1>0, 2>0,
        // 3>0, 3>2 = 4, ties 2=2 = 1 → (4 + ½)/6 = 0.75.
        let obs = Observations::from_classes(&[3.0, 1.0, 2.0], &[2.0, 0.0]).unwrap();
        let m = metrics(&obs, 0.95).unwrap();
        assert!((m.auc - 0.75).abs() < 1e-15, "{}", m.auc);
        // Perfect separation and its reverse.
        let obs = Observations::from_classes(&[5.0, 6.0], &[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(metrics(&obs, 0.95).unwrap().auc, 1.0);
        let obs = Observations::from_classes(&[1.0], &[2.0, 3.0]).unwrap();
        assert_eq!(metrics(&obs, 0.95).unwrap().auc, 0.0);
    }

    #[test]
    fn tpr_at_fpr_hand_computed() {
        // 2000 non-members 0..2000, members 1990.5 + i for i in 0..10 and
        // 0.5 for 10 more. FPR 1e-3: k = 2, threshold = 3rd largest
        // non-member = 1997: FP = 2 (1998, 1999), TP = members > 1997 =
        // 1997.5..1999.5 → 3 of 20.
        let neg: Vec<f64> = (0..2000).map(f64::from).collect();
        let mut pos: Vec<f64> = (0..10).map(|i| 1990.5 + f64::from(i)).collect();
        pos.extend(std::iter::repeat_n(0.5, 10));
        let obs = Observations::from_classes(&pos, &neg).unwrap();
        let m = metrics(&obs, 0.95).unwrap();
        let t = &m.tpr_at_fpr[0];
        assert_eq!(
            (t.threshold, t.false_positives, t.true_positives),
            (1997.0, 2, 3)
        );
        assert!(t.resolvable);
        assert!((t.tpr - 0.15).abs() < 1e-15);
        assert!(t.tpr_interval.lower < 0.15 && 0.15 < t.tpr_interval.upper);
        assert!(t.fpr_interval.lower < 1e-3 && 1e-3 < t.fpr_interval.upper);
        // FPR 1e-2: k = 20, threshold = 1979 → FP 20, TP 10.
        let t = &m.tpr_at_fpr[1];
        assert_eq!(
            (t.threshold, t.false_positives, t.true_positives),
            (1979.0, 20, 10)
        );
        // Few non-members: 1e-3 is not resolvable, the threshold is the max.
        let obs = Observations::from_classes(&[10.0], &[1.0, 2.0]).unwrap();
        let t = &metrics(&obs, 0.95).unwrap().tpr_at_fpr[0];
        assert!(!t.resolvable);
        assert_eq!(
            (t.threshold, t.false_positives, t.true_positives),
            (2.0, 0, 1)
        );
    }

    #[test]
    fn tpr_at_any_fpr_is_the_metrics_rule() {
        let neg: Vec<f64> = (0..2000).map(f64::from).collect();
        let pos: Vec<f64> = (0..20).map(|i| 1990.5 + f64::from(i % 10)).collect();
        let obs = Observations::from_classes(&pos, &neg).unwrap();
        let m = metrics(&obs, 0.95).unwrap();
        assert_eq!(tpr_at_fprs(&obs, &LOW_FPRS, 0.95).unwrap(), m.tpr_at_fpr);
        // FPR 1e-4 with 2000 non-members: k = 0, the largest non-member
        // (1999) is the threshold, 2 members (1999.5 twice) above it.
        let t = &tpr_at_fprs(&obs, &[1e-4], 0.95).unwrap()[0];
        assert!(!t.resolvable);
        assert_eq!(
            (t.threshold, t.true_positives, t.false_positives),
            (1999.0, 2, 0)
        );
        let err = tpr_at_fprs(&obs, &[1.5], 0.95).unwrap_err().to_string();
        assert!(err.contains("fpr") && err.contains("1.5"), "{err}");
    }

    #[test]
    fn roc_hand_computed_and_its_area_is_the_auc() {
        // Members {1, 2, 3}, non-members {0, 2}: distinct scores 3, 2, 1, 0.
        let obs = Observations::from_classes(&[3.0, 1.0, 2.0], &[2.0, 0.0]).unwrap();
        let r = roc(&obs).unwrap();
        assert_eq!(r.thresholds, vec![3.0, 2.0, 1.0, 0.0, f64::NEG_INFINITY]);
        assert_eq!(r.tpr, vec![0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0, 1.0]);
        assert_eq!(r.fpr, vec![0.0, 0.0, 0.5, 0.5, 1.0]);
        let area: f64 = (1..r.fpr.len())
            .map(|i| (r.fpr[i] - r.fpr[i - 1]) * (r.tpr[i] + r.tpr[i - 1]) / 2.0)
            .sum();
        assert!(
            (area - metrics(&obs, 0.95).unwrap().auc).abs() < 1e-15,
            "{area}"
        );
    }
}
