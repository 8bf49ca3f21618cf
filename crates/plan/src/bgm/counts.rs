//! BGM audits in bounded memory: **select on separate runs, count on the
//! rest** (`evaluation = { counts = { selection_runs = … } }` in a BGM
//! experiment file; `docs/canary-games.md` §5).
//!
//! The in-memory audit ([`crate::bgm::audit`], `evaluation = "scores"`) holds
//! every score until the threshold is chosen: about 190 bytes per run and
//! hypothesis at its peak, 95 GB for the 10⁹ observations of Annamalai et
//! al. 2024 Fig. 3. Here memory does not grow with the runs:
//!
//! 1. every simulated score is put in a bucket of a **grid fixed in
//!    advance** ([`bucket`]): the order-preserving buckets of the `f64`
//!    format at a relative resolution of 2⁻⁸ (the sign, the exponent and the
//!    top [`MANTISSA_BITS`] bits of the mantissa; every |score| < 2⁻¹⁶ in one
//!    bucket). The grid depends on nothing — not the setting, not the
//!    scores — and has at most `2·266 240 + 1` buckets, so a histogram
//!    ([`ScoreHistogram`]) is bounded whatever the number of runs;
//! 2. **selection runs** (`selection_runs` per hypothesis, drawn from the
//!    engine's selection chunks, seed streams disjoint from every
//!    evaluation run: [`crate::bgm::engine::BgmEngine::selection_first_chunk`])
//!    are histogrammed, and the rule "member iff `bucket(score) > b`" is
//!    chosen on them alone ([`choose_threshold`]): the cut `b` whose
//!    *predicted* bound at the evaluation size is largest;
//! 3. the **evaluation runs** are histogrammed too, unit by unit, and the
//!    bound is computed at the chosen cut from two counts
//!    ([`bound_at`]): false positives among the `N₀` runs without the
//!    target and false negatives among the `N₁` runs with it.
//!
//! Because the grid is fixed in advance, an evaluation unit needs nothing
//! from the selection runs: units of both kinds are independent, in any
//! order, on any shard; the cut is chosen when the experiment is finalized,
//! from the selection histogram, and only then applied to the evaluation
//! histogram. Histograms are integer counts, added exactly, so resumes,
//! shards and merges give the same bound to the bit.
//!
//! # Validity
//!
//! Let `b*` be the cut chosen from the selection runs. The evaluation runs
//! are independent of the selection runs (disjoint seed streams), so they
//! are independent of `b*`. Given `b* = b`, each run without the target is
//! a false positive with probability `α(b) = P[bucket(score) > b | D′]`,
//! independently, so `FP ~ Bin(N₀, α(b))`; likewise `FN ~ Bin(N₁, β(b))`.
//! The one-sided Clopper–Pearson upper limits at tail `a = (1 − c)/2` each
//! fail with probability at most `a` each, so `α(b) ≤ ᾱ` and `β(b) ≤ β̄` hold
//! together with probability at least `c` (a union bound; no independence
//! needed). When they hold, every (ε, δ)-DP mechanism satisfies
//! `β ≥ 1 − δ − e^ε α` and `α ≥ 1 − δ − e^ε β` at this test (Kairouz et al.;
//! Annamalai et al. 2024 §3.2), and these stay true with `ᾱ`, `β̄` in place
//! of `α`, `β`, which is Eq. (1): ε ≥ `max{ln((1 − ᾱ − δ)/β̄),
//! ln((1 − β̄ − δ)/ᾱ), 0}`. Averaging over `b*` keeps the probability ≥ `c`.
//! The choice may depend on the selection runs, the configuration and the
//! evaluation sizes `N₀`, `N₁`, `c`, δ — never on an evaluation count: in
//! the code, [`choose_threshold`] receives the selection histogram and the
//! sizes, and its result is handed to [`bound_at`] with the evaluation
//! histogram. This is the test `dpaudit counts` computes from counts at a
//! threshold fixed in advance (Karimireddy 2025, lecture notes on privacy
//! auditing).
//!
//! **Why one threshold.** A union bound over `J` thresholds spends the
//! level `J` times. At 10⁹ observations of T = 100, σ = 1 the best
//! threshold sits where the with-target runs above it number tens of
//! thousands and the without-target runs about a thousand; there the
//! selection runs (a tenth of the evaluation runs) locate it well, and
//! every extra threshold costs more than it could gain
//! (`docs/canary-games.md` §5 gives the numbers). The **same-data** figure
//! (the best cut on the evaluation histogram itself, Clopper–Pearson at
//! `(1 − c)/2` per rate: the paper's practice, Annamalai et al. 2024 App. B
//! Algorithm 5, on this grid) is reported beside the bound, flagged as not
//! valid at the stated confidence.

