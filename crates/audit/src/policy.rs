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

/// The most halvings a `multi-split` may ask for, whatever the number of
/// rows. The median-rank aggregation gains nothing measurable beyond a few
/// hundred halvings, and each one has a fixed cost (its candidate search).
pub const MAX_SPLITS: u32 = 10_000;

/// The most rows × halvings a `multi-split` may ask for: each halving
/// copies and sorts its rows, so the work grows with their product
/// (2·10⁹ is about 10 minutes at [`SECONDS_PER_SPLIT_ROW`]).
pub const MAX_SPLIT_ROWS: u64 = 2_000_000_000;

/// Seconds per row and halving of a `multi-split`, for the estimate in a
/// refusal: measured on the development machine (2-core EPYC at load 11,
/// release build, 10⁶ and 10⁷ rows, 2026-11-28) from 0.8·10⁻⁷ (f-DP
/// one-run) to 6.5·10⁻⁷ (gdp); eps-delta 1.9–2.1·10⁻⁷, one-run
/// 1.1–1.4·10⁻⁷ (`benches/RESULTS.md`, "Audit statistics").
pub const SECONDS_PER_SPLIT_ROW: f64 = 3e-7;

/// The seeds of a `multi-split` with seed `seed` and `splits` halvings of
/// `rows` rows, refusing `splits = 0` and more work than [`MAX_SPLITS`] and
/// [`MAX_SPLIT_ROWS`] allow, with the estimate (before any of it is done).
pub(crate) fn multi_split_seeds(seed: u64, splits: u32, rows: usize) -> Result<Vec<u64>> {
    if splits == 0 {
        return Err(AuditError::InvalidParameter {
            name: "splits",
            value: "0".into(),
            expected: "at least one random halving for `multi-split`",
        });
    }
    check_split_work(splits, rows)?;
    Ok(split_seeds(seed, splits))
}

/// Refuses a `multi-split` of `splits` halvings of `rows` rows beyond
/// [`MAX_SPLITS`] or [`MAX_SPLIT_ROWS`], naming `splits`, the estimated work
/// and time, and the largest `splits` accepted for `rows`.
pub fn check_split_work(splits: u32, rows: usize) -> Result<()> {
    let work = u64::from(splits).saturating_mul(rows as u64);
    if splits <= MAX_SPLITS && work <= MAX_SPLIT_ROWS {
        return Ok(());
    }
    let most = (MAX_SPLIT_ROWS / (rows as u64).max(1)).min(u64::from(MAX_SPLITS));
    let seconds = work as f64 * SECONDS_PER_SPLIT_ROW;
    Err(AuditError::TooMuchWork {
        name: "splits",
        value: splits.to_string(),
        estimate: format!(
            "{splits} random halvings of {rows} rows are {work:.1e} row-halvings, an estimated {} \
             (at {SECONDS_PER_SPLIT_ROW:e} s per row and halving)",
            human_seconds(seconds)
        ),
        maximum: format!(
            "at most {most} splits for {rows} rows (at most {MAX_SPLITS} splits and \
             {MAX_SPLIT_ROWS:.0e} rows × splits; a few dozen are usual, the default is {DEFAULT_SPLITS})"
        ),
    })
}

/// `seconds` in the largest unit that keeps it readable.
fn human_seconds(seconds: f64) -> String {
    if seconds < 120.0 {
        format!("{seconds:.0} s")
    } else if seconds < 7200.0 {
        format!("{:.0} min", seconds / 60.0)
    } else if seconds < 172_800.0 {
        format!("{:.1} h", seconds / 3600.0)
    } else {
        format!("{:.0} days", seconds / 86_400.0)
    }
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
    fn absurd_splits_are_refused_with_the_estimate() {
        assert!(check_split_work(10, 10_000_000).is_ok());
        assert!(check_split_work(MAX_SPLITS, 2000).is_ok());
        // The call: 10⁶ halvings of 2000 rows.
        let e = multi_split_seeds(0, 1_000_000, 2000)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`splits` = 1000000"), "{e}");
        assert!(e.contains("2.0e9 row-halvings"), "{e}");
        assert!(e.contains("at most 10000 splits for 2000 rows"), "{e}");
        // 10⁷ rows: 200 halvings at most (2·10⁹ / 10⁷).
        let e = check_split_work(201, 10_000_000).unwrap_err().to_string();
        assert!(e.contains("at most 200 splits for 10000000 rows"), "{e}");
        assert!(check_split_work(200, 10_000_000).is_ok());
        assert_eq!(human_seconds(30.0), "30 s");
        assert_eq!(human_seconds(3.0 * 86_400.0), "3 days");
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
