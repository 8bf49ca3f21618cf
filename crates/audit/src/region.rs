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
//!   and the maximum over the family is valid.
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

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use crate::bound::{
    BoundedOn, EpsilonLowerBound, Evidence, MechanismAssumption, ThresholdEvidence, ThresholdTest,
};
use crate::clopper_pearson::upper_unchecked;
use crate::error::{check_confidence, check_delta, AuditError, Result};
use crate::gaussian::{gdp_epsilon, inverse_cdf};
use crate::metrics::{metrics_sorted, Metrics};
use crate::observations::{Method, Observations, Selection};
use crate::policy::{median_rank_index, split_seeds};
use crate::rank_test::{Curve, Precision, RankStatement, RankTest};
#[cfg(test)]
use crate::sort::sort_pair;
use crate::sort::sorted_classes;

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

/// Annamalai et al. 2024 Eq. (1): ε from upper bounds on FPR and FNR at δ.
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

/// Cebere et al. 2024 Lemma 1 (and the GDP slide of Karimireddy 2025):
/// `μ = Φ⁻¹(1 − FPR̄) − Φ⁻¹(FNR̄)` (symmetric in the two rates; may be
/// negative).
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
    /// The trade-off curves the rank test checks for this statistic.
    fn curve(self) -> Curve {
        match self {
            Statistic::EpsDelta { delta } => Curve::EpsDelta { delta },
            Statistic::Gdp => Curve::Gaussian,
        }
    }

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
    /// Both classes of `obs`, sorted.
    fn of(obs: &Observations) -> Self {
        let (members, nonmembers) = sorted_classes(obs.scores(), obs.members());
        Self {
            members,
            nonmembers,
        }
    }

    #[cfg(test)]
    fn new(members: Vec<f64>, nonmembers: Vec<f64>) -> Self {
        let (members, nonmembers) = sort_pair(members, nonmembers);
        Self {
            members,
            nonmembers,
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

/// Ratio of consecutive ranks in [`rank_grid`].
pub const RANK_GRID_RATIO: f64 = 4.0;

/// The ranks of the `bonferroni` threshold family for a class of `n` scores:
/// 0, 1, then each rank the previous one times [`RANK_GRID_RATIO`] rounded
/// up (and at least one more), while at most `n/2`: 0, 1, 4, 16, 64, …
/// It depends on `n` alone. (Of the ratios √2, 2, 4 and 8 in the power study
/// of `benches/RESULTS.md`, fewer statements outweighed a coarser grid up to
/// 4, which beat 2 in 78 of 85 cells; 8 gained little more on average and
/// lost up to 0.18 in ε where the GDP optimum falls between its ranks.)
pub fn rank_grid(n: u64) -> Vec<u64> {
    let mut out = vec![0_u64];
    let mut r = 1_u64;
    while r <= n / 2 {
        out.push(r);
        r = (r + 1).max((r as f64 * RANK_GRID_RATIO).ceil() as u64);
    }
    out
}

/// The largest f64 below `x` (finite `x`), so "score > below(t)" is
/// "score ≥ t".
fn below(x: f64) -> f64 {
    if x == 0.0 {
        -f64::from_bits(1)
    } else if x > 0.0 {
        f64::from_bits(x.to_bits() - 1)
    } else {
        f64::from_bits(x.to_bits() + 1)
    }
}

/// Evidence at `threshold` with pointwise Clopper–Pearson bounds at `tail`
/// on both rates (`same-data`).
fn pointwise_evidence(
    sorted: &Sorted,
    threshold: f64,
    tail: f64,
    candidates: u64,
) -> ThresholdEvidence {
    let (fp, fnn) = sorted.counts(threshold);
    let ln_tail = tail.ln();
    let (n0, n1) = (sorted.nonmembers.len() as u64, sorted.members.len() as u64);
    ThresholdEvidence {
        threshold,
        false_positives: fp,
        nonmembers: n0,
        false_negatives: fnn,
        members: n1,
        test: ThresholdTest::ClopperPearson {
            fpr_upper: upper_unchecked(fp, n0, ln_tail),
            fnr_upper: upper_unchecked(fnn, n1, ln_tail),
            tail_per_rate: tail,
        },
        statements: 2,
        mu_lower: None,
        candidates,
    }
}

/// The class whose order statistic sets a threshold of the rank test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RankClass {
    /// The (rank+1)-th largest non-member score; members at or below it are
    /// counted (false negatives).
    NonMember,
    /// Just below the (rank+1)-th smallest member score; non-members at or
    /// above it are counted (false positives).
    Member,
}

impl RankClass {
    fn name(self) -> &'static str {
        match self {
            RankClass::NonMember => "non-member",
            RankClass::Member => "member",
        }
    }
}

