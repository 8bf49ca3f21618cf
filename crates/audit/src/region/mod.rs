//! Threshold audits from two score samples: the Clopper–Pearson (ε, δ)
//! region estimator and the GDP audit.
//!
//! - (ε, δ) region: Annamalai, Balle, Hayes & De Cristofaro 2024 ("To
//!   Shuffle or not to Shuffle"), §3.2 Eq. (1) and App. B Algorithm 5; the
//!   lecture notes of Karimireddy 2025 (privacy auditing). For a threshold
//!   with upper confidence bounds FPR̄, FNR̄:
//!   `ε = max{ln((1 − FPR̄ − δ)/FNR̄), ln((1 − FNR̄ − δ)/FPR̄), 0}`.
//! - GDP: Cebere, Bellet & Papernot 2024, App. A (Lemma 1, Corollary 1):
//!   `μ⁻ = Φ⁻¹(1 − FPR̄) − Φ⁻¹(FNR̄)`, then ε at δ from the exact μ-GDP
//!   δ(ε) by bisection ([`crate::gaussian::gdp_epsilon`]). μ⁻ is a valid lower
//!   bound on the smallest μ for which the mechanism is μ-GDP; the ε derived
//!   from it is a lower bound on the mechanism's ε(δ) only if its trade-off
//!   curve is Gaussian-shaped (their Remark 3: the approximation "can
//!   underestimate the privacy guarantees" of e.g. subsampled mechanisms).
//!   δ must be positive: a μ-GDP curve with μ > 0 has no finite ε at δ = 0.
//!
//! **Selection** ([`Selection`]; the arguments are in
//! `docs/audit-statistics.md`):
//! - `same-data`: the best of all thresholds on all scores, each error rate
//!   bounded at tail `(1 − confidence)/2`. What the papers do; not valid.
//! - `split`: the best threshold on a random half, both rates bounded on the
//!   other half at tail `(1 − confidence)/2` each (a union bound over the two).
//! - `multi-split`: see [`crate::policy`].
//! - `bonferroni`: a family of thresholds fixed in advance by the class sizes
//!   alone: the order statistics of the non-member scores at ranks
//!   `k ∈ G(n₀)` and of the member scores at ranks `j ∈ G(n₁)`, where `G(n)`
//!   is the rank grid of [`rank_grid`] (0, 1, 4, 16, 64, … up to n/2).
//!   At the non-member threshold of rank k the FPR is the survival function
//!   of the non-member scores at their (k+1)-th largest value, which is
//!   stochastically smaller than the (k+1)-th smallest of n₀ uniforms, so the
//!   Clopper–Pearson upper limit for k of n₀ bounds it with the usual tail
//!   (exactly, and conservatively under ties); the member count below that
//!   threshold is binomial given the threshold, since the members are
//!   independent of the non-members. The member-rank thresholds are the
//!   mirror image. Every one of the `S = 2(|G(n₀)| + |G(n₁)|)` one-sided
//!   statements is made at tail `(1 − confidence)/S`, so all hold together,
//!   and the maximum over the family is valid. When the pooled scores take
//!   at most [`FEW_VALUES_MAX`] distinct values (binary outputs, rounded
//!   scores), the family is instead one event `score ≥ v` per value, both
//!   rates bounded by Clopper–Pearson (`support`; the argument and its
//!   condition are in `docs/audit-statistics.md`).
//!
//! Requirements, for every policy: the member scores are independent and
//! identically distributed, so are the non-member scores, and the two
//! classes are independent (e.g. one score per independently trained model).
//!
//! **The sweep** (`same-data`, and the selection half of `split`). The rule
//! is "member iff score > τ". Between two consecutive distinct scores nothing
//! changes, so the candidate thresholds are the distinct non-member scores (a
//! threshold just below a member run is always dominated by the one at the
//! preceding non-member value: same FN, more FP). Both classes are sorted
//! once (O(N log N)). Both statistics decrease in both error-rate bounds, and
//! the bounds increase in the counts, so over a contiguous range of
//! candidates the statistic is at most its value at (smallest FP, smallest
//! FN) of the range. A best-first branch-and-bound over candidate ranges
//! therefore finds the maximum over all thresholds (to within 1e-9) while
//! evaluating Clopper–Pearson limits at only a few hundred candidates, even
//! for 10⁸ scores.

