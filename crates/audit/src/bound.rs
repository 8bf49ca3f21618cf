//! Typed results. A lower bound on ε never shares a type with an upper bound
//! or with a measurement that is not a bound (PANORAMIA's ε̃).

use serde::{Deserialize, Deserializer, Serialize};

use crate::design::InclusionDesign;
use crate::metrics::Metrics;
use crate::observations::{Method, Observations, Selection};
use crate::tie_break::TieBreak;

/// A lower bound on ε: with probability at least `confidence` (when
/// `valid_at_confidence` is true), the audited mechanism is not
/// (ε′, δ)-DP for any ε′ < `epsilon`.
///
/// Serialised as the bound's own fields, it reads back as the same value
/// (every float to the bit: the workspace's `serde_json` has
/// `float_roundtrip`); the Python binding pickles a bound that way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpsilonLowerBound {
    /// The lower bound on ε (finite, ≥ 0).
    pub epsilon: f64,
    /// The confidence level the bound was computed at.
    pub confidence: f64,
    /// The δ at which ε is bounded.
    pub delta: f64,
    /// The statistical method.
    pub method: Method,
    /// How the threshold / guess counts were chosen.
    pub selection: Selection,
    /// False for `same-data` selection (the maximum over candidates is not
    /// a valid bound at `confidence`; it is what the papers report), and
    /// for a bound that assumes a Gaussian trade-off curve once
    /// [`EpsilonLowerBound::for_mechanism`] says the mechanism has none.
    pub valid_at_confidence: bool,
    /// What the bound assumes of the audited mechanism, beyond independent
    /// runs; travels with the number so that no caller can lose it.
    pub assumes: MechanismAssumption,
    /// Which observations the reported bound was computed on.
    pub bounded_on: BoundedOn,
    /// `multi-split` only: every split's bound (each at level
    /// `(1 − confidence)/2`), in split order; the reported one is the
    /// `⌈splits/2⌉`-th largest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split_bounds: Option<Vec<f64>>,
    /// AUC and TPR at low FPR of the scores, on all observations.
    pub metrics: Metrics,
    /// What produced the number.
    pub evidence: Evidence,
}

/// What a bound assumes of the audited mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MechanismAssumption {
    /// Nothing: the bound holds for any (ε, δ)-DP mechanism.
    Nothing,
    /// The mechanism's trade-off curve is Gaussian (it is μ-GDP and no
    /// better): the ε is converted from a bound on μ (Dong, Roth & Su 2022,
    /// Cor. 2.13). True of a composition of Gaussian mechanisms at known
    /// steps (a canary inserted every k-th step); NOT of a subsampled or
    /// shuffled canary, whose trade-off curve is not Gaussian (Cebere et al.
    /// 2024, Remark 3). The bound on μ itself needs no assumption.
    GaussianTradeoff,
    /// The canary **scores** are Gaussian with one variance, `N(m₁, s²)` for
    /// members and `N(m₀, s²)` for non-members, independent given the
    /// inclusion bits ([`crate::gaussian_scores`], after Agrawal et al.
    /// 2026: asymptotically true of canary-aligned sums in white-box
    /// DP-SGD). Under it the score pair is exactly μ-GDP, so its ε at δ
    /// bounds any mechanism; without it neither μ nor ε is a bound.
    GaussianScores,
    /// The canaries do not interact (each passes through its own channel,
    /// independent of the others' given the inclusion bits) and each channel
    /// is μ-GDP; the ε from μ besides assumes a Gaussian trade-off curve.
    /// The order-statistics one-run audit with the Gaussian family
    /// ([`crate::one_run_order`]) needs both: a mechanism that is μ-GDP for
    /// each canary but couples them can exceed its μ bound
    /// (`docs/audit-statistics.md` §11 has such a mechanism).
    IndependentGaussianChannels,
}

/// What the auditor knows of the mechanism's trade-off curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TradeoffShape {
    /// Gaussian: Gaussian mechanisms composed at known steps, no subsampling.
    Gaussian,
    /// Not Gaussian: the canary is sampled (Poisson, shuffling).
    NotGaussian,
    /// Not known: the bound keeps its assumption, stated in every output.
    Unknown,
}