use serde::{Deserialize, Serialize};

use dpaudit_audit::clopper_pearson::upper_limit;
use dpaudit_audit::gaussian::inverse_cdf;
use dpaudit_audit::region::epsilon_from_error_bounds;

use crate::error::{PlanError, Result};
use dpaudit_store::StoreError;

/// Mantissa bits kept by [`bucket`]: relative resolution 2⁻⁸ (a threshold
/// near a log-likelihood ratio of 4 moves by at most 0.016).
pub const MANTISSA_BITS: u32 = 8;

/// Scores of magnitude below 2⁻¹⁶ share bucket 0.
pub const SMALLEST_MAGNITUDE: f64 = 1.0 / 65_536.0;

/// Biased exponent of [`SMALLEST_MAGNITUDE`].
const SMALLEST_EXPONENT: i32 = 1023 - 16;

/// The largest bucket of a finite positive score: `(2046 − 1007 + 1)·2⁸`.
pub const MAX_BUCKET: i32 = (2047 - SMALLEST_EXPONENT) << MANTISSA_BITS;

/// Runs per hypothesis simulated at once when a unit is streamed into a
/// histogram (whole engine chunks, at least one): 16 MB of scores.
pub const PIECE_RUNS: usize = 1 << 20;

/// The bucket of a finite score on the grid fixed in advance: 0 for
/// |x| < 2⁻¹⁶, else ±(1 + the exponent above 2⁻¹⁶ and the top
/// [`MANTISSA_BITS`] mantissa bits of |x|), with the sign of x. Monotone:
/// `x ≤ y` implies `bucket(x) ≤ bucket(y)`.
pub fn bucket(x: f64) -> i32 {
    let a = x.abs();
    if a.is_nan() || a < SMALLEST_MAGNITUDE {
        return 0;
    }
    let bits = a.to_bits();
    let exponent = ((bits >> 52) as i32).min(2046);
    let mantissa = ((bits >> (52 - MANTISSA_BITS)) & ((1 << MANTISSA_BITS) - 1)) as i32;
    let key = ((exponent - SMALLEST_EXPONENT) << MANTISSA_BITS) + mantissa + 1;
    if x > 0.0 {
        key
    } else {
        -key
    }
}

/// The smallest magnitude of positive bucket `k ≥ 1` (∞ above the grid).
fn lower_magnitude(k: i32) -> f64 {
    let k = k - 1;
    let exponent = SMALLEST_EXPONENT + (k >> MANTISSA_BITS);
    if exponent >= 2047 {
        return f64::INFINITY;
    }
    let mantissa = (k & ((1 << MANTISSA_BITS) - 1)) as u64;
    f64::from_bits(((exponent as u64) << 52) | (mantissa << (52 - MANTISSA_BITS)))
}

/// The score value at which the rule "member iff `bucket(score) > b`" cuts:
/// for `b ≥ 0` the rule is `score ≥ boundary(b)`, for `b < 0` it is
/// `score > boundary(b)`.
pub fn boundary(b: i32) -> f64 {
    if b >= 0 {
        lower_magnitude(b + 1)
    } else {
        -lower_magnitude(-b)
    }
}

/// The rule of cut `b` in words.
pub fn rule(b: i32) -> String {
    let op = if b >= 0 { "≥" } else { ">" };
    format!(
        "member iff score {op} {:e} (above bucket {b} of the fixed grid)",
        boundary(b)
    )
}

/// Counts of scores per bucket, both hypotheses: the state of a
/// bounded-memory audit. Rows `(bucket, with target, without target)`,
/// buckets increasing, no all-zero row; at most `2·MAX_BUCKET + 1` rows
/// whatever the number of runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScoreHistogram {
    /// `(bucket, runs with the target, runs without it)`.
    pub buckets: Vec<(i32, u64, u64)>,
}

impl ScoreHistogram {
    /// Runs with the target.
    pub fn with_target(&self) -> u64 {
        self.buckets.iter().map(|r| r.1).sum()
    }

    /// Runs without the target.
    pub fn without_target(&self) -> u64 {
        self.buckets.iter().map(|r| r.2).sum()
    }

