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
