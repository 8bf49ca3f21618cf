//! Clopper–Pearson ("exact") confidence limits for a binomial proportion.
//!
//! For `k` successes in `n` trials and a tail probability `a` (lecture 004
//! D.5, "Clopper–Pearson exact method"):
//! - the **upper** limit `p̄` solves `P[Bin(n, p̄) ≤ k] = a` (and is 1 when `k = n`);
//! - the **lower** limit `p̲` solves `P[Bin(n, p̲) ≥ k] = a` (and is 0 when `k = 0`).
//!
//! A one-sided bound at confidence `c` uses `a = 1 − c`; a two-sided interval
//! at confidence `c` uses `a = (1 − c)/2` at each end. The tails are computed
//! in log space ([`crate::special`]) so `a` may be as small as 1e-300.
//! The root is found by bisection to about 2 ulp and the **conservative** end
//! of the final bracket is returned (the larger value for an upper limit, the
//! smaller for a lower limit), so rounding never makes an interval narrower.

use serde::{Deserialize, Serialize};

use crate::error::{AuditError, Result};
use crate::special::{ln_binomial_cdf, ln_binomial_sf};

/// A two-sided confidence interval for a proportion.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Lower limit.
    pub lower: f64,
    /// Upper limit.
    pub upper: f64,
}

fn check(successes: u64, trials: u64, tail: f64) -> Result<()> {
    if trials == 0 {
        return Err(AuditError::InvalidParameter {
            name: "trials",
            value: "0".into(),
            expected: "at least one trial",
        });
    }
    if successes > trials {
        return Err(AuditError::InvalidParameter {
            name: "successes",
            value: format!("{successes} (of {trials} trials)"),
            expected: "at most the number of trials",
        });
    }
    if !(tail.is_finite() && tail > 0.0 && tail < 1.0) {
        return Err(AuditError::InvalidParameter {
            name: "tail",
            value: tail.to_string(),
            expected: "a tail probability strictly between 0 and 1",
        });
    }
    Ok(())
}

/// Upper limit `p̄` with `P[Bin(trials, p̄) ≤ successes] = tail`.
pub fn upper_limit(successes: u64, trials: u64, tail: f64) -> Result<f64> {
    check(successes, trials, tail)?;
    Ok(upper_unchecked(successes, trials, tail.ln()))
}

/// Lower limit `p̲` with `P[Bin(trials, p̲) ≥ successes] = tail`.
pub fn lower_limit(successes: u64, trials: u64, tail: f64) -> Result<f64> {
    check(successes, trials, tail)?;
    Ok(lower_unchecked(successes, trials, tail.ln()))
}

/// Two-sided interval at `confidence` (each end at tail `(1 − confidence)/2`).
pub fn two_sided(successes: u64, trials: u64, confidence: f64) -> Result<Interval> {
    crate::error::check_confidence(confidence)?;
    let tail = (1.0 - confidence) / 2.0;
    Ok(Interval {
        lower: lower_limit(successes, trials, tail)?,
        upper: upper_limit(successes, trials, tail)?,
    })
}

fn midpoint(lo: f64, hi: f64) -> f64 {
    if lo > 0.0 && hi > 8.0 * lo {
        (lo * hi).sqrt()
    } else {
        0.5 * (lo + hi)
    }
}

fn converged(lo: f64, hi: f64) -> bool {
    hi - lo <= 4.0 * f64::EPSILON * hi.max(f64::MIN_POSITIVE)
}