/// A threshold fixed by a rank, its counts and its plug-in statistic.
struct RankCandidate {
    class: RankClass,
    threshold: f64,
    statement: RankStatement,
    plug_in: f64,
}

fn rank_candidate(sorted: &Sorted, class: RankClass, rank: u64, stat: Statistic) -> RankCandidate {
    let (n0, n1) = (sorted.nonmembers.len() as u64, sorted.members.len() as u64);
    let (threshold, statement) = match class {
        RankClass::NonMember => {
            let rank = rank.min(n0 - 1);
            let t = sorted.nonmembers[(n0 - 1 - rank) as usize];
            let (_, fnn) = sorted.counts(t);
            (
                t,
                RankStatement {
                    rank,
                    n_rank: n0,
                    count: fnn,
                    n_count: n1,
                },
            )
        }
        RankClass::Member => {
            let rank = rank.min(n1 - 1);
            let t = below(sorted.members[rank as usize]);
            let (fp, _) = sorted.counts(t);
            (
                t,
                RankStatement {
                    rank,
                    n_rank: n1,
                    count: fp,
                    n_count: n0,
                },
            )
        }
    };
    let (r, c) = (
        statement.rank as f64 / statement.n_rank as f64,
        statement.count as f64 / statement.n_count as f64,
    );
    let plug_in = match class {
        RankClass::NonMember => stat.eval(r, c),
        RankClass::Member => stat.eval(c, r),
    };
    RankCandidate {
        class,
        threshold,
        statement,
        plug_in,
    }
}

/// The rank test of every candidate at `level`; returns the best candidate
/// and its θ (ε or μ, 0 when none is rejected at θ = 0: then the candidate
/// with the best plug-in statistic, for the record). A rough pass ranks the
/// candidates (each rough result is itself a valid, slightly smaller bound);
/// the fine search then runs on those within 1 % of the best rough one.
fn best_rank_test(cands: &[RankCandidate], stat: Statistic, level: f64) -> (usize, f64) {
    let mut order: Vec<usize> = (0..cands.len()).collect();
    // Most promising first, so that later candidates are dismissed by a
    // single p-value at the running best.
    order.sort_by(|&a, &b| cands[b].plug_in.total_cmp(&cands[a].plug_in));
    let mut tests: Vec<Option<RankTest>> = cands.iter().map(|_| None).collect();
    let mut rough: Vec<(usize, f64)> = Vec::new();
    let mut floor = 0.0;
    for &i in &order {
        let test = tests[i].get_or_insert_with(|| RankTest::new(cands[i].statement, stat.curve()));
        // The plug-in statistic is where the p-value is about ½: a first
        // upper end well above any bound.
        let step = (cands[i].plug_in - floor).max(0.1);
        if let Some(v) = test.largest_rejected(level, floor, Precision::ROUGH, Some(step)) {
            floor = floor.max(v);
            rough.push((i, v));
        }
    }
    let mut best: Option<(usize, f64)> = None;
    for &(i, v) in rough.iter().filter(|(_, v)| *v >= 0.99 * floor) {
        let start = best.map_or(v, |(_, b)| b.max(v));
        if let Some(test) = tests[i].as_mut() {
            // The rough result is within about 10⁻³ of the fine one.
            let step = 2e-3 * start.max(1.0);
            let fine = test
                .largest_rejected(level, start, Precision::FINE, Some(step))
                .unwrap_or(v);
            if best.is_none_or(|(_, b)| fine > b) {
                best = Some((i, fine));
            }
        }
    }
    best.unwrap_or((order[0], 0.0))
}

