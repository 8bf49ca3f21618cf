//! Selection policies shared by the methods: the multi-split aggregation and
//! the default policy.
//!
//! **Multi-split** (Meinshausen, Meier & Bühlmann 2009, "p-values for
//! high-dimensional regression", §2.2, with γ = ½): draw `B` random halvings
//! of the observations, each with its own seed; bound each evaluation half as
//! `split` does, at level `(1 − confidence)/2`; report the `⌈B/2⌉`-th largest
//! of the `B` bounds. For a true ε₀, let `Z` count the halvings whose bound
//! exceeds ε₀. Each does so with probability at most `(1 − confidence)/2`, so
//! `E[Z] ≤ B(1 − confidence)/2`, and by Markov's inequality
//! `P[Z ≥ B/2] ≤ 1 − confidence`, whatever the dependence between halvings.
//! The reported bound exceeds ε₀ only if `Z ≥ ⌈B/2⌉`: it is valid.
//!
//! **The default** ([`default_selection`]) depends on the method and the
//! number of observations only, never on the scores; the rule and the power
//! measurements behind it are in `benches/RESULTS.md` ("Selection policies")
//! and `docs/audit-statistics.md`.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{AuditError, Result};
use crate::observations::{Method, Selection};

/// Number of halvings of `multi-split` when the caller does not choose.
pub const DEFAULT_SPLITS: u32 = 10;

/// The seeds of the `splits` halvings of a multi-split with seed `seed`.
pub fn split_seeds(seed: u64, splits: u32) -> Vec<u64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6d75_6c74_6953_706c);
    (0..splits).map(|_| rng.next_u64()).collect()
}

/// The seeds of a `multi-split` with seed `seed` and `splits` halvings,
/// refusing `splits = 0`.
pub(crate) fn multi_split_seeds(seed: u64, splits: u32) -> Result<Vec<u64>> {
    if splits == 0 {
        return Err(AuditError::InvalidParameter {
            name: "splits",
            value: "0".into(),
            expected: "at least one random halving for `multi-split`",
        });
    }
    Ok(split_seeds(seed, splits))
}

/// Index (in `bounds`) of the `⌈B/2⌉`-th largest bound, ties broken by the
/// lower index. `bounds` must not be empty.
pub(crate) fn median_rank_index(bounds: &[f64]) -> usize {
    let mut order: Vec<usize> = (0..bounds.len()).collect();
    order.sort_by(|&a, &b| bounds[b].total_cmp(&bounds[a]).then(a.cmp(&b)));
    order[bounds.len().div_ceil(2) - 1]
}

pub use crate::method::ONE_RUN_SPLIT_FROM;

/// The default selection policy for `method` with `n` observations (scores
/// for the threshold methods, canaries for the one-run methods). It depends
/// on the method and `n` only, never on the scores. From the power study in
/// `benches/RESULTS.md` ("Selection policies"; Gaussian scores, μ from 0.5
/// to 4, 50 to 50 000 scores per class, 40 data sets per cell; the rank test
/// for the threshold methods, the symmetric guess counts for the one-run
/// methods):
///
/// - `eps-delta`, `gdp`: `bonferroni` for every `n` (the largest mean valid
///   bound in all 90 cells);
/// - `one-run` (Steinke et al.): `bonferroni` below
///   [`ONE_RUN_SPLIT_FROM`] canaries (best in 24 of 25 cells up to 2000
///   canaries), `split` from there on (best in 9 of 10 cells at 5000 and
///   10 000: with many canaries the union bound over the guess counts
///   inflates the theorem's δ term);
/// - `one-run-fdp` ((ε, δ) family): `bonferroni` for every `n` (best in all
///   35 cells);
/// - `one-run-gaussian-scores`: `bonferroni`, the only policy it takes (one
///   statistic, nothing chosen: [`crate::gaussian_scores`]);
/// - `panoramia`: `split`.
pub fn default_selection(method: Method, n: usize, seed: u64) -> Selection {
    method.default_selection(n, seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_rank() {
        // B = 4: the 2nd largest; B = 5: the 3rd largest.
        assert_eq!(median_rank_index(&[1.0, 4.0, 3.0, 2.0]), 2);
        assert_eq!(median_rank_index(&[5.0, 1.0, 4.0, 2.0, 3.0]), 4);
        assert_eq!(median_rank_index(&[7.0]), 0);
        // Ties: the lower index first.
        assert_eq!(median_rank_index(&[2.0, 2.0, 2.0]), 1);
    }

    #[test]
    fn default_depends_on_method_and_size_only() {
        assert_eq!(
            default_selection(Method::EpsDelta, 10, 1),
            Selection::Bonferroni
        );
        assert_eq!(
            default_selection(Method::Gdp, 10_000_000, 1),
            Selection::Bonferroni
        );
        assert_eq!(
            default_selection(Method::OneRun, 4999, 1),
            Selection::Bonferroni
        );
        assert_eq!(
            default_selection(Method::OneRun, 5000, 7),
            Selection::Split { seed: 7 }
        );
        assert_eq!(
            default_selection(Method::OneRunFdp, 50_000, 7),
            Selection::Bonferroni
        );
    }

    #[test]
    fn split_seeds_are_fixed_and_distinct() {
        let a = split_seeds(3, 10);
        assert_eq!(a, split_seeds(3, 10));
        assert_ne!(a, split_seeds(4, 10));
        let mut b = a.clone();
        b.sort_unstable();
        b.dedup();
        assert_eq!(b.len(), 10);
    }
}
