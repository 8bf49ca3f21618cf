//! Threshold audits from two score samples: the Clopper–Pearson (ε, δ)
//! region estimator and the GDP audit.
//!
//! - (ε, δ) region: spec 000 §1.3 (Eq. 1) and §2.7 (Algorithm 5,
//!   "EstimateEps"); lecture 004 D.5. For a threshold with upper confidence
//!   bounds FPR̄, FNR̄:
//!   `ε = max{ln((1 − FPR̄ − δ)/FNR̄), ln((1 − FNR̄ − δ)/FPR̄), 0}`.
//! - GDP: spec 001 §4 (Lemma 1, Corollary 1, Nasr et al. 2023 App. A);
//!   lecture 004 D.5: `μ⁻ = Φ⁻¹(1 − FPR̄) − Φ⁻¹(FNR̄)`, then ε at δ from the
//!   exact μ-GDP δ(ε) by bisection ([`crate::normal::gdp_epsilon`]).
//!   μ⁻ is a valid lower bound on the smallest μ for which the mechanism is
//!   μ-GDP; the ε derived from it is a lower bound on the mechanism's ε(δ)
//!   only if its trade-off curve is Gaussian-shaped (spec 001 §4 Remark 3:
//!   the approximation "can underestimate the privacy guarantees" of e.g.
//!   subsampled mechanisms). The coverage tests check μ⁻ for randomized
//!   response and both μ⁻ and ε for the Gaussian mechanism.
//!
//! Both error-rate bounds are one-sided Clopper–Pearson upper limits at tail
//! `(1 − confidence)/2` each, so the pair holds jointly with probability at
//! least `confidence` (union bound); these equal the upper ends of two-sided
//! intervals at `confidence`, which is how lecture 004 D.5 computes
//! α⁺ = 0.955082 and β⁺ = 0.0027445.
//!
//! **The sweep.** The rule is "member iff score > τ". Between two
//! consecutive distinct scores nothing changes, so the candidate thresholds
//! are the distinct non-member scores (a threshold just below a member run is
//! always dominated by the one at the preceding non-member value: same FN,
//! more FP). Both classes are sorted once (O(N log N)). Both statistics
//! decrease in both error-rate bounds, and the bounds increase in the counts,
//! so over a contiguous range of candidates the statistic is at most its
//! value at (smallest FP, smallest FN) of the range. A best-first
//! branch-and-bound over candidate ranges therefore finds the maximum over
//! all thresholds (to within 1e-9) while evaluating Clopper–Pearson limits
//! at only a few hundred candidates, even for 10⁸ scores.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use crate::bound::{EpsilonLowerBound, Evidence, ThresholdEvidence};
use crate::clopper_pearson::upper_unchecked;
use crate::error::{check_confidence, check_delta, AuditError, Result};
use crate::normal::{gdp_epsilon, inverse_cdf};
use crate::scores::{Method, Observations, Selection};
use crate::sort::sort_scores;

/// Settings shared by the threshold audits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RegionConfig {
    /// Confidence of the bound, e.g. 0.95.
    pub confidence: f64,
    /// δ of the (ε, δ) statement, in [0, 1).
    pub delta: f64,
    /// Threshold selection policy (`split` or `same-data`).
    pub selection: Selection,
}

/// Spec 000 §1.3 Eq. (1): ε from upper bounds on FPR and FNR at δ.
/// Returns `max{ln((1 − FPR̄ − δ)/FNR̄), ln((1 − FNR̄ − δ)/FPR̄), 0}`.
pub fn epsilon_from_error_bounds(fpr_upper: f64, fnr_upper: f64, delta: f64) -> f64 {
    raw_epsilon(fpr_upper, fnr_upper, delta).max(0.0)
}

/// The two branches of Eq. (1) without the floor at 0 (−∞ when a numerator
/// is not positive).
fn raw_epsilon(fpr: f64, fnr: f64, delta: f64) -> f64 {
    let branch = |num: f64, den: f64| {
        if num > 0.0 && den > 0.0 {
            (num / den).ln()
        } else if num > 0.0 {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        }
    };
    branch(1.0 - fpr - delta, fnr).max(branch(1.0 - fnr - delta, fpr))
}

/// Lecture 004 D.5 / spec 001 §4 Lemma 1: `μ = Φ⁻¹(1 − FPR̄) − Φ⁻¹(FNR̄)`
/// (symmetric in the two rates; may be negative).
pub fn mu_from_error_bounds(fpr_upper: f64, fnr_upper: f64) -> f64 {
    let mu = -inverse_cdf(fpr_upper) - inverse_cdf(fnr_upper);
    if mu.is_nan() {
        f64::NEG_INFINITY
    } else {
        mu
    }
}