impl EpsilonLowerBound {
    /// The bound for a mechanism of trade-off `shape`: a bound that assumes
    /// a Gaussian trade-off is not valid for a mechanism known not to have
    /// one.
    #[must_use]
    pub fn for_mechanism(mut self, shape: TradeoffShape) -> Self {
        if matches!(
            self.assumes,
            MechanismAssumption::GaussianTradeoff
                | MechanismAssumption::IndependentGaussianChannels
        ) && shape == TradeoffShape::NotGaussian
        {
            self.valid_at_confidence = false;
        }
        self
    }

    /// The method's name as printed, saying what it assumes:
    /// `one-run-fdp-gaussian` (`one-run-order-gaussian`) for the f-DP
    /// (order-statistics) one-run audit with the Gaussian family (its ε
    /// assumes a Gaussian trade-off curve), else the method's
    /// own name (`gdp` says so by itself).
    pub fn label(&self) -> &'static str {
        match (self.method, &self.evidence) {
            (Method::OneRunFdp, Evidence::OneRun(ev)) if ev.family == Some("gaussian") => {
                "one-run-fdp-gaussian"
            }
            (Method::OneRunOrder, Evidence::OneRun(ev)) if ev.family == Some("gaussian") => {
                "one-run-order-gaussian"
            }
            (method, _) => method.name(),
        }
    }

    /// One sentence on what the bound assumes of the mechanism.
    pub fn assumption(&self) -> &'static str {
        match self.assumes {
            MechanismAssumption::Nothing => {
                "no assumption on the mechanism: the bound holds for any (ε, δ)-DP claim"
            }
            MechanismAssumption::GaussianTradeoff => {
                "the mechanism's trade-off curve is Gaussian (e.g. a canary inserted at known steps without \
                 subsampling); NOT valid for sampled or shuffled canaries"
            }
            MechanismAssumption::GaussianScores => {
                "assumes Gaussian canary scores (asymptotic, DP-SGD white box): N(m1, s^2) for members and \
                 N(m0, s^2) for non-members, independent given inclusion; NOT valid for arbitrary scores"
            }
            MechanismAssumption::IndependentGaussianChannels => {
                "the canaries do not interact (each its own channel, independent of the others given \
                 inclusion) and each channel is mu-GDP, and the mechanism's trade-off curve is Gaussian; \
                 NOT valid for mechanisms that couple the canaries, nor for sampled or shuffled canaries"
            }
        }
    }
}

/// The observations a bound was computed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "data", rename_all = "kebab-case")]
pub enum BoundedOn {
    /// All observations.
    All,
    /// The evaluation half of [`crate::observations::Observations::split`] with
    /// this seed.
    EvaluationHalf {
        /// Seed of the split.
        seed: u64,
    },
}

/// The observations `bound` was computed on (the evaluation half for `split`
/// and `multi-split`, all of `obs` otherwise).
pub fn bounding_data(obs: &Observations, bound: &EpsilonLowerBound) -> Observations<'static> {
    match bound.bounded_on {
        BoundedOn::All => obs.clone().into_owned(),
        BoundedOn::EvaluationHalf { seed } => obs.split(seed).1,
    }
}

/// Which observations `bound` was computed on, in words.
pub fn describe_bounded_on(bound: &EpsilonLowerBound) -> String {
    match (bound.bounded_on, bound.selection) {
        (BoundedOn::All, _) => "all observations".into(),
        (BoundedOn::EvaluationHalf { seed }, Selection::MultiSplit { .. }) => {
            format!("evaluation half, median-rank split (seed {seed})")
        }
        (BoundedOn::EvaluationHalf { seed }, _) => format!("evaluation half (seed {seed})"),
    }
}

