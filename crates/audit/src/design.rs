//! The inclusion design the one-run theorems need, checked on the data.
//!
//! Both one-run audits ([`crate::one_run`], Steinke, Nasr & Jagielski 2023,
//! Algorithm 1 line 3 and Theorem 3.1; [`crate::one_run_fdp`], Mahloujifar,
//! Melis & Chaudhuri 2024, the same game) assume that every canary was
//! included **independently with probability ½**. Their proofs use it at
//! every guess: before looking at the output, a guess is right with
//! probability exactly ½. When the design is different, nothing bounds the
//! number of correct guesses: with 10 % of the canaries included, guessing
//! "out" for every canary is right 90 % of the time on scores that carry no
//! information at all, and the theorems turn that into a large ε.
//!
//! The number of included canaries is the one fact about the design the
//! data show. Under the design it is Binomial(m, ½), so an uneven count is
//! evidence against the design: [`inclusion_test`] computes the exact
//! two-sided binomial p-value
//! `p = min{1, 2 · P[Bin(m, ½) ≤ min(k, m − k)]}` for `k` included of `m`,
//! and the one-run audits refuse, with the reason, when `p` is below
//! [`DESIGN_LEVEL`]. The p-value is reported with every one-run bound.
//!
//! **What the check costs and gives.** When the design holds, the audits
//! refuse with probability at most [`DESIGN_LEVEL`] and their bounds are
//! valid as before (refusing never turns a valid bound into an invalid one).
//! When it does not hold, no bound is owed, and the check is what stands
//! between an unbalanced file and a large ε. It is twice as sensitive as any
//! imbalance a guess set can exploit: a guess set of the candidate family
//! makes at most `m/2` one-sided guesses, so the drift the imbalance gives
//! its count is at most `1/√2` (bonferroni, all canaries) or `½` (split, half
//! of them) of the drift the check sees, in standard deviations. The
//! coverage tests (`crates/audit/tests/coverage_design.rs`) run null scores
//! at member fractions from 0.01 to 0.49 and numbers of canaries from 100 to
//! 10⁵ and check that every default bound is 0 or the input is refused at
//! least as often as a valid test allows.

use serde::{Deserialize, Serialize};

use crate::error::{AuditError, Result};
use crate::special::ln_binomial_cdf;

/// The level below which the inclusion test's p-value refuses a one-run
/// audit. Fixed in advance; stated in every refusal and every one-run bound.
pub const DESIGN_LEVEL: f64 = 1e-3;

/// The inclusion count of a set of canaries and its test against
/// independent inclusion with probability ½.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct InclusionDesign {
    /// Canaries (`m`).
    pub canaries: u64,
    /// Canaries included (`member = 1`).
    pub included: u64,
    /// Exact two-sided binomial p-value of `included` under Bin(m, ½).
    pub p_value: f64,
    /// The level below which the audit refuses ([`DESIGN_LEVEL`]).
    pub level: f64,
}

impl InclusionDesign {
    /// Whether the count is plausible at [`DESIGN_LEVEL`].
    pub fn plausible(&self) -> bool {
        self.p_value >= self.level
    }
}

/// The exact two-sided binomial test of `included` of `canaries` against
/// Bin(canaries, ½). The distribution is symmetric, so the two-sided p-value
/// is twice the smaller tail (capped at 1).
pub fn inclusion_test(canaries: u64, included: u64) -> InclusionDesign {
    let included = included.min(canaries);
    let smaller = included.min(canaries - included);
    let p_value = if canaries == 0 || 2 * smaller == canaries {
        1.0
    } else {
        (2.0 * ln_binomial_cdf(smaller, canaries, 0.5, 0.5).exp()).min(1.0)
    };
    InclusionDesign {
        canaries,
        included,
        p_value,
        level: DESIGN_LEVEL,
    }
}

/// The inclusion test of `members` (one flag per canary); an
/// [`AuditError::InclusionDesign`] when the count is implausible under
/// inclusion with probability ½.
pub fn check_inclusion(members: &[bool]) -> Result<InclusionDesign> {
    let included = members.iter().filter(|&&m| m).count() as u64;
    let design = inclusion_test(members.len() as u64, included);
    if design.plausible() {
        Ok(design)
    } else {
        Err(AuditError::InclusionDesign {
            canaries: design.canaries,
            included: design.included,
            p_value: design.p_value,
            level: design.level,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p_values_match_exact_sums() {
        // P[Bin(10, ½) ≤ 1] = 11/1024, two-sided 22/1024 (exact).
        let d = inclusion_test(10, 1);
        assert!((d.p_value - 22.0 / 1024.0).abs() < 1e-14, "{}", d.p_value);
        assert_eq!(inclusion_test(10, 9).p_value, d.p_value);
        // Balanced counts: p = 1; one off balance in an odd m: p = 1 too.
        assert_eq!(inclusion_test(1000, 500).p_value, 1.0);
        assert_eq!(inclusion_test(11, 5).p_value, 1.0);
        // 450 of 1000: 2·P[Bin(1000, ½) ≤ 450] = 0.0017305 (scipy.stats.binomtest
        // 1.17, two-sided, which sums the outcomes at most as likely: the same
        // for a symmetric distribution).
        let d = inclusion_test(1000, 450);
        assert!((d.p_value - 0.001_730_5).abs() < 1e-7, "{}", d.p_value);
        assert!(d.plausible());
        // 440 of 1000: 1.5e-4, refused.
        assert!(!inclusion_test(1000, 440).plausible());
    }

    #[test]
    fn refusal_names_the_counts() {
        let mut members = vec![false; 1000];
        members[..100].iter_mut().for_each(|m| *m = true);
        let err = check_inclusion(&members).unwrap_err().to_string();
        assert!(err.contains("100 of 1000"), "{err}");
        assert!(err.contains("probability 1/2"), "{err}");
        assert!(check_inclusion(&[true, false, true, false]).is_ok());
    }
}