    /// Whether the rows are well-formed (buckets strictly increasing and on
    /// the grid, no all-zero row): what a unit file read back must satisfy.
    pub fn is_well_formed(&self) -> bool {
        self.buckets
            .iter()
            .all(|&(k, w, wo)| (-MAX_BUCKET..=MAX_BUCKET).contains(&k) && w + wo > 0)
            && self.buckets.windows(2).all(|p| p[0].0 < p[1].0)
    }

    /// The cuts "member iff bucket > b", from the top: `b` runs over the
    /// occupied buckets, then one below the lowest; each with the runs above
    /// it, `(b, with target above, without target above)`.
    fn cuts(&self) -> Vec<(i32, u64, u64)> {
        let mut cuts = Vec::with_capacity(self.buckets.len() + 1);
        let (mut with, mut without) = (0u64, 0u64);
        for &(k, w, wo) in self.buckets.iter().rev() {
            cuts.push((k, with, without));
            with += w;
            without += wo;
        }
        let lowest = self.buckets.first().map_or(0, |r| r.0);
        cuts.push((lowest - 1, with, without));
        cuts
    }

    /// Runs above cut `b`: `(with target, without target)`.
    pub fn above(&self, b: i32) -> (u64, u64) {
        self.buckets
            .iter()
            .filter(|r| r.0 > b)
            .fold((0, 0), |(w, wo), r| (w + r.1, wo + r.2))
    }
}

/// Adds scores into the fixed grid: a dense array over every bucket (8.5 MB),
/// read out as a [`ScoreHistogram`].
#[derive(Debug, Clone)]
pub struct HistogramAccumulator {
    counts: Vec<[u64; 2]>,
}

impl Default for HistogramAccumulator {
    fn default() -> Self {
        Self::new()
    }
}

impl HistogramAccumulator {
    /// Empty.
    pub fn new() -> Self {
        Self {
            counts: vec![[0; 2]; (2 * MAX_BUCKET + 1) as usize],
        }
    }

    fn slot(&mut self, k: i32) -> &mut [u64; 2] {
        // In range: buckets lie in ±MAX_BUCKET, and the clamp says so.
        &mut self.counts[(k.clamp(-MAX_BUCKET, MAX_BUCKET) + MAX_BUCKET) as usize]
    }

    /// Add one score per run of each hypothesis; refuses a score that is
    /// not finite (a simulator fault), naming it.
    pub fn add(&mut self, with_target: &[f64], without_target: &[f64]) -> Result<()> {
        for (class, scores) in [(0, with_target), (1, without_target)] {
            if let Some(bad) = scores.iter().find(|x| !x.is_finite()) {
                return Err(PlanError::Store(StoreError::Inconsistent {
                    path: "simulation".into(),
                    reason: format!(
                        "a simulated score is {bad}: expected finite log-likelihood ratios"
                    ),
                }));
            }
            for &x in scores {
                self.slot(bucket(x))[class] += 1;
            }
        }
        Ok(())
    }

    /// Add a histogram's counts.
    pub fn add_histogram(&mut self, h: &ScoreHistogram) {
        for &(k, w, wo) in &h.buckets {
            let s = self.slot(k);
            s[0] += w;
            s[1] += wo;
        }
    }

    /// The counts as a sparse histogram.
    pub fn histogram(&self) -> ScoreHistogram {
        ScoreHistogram {
            buckets: self
                .counts
                .iter()
                .enumerate()
                .filter(|(_, c)| c[0] + c[1] > 0)
                .map(|(i, c)| (i as i32 - MAX_BUCKET, c[0], c[1]))
                .collect(),
        }
    }
}

/// Wilson's upper limit of a proportion from a count `k` (a real number) of
/// `n` at normal quantile `z`: a fast, smooth stand-in for Clopper–Pearson
/// in the *prediction* that chooses the cut (any function of the selection
/// runs is valid there; the bound itself uses Clopper–Pearson).
fn wilson_upper(k: f64, n: f64, z: f64) -> f64 {
    let p = (k / n).clamp(0.0, 1.0);
    let z2n = z * z / n;
    let centre = p + z2n / 2.0;
    let spread = z * (p * (1.0 - p) / n + z2n / (4.0 * n)).sqrt();
    ((centre + spread) / (1.0 + z2n)).min(1.0)
}