/// Method-specific evidence behind a bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Evidence {
    /// Threshold test with Clopper–Pearson upper bounds on both error rates
    /// (eps-delta and GDP methods).
    Threshold(ThresholdEvidence),
    /// One-run guesses (Steinke et al. 2023; Mahloujifar et al. 2024).
    OneRun(OneRunEvidence),
    /// The class means and pooled spread of Gaussian canary scores
    /// ([`crate::gaussian_scores`], after Agrawal et al. 2026).
    GaussianScores(GaussianScoresEvidence),
}

/// How a threshold audit turned its error counts into the bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "test", rename_all = "kebab-case")]
pub enum ThresholdTest {
    /// The rank test ([`crate::rank_test`]): the threshold is the order
    /// statistic of rank `rank` of class `class`, and one exact statement
    /// about both error counts is made at `level`.
    Rank {
        /// `non-member`: the threshold is the (rank+1)-th largest non-member
        /// score; `member`: just below the (rank+1)-th smallest member score.
        #[serde(deserialize_with = "rank_class")]
        class: Name,
        /// The rank.
        rank: u64,
        /// Level of the statement (`(1 − confidence)/statements`).
        level: f64,
    },
    /// Two one-sided Clopper–Pearson upper limits, one per error rate, each
    /// at `tail_per_rate` (`same-data`: the papers' practice; `bonferroni`
    /// on at most [`crate::region::FEW_VALUES_MAX`] distinct scores: one
    /// event per value).
    ClopperPearson {
        /// Upper limit on the false-positive rate.
        fpr_upper: f64,
        /// Upper limit on the false-negative rate.
        fnr_upper: f64,
        /// Tail probability of each of the two statements.
        tail_per_rate: f64,
    },
}

/// A threshold test "member iff score > threshold" and its error counts,
/// on the data the bound was computed from (the evaluation half for `split`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdEvidence {
    /// Predict "member" iff `score > threshold`.
    pub threshold: f64,
    /// Non-members predicted member.
    pub false_positives: u64,
    /// Number of non-member scores.
    pub nonmembers: u64,
    /// Members predicted non-member.
    pub false_negatives: u64,
    /// Number of member scores.
    pub members: u64,
    /// The test behind the bound.
    #[serde(flatten)]
    pub test: ThresholdTest,
    /// Number of statements joined by the union bound: one per threshold of
    /// the family for `bonferroni`, 1 for `split`, 2 for `same-data` (one
    /// per rate).
    pub statements: u64,
    /// GDP method only: the μ lower bound, floored at 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mu_lower: Option<f64>,
    /// Candidate thresholds searched (on the selection data).
    pub candidates: u64,
}

impl ThresholdEvidence {
    /// Empirical false-positive rate at the threshold.
    pub fn fpr(&self) -> f64 {
        self.false_positives as f64 / self.nonmembers.max(1) as f64
    }

    /// Empirical false-negative rate at the threshold.
    pub fn fnr(&self) -> f64 {
        self.false_negatives as f64 / self.members.max(1) as f64
    }

    /// The point a plot marks as the bound's: the Clopper–Pearson corner
    /// (FPR̄, FNR̄), or for the rank test, which bounds no rate alone, the
    /// empirical point.
    pub fn marked_point(&self) -> (f64, f64) {
        match self.test {
            ThresholdTest::ClopperPearson {
                fpr_upper,
                fnr_upper,
                ..
            } => (fpr_upper, fnr_upper),
            ThresholdTest::Rank { .. } => (self.fpr(), self.fnr()),
        }
    }

    /// The tail at which a plot draws pointwise Clopper–Pearson limits
    /// around the empirical points, for scale: the bound's own tail per rate,
    /// or half the rank test's level.
    pub fn display_tail(&self) -> f64 {
        match self.test {
            ThresholdTest::ClopperPearson { tail_per_rate, .. } => tail_per_rate,
            ThresholdTest::Rank { level, .. } => level / 2.0,
        }
    }
}