/// Bisects `[lo, hi]` (at most 400 halvings, geometric while the bracket
/// spans more than a factor 8) towards the point where `below_limit` turns
/// false: `below_limit(mid)` moves the low end up, else the high end down.
/// Returns the final bracket.
fn bisect(mut lo: f64, mut hi: f64, below_limit: impl Fn(f64) -> bool) -> (f64, f64) {
    for _ in 0..400 {
        if converged(lo, hi) {
            break;
        }
        let mid = midpoint(lo, hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if below_limit(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo, hi)
}

/// Upper limit for validated inputs; `ln_tail = ln a`.
pub(crate) fn upper_unchecked(k: u64, n: u64, ln_tail: f64) -> f64 {
    if k >= n {
        return 1.0;
    }
    let nf = n as f64;
    if k == 0 {
        // Closed form: (1 − p)^n = a.
        return (-(ln_tail / nf).exp_m1()).min(1.0);
    }
    // P[Bin(n, p) ≤ k] decreases in p. At p = k/n it is ≥ ½ (the median of
    // Bin(n, k/n) is k), so k/n is a valid low end when a < ½.
    let lo = if ln_tail < -std::f64::consts::LN_2 {
        k as f64 / nf
    } else {
        0.0
    };
    // The outer (upper) end of the final bracket.
    bisect(lo, 1.0, |mid| {
        ln_binomial_cdf(k, n, mid, 1.0 - mid) > ln_tail
    })
    .1
}

/// Lower limit for validated inputs; `ln_tail = ln a`.
pub(crate) fn lower_unchecked(k: u64, n: u64, ln_tail: f64) -> f64 {
    if k == 0 {
        return 0.0;
    }
    let nf = n as f64;
    if k >= n {
        // Closed form: p^n = a.
        return (ln_tail / nf).exp();
    }
    let hi = if ln_tail < -std::f64::consts::LN_2 {
        k as f64 / nf
    } else {
        1.0
    };
    // The outer (lower) end of the final bracket.
    bisect(0.0, hi, |mid| {
        ln_binomial_sf(k, n, mid, 1.0 - mid) < ln_tail
    })
    .0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(a: f64, b: f64) -> f64 {
        ((a - b) / b).abs()
    }

    #[test]
    fn closed_forms_at_the_ends() {
        // k = 0: upper = 1 − a^{1/n}; k = n: lower = a^{1/n} (closed forms).
        for &(n, a) in &[(1_u64, 0.05), (100, 0.05), (100_000, 1e-10), (10, 1e-12)] {
            let up = upper_limit(0, n, a).unwrap();
            assert!(rel(up, 1.0 - a.powf(1.0 / n as f64)) < 1e-10, "n={n}");
            let lo = lower_limit(n, n, a).unwrap();
            assert!(rel(lo, a.powf(1.0 / n as f64)) < 1e-14);
            assert_eq!(upper_limit(n, n, a).unwrap(), 1.0);
            assert_eq!(lower_limit(0, n, a).unwrap(), 0.0);
        }
    }

    #[test]
    fn limits_solve_their_defining_equations() {
        // The defining tail equations hold to high relative precision, for
        // tails down to 1e-12 .
        for &(k, n) in &[
            (1_u64, 10_u64),
            (174, 100_000),
            (4922, 100_000),
            (37, 40),
            (5, 1_000_000),
        ] {
            for a in [0.05, 1e-6, 1e-12] {
                let up = upper_limit(k, n, a).unwrap();
                let got = ln_binomial_cdf(k, n, up, 1.0 - up).exp();
                assert!(rel(got, a) < 1e-9, "upper k={k} n={n} a={a}: {got}");
                let lo = lower_limit(k, n, a).unwrap();
                let got = ln_binomial_sf(k, n, lo, 1.0 - lo).exp();
                assert!(rel(got, a) < 1e-9, "lower k={k} n={n} a={a}: {got}");
            }
        }
    }

    #[test]
    fn lecture_vectors() {
        // Kazmi et al. 2024/004 D.6: two-sided CP at p = 1e-10 for k = 4922, n = 1e5:
        // lower 0.0449180 (α⁺ = 0.955082); k = 174: upper / lower 0.0027445 / 0.0010182.
        let i = two_sided(4922, 100_000, 1.0 - 1e-10).unwrap();
        assert!((i.lower - 0.044_918_0).abs() < 5e-8, "{}", i.lower);
        assert!((1.0 - i.lower - 0.955_082).abs() < 5e-7);
        let i = two_sided(174, 100_000, 1.0 - 1e-10).unwrap();
        assert!((i.upper - 0.002_744_5).abs() < 5e-8, "{}", i.upper);
        assert!((i.lower - 0.001_018_2).abs() < 5e-8, "{}", i.lower);
        // One-sided at 1e-10: lower for 4922 is 0.0449862, upper for 174 is 0.0027259.
        assert!((lower_limit(4922, 100_000, 1e-10).unwrap() - 0.044_986_2).abs() < 5e-8);
        assert!((upper_limit(174, 100_000, 1e-10).unwrap() - 0.002_725_9).abs() < 5e-8);
    }

    #[test]
    fn rejects_bad_arguments() {
        assert!(upper_limit(3, 2, 0.05).is_err());
        assert!(upper_limit(0, 0, 0.05).is_err());
        assert!(lower_limit(1, 2, 0.0).is_err());
        assert!(lower_limit(1, 2, f64::NAN).is_err());
        assert!(two_sided(1, 2, 1.0).is_err());
    }
}