/// Which statistic a sweep maximizes.
#[derive(Debug, Clone, Copy)]
enum Statistic {
    EpsDelta { delta: f64 },
    Gdp,
}

impl Statistic {
    fn eval(self, fpr: f64, fnr: f64) -> f64 {
        match self {
            Statistic::EpsDelta { delta } => raw_epsilon(fpr, fnr, delta),
            Statistic::Gdp => mu_from_error_bounds(fpr, fnr),
        }
    }
}

/// Memoized Clopper–Pearson upper limits for one class.
struct RateBounds {
    n: u64,
    ln_tail: f64,
    cache: HashMap<u64, f64>,
}

impl RateBounds {
    fn new(n: u64, tail: f64) -> Self {
        Self {
            n,
            ln_tail: tail.ln(),
            cache: HashMap::new(),
        }
    }

    fn upper(&mut self, k: u64) -> f64 {
        let (n, ln_tail) = (self.n, self.ln_tail);
        *self
            .cache
            .entry(k)
            .or_insert_with(|| upper_unchecked(k, n, ln_tail))
    }
}

/// Both classes sorted ascending.
struct Sorted {
    members: Vec<f64>,
    nonmembers: Vec<f64>,
}

impl Sorted {
    fn new(members: Vec<f64>, nonmembers: Vec<f64>) -> Self {
        Self {
            members: sort_scores(members),
            nonmembers: sort_scores(nonmembers),
        }
    }

    /// (false positives, false negatives) of "member iff score > t".
    fn counts(&self, t: f64) -> (u64, u64) {
        let fp = self.nonmembers.len() - self.nonmembers.partition_point(|&x| x <= t);
        let fnn = self.members.partition_point(|&x| x <= t);
        (fp as u64, fnn as u64)
    }
}

/// Result of a sweep on one data set.
struct SweepBest {
    threshold: f64,
    value: f64,
    candidates: u64,
}

#[derive(Debug, PartialEq)]
struct Block {
    upper: f64,
    lo: usize,
    hi: usize,
}

impl Eq for Block {}

