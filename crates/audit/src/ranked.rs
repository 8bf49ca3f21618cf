//! The ranking of one run's canaries that both one-run tests read their
//! guess counts from (Steinke, Nasr & Jagielski 2023, Algorithm 1, line 7:
//! the `k+` highest scores guessed "in", the `k−` lowest "out").
//!
//! The two classes are kept sorted, and every count is a binary search, so
//! a candidate costs O(log m) after the sort. Ties carry no information: a
//! guess set that cuts a run of equal scores is counted either in the run's
//! worst order ([`Ranked::correct`]) or as a share of its random tie-breaks
//! reach ([`Ranked::correct_share`], see [`crate::tie_break`]).

use crate::observations::Observations;
use crate::sort::sorted_classes;
use crate::tie_break::{hypergeometric_quantile, TIE_BREAK_SHARE};

/// Canaries ranked by score (descending; ties counted against the auditor,
/// see [`Ranked::new`]), held as the two classes sorted ascending; the
/// counts of correct guesses are read off them by binary search, and a
/// guess set that cuts a run of tied scores is counted by the law of its
/// random tie-breaks ([`Ranked::correct_share`]).
pub(crate) struct Ranked {
    /// Included canaries' scores, ascending.
    pub(crate) pos: Vec<f64>,
    /// Excluded canaries' scores, ascending.
    pub(crate) neg: Vec<f64>,
}

impl Ranked {
    /// The ranking: descending score; among equal scores (−0.0 = 0.0) the
    /// non-members first. Read from the top this puts a tie's non-members
    /// into the positive guesses first, read from the bottom its members
    /// into the negative guesses first: a guess set that cuts through a tie
    /// counts the fewest correct guesses any order of the tie could give.
    /// The result is the same for every order of the rows.
    pub(crate) fn new(obs: &Observations) -> Self {
        let (pos, neg) = sorted_classes(obs.scores(), obs.members());
        Self { pos, neg }
    }

    /// From the two classes, each sorted ascending.
    pub(crate) fn from_sorted(pos: Vec<f64>, neg: Vec<f64>) -> Self {
        Self { pos, neg }
    }

    /// `(above, equal)`: canaries of `class` (sorted ascending) scoring
    /// above `value`, and equal to it.
    fn above_and_equal(class: &[f64], value: f64) -> (usize, usize) {
        let below_or_equal = class.partition_point(|&x| x <= value);
        let below = class.partition_point(|&x| x < value);
        (class.len() - below_or_equal, below_or_equal - below)
    }

    /// The run of equal scores holding `value`, as positions `[start, end)`
    /// from the top, with its included and excluded canaries.
    fn run_of(&self, value: f64) -> ((usize, usize), usize, usize) {
        let (pos_above, pos_equal) = Self::above_and_equal(&self.pos, value);
        let (neg_above, neg_equal) = Self::above_and_equal(&self.neg, value);
        let start = pos_above + neg_above;
        ((start, start + pos_equal + neg_equal), pos_equal, neg_equal)
    }

    /// The score at position `k` from the top (`k < m`): the smallest of the
    /// first `k + 1`, which are the largest of each class.
    fn score_at(&self, k: usize) -> f64 {
        let (n1, n0) = (self.pos.len(), self.neg.len());
        let a = self.included_in_top(k + 1);
        let b = k + 1 - a;
        let lowest_included = (a > 0).then(|| self.pos[n1 - a]);
        let lowest_excluded = (b > 0).then(|| self.neg[n0 - b]);
        match (lowest_included, lowest_excluded) {
            (Some(x), Some(y)) => x.min(y),
            (Some(x), None) | (None, Some(x)) => x,
            (None, None) => unreachable!("k < m, so the first k + 1 are not empty"),
        }
    }