/// The guesses of a one-run audit and the test that rejected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OneRunEvidence {
    /// Randomized canaries in the bounded set (`m`).
    pub canaries: u64,
    /// Positive guesses (largest scores).
    pub k_plus: u64,
    /// Negative guesses (smallest scores).
    pub k_minus: u64,
    /// `r = k+ + k−`.
    pub guesses: u64,
    /// Correct guesses `v` (under the quantile rule a cut run of tied
    /// scores counted at the share [`crate::tie_break::TIE_BREAK_SHARE`] of
    /// its random tie-breaks; under the seeded rule in the seeded order).
    pub correct: u64,
    /// Level each candidate was tested at (`γ(1 − confidence)` with γ =
    /// [`TieBreak::level_share`] of the rule (0.95 for the quantile rule, 1
    /// for the seeded one), divided by the number of candidates for
    /// `bonferroni`, halved for each `multi-split` halving;
    /// `1 − confidence`, halved for `multi-split`, for the one guess set of
    /// two-valued scores, which cuts no tied run).
    pub level: f64,
    /// Number of (k+, k−) candidates searched.
    pub candidates: u64,
    /// f-DP one-run only: the trade-off family whose member was rejected.
    #[serde(
        skip_serializing_if = "Option::is_none",
        default,
        deserialize_with = "tradeoff_family"
    )]
    pub family: Option<Name>,
    /// f-DP one-run with the Gaussian family: the μ lower bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mu_lower: Option<f64>,
    /// The inclusion count of all the canaries and its test against
    /// inclusion with probability ½ ([`crate::design`]); the audit refuses
    /// below its level, so a reported bound always passed it.
    pub inclusion: InclusionDesign,
    /// The candidates searched ([`GuessFamily`]).
    pub guess_family: GuessFamily,
    /// How the guesses ordered tied scores ([`TieBreak`]; the quantile
    /// rule in bounds written before the seeded one existed).
    #[serde(default)]
    pub tie_break: TieBreak,
    /// Whether two canaries' scores are equal: then a [`TieBreak::Seeded`]
    /// bound depends on its seed (and the row order).
    #[serde(default)]
    pub tied_scores: bool,
}

impl OneRunEvidence {
    /// How tied scores were ordered, in words, with the seed of a seeded
    /// tie-break and whether the bound depends on it.
    pub fn tie_break_note(&self) -> String {
        match (self.tie_break, self.tied_scores) {
            (TieBreak::Quantile, _) => {
                "quantile (a guess set that cuts tied scores counts them as \
                 95 % of random tie-breaks would, tested at 95 % of the level; no seed)"
                    .into()
            }
            (TieBreak::Seeded { seed }, true) => format!(
                "seeded (seed {seed}): tied scores ordered by seeded random keys, tested at the \
                 full level; the scores have ties, so this bound depends on the tie-break seed \
                 {seed} (valid for a seed fixed before the scores were seen)"
            ),
            (TieBreak::Seeded { seed }, false) => format!(
                "seeded (seed {seed}), tested at the full level; no two scores are tied, so the \
                 seed does not change this bound"
            ),
        }
    }
}

/// A name out of a fixed set. (An alias, so that serde's derive does not
/// take the field for a string borrowed from the input.)
type Name = &'static str;

/// One of `names`, read back into the `&'static str` a bound holds.
fn one_of<'de, D: Deserializer<'de>>(
    d: D,
    names: &[&'static str],
) -> std::result::Result<&'static str, D::Error> {
    let s = String::deserialize(d)?;
    names.iter().copied().find(|n| *n == s).ok_or_else(|| {
        serde::de::Error::custom(format!("`{s}` is unknown; expected one of {names:?}"))
    })
}

/// [`ThresholdTest::Rank`]'s class.
fn rank_class<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<&'static str, D::Error> {
    one_of(d, &["member", "non-member"])
}

/// [`OneRunEvidence::family`]: the name of a
/// `crate::one_run_fdp::TradeoffFamily` (written out here, since that module
/// builds on this one; its tests read both names back).
fn tradeoff_family<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<&'static str>, D::Error> {
    one_of(d, &["eps-delta", "gaussian"]).map(Some)
}