impl PartialOrd for Block {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Block {
    fn cmp(&self, other: &Self) -> Ordering {
        self.upper.total_cmp(&other.upper)
    }
}

/// Absolute tolerance of the branch-and-bound on the maximized statistic.
const SWEEP_TOLERANCE: f64 = 1e-9;

/// Maximizes the statistic over all thresholds at the non-member values.
fn sweep(sorted: &Sorted, tail: f64, stat: Statistic) -> SweepBest {
    let neg = &sorted.nonmembers;
    let mut fpb = RateBounds::new(neg.len() as u64, tail);
    let mut fnb = RateBounds::new(sorted.members.len() as u64, tail);
    // Statistic at (fp, fn) counts.
    let value = |fp: u64, fnn: u64, fpb: &mut RateBounds, fnb: &mut RateBounds| {
        stat.eval(fpb.upper(fp), fnb.upper(fnn))
    };
    let eval = |t: f64, fpb: &mut RateBounds, fnb: &mut RateBounds| {
        let (fp, fnn) = sorted.counts(t);
        value(fp, fnn, fpb, fnb)
    };
    // Upper bound of the statistic over candidates lo..=hi.
    let block_upper = |lo: usize, hi: usize, fpb: &mut RateBounds, fnb: &mut RateBounds| {
        let (fp_min, _) = sorted.counts(neg[hi]);
        let (_, fn_min) = sorted.counts(neg[lo]);
        value(fp_min, fn_min, fpb, fnb)
    };
    let last = neg.len() - 1;
    let candidates = 1 + neg.windows(2).filter(|w| w[0] != w[1]).count() as u64;
    let mut best = SweepBest {
        threshold: neg[0],
        value: eval(neg[0], &mut fpb, &mut fnb),
        candidates,
    };
    let v_last = eval(neg[last], &mut fpb, &mut fnb);
    if v_last > best.value {
        best.threshold = neg[last];
        best.value = v_last;
    }
    if last <= 1 {
        return best;
    }
    let mut heap = BinaryHeap::new();
    heap.push(Block {
        upper: block_upper(0, last, &mut fpb, &mut fnb),
        lo: 0,
        hi: last,
    });
    while let Some(block) = heap.pop() {
        if block.upper <= best.value + SWEEP_TOLERANCE {
            // The heap is ordered by upper bound: nothing left can win.
            break;
        }
        if block.hi - block.lo <= 1 {
            // Both candidates of the block were evaluated already.
            continue;
        }
        // Ties: a block whose ends have the same value holds one threshold.
        if neg[block.lo] == neg[block.hi] {
            continue;
        }
        let mid = block.lo + (block.hi - block.lo) / 2;
        let v = eval(neg[mid], &mut fpb, &mut fnb);
        if v > best.value {
            best.value = v;
            best.threshold = neg[mid];
        }
        for (lo, hi) in [(block.lo, mid), (mid, block.hi)] {
            let upper = block_upper(lo, hi, &mut fpb, &mut fnb);
            if upper > best.value + SWEEP_TOLERANCE {
                heap.push(Block { upper, lo, hi });
            }
        }
    }
    best
}

fn threshold_evidence(
    obs: &Observations,
    threshold: f64,
    tail: f64,
    candidates: u64,
) -> ThresholdEvidence {
    let (mut fp, mut fnn, mut pos, mut neg) = (0_u64, 0_u64, 0_u64, 0_u64);
    for (&s, &m) in obs.scores().iter().zip(obs.members()) {
        if m {
            pos += 1;
            if s <= threshold {
                fnn += 1;
            }
        } else {
            neg += 1;
            if s > threshold {
                fp += 1;
            }
        }
    }
    let ln_tail = tail.ln();
    ThresholdEvidence {
        threshold,
        false_positives: fp,
        nonmembers: neg,
        false_negatives: fnn,
        members: pos,
        fpr_upper: upper_unchecked(fp, neg, ln_tail),
        fnr_upper: upper_unchecked(fnn, pos, ln_tail),
        tail_per_rate: tail,
        mu_lower: None,
        candidates,
    }
}

/// Chooses the threshold (per the selection policy) and returns the evidence
/// on the bounding data.
fn select_and_count(
    obs: &Observations,
    cfg: &RegionConfig,
    stat: Statistic,
) -> Result<ThresholdEvidence> {
    check_confidence(cfg.confidence)?;
    check_delta(cfg.delta)?;
    let tail = (1.0 - cfg.confidence) / 2.0;
    match cfg.selection {
        Selection::SameData => {
            let (pos, neg) = obs.classes();
            let best = sweep(&Sorted::new(pos, neg), tail, stat);
            Ok(threshold_evidence(
                obs,
                best.threshold,
                tail,
                best.candidates,
            ))
        }
        Selection::Split { seed } => {
            let (select, evaluate) = obs.split(seed);
            select.check_both_classes(&format!(
                " in the selection half of the split (seed {seed})"
            ))?;
            evaluate.check_both_classes(&format!(
                " in the evaluation half of the split (seed {seed})"
            ))?;
            let (pos, neg) = select.classes();
            let best = sweep(&Sorted::new(pos, neg), tail, stat);
            Ok(threshold_evidence(
                &evaluate,
                best.threshold,
                tail,
                best.candidates,
            ))
        }
        Selection::Bonferroni | Selection::Fixed => Err(AuditError::InvalidParameter {
            name: "selection",
            value: cfg.selection.name().into(),
            expected: "`split` or `same-data` for threshold audits (the candidate thresholds \
                       depend on the data, so a fixed Bonferroni factor does not apply)",
        }),
    }
}

/// The (ε, δ)-region lower bound of spec 000 Algorithm 5 (Clopper–Pearson
/// upper bounds on both error rates, maximized over thresholds).
pub fn eps_delta_lower_bound(obs: &Observations, cfg: &RegionConfig) -> Result<EpsilonLowerBound> {
    let ev = select_and_count(obs, cfg, Statistic::EpsDelta { delta: cfg.delta })?;
    let epsilon = epsilon_from_error_bounds(ev.fpr_upper, ev.fnr_upper, cfg.delta);
    Ok(EpsilonLowerBound {
        epsilon,
        confidence: cfg.confidence,
        delta: cfg.delta,
        method: Method::EpsDelta,
        selection: cfg.selection,
        valid_at_confidence: cfg.selection.is_valid(),
        evidence: Evidence::Threshold(ev),
    })
}

/// The GDP audit of spec 001 §4 / lecture 004 D.5: a μ lower bound from the
/// error-rate upper bounds, then ε at δ for μ-GDP.
pub fn gdp_lower_bound(obs: &Observations, cfg: &RegionConfig) -> Result<EpsilonLowerBound> {
    let mut ev = select_and_count(obs, cfg, Statistic::Gdp)?;
    let mu = mu_from_error_bounds(ev.fpr_upper, ev.fnr_upper).max(0.0);
    ev.mu_lower = Some(mu);
    let epsilon = gdp_epsilon(mu, cfg.delta);
    Ok(EpsilonLowerBound {
        epsilon,
        confidence: cfg.confidence,
        delta: cfg.delta,
        method: Method::Gdp,
        selection: cfg.selection,
        valid_at_confidence: cfg.selection.is_valid(),
        evidence: Evidence::Threshold(ev),
    })
}

/// One point of an empirical trade-off curve.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ErrorPoint {
    /// Threshold (member iff score > threshold).
    pub threshold: f64,
    /// Empirical false-positive rate.
    pub fpr: f64,
    /// Empirical false-negative rate.
    pub fnr: f64,
    /// Clopper–Pearson upper bound on the FPR (tail `(1 − confidence)/2`).
    pub fpr_upper: f64,
    /// Clopper–Pearson upper bound on the FNR (tail `(1 − confidence)/2`).
    pub fnr_upper: f64,
}