    /// Correct guesses with `k+` positive and `k−` negative guesses that a
    /// share [`TIE_BREAK_SHARE`] of the uniformly random orders of a cut
    /// tied run reach (see [`crate::tie_break`]); the worst order's count
    /// where both guess sets cut the same run. Equal to [`Ranked::correct`]
    /// when no run is cut.
    pub(crate) fn correct_share(&self, k_plus: u64, k_minus: u64) -> u64 {
        let m = self.m() as usize;
        let (kp, km) = (k_plus as usize, k_minus as usize);
        let top = (kp > 0)
            .then(|| self.run_of(self.score_at(kp - 1)))
            .filter(|&((_, end), _, _)| end > kp);
        let bottom_start = m - km;
        let bottom = (km > 0)
            .then(|| self.run_of(self.score_at(bottom_start)))
            .filter(|&((start, _), _, _)| start < bottom_start);
        if top.is_some() && top.map(|t| t.0) == bottom.map(|b| b.0) {
            return self.correct(k_plus, k_minus);
        }
        // Two cut runs: each at 1 − (1 − γ)/2, so both reach their counts
        // together for at least a share γ of the tie-breaks.
        let share = if top.is_some() && bottom.is_some() {
            1.0 - (1.0 - TIE_BREAK_SHARE) / 2.0
        } else {
            TIE_BREAK_SHARE
        };
        let plus = match top {
            None => self.included_in_top(kp) as u64,
            Some(((start, end), pos_equal, _)) => {
                // Included canaries above the run, then the run's share.
                let above =
                    self.pos.len() - self.pos.partition_point(|&x| x <= self.score_at(kp - 1));
                let len = (end - start) as u64;
                above as u64
                    + hypergeometric_quantile(len, pos_equal as u64, (kp - start) as u64, share)
            }
        };
        let minus = match bottom {
            None => (km - (self.pos.len() - self.included_in_top(bottom_start))) as u64,
            Some(((start, end), _, neg_equal)) => {
                // Excluded canaries below the run, then the run's share.
                let below = self
                    .neg
                    .partition_point(|&x| x < self.score_at(bottom_start));
                let len = (end - start) as u64;
                below as u64
                    + hypergeometric_quantile(
                        len,
                        neg_equal as u64,
                        (end - bottom_start) as u64,
                        share,
                    )
            }
        };
        plus + minus
    }

    /// The all-canary guess set of two-valued scores: when the pooled
    /// scores (both classes together, so without the labels) take exactly
    /// two values and `m ≥ 4` (`2D ≤ m`, as the threshold methods' support
    /// family, [`crate::region::FEW_VALUES_MAX`]), every canary at the
    /// larger value is guessed "in" and every other one "out". Returns
    /// `(k+, k−, correct)` with `k+ + k− = m`; no run is cut, so the count
    /// is exact. `None` for one value or three or more.
    pub(crate) fn two_valued_guesses(&self) -> Option<(u64, u64, u64)> {
        let m = self.m() as usize;
        let ends = |c: &[f64]| c.first().copied().zip(c.last().copied());
        let (lo, hi) = match (ends(&self.pos), ends(&self.neg)) {
            (Some((a, b)), Some((c, d))) => (a.min(c), b.max(d)),
            (Some(e), None) | (None, Some(e)) => e,
            (None, None) => return None,
        };
        let strictly_between =
            |c: &[f64]| c.partition_point(|&x| x <= lo) < c.partition_point(|&x| x < hi);
        if m < 4 || lo >= hi || strictly_between(&self.pos) || strictly_between(&self.neg) {
            return None;
        }
        let high_members = self.pos.len() - self.pos.partition_point(|&x| x < hi);
        let high_nonmembers = self.neg.len() - self.neg.partition_point(|&x| x < hi);
        let low_nonmembers = self.neg.len() - high_nonmembers;
        let k_plus = (high_members + high_nonmembers) as u64;
        Some((
            k_plus,
            m as u64 - k_plus,
            (high_members + low_nonmembers) as u64,
        ))
    }

    pub(crate) fn m(&self) -> u64 {
        (self.pos.len() + self.neg.len()) as u64
    }

