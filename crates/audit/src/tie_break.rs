//! One-run guess sets that cut a run of tied scores: the count of correct
//! guesses that most random tie-breaks reach.
//!
//! A guess set "the `k+` highest scores" that ends inside a run of `L` tied
//! scores takes `j` of them; which `j` is not a function of the scores. A
//! tie-break by independent fair coins (a uniformly random order of the run)
//! keeps the premise of Steinke, Nasr & Jagielski 2023, Thm 3.1 (the guesses
//! are a function of the output and of randomness independent of the
//! inclusion bits, and `r = k+ + k−` is fixed), so for every such tie-break
//! `U` the test at level `γa` is valid. The correct guesses the cut run
//! contributes are then hypergeometric: `H ~ Hyp(L, M, j)` with `M` the
//! run's members (for the positive guesses; its non-members for the
//! negative ones).
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
//! (one run cut from both ends).

use crate::special::ln_gamma;

/// The share γ of tie-breaks whose count is reported; the test runs at
/// `γ` times the level. Fixed in advance: 0.95 costs untied scores 5 % of
/// the level and takes a cut run's count at the 5th percentile of its law
/// instead of its minimum.
pub const TIE_BREAK_SHARE: f64 = 0.95;

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
