//! One-run guess sets on tied scores: the two rules ([`TieBreak`]) by which
//! a guess set "the `k+` highest scores" that ends inside a run of tied
//! scores is counted.
//!
//! **The quantile rule** ([`TieBreak::Quantile`], opt-in; PANORAMIA's
//! reference audit uses it, and bounds written before the seeded rule
//! existed name it by default). A guess set
//! that ends inside a run of `L` tied scores takes `j` of them; which `j` is
//! not a function of the scores. A tie-break by independent fair coins (a
//! uniformly random order of the run) keeps the premise of Steinke, Nasr &
//! Jagielski 2023, Thm 3.1 (the guesses are a function of the output and of
//! randomness independent of the inclusion bits, and `r = k+ + k−` is
//! fixed), so for every such tie-break `U` the test at level `γa` is valid.
//! The correct guesses the cut run contributes are then hypergeometric:
//! `H ~ Hyp(L, M, j)` with `M` the run's members (for the positive guesses;
//! its non-members for the negative ones).
//!
//! The reported count is the largest `v` that at least a share `γ =`
//! [`TIE_BREAK_SHARE`] of the tie-breaks reach, and it is tested at level
//! `γa`. Valid: let `Z = P_U[the tie-break U rejects the truth | data]`; each
//! `U` rejects with probability at most `γa`, so `E[Z] ≤ γa`, and the
//! reported test rejects only if `Z ≥ γ`, which by Markov's inequality has
//! probability at most `a` (the quantile aggregation of Meinshausen, Meier &
//! Bühlmann 2009, §2.2, over tie-breaks instead of splits). Without a cut
//! run every tie-break gives the same count and the rule is the plain test at
//! level `γa`. The old count (the worst order of the run) is what every
//! tie-break reaches, so it is still used where the law is not computed
//! (one run cut from both ends). The bound does not depend on the row order.
//!
//! **The seeded rule** ([`TieBreak::Seeded`], the default of every front end
//! and of [`crate::one_run::OneRunConfig::new`], keyed by the seed of the
//! split, 0 under the other policies). One tie-break `U` is
//! drawn, replayably, from a seed: every row gets a pseudo-random key
//! ([`seeded_ranks`]), the canaries are ranked by (score, key), and the
//! guesses are read off that strict order at the full level `a`. Valid for
//! every seed fixed before the inclusion bits are seen: the keys are then
//! independent of the bits, so the guesses are a function of the scores
//! and of label-independent randomness, which is the premise above, and the
//! test at level `a` is valid given the keys, hence overall. It spends no
//! level on the tie-break and counts the run at one draw of `H` instead of
//! its 5th percentile; the price is a bound on tied scores that depends on
//! the seed and on the row order (as `split`'s does), so outputs name the
//! rule, the seed and whether there were ties. It is the default because
//! the quantile rule's 5 % of the level is spent on every data set, tied or
//! not, and its 5th-percentile count loses most of a cut run's signal on
//! integer or heavily tied scores (`benches/RESULTS.md`, the rounded-Gaussian
//! cells); randomised tie-breaking is the textbook way to keep a test on
//! discrete data at its exact level.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::special::ln_gamma;

/// The share γ of tie-breaks whose count is reported; the test runs at
/// `γ` times the level. Fixed in advance: 0.95 costs untied scores 5 % of
/// the level and takes a cut run's count at the 5th percentile of its law
/// instead of its minimum.
pub const TIE_BREAK_SHARE: f64 = 0.95;

/// How the one-run guesses treat tied scores (see the module
/// documentation). Named in every one-run bound's evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "kebab-case")]
pub enum TieBreak {
    /// A cut run counts as a share [`TIE_BREAK_SHARE`] of its uniformly
    /// random tie-breaks reach, every test at that share of the level. The
    /// bound does not depend on the row order. `Default` gives it, because a
    /// bound written before the seeded rule existed was made under it; the
    /// front ends default to [`TieBreak::Seeded`].
    #[default]
    Quantile,
    /// Ties broken by the pseudo-random order of [`seeded_ranks`] with
    /// `seed`, every test at the full level. With tied scores the bound
    /// depends on the seed and the row order; valid for every seed fixed
    /// before the inclusion bits are seen.
    Seeded {
        /// Seed of the tie-break keys; fix it before looking at the scores.
        seed: u64,
    },
}

impl TieBreak {
    /// `quantile` or `seeded`.
    pub fn name(self) -> &'static str {
        match self {
            TieBreak::Quantile => "quantile",
            TieBreak::Seeded { .. } => "seeded",
        }
    }

    /// The share of the level each one-run test runs at.
    pub fn level_share(self) -> f64 {
        match self {
            TieBreak::Quantile => TIE_BREAK_SHARE,
            TieBreak::Seeded { .. } => 1.0,
        }
    }
}

/// The ChaCha8 stream of the tie-break keys; a split with the same seed
/// draws its coins from stream 0 ([`crate::observations::Observations::split`]).
const TIE_BREAK_STREAM: u64 = 1;