    /// Included canaries among the first `k` of the ranking. With `a` of
    /// them and `b = k − a` excluded ones, `a` is the smallest count for
    /// which the `b`-th largest excluded score comes before the `(a+1)`-th
    /// largest included one in the ranking (`≥`: ties put the excluded
    /// first), and that condition holds for every larger `a` and no smaller
    /// one, so a binary search finds it.
    fn included_in_top(&self, k: usize) -> usize {
        let (n1, n0) = (self.pos.len(), self.neg.len());
        let before = |a: usize| {
            let b = k - a;
            b == 0 || a == n1 || self.neg[n0 - b] >= self.pos[n1 - a - 1]
        };
        let (mut lo, mut hi) = (k.saturating_sub(n0), k.min(n1));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if before(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }

    /// Correct guesses with `k+` positive and `k−` negative guesses
    /// (`k+ + k− ≤ m`): the included canaries among the first `k+`, and the
    /// excluded ones among the last `k−`.
    pub(crate) fn correct(&self, k_plus: u64, k_minus: u64) -> u64 {
        let m = self.pos.len() + self.neg.len();
        let (kp, km) = (k_plus as usize, k_minus as usize);
        let included_last = self.pos.len() - self.included_in_top(m - km);
        (self.included_in_top(kp) + (km - included_last)) as u64
    }
}

/// Whether two scores of the two classes (each sorted ascending) are
/// equal, within a class or across (−0.0 = 0.0): then a guess set can cut a
/// tied run, and a seeded tie-break's bound depends on its seed.
pub(crate) fn tied(pos: &[f64], neg: &[f64]) -> bool {
    let within = |c: &[f64]| c.windows(2).any(|w| w[0] == w[1]);
    if within(pos) || within(neg) {
        return true;
    }
    let (mut i, mut j) = (0, 0);
    while i < pos.len() && j < neg.len() {
        if pos[i] == neg[j] {
            return true;
        }
        if pos[i] < neg[j] {
            i += 1;
        } else {
            j += 1;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_valued_scores_guess_every_canary() {
        // Ones: members 0, 2 and non-member 5; zeros: member 4 and
        // non-members 1, 3 (−0.0 and 0.0 are one value). Every canary is
        // guessed: k+ = 3 ones, k− = 3 zeros, correct = 2 members at 1 +
        // 2 non-members at 0 = 4, in any row order.
        let scores = vec![1.0, 0.0, 1.0, -0.0, 0.0, 1.0];
        let members = vec![true, false, true, false, true, false];
        let obs = Observations::new(scores.clone(), members.clone()).unwrap();
        assert_eq!(Ranked::new(&obs).two_valued_guesses(), Some((3, 3, 4)));
        let rev = Observations::new(
            scores.iter().rev().copied().collect(),
            members.iter().rev().copied().collect(),
        )
        .unwrap();
        assert_eq!(Ranked::new(&rev).two_valued_guesses(), Some((3, 3, 4)));
        // Three values, one value, or fewer than four canaries: no switch.
        let three = Observations::new(vec![0.0, 1.0, 2.0, 1.0], vec![true, false, true, false]);
        assert_eq!(Ranked::new(&three.unwrap()).two_valued_guesses(), None);
        let one = Observations::new(vec![1.0; 4], vec![true, false, true, false]);
        assert_eq!(Ranked::new(&one.unwrap()).two_valued_guesses(), None);
        let small = Observations::new(vec![0.0, 1.0, 1.0], vec![true, false, true]);
        assert_eq!(Ranked::new(&small.unwrap()).two_valued_guesses(), None);
        // One class only at the larger value.
        let split = Observations::new(vec![5.0, 5.0, 2.0, 2.0], vec![true, true, false, false]);
        assert_eq!(
            Ranked::new(&split.unwrap()).two_valued_guesses(),
            Some((2, 2, 4))
        );
    }

    #[test]
    fn ties_within_and_across_classes() {
        assert!(!tied(&[1.0, 3.0], &[0.0, 2.0, 4.0]));
        assert!(tied(&[1.0, 1.0], &[0.0]));
        assert!(tied(&[1.0], &[0.0, 0.0]));
        assert!(tied(&[-1.0, 0.0, 5.0], &[-0.0, 7.0]));
        assert!(!tied(&[], &[2.0]));
    }

    #[test]
    fn ranked_counts() {
        // Scores 4 > 3 > 2 > 1 with inclusion +, −, +, −.
        let obs =
            Observations::new(vec![3.0, 1.0, 4.0, 2.0], vec![false, false, true, true]).unwrap();
        let r = Ranked::new(&obs);
        assert_eq!(r.correct(1, 0), 1); // top: 4.0 included
        assert_eq!(r.correct(2, 0), 1); // 3.0 excluded
        assert_eq!(r.correct(0, 1), 1); // bottom: 1.0 excluded
        assert_eq!(r.correct(2, 2), 2);
        // No ties: the share rule counts the same.
        for (kp, km) in [(1, 0), (2, 0), (0, 1), (2, 2), (1, 3)] {
            assert_eq!(r.correct_share(kp, km), r.correct(kp, km));
        }
    }

    #[test]
    fn a_cut_tied_run_counts_at_the_share_of_its_tie_breaks() {
        // From the top: 2.0 (member), then a run of ten 1.0s holding five
        // members, then 0.0 (non-member). Two positive guesses take the
        // member at 2.0 and one of the run: the worst order counts 1, and
        // 1 + the 5th percentile of Hyp(10, 5, 1) (P[H ≥ 1] = ½) = 1.
        // Five positive guesses take four of the run: Hyp(10, 5, 4) has
        // P[H ≥ 1] = 205/210 ≥ 0.95 > P[H ≥ 2] = 155/210, so 1 + 1 = 2,
        // against 1 + max(0, 4 − 5) = 1 in the worst order.
        let mut scores = vec![2.0, 0.0];
        let mut members = vec![true, false];
        for i in 0..10 {
            scores.push(1.0);
            members.push(i % 2 == 0);
        }
        let obs = Observations::new(scores, members).unwrap();
        let r = Ranked::new(&obs);
        assert_eq!((r.correct(2, 0), r.correct_share(2, 0)), (1, 1));
        assert_eq!((r.correct(5, 0), r.correct_share(5, 0)), (1, 2));
        // The negative side mirrors it: the 0.0 and four of the run.
        assert_eq!((r.correct(0, 5), r.correct_share(0, 5)), (1, 2));
        // Both sides cut the same run: the worst order.
        assert_eq!(r.correct_share(5, 5), r.correct(5, 5));
        // The same multiset in any row order gives the same counts.
        let rev = Observations::new(
            obs.scores().iter().rev().copied().collect(),
            obs.members().iter().rev().copied().collect(),
        )
        .unwrap();
        let r2 = Ranked::new(&rev);
        for (kp, km) in [(2, 0), (5, 0), (0, 5), (5, 5), (3, 2)] {
            assert_eq!(r2.correct_share(kp, km), r.correct_share(kp, km));
        }
    }

    /// The ranking of [`Ranked::new`] written out: every row sorted by
    /// (score descending, non-members first), then prefix counts.
    fn correct_by_sorting_rows(obs: &Observations, kp: usize, km: usize) -> u64 {
        let (scores, members) = (obs.scores(), obs.members());
        let mut order: Vec<usize> = (0..scores.len()).collect();
        order.sort_by(|&a, &b| {
            (scores[b] + 0.0)
                .total_cmp(&(scores[a] + 0.0))
                .then(members[a].cmp(&members[b]))
        });
        let top = order[..kp].iter().filter(|&&i| members[i]).count();
        let bottom = order[order.len() - km..]
            .iter()
            .filter(|&&i| !members[i])
            .count();
        (top + bottom) as u64
    }

    #[test]
    fn binary_search_counts_equal_the_sorted_rows() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for trial in 0..40 {
            let n = rng.gen_range(2..60);
            // Few distinct values (many ties, ±0.0) in half the trials.
            let levels = if trial % 2 == 0 { 3 } else { 1000 };
            let scores: Vec<f64> = (0..n)
                .map(|_| match rng.gen_range(0..levels) {
                    0 => -0.0,
                    1 => 0.0,
                    l => f64::from(l) * if rng.gen() { 1.0 } else { -1.0 },
                })
                .collect();
            let mut members: Vec<bool> = (0..n).map(|_| rng.gen()).collect();
            members[0] = true;
            members[1] = false;
            let obs = Observations::new(scores, members).unwrap();
            let ranked = Ranked::new(&obs);
            for kp in 0..=n {
                for km in 0..=(n - kp) {
                    assert_eq!(
                        ranked.correct(kp as u64, km as u64),
                        correct_by_sorting_rows(&obs, kp, km),
                        "trial {trial}, k+ = {kp}, k− = {km}"
                    );
                }
            }
        }
    }
}