mod points;
mod rank;
mod statistic;
mod support;
mod sweep;

pub use points::{empirical_points, error_points, ErrorPoint};
pub use rank::{rank_grid, RANK_GRID_RATIO};
pub use statistic::{epsilon_from_error_bounds, mu_from_error_bounds};
pub use support::FEW_VALUES_MAX;

use crate::bound::{
    BoundedOn, EpsilonLowerBound, Evidence, MechanismAssumption, ThresholdEvidence, ThresholdTest,
};
use crate::error::{check_confidence, check_delta, AuditError, Result};
use crate::gaussian::gdp_epsilon;
use crate::interrupt::Interrupt;
use crate::metrics::{metrics_sorted, Metrics};
use crate::observations::{Method, Observations, Selection};
use crate::policy::{median_rank_index, multi_split_seeds};
use rank::{bonferroni_best, split_evidence};
use statistic::Statistic;
use support::{few_values, support_best};
use sweep::{pointwise_evidence, sweep, Sorted};

/// Settings shared by the threshold audits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RegionConfig {
    /// Confidence of the bound, e.g. 0.95.
    pub confidence: f64,
    /// δ of the (ε, δ) statement, in [0, 1).
    pub delta: f64,
    /// Threshold selection policy (`split`, `multi-split`, `bonferroni` or
    /// `same-data`; `fixed` is refused).
    pub selection: Selection,
}

/// What a threshold audit found, before the method turns it into ε.
struct Found {
    evidence: ThresholdEvidence,
    /// The statistic's bound: ε (eps-delta) or μ (gdp), at least 0.
    value: f64,
    bounded_on: BoundedOn,
    /// Multi-split: every split's value.
    split_values: Option<Vec<f64>>,
    metrics: Metrics,
}

/// Chooses the threshold (per the selection policy) and bounds the
/// statistic on the bounding data.
fn select_and_count(
    obs: &Observations,
    cfg: &RegionConfig,
    stat: Statistic,
    stop: Interrupt,
) -> Result<Found> {
    check_confidence(cfg.confidence)?;
    check_delta(cfg.delta)?;
    let seeds = match cfg.selection {
        Selection::MultiSplit { seed, splits } => multi_split_seeds(seed, splits, obs.len())?,
        _ => Vec::new(),
    };
    let all = Sorted::of(obs);
    stop.check("threshold audit")?;
    let metrics = metrics_sorted(&all.members, &all.nonmembers, cfg.confidence);
    let found = |(evidence, value): (ThresholdEvidence, f64), bounded_on| Found {
        evidence,
        value,
        bounded_on,
        split_values: None,
        metrics: metrics.clone(),
    };
    match cfg.selection {
        Selection::SameData => {
            let tail = (1.0 - cfg.confidence) / 2.0;
            let best = sweep(&all, tail, stat);
            let ev = pointwise_evidence(&all, best.threshold, tail, best.candidates);
            let value = match ev.test {
                ThresholdTest::ClopperPearson {
                    fpr_upper,
                    fnr_upper,
                    ..
                } => stat.eval(fpr_upper, fnr_upper).max(0.0),
                ThresholdTest::Rank { .. } => 0.0,
            };
            Ok(found((ev, value), BoundedOn::All))
        }
        Selection::Bonferroni => Ok(found(
            match few_values(&all) {
                Some(values) => support_best(&all, &values, cfg.confidence, stat),
                None => bonferroni_best(&all, cfg.confidence, stat),
            },
            BoundedOn::All,
        )),
        Selection::Split { seed } => Ok(found(
            split_evidence(obs, seed, cfg.confidence, stat)?,
            BoundedOn::EvaluationHalf { seed },
        )),
        Selection::MultiSplit { .. } => {
            let half_level = 1.0 - (1.0 - cfg.confidence) / 2.0;
            let all = seeds
                .iter()
                .map(|&s| {
                    stop.check("multi-split")?;
                    split_evidence(obs, s, half_level, stat)
                })
                .collect::<Result<Vec<_>>>()?;
            let values: Vec<f64> = all.iter().map(|(_, v)| *v).collect();
            let i = median_rank_index(&values);
            Ok(Found {
                evidence: all[i].0.clone(),
                value: values[i],
                bounded_on: BoundedOn::EvaluationHalf { seed: seeds[i] },
                split_values: Some(values),
                metrics,
            })
        }
        Selection::Fixed => Err(AuditError::InvalidParameter {
            name: "selection",
            value: cfg.selection.name().into(),
            expected: "`bonferroni`, `split`, `multi-split` or `same-data` for threshold \
                       audits (`fixed` is for one-run guess counts)",
        }),
    }
}