fn rank_evidence(
    sorted: &Sorted,
    cand: &RankCandidate,
    level: f64,
    statements: u64,
    candidates: u64,
) -> ThresholdEvidence {
    let (fp, fnn) = sorted.counts(cand.threshold);
    ThresholdEvidence {
        threshold: cand.threshold,
        false_positives: fp,
        nonmembers: sorted.nonmembers.len() as u64,
        false_negatives: fnn,
        members: sorted.members.len() as u64,
        test: ThresholdTest::Rank {
            class: cand.class.name(),
            rank: cand.statement.rank,
            level,
        },
        statements,
        mu_lower: None,
        candidates,
    }
}

/// The `bonferroni` family on all data: the rank test of every threshold of
/// the rank grid of both classes, each at level `(1 − confidence)/S`.
fn bonferroni_best(sorted: &Sorted, confidence: f64, stat: Statistic) -> (ThresholdEvidence, f64) {
    let (n0, n1) = (sorted.nonmembers.len() as u64, sorted.members.len() as u64);
    let cands: Vec<RankCandidate> = rank_grid(n0)
        .into_iter()
        .map(|k| rank_candidate(sorted, RankClass::NonMember, k, stat))
        .chain(
            rank_grid(n1)
                .into_iter()
                .map(|j| rank_candidate(sorted, RankClass::Member, j, stat)),
        )
        .collect();
    let statements = cands.len() as u64;
    let level = (1.0 - confidence) / statements as f64;
    let (i, value) = best_rank_test(&cands, stat, level);
    (
        rank_evidence(sorted, &cands[i], level, statements, statements),
        value,
    )
}

/// Split with `seed`: the best threshold on one half (pointwise limits),
/// carried to the other half as a rank of the class with the smaller error
/// rate there, and bounded by the rank test at `1 − confidence`.
fn split_evidence(
    obs: &Observations,
    seed: u64,
    confidence: f64,
    stat: Statistic,
) -> Result<(ThresholdEvidence, f64)> {
    let (select, evaluate) = obs.split(seed);
    select.check_both_classes(&format!(
        " in the selection half of the split (seed {seed})"
    ))?;
    evaluate.check_both_classes(&format!(
        " in the evaluation half of the split (seed {seed})"
    ))?;
    let chosen = Sorted::of(&select);
    let best = sweep(&chosen, (1.0 - confidence) / 2.0, stat);
    let (fp, fnn) = chosen.counts(best.threshold);
    let fpr = fp as f64 / chosen.nonmembers.len() as f64;
    let fnr = fnn as f64 / chosen.members.len() as f64;
    let sorted = Sorted::of(&evaluate);
    let (class, fraction, n) = if fpr <= fnr {
        (RankClass::NonMember, fpr, sorted.nonmembers.len())
    } else {
        (RankClass::Member, fnr, sorted.members.len())
    };
    let rank = ((fraction * n as f64).round() as u64).min(n as u64 - 1);
    let cand = rank_candidate(&sorted, class, rank, stat);
    let level = 1.0 - confidence;
    let value = RankTest::new(cand.statement, stat.curve())
        .largest_rejected(level, 0.0, Precision::FINE, Some(cand.plug_in.max(0.1)))
        .unwrap_or(0.0);
    Ok((
        rank_evidence(&sorted, &cand, level, 1, best.candidates),
        value,
    ))
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
fn select_and_count(obs: &Observations, cfg: &RegionConfig, stat: Statistic) -> Result<Found> {
    check_confidence(cfg.confidence)?;
    check_delta(cfg.delta)?;
    let all = Sorted::of(obs);
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
            bonferroni_best(&all, cfg.confidence, stat),
            BoundedOn::All,
        )),
        Selection::Split { seed } => Ok(found(
            split_evidence(obs, seed, cfg.confidence, stat)?,
            BoundedOn::EvaluationHalf { seed },
        )),
        Selection::MultiSplit { seed, splits } => {
            if splits == 0 {
                return Err(AuditError::InvalidParameter {
                    name: "splits",
                    value: "0".into(),
                    expected: "at least one random halving for `multi-split`",
                });
            }
            let half_level = 1.0 - (1.0 - cfg.confidence) / 2.0;
            let seeds = split_seeds(seed, splits);
            let all = seeds
                .iter()
                .map(|&s| split_evidence(obs, s, half_level, stat))
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
    let mut found = select_and_count(obs, cfg, Statistic::EpsDelta { delta: cfg.delta })?;
    let split_bounds = found.split_values.take();
    let epsilon = found.value;
    Ok(finish(cfg, Method::EpsDelta, epsilon, found, split_bounds))
}

