//! The zero-threshold audit: the one test "member iff score > 0", fixed
//! before looking at the data, with Clopper–Pearson upper limits on both
//! error rates turned into ε by Annamalai et al. 2024, Eq. (1).
//!
//! Validity: over independent runs the false positives at a fixed threshold
//! are Bin(n₀, FPR) and the false negatives Bin(n₁, FNR). Each one-sided
//! Clopper–Pearson limit at tail `(1 − confidence)/2` exceeds its rate with
//! probability at least `1 − (1 − confidence)/2`, so both hold together with
//! probability at least `confidence` (union bound). Any (ε, δ)-DP mechanism
//! has `FPR + e^ε·FNR ≥ 1 − δ` and `FNR + e^ε·FPR ≥ 1 − δ` for every test
//! (Kairouz, Oh & Viswanath 2015, Thm 2.1), so when both limits hold, ε is
//! at least `epsilon_from_error_bounds(FPR̄, FNR̄, δ)`. Nothing is searched:
//! it is the "How to add an audit statistic" example of `ARCHITECTURE.md`,
//! weaker than `eps-delta` but valid for any mechanism, and useful for
//! scores that are symmetric about 0 for non-members (Dirac, inner product).

use crate::bound::{
    BoundedOn, EpsilonLowerBound, Evidence, MechanismAssumption, ThresholdEvidence, ThresholdTest,
};
use crate::clopper_pearson::upper_limit;
use crate::error::{check_confidence, check_delta, Result};
use crate::method::{Method, Selection};
use crate::metrics::metrics;
use crate::observations::Observations;
use crate::region::epsilon_from_error_bounds;

/// The threshold, fixed in advance: member iff `score > THRESHOLD`.
pub const THRESHOLD: f64 = 0.0;

/// The zero-threshold ε lower bound at `confidence` and `delta`.
pub fn zero_threshold_lower_bound(
    obs: &Observations,
    confidence: f64,
    delta: f64,
) -> Result<EpsilonLowerBound> {
    check_confidence(confidence)?;
    check_delta(delta)?;
    let (members, nonmembers) = obs.classes();
    let false_positives = nonmembers.iter().filter(|&&s| s > THRESHOLD).count() as u64;
    let false_negatives = members.iter().filter(|&&s| s <= THRESHOLD).count() as u64;
    let (n1, n0) = (members.len() as u64, nonmembers.len() as u64);
    let tail_per_rate = (1.0 - confidence) / 2.0;
    let fpr_upper = upper_limit(false_positives, n0, tail_per_rate)?;
    let fnr_upper = upper_limit(false_negatives, n1, tail_per_rate)?;
    Ok(EpsilonLowerBound {
        epsilon: epsilon_from_error_bounds(fpr_upper, fnr_upper, delta),
        confidence,
        delta,
        method: Method::ZeroThreshold,
        selection: Selection::Fixed,
        valid_at_confidence: true,
        assumes: MechanismAssumption::Nothing,
        bounded_on: BoundedOn::All,
        split_bounds: None,
        metrics: metrics(obs, confidence)?,
        evidence: Evidence::Threshold(ThresholdEvidence {
            threshold: THRESHOLD,
            false_positives,
            nonmembers: n0,
            false_negatives,
            members: n1,
            test: ThresholdTest::ClopperPearson {
                fpr_upper,
                fnr_upper,
                tail_per_rate,
            },
            statements: 2,
            mu_lower: None,
            candidates: 1,
        }),
    })
}