fn finish(
    cfg: &RegionConfig,
    method: Method,
    epsilon: f64,
    found: Found,
    split_bounds: Option<Vec<f64>>,
) -> EpsilonLowerBound {
    EpsilonLowerBound {
        epsilon,
        confidence: cfg.confidence,
        delta: cfg.delta,
        method,
        selection: cfg.selection,
        valid_at_confidence: cfg.selection.is_valid(),
        assumes: match method {
            Method::Gdp => MechanismAssumption::GaussianTradeoff,
            _ => MechanismAssumption::Nothing,
        },
        bounded_on: found.bounded_on,
        split_bounds,
        metrics: found.metrics,
        evidence: Evidence::Threshold(found.evidence),
    }
}

/// The (ε, δ)-region lower bound of Annamalai et al. 2024 (Eq. (1): the
/// (ε, δ) trade-off curve), tested by the rank test at the thresholds the
/// selection policy allows (Clopper–Pearson limits on both rates, their
/// Algorithm 5, for `same-data`).
pub fn eps_delta_lower_bound(obs: &Observations, cfg: &RegionConfig) -> Result<EpsilonLowerBound> {
    eps_delta_interruptible(obs, cfg, Interrupt::NEVER)
}

/// [`eps_delta_lower_bound`], asking `stop` between units of work.
pub fn eps_delta_interruptible(
    obs: &Observations,
    cfg: &RegionConfig,
    stop: Interrupt,
) -> Result<EpsilonLowerBound> {
    let mut found = select_and_count(obs, cfg, Statistic::EpsDelta { delta: cfg.delta }, stop)?;
    let split_bounds = found.split_values.take();
    let epsilon = found.value;
    Ok(finish(cfg, Method::EpsDelta, epsilon, found, split_bounds))
}

/// The GDP audit of Cebere et al. 2024 App. A: a μ lower bound (the rank
/// test of the Gaussian trade-off curves `G_μ`; their Lemma 1 with
/// Clopper–Pearson limits for `same-data`), then ε at δ for μ-GDP. Needs
/// δ > 0.
pub fn gdp_lower_bound(obs: &Observations, cfg: &RegionConfig) -> Result<EpsilonLowerBound> {
    gdp_interruptible(obs, cfg, Interrupt::NEVER)
}

/// [`gdp_lower_bound`], asking `stop` between units of work.
pub fn gdp_interruptible(
    obs: &Observations,
    cfg: &RegionConfig,
    stop: Interrupt,
) -> Result<EpsilonLowerBound> {
    check_gdp_delta(cfg.delta)?;
    let mut found = select_and_count(obs, cfg, Statistic::Gdp, stop)?;
    let mu = found.value;
    found.evidence.mu_lower = Some(mu);
    let epsilon = gdp_epsilon(mu, cfg.delta);
    let split_bounds = found
        .split_values
        .take()
        .map(|all| all.iter().map(|&m| gdp_epsilon(m, cfg.delta)).collect());
    Ok(finish(cfg, Method::Gdp, epsilon, found, split_bounds))
}

