//! The support family of `bonferroni` for scores with few distinct values
//! (binary, or rounded to a coarse grid): one threshold event per value.
//!
//! When the pooled scores (both classes together, so without looking at the
//! labels) take `D` distinct values with `2 ≤ D ≤` [`FEW_VALUES_MAX`] and
//! `2D ≤ m`, the family is the `D − 1` events `{score ≥ v}` for the distinct
//! values `v` above the smallest; otherwise it is the rank family of
//! [`super::rank`]. Each event's two error rates get Clopper–Pearson upper
//! limits at tail `(1 − confidence)/(2(D − 1))` each and the statistic of
//! Annamalai et al. 2024 Eq. (1) (or Cebere et al. 2024 Lemma 1), so all
//! `2(D − 1)` statements hold together; the bound is the best event's. Why
//! this is valid, and where its argument needs every value of the score's
//! support to appear in the data, is in `docs/audit-statistics.md` ("Tied
//! and binary scores").

use super::rank::below;
use super::statistic::Statistic;
use super::sweep::{pointwise_evidence, Sorted};
use crate::bound::ThresholdEvidence;

/// Most distinct pooled values for which `bonferroni` tests one event per
/// value instead of the rank family. Fixed in advance; 16 covers binary
/// outputs and scores rounded to a coarse grid (integer-rounded Gaussian
/// scores at μ ≤ 4 take about 8 to 14 values), while the level of each
/// event, `(1 − confidence)/(D − 1)`, stays within a factor 15 of the full
/// one.
pub const FEW_VALUES_MAX: usize = 16;

/// The distinct values of both classes together, ascending (`−0.0` and
/// `0.0` are one value), when they are few enough for the support family:
/// `2 ≤ D ≤ FEW_VALUES_MAX` and `2D ≤ m` (so scores without ties never
/// qualify); `None` otherwise. Reads the pooled scores only, never which
/// class a score belongs to.
pub(super) fn few_values(sorted: &Sorted) -> Option<Vec<f64>> {
    let m = sorted.members.len() + sorted.nonmembers.len();
    let mut values: Vec<f64> = Vec::with_capacity(FEW_VALUES_MAX + 1);
    // Merge the two sorted classes, stopping as soon as there are too many.
    let (mut i, mut j) = (0, 0);
    while i < sorted.members.len() || j < sorted.nonmembers.len() {
        let next = match (sorted.members.get(i), sorted.nonmembers.get(j)) {
            (Some(&a), Some(&b)) if a <= b => {
                i += 1;
                a
            }
            (Some(&a), None) => {
                i += 1;
                a
            }
            (_, Some(&b)) => {
                j += 1;
                b
            }
            (None, None) => break,
        };
        if values.last().is_none_or(|&last| next != last) {
            values.push(next);
            if values.len() > FEW_VALUES_MAX {
                return None;
            }
        }
    }
    (values.len() >= 2 && 2 * values.len() <= m).then_some(values)
}

/// The support family on all data: every event `{score ≥ v}` for the
/// distinct values `values` above the smallest, both rates bounded at tail
/// `(1 − confidence)/(2(D − 1))`. Returns the best event's evidence and
/// statistic (at least 0).
pub(super) fn support_best(
    sorted: &Sorted,
    values: &[f64],
    confidence: f64,
    stat: Statistic,
) -> (ThresholdEvidence, f64) {
    let events = (values.len() - 1) as u64;
    let tail = (1.0 - confidence) / (2 * events) as f64;
    let mut best: Option<(ThresholdEvidence, f64)> = None;
    for &v in &values[1..] {
        // Both rates of each event: 2·events statements.
        let evidence = ThresholdEvidence {
            statements: 2 * events,
            ..pointwise_evidence(sorted, below(v), tail, events)
        };
        let (fpr_upper, fnr_upper) = evidence.marked_point();
        let value = stat.eval(fpr_upper, fnr_upper).max(0.0);
        if best.as_ref().is_none_or(|(_, b)| value > *b) {
            best = Some((evidence, value));
        }
    }
    // `values` has at least two entries, so the loop ran.
    best.unwrap_or_else(|| unreachable!("few_values returns at least two values"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bound::ThresholdTest;

    #[test]
    fn few_values_reads_the_pooled_scores_only() {
        let s = Sorted::new(vec![1.0, 1.0, 0.0], vec![0.0, -0.0, 1.0]);
        assert_eq!(few_values(&s), Some(vec![-0.0, 1.0]));
        // The same pooled scores with the labels swapped: the same values.
        let t = Sorted::new(vec![0.0, 0.0, 1.0], vec![1.0, 1.0, 0.0]);
        assert_eq!(few_values(&t), few_values(&s));
        // One value: nothing to test; no ties: the rank family.
        assert_eq!(few_values(&Sorted::new(vec![2.0; 3], vec![2.0; 3])), None);
        assert_eq!(
            few_values(&Sorted::new(vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 6.0])),
            None
        );
        // 17 values: too many.
        let many: Vec<f64> = (0..17).map(f64::from).collect();
        assert_eq!(few_values(&Sorted::new(many.clone(), many)), None);
    }

    #[test]
    fn binary_scores_test_their_one_event_at_the_full_level() {
        // 1000 members with 622 ones, 1000 non-members with 378 ones
        // (randomized response at ε₀ = 0.5, expected counts). The one event
        // {score ≥ 1}: FP = 378, FN = 378, each rate at tail 0.025.
        let pos: Vec<f64> = (0..1000).map(|i| f64::from(i < 622)).collect();
        let neg: Vec<f64> = (0..1000).map(|i| f64::from(i < 378)).collect();
        let s = Sorted::new(pos, neg);
        let values = few_values(&s).unwrap();
        let (ev, eps) = support_best(&s, &values, 0.95, Statistic::EpsDelta { delta: 0.0 });
        assert_eq!((ev.false_positives, ev.false_negatives), (378, 378));
        assert_eq!(ev.statements, 2);
        let ThresholdTest::ClopperPearson {
            fpr_upper,
            tail_per_rate,
            ..
        } = ev.test
        else {
            panic!("{:?}", ev.test)
        };
        assert!((tail_per_rate - 0.025).abs() < 1e-15, "{tail_per_rate}");
        // scipy.stats.beta.ppf(0.975, 379, 622) = 0.408877 (Clopper–Pearson
        // upper limit of 378 of 1000 at tail 0.025), so
        // ε = ln((1 − 0.408877)/0.408877) = 0.368610.
        assert!((fpr_upper - 0.408_877).abs() < 5e-6, "{fpr_upper}");
        assert!((eps - 0.368_610).abs() < 5e-5, "{eps}");
    }
}