/// The cut chosen on the selection runs, and what it was chosen on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdChoice {
    /// The rule is "member iff `bucket(score) > above_bucket`".
    pub above_bucket: i32,
    /// [`boundary`] of the cut.
    pub boundary: f64,
    /// The rule in words.
    pub rule: String,
    /// The bound predicted at the evaluation sizes from the selection rates
    /// (the criterion; not a bound).
    pub predicted_epsilon: f64,
    /// Selection runs without the target above the cut.
    pub selection_false_positives: u64,
    /// Selection runs without the target.
    pub selection_without_target: u64,
    /// Selection runs with the target at or below the cut.
    pub selection_false_negatives: u64,
    /// Selection runs with the target.
    pub selection_with_target: u64,
    /// Cuts compared.
    pub candidates: u64,
}

/// Choose the cut on the **selection** histogram alone: the one whose
/// predicted bound at `evaluation_runs` runs per hypothesis is largest
/// (the highest such cut on ties). The prediction takes each selection
/// error rate as `(count + ½)/(runs + 1)` (never 0, so an empty tail is not
/// mistaken for a certain one), scales it to the evaluation size and puts
/// Wilson upper limits at tail `(1 − confidence)/2` into Eq. (1).
pub fn choose_threshold(
    selection: &ScoreHistogram,
    evaluation_runs: u64,
    confidence: f64,
    delta: f64,
) -> Result<ThresholdChoice> {
    let (s1, s0) = (selection.with_target(), selection.without_target());
    if s1 == 0 || s0 == 0 || evaluation_runs == 0 {
        return Err(crate::error::invalid_value(
            "selection / evaluation runs",
            format!("{s1} and {s0} selection, {evaluation_runs} evaluation runs"),
            "at least one run of each hypothesis in each",
        ));
    }
    let z = -inverse_cdf((1.0 - confidence) / 2.0);
    let n = evaluation_runs as f64;
    let cuts = selection.cuts();
    let mut best: Option<(f64, (i32, u64, u64))> = None;
    for &(b, with_above, without_above) in &cuts {
        let fp = without_above;
        let fneg = s1 - with_above;
        let fpr = (fp as f64 + 0.5) / (s0 as f64 + 1.0);
        let fnr = (fneg as f64 + 0.5) / (s1 as f64 + 1.0);
        let predicted = epsilon_from_error_bounds(
            wilson_upper(fpr * n, n, z),
            wilson_upper(fnr * n, n, z),
            delta,
        );
        if best.is_none_or(|(e, _)| predicted > e) {
            best = Some((predicted, (b, with_above, without_above)));
        }
    }
    let (predicted_epsilon, (b, with_above, without_above)) = best.unwrap_or((0.0, (0, 0, 0)));
    Ok(ThresholdChoice {
        above_bucket: b,
        boundary: boundary(b),
        rule: rule(b),
        predicted_epsilon,
        selection_false_positives: without_above,
        selection_without_target: s0,
        selection_false_negatives: s1 - with_above,
        selection_with_target: s1,
        candidates: cuts.len() as u64,
    })
}

/// Counts at one cut and the bound they give.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CountedEvidence {
    /// The rule is "member iff `bucket(score) > above_bucket`".
    pub above_bucket: i32,
    /// [`boundary`] of the cut.
    pub boundary: f64,
    /// Runs without the target above the cut.
    pub false_positives: u64,
    /// Runs without the target.
    pub without_target: u64,
    /// Runs with the target at or below the cut.
    pub false_negatives: u64,
    /// Runs with the target.
    pub with_target: u64,
    /// Clopper–Pearson upper limit of the false-positive rate.
    pub fpr_upper: f64,
    /// Clopper–Pearson upper limit of the false-negative rate.
    pub fnr_upper: f64,
    /// Tail of each of the two limits.
    pub tail_per_rate: f64,
    /// Eq. (1) of Annamalai et al. 2024 at `(fpr_upper, fnr_upper)`.
    pub epsilon: f64,
}

/// The bound at cut `b` from the **evaluation** histogram: one-sided
/// Clopper–Pearson upper limits of both error rates at tail
/// `(1 − confidence)/2` each, then Eq. (1) (`dpaudit counts`).
pub fn bound_at(
    evaluation: &ScoreHistogram,
    b: i32,
    confidence: f64,
    delta: f64,
) -> Result<CountedEvidence> {
    let (n1, n0) = (evaluation.with_target(), evaluation.without_target());
    let (with_above, without_above) = evaluation.above(b);
    evidence(b, with_above, without_above, n1, n0, confidence, delta)
}