/// δ > 0 for the methods that convert a μ-GDP bound to ε at δ.
pub(crate) fn check_gdp_delta(delta: f64) -> Result<()> {
    check_delta(delta)?;
    if delta == 0.0 {
        return Err(AuditError::InvalidParameter {
            name: "delta",
            value: "0".into(),
            expected: "δ > 0 for a GDP-derived ε: a μ-GDP mechanism with μ > 0 is not (ε, 0)-DP \
                       for any finite ε (use eps-delta, or one-run, for δ = 0)",
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rank_test::{Curve, RankStatement, RankTest};

    #[test]
    fn lecture_epsilon_and_mu() {
        // Karimireddy 2025 (lecture notes, privacy auditing): α⁺ = 0.95509
        // and β⁺ = 0.00274 (rounded), δ = 1e-5; Eq. (1) of Annamalai et al.
        // gives ln((1 − 1e-5 − 0.95509)/0.00274) = 2.7965 and Lemma 1 of
        // Cebere et al. μ⁻ = 1.0810 (both by hand from the rounded rates).
        // Here α⁺ is the miss rate (FNR) and β⁺ the FPR.
        let eps = epsilon_from_error_bounds(0.00274, 0.95509, 1e-5);
        assert!((eps - 2.7965).abs() < 5e-5, "{eps}");
        let mu = mu_from_error_bounds(0.00274, 0.95509);
        assert!((mu - 1.0810).abs() < 5e-5, "{mu}");
        // Symmetric in the two rates.
        assert_eq!(epsilon_from_error_bounds(0.95509, 0.00274, 1e-5), eps);
    }

    #[test]
    fn lecture_counts_end_to_end() {
        // Karimireddy 2025: 100k runs per side, TP = 4922, FP = 174,
        // Clopper–Pearson at p = 1e-10 gives α⁺ ≤ 0.95509 and β⁺ = 0.00274;
        // unrounded (two-sided, 5e-11 per tail): 0.955082 and 0.0027445.
        let n = 100_000_usize;
        let mut scores = Vec::with_capacity(2 * n);
        let mut members = Vec::with_capacity(2 * n);
        for i in 0..n {
            scores.push(if i < 4922 { 1.0 } else { 0.0 });
            members.push(true);
            scores.push(if i < 174 { 1.0 } else { 0.0 });
            members.push(false);
        }
        let obs = Observations::new(scores, members).unwrap();
        let cfg = RegionConfig {
            confidence: 1.0 - 1e-10,
            delta: 1e-5,
            selection: Selection::SameData,
        };
        let b = eps_delta_lower_bound(&obs, &cfg).unwrap();
        let Evidence::Threshold(ev) = &b.evidence else {
            panic!("threshold evidence")
        };
        assert_eq!(
            (ev.false_positives, ev.false_negatives),
            (174, n as u64 - 4922)
        );
        let ThresholdTest::ClopperPearson {
            fpr_upper,
            fnr_upper,
            ..
        } = ev.test
        else {
            panic!("same-data bounds both rates: {:?}", ev.test)
        };
        assert!((fnr_upper - 0.955_082).abs() < 5e-7, "{fnr_upper}");
        assert!((fpr_upper - 0.002_744_5).abs() < 5e-8, "{fpr_upper}");
        // ln((1 − 1e-5 − 0.955082)/0.0027445) with the unrounded bounds.
        let expected = ((1.0 - 1e-5 - fnr_upper) / fpr_upper).ln();
        assert!((b.epsilon - expected).abs() < 1e-12);
        assert!((b.epsilon - 2.7953).abs() < 5e-4, "{}", b.epsilon);
        let g = gdp_lower_bound(&obs, &cfg).unwrap();
        let Evidence::Threshold(gev) = &g.evidence else {
            panic!("threshold evidence")
        };
        // μ⁻ from the unrounded bounds is within rounding of the lecture's 1.081.
        assert!((gev.mu_lower.unwrap() - 1.081).abs() < 1e-3);
        assert!(!b.valid_at_confidence);
    }

    #[test]
    fn bonferroni_bounds_by_the_rank_not_the_tied_count() {
        // Non-members: 14 at 5.0, 14 at 1.0, 172 distinct values in
        // (−0.2, 0]; members: 100 at 2.0 and 100 below everything (−1.0), so
        // only the non-member ranks help. (Too many distinct values for the
        // support family of `support`.)
        // Ranks 0, 1 and 4 give the threshold 5.0 (no true positive); rank 16
        // gives the tied value 1.0, the 17th largest non-member, with 14
        // non-members above it. Its FPR is bounded as if 16 were: only the
        // statement of rank 16 is in the union.
        let low: Vec<f64> = (0..172).map(|i| -f64::from(i) * 1e-3).collect();
        let neg = [[5.0; 14].as_slice(), &[1.0; 14], &low].concat();
        let pos = [[2.0; 100], [-1.0; 100]].concat();
        let obs = Observations::from_classes(&pos, &neg).unwrap();
        let cfg = RegionConfig {
            confidence: 0.95,
            delta: 0.0,
            selection: Selection::Bonferroni,
        };
        let b = eps_delta_lower_bound(&obs, &cfg).unwrap();
        let Evidence::Threshold(ev) = &b.evidence else {
            panic!("threshold evidence")
        };
        // Ranks {0, 1, 4, 16, 64} per class of 200: 10 statements, one
        // rank test each.
        assert_eq!(ev.statements, 10);
        assert_eq!(
            ev.test,
            ThresholdTest::Rank {
                class: "non-member",
                rank: 16,
                level: (1.0 - 0.95) / 10.0
            }
        );
        assert_eq!(
            (ev.threshold, ev.false_positives, ev.false_negatives),
            (1.0, 14, 100)
        );
        // The statement is about rank 16, not the 14 tied values above: its
        // p-value at the reported ε is at the level, and that of a statement
        // of rank 14 would be smaller.
        let at = |rank| {
            RankTest::new(
                RankStatement {
                    rank,
                    n_rank: 200,
                    count: 100,
                    n_count: 200,
                },
                Curve::EpsDelta { delta: 0.0 },
            )
            .p_value(b.epsilon)
        };
        // (p_value refines to its own 2 % margin, the search decided on its own.)
        assert!(
            at(16) <= 0.005 * 1.025 && at(16) > 0.9 * 0.005,
            "{}",
            at(16)
        );
        assert!(at(14) < at(16));
        assert!(b.epsilon > 0.0);
    }

    #[test]
    fn rejects_bad_parameters() {
        let obs = Observations::from_classes(&[1.0, 2.0], &[0.0, 0.5]).unwrap();
        let mut cfg = RegionConfig {
            confidence: 0.95,
            delta: 1.0,
            selection: Selection::SameData,
        };
        assert!(matches!(
            eps_delta_lower_bound(&obs, &cfg),
            Err(AuditError::InvalidParameter { name: "delta", .. })
        ));
        cfg.delta = 1e-5;
        cfg.confidence = 1.5;
        assert!(eps_delta_lower_bound(&obs, &cfg).is_err());
        cfg.confidence = 0.95;
        cfg.selection = Selection::Fixed;
        assert!(gdp_lower_bound(&obs, &cfg).is_err());
        // GDP needs δ > 0: no finite ε at δ = 0.
        cfg.selection = Selection::Bonferroni;
        cfg.delta = 0.0;
        match gdp_lower_bound(&obs, &cfg) {
            Err(AuditError::InvalidParameter {
                name: "delta",
                expected,
                ..
            }) => {
                assert!(expected.contains("δ > 0"), "{expected}")
            }
            other => panic!("{other:?}"),
        }
        assert!(eps_delta_lower_bound(&obs, &cfg).is_ok());
    }
}
