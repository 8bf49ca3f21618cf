//! The branch-and-bound sweep over all thresholds (`same-data`, and the
//! selection half of `split`): see the module docs of [`super`].

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use super::statistic::Statistic;
use crate::bound::{ThresholdEvidence, ThresholdTest};
use crate::clopper_pearson::upper_unchecked;
use crate::observations::Observations;
#[cfg(test)]
use crate::sort::sort_pair;
use crate::sort::sorted_classes;

/// Memoized Clopper–Pearson upper limits for one class.
struct RateBounds {
    n: u64,
    ln_tail: f64,
    cache: HashMap<u64, f64>,
}

impl RateBounds {
    fn new(n: u64, tail: f64) -> Self {
        Self {
            n,
            ln_tail: tail.ln(),
            cache: HashMap::new(),
        }
    }

    fn upper(&mut self, k: u64) -> f64 {
        let (n, ln_tail) = (self.n, self.ln_tail);
        *self
            .cache
            .entry(k)
            .or_insert_with(|| upper_unchecked(k, n, ln_tail))
    }
}

/// Both classes sorted ascending.
pub(super) struct Sorted {
    pub(super) members: Vec<f64>,
    pub(super) nonmembers: Vec<f64>,
}

impl Sorted {
    /// Both classes of `obs`, sorted.
    pub(super) fn of(obs: &Observations) -> Self {
        let (members, nonmembers) = sorted_classes(obs.scores(), obs.members());
        Self {
            members,
            nonmembers,
        }
    }

    #[cfg(test)]
    pub(super) fn new(members: Vec<f64>, nonmembers: Vec<f64>) -> Self {
        let (members, nonmembers) = sort_pair(members, nonmembers);
        Self {
            members,
            nonmembers,
        }
    }

    /// (false positives, false negatives) of "member iff score > t".
    pub(super) fn counts(&self, t: f64) -> (u64, u64) {
        let fp = self.nonmembers.len() - self.nonmembers.partition_point(|&x| x <= t);
        let fnn = self.members.partition_point(|&x| x <= t);
        (fp as u64, fnn as u64)
    }
}

/// Result of a sweep on one data set.
pub(super) struct SweepBest {
    pub(super) threshold: f64,
    pub(super) value: f64,
    pub(super) candidates: u64,
}

#[derive(Debug, PartialEq)]
struct Block {
    upper: f64,
    lo: usize,
    hi: usize,
}

impl Eq for Block {}