/// Empirical (FPR, FNR) points at up to `max_points` thresholds spread
/// evenly over the sorted non-member scores, with their upper bounds.
pub fn empirical_points(
    obs: &Observations,
    confidence: f64,
    max_points: usize,
) -> Result<Vec<ErrorPoint>> {
    check_confidence(confidence)?;
    let (pos, neg) = obs.classes();
    let sorted = Sorted::new(pos, neg);
    let (n_pos, n_neg) = (sorted.members.len() as u64, sorted.nonmembers.len() as u64);
    let ln_tail = ((1.0 - confidence) / 2.0).ln();
    let count = max_points.clamp(2, sorted.nonmembers.len().max(2));
    let mut out = Vec::with_capacity(count + 1);
    let mut push = |t: f64| {
        let (fp, fnn) = sorted.counts(t);
        out.push(ErrorPoint {
            threshold: t,
            fpr: fp as f64 / n_neg as f64,
            fnr: fnn as f64 / n_pos as f64,
            fpr_upper: upper_unchecked(fp, n_neg, ln_tail),
            fnr_upper: upper_unchecked(fnn, n_pos, ln_tail),
        });
    };
    push(f64::NEG_INFINITY);
    let last = sorted.nonmembers.len() - 1;
    for i in 0..count {
        let idx = (i * last) / (count - 1).max(1);
        push(sorted.nonmembers[idx]);
    }
    out.dedup_by(|a, b| a.threshold == b.threshold);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lecture_epsilon_and_mu() {
        // Spec 003/004 D.6 (lecture 004 D.5): α⁺ = 0.95509, β⁺ = 0.00274,
        // δ = 1e-5 → ε_lb = 2.7965 and μ⁻ = 1.0810. Here α⁺ is the miss
        // rate (FNR) and β⁺ the FPR.
        let eps = epsilon_from_error_bounds(0.00274, 0.95509, 1e-5);
        assert!((eps - 2.7965).abs() < 5e-5, "{eps}");
        let mu = mu_from_error_bounds(0.00274, 0.95509);
        assert!((mu - 1.0810).abs() < 5e-5, "{mu}");
        // Symmetric in the two rates.
        assert_eq!(epsilon_from_error_bounds(0.95509, 0.00274, 1e-5), eps);
    }

    #[test]
    fn lecture_counts_end_to_end() {
        // Lecture 004 D.5: 100k runs per side, TP = 4922, FP = 174, two-sided
        // CP at p = 1e-10 gives α⁺ = 0.955082 and β⁺ = 0.0027445.
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
        assert!((ev.fnr_upper - 0.955_082).abs() < 5e-7, "{}", ev.fnr_upper);
        assert!(
            (ev.fpr_upper - 0.002_744_5).abs() < 5e-8,
            "{}",
            ev.fpr_upper
        );
        // ln((1 − 1e-5 − 0.955082)/0.0027445) with the unrounded bounds.
        let expected = ((1.0 - 1e-5 - ev.fnr_upper) / ev.fpr_upper).ln();
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
    fn sweep_equals_brute_force() {
        // Branch-and-bound against evaluating every threshold.
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for trial in 0..20 {
            let n = 50 + trial * 20;
            let pos: Vec<f64> = (0..n)
                .map(|_| (rng.gen::<f64>() * 20.0).floor() + 3.0)
                .collect();
            let neg: Vec<f64> = (0..n + 7)
                .map(|_| (rng.gen::<f64>() * 20.0).floor())
                .collect();
            let sorted = Sorted::new(pos.clone(), neg.clone());
            for stat in [Statistic::EpsDelta { delta: 1e-5 }, Statistic::Gdp] {
                let best = sweep(&sorted, 0.025, stat);
                let ln_tail = 0.025_f64.ln();
                let brute = neg
                    .iter()
                    .map(|&t| {
                        let (fp, fnn) = sorted.counts(t);
                        stat.eval(
                            upper_unchecked(fp, neg.len() as u64, ln_tail),
                            upper_unchecked(fnn, pos.len() as u64, ln_tail),
                        )
                    })
                    .fold(f64::NEG_INFINITY, f64::max);
                assert!(
                    (best.value - brute).abs() <= 1e-9,
                    "trial {trial}: {} vs {brute}",
                    best.value
                );
            }
        }
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
        cfg.selection = Selection::Bonferroni;
        assert!(gdp_lower_bound(&obs, &cfg).is_err());
    }
}