fn evidence(
    b: i32,
    with_above: u64,
    without_above: u64,
    n1: u64,
    n0: u64,
    confidence: f64,
    delta: f64,
) -> Result<CountedEvidence> {
    let tail = (1.0 - confidence) / 2.0;
    let audit = |context: &str| {
        let context = context.to_string();
        move |source| PlanError::Audit { context, source }
    };
    let fneg = n1 - with_above;
    let fpr_upper = upper_limit(without_above, n0, tail)
        .map_err(audit("Clopper–Pearson limit of the false-positive rate"))?;
    let fnr_upper = upper_limit(fneg, n1, tail)
        .map_err(audit("Clopper–Pearson limit of the false-negative rate"))?;
    Ok(CountedEvidence {
        above_bucket: b,
        boundary: boundary(b),
        false_positives: without_above,
        without_target: n0,
        false_negatives: fneg,
        with_target: n1,
        fpr_upper,
        fnr_upper,
        tail_per_rate: tail,
        epsilon: epsilon_from_error_bounds(fpr_upper, fnr_upper, delta),
    })
}

/// The best cut on the evaluation histogram itself, each rate bounded at
/// `(1 − confidence)/2`: the papers' same-data practice (Annamalai et al.
/// 2024 App. B, Algorithm 5) on the fixed grid. **Not** a valid bound at the
/// stated confidence (the maximum over cuts is taken on the data bounded).
/// Exact: a cut's ε at its point estimates is at least its ε at the
/// Clopper–Pearson limits, so cuts are visited by decreasing point value
/// until none can beat the best found.
pub fn same_data(
    evaluation: &ScoreHistogram,
    confidence: f64,
    delta: f64,
) -> Result<CountedEvidence> {
    let (n1, n0) = (evaluation.with_target(), evaluation.without_target());
    let cuts = evaluation.cuts();
    let mut order: Vec<(f64, usize)> = cuts
        .iter()
        .enumerate()
        .map(|(i, &(_, with_above, without_above))| {
            let fpr = without_above as f64 / n0.max(1) as f64;
            let fnr = (n1 - with_above) as f64 / n1.max(1) as f64;
            // At the point estimates: an upper bound on the value at the
            // Clopper–Pearson limits (+∞ where a rate is 0), so the search may stop.
            (epsilon_from_error_bounds(fpr, fnr, delta), i)
        })
        .collect();
    order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut best: Option<CountedEvidence> = None;
    for (point, i) in order {
        if best.as_ref().is_some_and(|e| point <= e.epsilon) {
            break;
        }
        let (b, with_above, without_above) = cuts[i];
        let e = evidence(b, with_above, without_above, n1, n0, confidence, delta)?;
        if best.as_ref().is_none_or(|x| e.epsilon > x.epsilon) {
            best = Some(e);
        }
    }
    match best {
        Some(e) => Ok(e),
        None => evidence(0, 0, 0, n1, n0, confidence, delta),
    }
}

/// The bounded-memory bound of a setting, as reported in `audit.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CountedBound {
    /// The ε lower bound, valid at `confidence`.
    pub epsilon: f64,
    /// Confidence of the bound.
    pub confidence: f64,
    /// δ of the bound.
    pub delta: f64,
    /// Always true: the cut was fixed on runs independent of the counted ones.
    pub valid_at_confidence: bool,
    /// `held-out-threshold`.
    pub selection: &'static str,
    /// The policy in words.
    pub selection_detail: String,
    /// Selection runs per hypothesis.
    pub selection_runs_per_hypothesis: u64,
    /// The cut, chosen on the selection runs.
    pub choice: ThresholdChoice,
    /// The counts of the evaluation runs at the cut, and the bound.
    pub evaluation: CountedEvidence,
    /// The best cut on the evaluation runs themselves (the papers' practice):
    /// NOT valid at the stated confidence.
    pub same_data: CountedEvidence,
    /// Always false: `same_data` is not a valid bound.
    pub same_data_valid_at_confidence: bool,
    /// Occupied buckets of the evaluation histogram (its size; bounded by the grid).
    pub evaluation_buckets: u64,
    /// Mantissa bits of the grid.
    pub grid_mantissa_bits: u32,
}

/// The policy's description.
pub const SELECTION_DETAIL: &str = "held-out threshold: the cut chosen on selection runs from seed streams disjoint from the \
     evaluation runs, then both error counts of the evaluation runs at that cut bounded by Clopper–Pearson at \
     (1 − confidence)/2 each (Annamalai et al. 2024 Eq. (1))";