impl PartialOrd for Block {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Block {
    fn cmp(&self, other: &Self) -> Ordering {
        self.upper.total_cmp(&other.upper)
    }
}

/// Absolute tolerance of the branch-and-bound on the maximized statistic.
const SWEEP_TOLERANCE: f64 = 1e-9;

/// Maximizes the statistic over all thresholds at the non-member values.
pub(super) fn sweep(sorted: &Sorted, tail: f64, stat: Statistic) -> SweepBest {
    let neg = &sorted.nonmembers;
    let mut fpb = RateBounds::new(neg.len() as u64, tail);
    let mut fnb = RateBounds::new(sorted.members.len() as u64, tail);
    // Statistic at (fp, fn) counts.
    let value = |fp: u64, fnn: u64, fpb: &mut RateBounds, fnb: &mut RateBounds| {
        stat.eval(fpb.upper(fp), fnb.upper(fnn))
    };
    let eval = |t: f64, fpb: &mut RateBounds, fnb: &mut RateBounds| {
        let (fp, fnn) = sorted.counts(t);
        value(fp, fnn, fpb, fnb)
    };
    // Upper bound of the statistic over candidates lo..=hi.
    let block_upper = |lo: usize, hi: usize, fpb: &mut RateBounds, fnb: &mut RateBounds| {
        let (fp_min, _) = sorted.counts(neg[hi]);
        let (_, fn_min) = sorted.counts(neg[lo]);
        value(fp_min, fn_min, fpb, fnb)
    };
    let last = neg.len() - 1;
    let candidates = 1 + neg.windows(2).filter(|w| w[0] != w[1]).count() as u64;
    let mut best = SweepBest {
        threshold: neg[0],
        value: eval(neg[0], &mut fpb, &mut fnb),
        candidates,
    };
    let v_last = eval(neg[last], &mut fpb, &mut fnb);
    if v_last > best.value {
        best.threshold = neg[last];
        best.value = v_last;
    }
    if last <= 1 {
        return best;
    }
    let mut heap = BinaryHeap::new();
    heap.push(Block {
        upper: block_upper(0, last, &mut fpb, &mut fnb),
        lo: 0,
        hi: last,
    });
    while let Some(block) = heap.pop() {
        if block.upper <= best.value + SWEEP_TOLERANCE {
            // The heap is ordered by upper bound: nothing left can win.
            break;
        }
        if block.hi - block.lo <= 1 {
            // Both candidates of the block were evaluated already.
            continue;
        }
        // Ties: a block whose ends have the same value holds one threshold.
        if neg[block.lo] == neg[block.hi] {
            continue;
        }
        let mid = block.lo + (block.hi - block.lo) / 2;
        let v = eval(neg[mid], &mut fpb, &mut fnb);
        if v > best.value {
            best.value = v;
            best.threshold = neg[mid];
        }
        for (lo, hi) in [(block.lo, mid), (mid, block.hi)] {
            let upper = block_upper(lo, hi, &mut fpb, &mut fnb);
            if upper > best.value + SWEEP_TOLERANCE {
                heap.push(Block { upper, lo, hi });
            }
        }
    }
    best
}

/// Evidence at `threshold` with pointwise Clopper–Pearson bounds at `tail`
/// on both rates (`same-data`).
pub(super) fn pointwise_evidence(
    sorted: &Sorted,
    threshold: f64,
    tail: f64,
    candidates: u64,
) -> ThresholdEvidence {
    let (fp, fnn) = sorted.counts(threshold);
    let ln_tail = tail.ln();
    let (n0, n1) = (sorted.nonmembers.len() as u64, sorted.members.len() as u64);
    ThresholdEvidence {
        threshold,
        false_positives: fp,
        nonmembers: n0,
        false_negatives: fnn,
        members: n1,
        test: ThresholdTest::ClopperPearson {
            fpr_upper: upper_unchecked(fp, n0, ln_tail),
            fnr_upper: upper_unchecked(fnn, n1, ln_tail),
            tail_per_rate: tail,
        },
        statements: 2,
        mu_lower: None,
        candidates,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_equals_brute_force() {
        // Branch-and-bound against evaluating every threshold.
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for trial in 0..20 {
            let n = 50 + trial * 20;
            let pos: Vec<f64> = (0..n)
                .map(|_| (rng.gen::<f64>() * 20.0).floor() + 3.0)
                .collect();
            let neg: Vec<f64> = (0..n + 7)
                .map(|_| (rng.gen::<f64>() * 20.0).floor())
                .collect();
            let sorted = Sorted::new(pos.clone(), neg.clone());
            for stat in [Statistic::EpsDelta { delta: 1e-5 }, Statistic::Gdp] {
                let best = sweep(&sorted, 0.025, stat);
                let ln_tail = 0.025_f64.ln();
                let brute = neg
                    .iter()
                    .map(|&t| {
                        let (fp, fnn) = sorted.counts(t);
                        stat.eval(
                            upper_unchecked(fp, neg.len() as u64, ln_tail),
                            upper_unchecked(fnn, pos.len() as u64, ln_tail),
                        )
                    })
                    .fold(f64::NEG_INFINITY, f64::max);
                assert!(
                    (best.value - brute).abs() <= 1e-9,
                    "trial {trial}: {} vs {brute}",
                    best.value
                );
            }
        }
    }
}