/// The GDP audit of Cebere et al. 2024 App. A: a μ lower bound (the rank
/// test of the Gaussian trade-off curves `G_μ`; their Lemma 1 with
/// Clopper–Pearson limits for `same-data`), then ε at δ for μ-GDP. Needs
/// δ > 0.
pub fn gdp_lower_bound(obs: &Observations, cfg: &RegionConfig) -> Result<EpsilonLowerBound> {
    check_gdp_delta(cfg.delta)?;
    let mut found = select_and_count(obs, cfg, Statistic::Gdp)?;
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

/// Empirical (FPR, FNR) points at about `max_points` thresholds, with their
/// Clopper–Pearson upper bounds at tail `(1 − confidence)/2` (the pointwise
/// bounds of `split`); see [`error_points`].
pub fn empirical_points(
    obs: &Observations,
    confidence: f64,
    max_points: usize,
) -> Result<Vec<ErrorPoint>> {
    check_confidence(confidence)?;
    error_points(obs, (1.0 - confidence) / 2.0, max_points)
}

/// Empirical (FPR, FNR) points with upper bounds at `tail` each. The
/// thresholds are non-member scores whose false-positive counts are spread
/// evenly on a linear and on a logarithmic scale (half of `max_points`
/// each), so both a linear trade-off plot and a log–log ROC plot are
/// resolved down to one false positive; the first point is the threshold
/// −∞ (everything called member).
pub fn error_points(obs: &Observations, tail: f64, max_points: usize) -> Result<Vec<ErrorPoint>> {
    if !(tail.is_finite() && tail > 0.0 && tail < 1.0) {
        return Err(AuditError::InvalidParameter {
            name: "tail",
            value: tail.to_string(),
            expected: "a tail probability strictly between 0 and 1",
        });
    }
    let sorted = Sorted::of(obs);
    let (n_pos, n_neg) = (sorted.members.len() as u64, sorted.nonmembers.len() as u64);
    let ln_tail = tail.ln();
    let half = (max_points / 2).max(2);
    let last = n_neg - 1;
    // False-positive counts k ∈ [0, n₀ − 1]; the threshold of count k is the
    // (k+1)-th largest non-member score.
    let mut ks: Vec<u64> = (0..half as u64)
        .map(|i| i * last / (half as u64 - 1))
        .collect();
    let top = (last.max(1) as f64).ln();
    ks.extend((0..half).map(|i| (top * i as f64 / (half - 1) as f64).exp().round() as u64 - 1));
    ks.push(0);
    ks.sort_unstable();
    ks.dedup();
    let mut out = Vec::with_capacity(ks.len() + 1);
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
    for &k in ks.iter().rev() {
        push(sorted.nonmembers[(last - k.min(last)) as usize]);
    }
    out.dedup_by(|a, b| a.threshold == b.threshold);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn rank_grid_depends_on_the_class_size_only() {
        assert_eq!(rank_grid(200), vec![0, 1, 4, 16, 64]);
        assert_eq!(rank_grid(1), vec![0]);
        assert_eq!(rank_grid(3), vec![0, 1]);
        assert_eq!(rank_grid(8), vec![0, 1, 4]);
    }

    #[test]
    fn bonferroni_bounds_by_the_rank_not_the_tied_count() {
        // Non-members: 14 at 5.0, 14 at 1.0, 172 at 0.0; members: 100 at 2.0
        // and 100 below everything (−1.0), so only the non-member ranks help.
        // Ranks 0, 1 and 4 give the threshold 5.0 (no true positive); rank 16
        // gives the tied value 1.0, the 17th largest non-member, with 14
        // non-members above it. Its FPR is bounded as if 16 were: only the
        // statement of rank 16 is in the union.
        let neg = [[5.0; 14].as_slice(), &[1.0; 14], &[0.0; 172]].concat();
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