/// The (k+, k−) candidates a searching policy (`bonferroni`, `split`,
/// `multi-split`, `same-data`) tries; `fixed` uses the caller's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum GuessFamily {
    /// `k+ = k− = f·m` only. Robust to an unbalanced design: when the scores
    /// carry no information about inclusion, the expected number of correct
    /// guesses is `r/2` whatever the member fraction (the positive guesses
    /// are right as often as members are common, the negative ones as often
    /// as non-members are), so an imbalance the design check cannot see
    /// cannot make a bound. The default.
    #[default]
    #[cfg_attr(
        feature = "clap",
        value(help = "k+ = k− only: robust to a design that is not exactly ½ (the default)")
    )]
    Symmetric,
    /// The symmetric candidates and the one-sided ones (`k+ = f·m, k− = 0`
    /// and `k+ = 0, k− = f·m`): far stronger when the signal is on one side
    /// (members with very low loss, a black-box attack on memorized
    /// canaries). Needs inclusion with probability exactly ½, as dpaudit's
    /// own runs draw it: under a design a little off ½ that the check does
    /// not detect (e.g. 47 % of 3000), one-sided guesses gain from the
    /// imbalance alone and a bound on null scores is positive in up to 16 %
    /// of data sets instead of 5 % (`docs/audit-statistics.md`, §3).
    #[cfg_attr(
        feature = "clap",
        value(
            help = "Also one-sided guesses: stronger for one-sided signals (loss attacks); needs inclusion \
                    with probability exactly ½"
        )
    )]
    WithOneSided,
    /// Every count: `k+ = k− = k` for `1 ≤ k ≤ m/2`, and the one-sided
    /// `k+ = k, k− = 0` and `k+ = 0, k− = k` for `1 ≤ k ≤ m` (about `2.5·m`
    /// candidates). No grid: where the other families step from `0.1·m` to
    /// `0.2·m` guesses, two score sets whose `0.1·m` most confident guesses
    /// are all right get the same bound however far beyond their right
    /// guesses reach; here the search follows them count by count. Under
    /// `bonferroni` the level is divided by the candidate count, a cost in
    /// ε of about `ln(2.5·m)/r` for `r` all-right guesses (at `m` = 3000,
    /// `r` = 300: 3.20 where `with-one-sided`'s 33 candidates give 3.81). Needs
    /// inclusion with probability exactly ½, as `with-one-sided` does; the
    /// search is `O(m)` bounds, meant for `m` up to the tens of thousands.
    #[cfg_attr(
        feature = "clap",
        value(
            help = "Every guess count, symmetric and one-sided: no grid to saturate; needs inclusion \
                      with probability exactly ½"
        )
    )]
    AllCounts,
}

impl GuessFamily {
    /// `symmetric`, `with-one-sided` or `all-counts`.
    pub fn name(self) -> &'static str {
        match self {
            GuessFamily::Symmetric => "symmetric",
            GuessFamily::WithOneSided => "with-one-sided",
            GuessFamily::AllCounts => "all-counts",
        }
    }
}

/// How the Gaussian-scores audit ([`crate::gaussian_scores`]) turned the
/// class means and the pooled spread into its μ lower bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GaussianScoresEvidence {
    /// Member scores (`n₁`).
    pub members: u64,
    /// Non-member scores (`n₀`).
    pub nonmembers: u64,
    /// `x̄₁ − x̄₀`, the difference of the class means.
    pub mean_difference: f64,
    /// The pooled standard deviation `s`, on `n₁ + n₀ − 2` degrees of freedom.
    pub pooled_sd: f64,
    /// The members' own standard deviation (a check of the one-variance model).
    pub member_sd: f64,
    /// The non-members' own standard deviation.
    pub nonmember_sd: f64,
    /// `(x̄₁ − x̄₀)/s`: the point estimate of μ (not a bound).
    pub mu_estimate: f64,
    /// The upper confidence limit on the common standard deviation.
    pub sd_upper: f64,
    /// The μ lower bound, floored at 0.
    pub mu_lower: f64,
    /// The tail of each of the two independent statements (`1 − √confidence`).
    pub tail_per_statement: f64,
    /// The inclusion count and its test against Bin(m, ½), reported, not
    /// enforced: the statistic compares the two classes and needs no
    /// balance.
    pub inclusion: InclusionDesign,
}