/// The ranks of `scores` (0 = lowest, as `f64`, exact below 2⁵³) in the
/// strict order of (score, key), the keys one pseudo-random `u64` per row
/// in row order from ChaCha8 seeded with `seed` (stream 1); equal keys,
/// which have probability below `n²/2⁶⁵`, are ordered by row. −0.0 and 0.0
/// are one value. Scores are not read to draw the keys, so the order of a
/// run of tied scores is uniformly random for a seed fixed in advance.
/// Also returns whether any two scores are tied (only then does the seed
/// matter).
pub fn seeded_ranks(scores: &[f64], seed: u64) -> (Vec<f64>, bool) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(TIE_BREAK_STREAM);
    let mut rows: Vec<(f64, u64, usize)> = scores
        .iter()
        .enumerate()
        .map(|(i, &s)| (s + 0.0, rng.next_u64(), i))
        .collect();
    rows.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let tied = rows.windows(2).any(|w| w[0].0 == w[1].0);
    let mut ranks = vec![0.0; scores.len()];
    for (rank, &(_, _, row)) in rows.iter().enumerate() {
        ranks[row] = rank as f64;
    }
    (ranks, tied)
}

fn ln_choose(n: u64, k: u64) -> f64 {
    ln_gamma(n as f64 + 1.0) - ln_gamma(k as f64 + 1.0) - ln_gamma((n - k) as f64 + 1.0)
}

/// The largest `h` with `P[H ≥ h] ≥ share` for `H ~ Hyp(population,
/// successes, draws)` (`draws` items drawn without replacement from
/// `population` of which `successes` count). `share` in (0, 1]; a margin of
/// 10⁻¹⁰ in the comparison keeps rounding on the conservative side.
pub(crate) fn hypergeometric_quantile(
    population: u64,
    successes: u64,
    draws: u64,
    share: f64,
) -> u64 {
    let failures = population - successes;
    let lo = draws.saturating_sub(failures);
    let hi = draws.min(successes);
    if lo >= hi {
        return lo;
    }
    let ln_total = ln_choose(population, draws);
    let ln_pmf: Vec<f64> = (lo..=hi)
        .map(|h| ln_choose(successes, h) + ln_choose(failures, draws - h) - ln_total)
        .collect();
    let peak = ln_pmf.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let pmf: Vec<f64> = ln_pmf.iter().map(|l| (l - peak).exp()).collect();
    let total: f64 = pmf.iter().sum();
    let mut tail = 0.0;
    for (i, p) in pmf.iter().enumerate().rev() {
        tail += p;
        if tail >= (share + 1e-10) * total {
            return lo + i as u64;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_ranks_keep_the_score_order_and_shuffle_ties() {
        // Untied scores: the ranks are the plain ranks, whatever the seed.
        let (r, tied) = seeded_ranks(&[0.5, -1.0, 3.0, 2.0], 9);
        assert_eq!((r, tied), (vec![1.0, 0.0, 3.0, 2.0], false));
        // Ties (−0.0 = 0.0): strict ranks that keep the score order, the
        // same for the same seed.
        let scores = [1.0, 0.0, -0.0, 1.0, 2.0, 0.0];
        let (a, tied) = seeded_ranks(&scores, 3);
        assert!(tied);
        assert_eq!(a, seeded_ranks(&scores, 3).0);
        let mut sorted = a.clone();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(sorted, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        assert!(a[1] < 3.0 && a[2] < 3.0 && a[5] < 3.0);
        assert!((3.0..5.0).contains(&a[0]) && (3.0..5.0).contains(&a[3]));
        assert_eq!(a[4], 5.0);
        // Each order of a run of 3 is about equally likely over seeds:
        // 6000 seeds, 1000 expected per order, binomial s.d. ≈ 29.
        let mut counts = std::collections::HashMap::new();
        for seed in 0..6000 {
            let (r, _) = seeded_ranks(&[7.0, 7.0, 7.0], seed);
            *counts
                .entry(r.iter().map(|&x| x as u8).collect::<Vec<_>>())
                .or_insert(0) += 1;
        }
        assert_eq!(counts.len(), 6);
        for (order, n) in counts {
            assert!((850..1150).contains(&n), "order {order:?}: {n} of 6000");
        }
    }

    #[test]
    fn quantiles_of_small_hypergeometric_laws() {
        // Hyp(10, 5, 4): P[H = h] = C(5,h)C(5,4−h)/210 = (5, 50, 100, 50, 5)/210
        // for h = 0..4 (by hand). P[H ≥ 1] = 205/210 = 0.976, P[H ≥ 2] =
        // 155/210 = 0.738.
        assert_eq!(hypergeometric_quantile(10, 5, 4, 0.95), 1);
        assert_eq!(hypergeometric_quantile(10, 5, 4, 0.7), 2);
        assert_eq!(hypergeometric_quantile(10, 5, 4, 0.976), 1);
        assert_eq!(hypergeometric_quantile(10, 5, 4, 0.977), 0);
        // All successes or none: no randomness.
        assert_eq!(hypergeometric_quantile(10, 10, 4, 0.95), 4);
        assert_eq!(hypergeometric_quantile(10, 0, 4, 0.95), 0);
        // Share 1: the minimum, max(0, draws − failures).
        assert_eq!(hypergeometric_quantile(10, 8, 5, 1.0), 3);
        // A large run: Hyp(150, 120, 14) has mean 11.2; its 5th percentile
        // is 9 (scipy.stats.hypergeom(150, 120, 14): ppf(0.05) = 9,
        // P[H ≥ 9] = sf(8) = 0.9640, P[H ≥ 10] = sf(9) = 0.8808).
        assert_eq!(hypergeometric_quantile(150, 120, 14, 0.95), 9);
    }
}