/// The bound of a setting from its two histograms.
pub fn counted_bound(
    selection: &ScoreHistogram,
    evaluation: &ScoreHistogram,
    confidence: f64,
    delta: f64,
) -> Result<CountedBound> {
    let n = evaluation.with_target().min(evaluation.without_target());
    // The choice sees the selection histogram and the evaluation size only.
    let choice = choose_threshold(selection, n, confidence, delta)?;
    let bound = bound_at(evaluation, choice.above_bucket, confidence, delta)?;
    let same = same_data(evaluation, confidence, delta)?;
    Ok(CountedBound {
        epsilon: bound.epsilon,
        confidence,
        delta,
        valid_at_confidence: true,
        selection: "held-out-threshold",
        selection_detail: SELECTION_DETAIL.into(),
        selection_runs_per_hypothesis: selection.with_target().min(selection.without_target()),
        choice,
        evaluation: bound,
        same_data: same,
        same_data_valid_at_confidence: false,
        evaluation_buckets: evaluation.buckets.len() as u64,
        grid_mantissa_bits: MANTISSA_BITS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotone_and_boundaries_cut_where_they_say() {
        let mut xs: Vec<f64> = vec![
            0.0,
            -0.0,
            1e-300,
            -1e-300,
            1e-5,
            -1e-5,
            1.0 / 65_536.0,
            -1.0 / 65_536.0,
            0.5,
            1.0,
            1.0039,
            1.0040,
            3.999,
            4.0,
            -4.0,
            1e300,
            -1e300,
            f64::MAX,
            f64::MIN,
        ];
        let mut x = -50.0;
        while x < 50.0 {
            xs.push(x);
            x += 0.0137;
        }
        xs.sort_by(f64::total_cmp);
        for w in xs.windows(2) {
            assert!(bucket(w[0]) <= bucket(w[1]), "{} {}", w[0], w[1]);
        }
        for &x in &xs {
            let k = bucket(x);
            assert!((-MAX_BUCKET..=MAX_BUCKET).contains(&k));
            // x is not above its own bucket's cut, and is above the cut below.
            let above = |b: i32| {
                if b >= 0 {
                    x >= boundary(b)
                } else {
                    x > boundary(b)
                }
            };
            assert!(!above(k), "x = {x}, bucket {k}, boundary {}", boundary(k));
            assert!(
                above(k - 1),
                "x = {x}, bucket {k}, boundary {}",
                boundary(k - 1)
            );
        }
        // Relative resolution 2⁻⁸: 4.0 and 4.0 + 4/256 are one bucket apart.
        assert_eq!(bucket(4.0 + 4.0 / 256.0), bucket(4.0) + 1);
        assert_eq!(bucket(1e-6), 0);
        assert_eq!(bucket(f64::MAX), MAX_BUCKET);
    }

    #[test]
    fn histograms_add_exactly_and_refuse_non_finite_scores() {
        let mut a = HistogramAccumulator::new();
        a.add(&[1.0, 2.0, 2.0], &[-1.0, 0.0]).unwrap();
        let h = a.histogram();
        assert_eq!((h.with_target(), h.without_target()), (3, 2));
        assert!(h.is_well_formed());
        let mut b = HistogramAccumulator::new();
        b.add_histogram(&h);
        b.add_histogram(&h);
        let hh = b.histogram();
        assert_eq!((hh.with_target(), hh.without_target()), (6, 4));
        assert_eq!(hh.above(bucket(1.5)), (4, 0));
        assert!(a.add(&[f64::NAN], &[]).is_err());
        assert!(a.add(&[], &[f64::INFINITY]).is_err());
    }

    #[test]
    fn same_data_is_the_maximum_over_every_cut() {
        // Branch and bound against brute force on a small histogram.
        let mut a = HistogramAccumulator::new();
        let with: Vec<f64> = (0..3000)
            .map(|i| (i as f64 * 0.37).sin() * 3.0 + 0.8)
            .collect();
        let without: Vec<f64> = (0..3000).map(|i| (i as f64 * 0.73).sin() * 3.0).collect();
        a.add(&with, &without).unwrap();
        let h = a.histogram();
        let best = same_data(&h, 0.95, 1e-5).unwrap();
        let brute = h
            .cuts()
            .iter()
            .map(|&(b, _, _)| bound_at(&h, b, 0.95, 1e-5).unwrap().epsilon)
            .fold(0.0, f64::max);
        assert_eq!(best.epsilon, brute);
        assert!(best.epsilon > 0.0);
    }
}
