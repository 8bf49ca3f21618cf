//! What a caller asks for: the audit [`Method`]s and the threshold
//! [`Selection`] policies, named once for the library, experiment files and
//! JSON (serde), the CLI (clap's `ValueEnum`, behind the `clap` feature) and
//! the Python package (`FromStr`).
//!
//! Names are kebab-case (`eps-delta`, `same-data`) in JSON and on the command
//! line; files also accept the snake-case spelling (`eps_delta`,
//! `same_data`) that experiment files use. Adding a method: a variant here
//! (its name and help, what it observes, the options it takes, its default
//! policy and assumptions), its arm in [`crate::estimate::lower_bound`] and
//! its module beside it (ARCHITECTURE.md, "How to add …").

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The statistical method of a bound, as asked for and as recorded.
/// Serialised by its [`Method::name`]; read from either spelling
/// ([`Method::from_str`]), so a new variant needs no serde attribute.
///
/// `one-run-fdp-gaussian` is the f-DP one-run audit with the Gaussian
/// trade-off family asked for by name (experiment files); the bound it
/// produces records [`Method::OneRunFdp`] and its family
/// ([`crate::bound::EpsilonLowerBound::label`] names both). On the command
/// line the family is `--family`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case", try_from = "String")]
pub enum Method {
    /// Clopper–Pearson (ε,δ) region (Annamalai et al. 2024, Eq. (1) and
    /// Algorithm 5), rank test.
    #[cfg_attr(
        feature = "clap",
        value(
            help = "The (ε,δ) region over thresholds (Annamalai et al. 2024, Eq. (1)), rank test"
        )
    )]
    EpsDelta,
    /// GDP audit (Cebere et al. 2024, App. A, Lemma 1 and Corollary 1).
    #[cfg_attr(
        feature = "clap",
        value(help = "GDP audit: μ lower bound, then ε at δ (Cebere et al. 2024, App. A)")
    )]
    Gdp,
    /// One-run audit (Steinke, Nasr & Jagielski 2023, Thm 3.1).
    #[cfg_attr(
        feature = "clap",
        value(help = "One-run audit from canary scores (Steinke, Nasr & Jagielski 2023, Thm 3.1)")
    )]
    OneRun,
    /// f-DP one-run audit (Mahloujifar, Melis & Chaudhuri 2024), the
    /// trade-off family given separately ((ε, δ) by default).
    #[cfg_attr(
        feature = "clap",
        value(
            help = "f-DP one-run audit from canary scores (Mahloujifar, Melis & Chaudhuri 2024)"
        )
    )]
    OneRunFdp,
    /// The f-DP one-run audit with the Gaussian trade-off family: μ⁻ bounds
    /// any μ-GDP claim, and the ε derived from it assumes the mechanism's
    /// trade-off curve is Gaussian (as the name says).
    #[cfg_attr(feature = "clap", value(skip))]
    OneRunFdpGaussian,
    /// Continuous-score one-run audit after Agrawal et al. 2026: assumes
    /// Gaussian canary scores (asymptotic, DP-SGD white box), as the name
    /// says; never a default.
    #[cfg_attr(
        feature = "clap",
        value(
            help = "ASSUMES Gaussian canary scores (asymptotic, DP-SGD white box): μ from the class means \
                    and pooled spread, then ε at δ (after Agrawal et al. 2026); not valid for arbitrary scores"
        )
    )]
    OneRunGaussianScores,
    /// Order-statistics one-run audit (Xiang, Wang, Xiao, Tian & Wang 2025),
    /// the trade-off family given separately ((ε, δ) by default, which is
    /// Steinke et al.'s test; the Gaussian family assumes canaries that do
    /// not interact).
    #[cfg_attr(
        feature = "clap",
        value(
            help = "Order-statistics one-run audit from canary scores (Xiang et al. 2025); \
                    --family gaussian assumes non-interacting canaries"
        )
    )]
    OneRunOrder,
    /// The order-statistics one-run audit with the Gaussian family: μ⁻
    /// bounds μ when the canaries pass through independent μ-GDP channels,
    /// and the ε derived from it assumes a Gaussian trade-off curve.
    #[cfg_attr(feature = "clap", value(skip))]
    OneRunOrderGaussian,
    /// PANORAMIA measurement (Kazmi et al. 2024): not a lower bound.
    #[cfg_attr(
        feature = "clap",
        value(help = "PANORAMIA's ε̃ (a measurement, not a lower bound; Kazmi et al. 2024)")
    )]
    Panoramia,
}

/// What one observation of a method is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observed {
    /// Independent runs, one target (canary) each: the threshold methods.
    Runs,
    /// The canaries of one run, each included with probability ½: the
    /// one-run methods.
    CanariesOfOneRun,
    /// A measurement with its own pipeline, not a bound over observations.
    Measurement,
}

/// An option a method may take beyond δ, confidence, selection and seed
/// ([`Method::options`]; read by [`crate::estimate::options::BoundOptions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodOption {
    /// Halvings of `multi-split`.
    Splits,
    /// The trade-off family tested.
    Family,
    /// Positive guesses of `fixed`.
    KPlus,
    /// Negative guesses of `fixed`.
    KMinus,
    /// The (k+, k−) candidates searched.
    Guesses,
    /// How tied scores are ordered.
    TieBreak,
}

impl MethodOption {
    /// Every option, in the order front ends list them.
    pub const ALL: [MethodOption; 6] = [
        MethodOption::Splits,
        MethodOption::Family,
        MethodOption::KPlus,
        MethodOption::KMinus,
        MethodOption::Guesses,
        MethodOption::TieBreak,
    ];

    /// The Python keyword and file key (`k_plus`); the flag is its kebab case.
    pub fn key(self) -> &'static str {
        match self {
            MethodOption::Splits => "splits",
            MethodOption::Family => "family",
            MethodOption::KPlus => "k_plus",
            MethodOption::KMinus => "k_minus",
            MethodOption::Guesses => "guesses",
            MethodOption::TieBreak => "tie_break",
        }
    }
}

/// Canaries from which `split` replaces `bonferroni` as the default of the
/// Steinke et al. one-run audit (re-exported as
/// [`crate::policy::ONE_RUN_SPLIT_FROM`]).
pub const ONE_RUN_SPLIT_FROM: usize = 5000;

impl Method {
    /// Every method, in the order of the documentation.
    pub const ALL: [Method; 9] = [
        Method::EpsDelta,
        Method::Gdp,
        Method::OneRun,
        Method::OneRunFdp,
        Method::OneRunFdpGaussian,
        Method::OneRunGaussianScores,
        Method::OneRunOrder,
        Method::OneRunOrderGaussian,
        Method::Panoramia,
    ];

    /// The name on the command line and in JSON.
    pub fn name(&self) -> &'static str {
        match self {
            Method::EpsDelta => "eps-delta",
            Method::Gdp => "gdp",
            Method::OneRun => "one-run",
            Method::OneRunFdp => "one-run-fdp",
            Method::OneRunFdpGaussian => "one-run-fdp-gaussian",
            Method::OneRunGaussianScores => "one-run-gaussian-scores",
            Method::OneRunOrder => "one-run-order",
            Method::OneRunOrderGaussian => "one-run-order-gaussian",
            Method::Panoramia => "panoramia",
        }
    }

    /// The name in experiment files (snake case: `eps_delta`).
    pub fn file_name(&self) -> String {
        self.name().replace('-', "_")
    }

    /// The options the method takes beyond δ, confidence, selection and
    /// seed; [`crate::estimate::options::BoundOptions`] refuses any other.
    pub fn options(self) -> &'static [MethodOption] {
        use MethodOption::*;
        match self {
            Method::EpsDelta | Method::Gdp => &[Splits],
            Method::OneRun => &[Splits, KPlus, KMinus, Guesses, TieBreak],
            Method::OneRunFdp => &[Splits, Family, KPlus, KMinus, Guesses, TieBreak],
            Method::OneRunFdpGaussian => &[Splits, KPlus, KMinus, Guesses, TieBreak],
            Method::OneRunGaussianScores | Method::Panoramia => &[],
            Method::OneRunOrder => &[Splits, Family, KPlus, KMinus, Guesses],
            Method::OneRunOrderGaussian => &[Splits, KPlus, KMinus, Guesses],
        }
    }

    /// Whether the method takes `option`.
    pub fn takes(self, option: MethodOption) -> bool {
        self.options().contains(&option)
    }

    /// Whether the method gives an ε lower bound
    /// ([`crate::estimate::lower_bound`]); PANORAMIA's ε̃ is a measurement.
    pub fn bounds(self) -> bool {
        self.observes() != Observed::Measurement
    }

    /// Whether front ends list the method by name (the CLI's `--method`
    /// values, Python's `METHODS`): every method but the file-only names of a
    /// family of another ([`Method::recorded_as`]).
    pub fn listed(self) -> bool {
        self.recorded_as() == self
    }

    /// The method a bound of this one records: [`Method::OneRunFdp`] for
    /// [`Method::OneRunFdpGaussian`], [`Method::OneRunOrder`] for
    /// [`Method::OneRunOrderGaussian`] (the family is in the evidence).
    pub fn recorded_as(self) -> Method {
        match self {
            Method::OneRunFdpGaussian => Method::OneRunFdp,
            Method::OneRunOrderGaussian => Method::OneRunOrder,
            other => other,
        }
    }

    /// What one observation is.
    pub fn observes(self) -> Observed {
        match self {
            Method::EpsDelta | Method::Gdp => Observed::Runs,
            Method::OneRun
            | Method::OneRunFdp
            | Method::OneRunFdpGaussian
            | Method::OneRunGaussianScores
            | Method::OneRunOrder
            | Method::OneRunOrderGaussian => Observed::CanariesOfOneRun,
            Method::Panoramia => Observed::Measurement,
        }
    }

    /// The default selection policy with `n` observations; see
    /// [`crate::policy::default_selection`] for the rule and its evidence.
    pub fn default_selection(self, n: usize, seed: u64) -> Selection {
        match self {
            Method::EpsDelta
            | Method::Gdp
            | Method::OneRunFdp
            | Method::OneRunFdpGaussian
            | Method::OneRunGaussianScores
            | Method::OneRunOrder
            | Method::OneRunOrderGaussian => Selection::Bonferroni,
            Method::OneRun if n < ONE_RUN_SPLIT_FROM => Selection::Bonferroni,
            Method::OneRun | Method::Panoramia => Selection::Split { seed },
        }
    }

    /// What the method's bound assumes, in words, under `selection`;
    /// `gaussian_family` says whether [`Method::OneRunFdp`] or
    /// [`Method::OneRunOrder`] tested the Gaussian trade-off family. Every sentence is true of the selection
    /// used: whether the bound depends on the row order is said per policy
    /// ([`Selection::order_dependence`]).
    pub fn assumptions(self, gaussian_family: bool, selection: Selection) -> Vec<&'static str> {
        let mut out = self.method_assumptions(gaussian_family);
        if self.observes() != Observed::Measurement {
            out.insert(1, selection.order_dependence(self.observes()));
        }
        out
    }

    fn method_assumptions(self, gaussian_family: bool) -> Vec<&'static str> {
        const RUNS: &str =
            "each score comes from an independent run: the member scores are i.i.d., \
                            the non-member scores are i.i.d., and the two classes are independent";
        const CANARIES: &str = "the rows are the canaries of one run, each included independently \
                                with probability 1/2 (member = included; a count implausible under \
                                that design is refused)";
        const GUESSES: &str =
            "the guesses are a function of the scores only, never of the inclusion bits";
        const HIGHER: &str = "a higher score means \"member\"";
        match self {
            Method::EpsDelta => vec![
                RUNS,
                HIGHER,
                "no assumption on the mechanism: the ε bound holds for any (ε, δ)-DP claim",
            ],
            Method::Gdp => vec![
                RUNS,
                HIGHER,
                "μ⁻ is a lower bound on μ for any mechanism claimed μ-GDP",
                "the ε derived from μ⁻ is a lower bound on the mechanism's ε(δ) only if its trade-off \
                 curve is Gaussian-shaped (e.g. Gaussian noise without subsampling or shuffling); for \
                 subsampled or shuffled mechanisms it can exceed the true ε (Cebere et al. 2024, Remark 3)",
                "δ > 0",
            ],
            Method::OneRun => vec![
                CANARIES,
                GUESSES,
                HIGHER,
                "no assumption on the mechanism: the ε bound holds for any (ε, δ)-DP claim; with δ > 0 it \
                 weakens as the number of canaries grows (the 2mδ term of Steinke et al. 2023, Thm 3.1)",
            ],
            Method::OneRunFdp if !gaussian_family => vec![
                CANARIES,
                GUESSES,
                HIGHER,
                "no assumption on the mechanism: the ε bound holds for any (ε, δ)-DP claim \
                 (family eps-delta)",
            ],
            Method::OneRunFdp | Method::OneRunFdpGaussian => vec![
                CANARIES,
                GUESSES,
                HIGHER,
                "μ⁻ is a lower bound on μ for any mechanism claimed μ-GDP (family gaussian)",
                "the ε derived from μ⁻ is a lower bound on the mechanism's ε(δ) only if its trade-off \
                 curve is Gaussian-shaped; use --family eps-delta for a bound on any mechanism",
                "δ > 0",
            ],
            Method::OneRunGaussianScores => vec![
                "assumes Gaussian canary scores (asymptotic, DP-SGD white box): member scores i.i.d. \
                 N(m1, s^2), non-member scores i.i.d. N(m0, s^2), one variance, independent given the \
                 inclusion bits (the CLT limit of canary-aligned sums, Agrawal et al. 2026); NOT valid \
                 for arbitrary scores (randomized response, Laplace, thresholded or black-box scores)",
                HIGHER,
                "under that assumption the scores are exactly mu-GDP with mu = (m1 - m0)/s, so mu⁻ and \
                 the epsilon at delta derived from it bound any mechanism the scores came from",
                "no threshold or guess count is chosen: one statistic on all canaries (bonferroni); \
                 the inclusion count is reported, not required to be balanced",
                "δ > 0",
            ],
            Method::OneRunOrder if !gaussian_family => vec![
                CANARIES,
                GUESSES,
                HIGHER,
                "no assumption on the mechanism: the ε bound holds for any (ε, δ)-DP claim \
                 (family eps-delta, where the order-statistics test is that of Steinke et al. 2023, Thm 3.1)",
            ],
            Method::OneRunOrder | Method::OneRunOrderGaussian => vec![
                CANARIES,
                GUESSES,
                HIGHER,
                "the canaries do not interact: each passes through its own channel, independent of the \
                 others' given the inclusion bits (e.g. white-box canaries on separate coordinates); \
                 μ⁻ bounds μ when each channel is μ-GDP (family gaussian). A mechanism that couples \
                 the canaries can exceed it (docs/audit-statistics.md)",
                "the ε derived from μ⁻ is a lower bound on the mechanism's ε(δ) only if its trade-off \
                 curve is Gaussian-shaped; use --family eps-delta for a bound on any mechanism",
                "δ > 0",
            ],
            Method::Panoramia => vec![
                "epsilon_tilde is a measurement relative to a baseline classifier, not a lower bound on ε",
            ],
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = String;

    /// The kebab-case or snake-case name.
    fn from_str(s: &str) -> Result<Self, String> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == s || m.file_name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
                format!("method `{s}` is unknown; expected {}", names.join(", "))
            })
    }
}

impl TryFrom<String> for Method {
    type Error = String;

    /// Files read either spelling, as [`Method::from_str`].
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

/// The selection policy asked for, before it is resolved against a method,
/// a number of observations and a seed ([`SelectionChoice::resolve`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case", try_from = "String")]
pub enum SelectionChoice {
    /// The default for the method and the number of observations (valid):
    /// [`Method::default_selection`].
    #[default]
    #[cfg_attr(
        feature = "clap",
        value(
            help = "The default for the method and the number of rows (valid): bonferroni or split"
        )
    )]
    Auto,
    /// All data, a union bound over a family fixed without looking at the
    /// labels (valid).
    #[cfg_attr(
        feature = "clap",
        value(
            help = "All data, a union bound over a family fixed without looking at the labels (valid)"
        )
    )]
    Bonferroni,
    /// Choose on a random half, bound on the other (valid).
    #[cfg_attr(
        feature = "clap",
        value(
            help = "Choose on a random half (seeded by --seed), bound on the other half (valid)"
        )
    )]
    Split,
    /// Several random halvings at half the level; the median-rank bound (valid).
    #[cfg_attr(
        feature = "clap",
        value(
            help = "--splits random halvings at half the level each; the median-rank bound (valid)"
        )
    )]
    MultiSplit,
    /// Choose and bound on the same data, as the papers do (NOT valid).
    #[cfg_attr(
        feature = "clap",
        value(
            help = "Choose and bound on the same data, as the papers do (NOT valid at the stated confidence)"
        )
    )]
    SameData,
    /// One-run guess counts fixed in advance (valid).
    #[cfg_attr(
        feature = "clap",
        value(help = "One-run with --k-plus/--k-minus fixed in advance (valid)")
    )]
    Fixed,
}

impl SelectionChoice {
    /// Every choice, in the order of the documentation.
    pub const ALL: [SelectionChoice; 6] = [
        SelectionChoice::Auto,
        SelectionChoice::Bonferroni,
        SelectionChoice::Split,
        SelectionChoice::MultiSplit,
        SelectionChoice::SameData,
        SelectionChoice::Fixed,
    ];

    /// The name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            SelectionChoice::Auto => "auto",
            SelectionChoice::Bonferroni => "bonferroni",
            SelectionChoice::Split => "split",
            SelectionChoice::MultiSplit => "multi-split",
            SelectionChoice::SameData => "same-data",
            SelectionChoice::Fixed => "fixed",
        }
    }

    /// The name in experiment files (snake case: `same_data`).
    pub fn file_name(self) -> String {
        self.name().replace('-', "_")
    }

    /// The policy of `method` on `n` observations: `seed` keys the split(s),
    /// `splits` is the number of halvings of `multi-split`.
    pub fn resolve(self, method: Method, n: usize, seed: u64, splits: u32) -> Selection {
        match self {
            SelectionChoice::Auto => method.default_selection(n, seed),
            SelectionChoice::Bonferroni => Selection::Bonferroni,
            SelectionChoice::Split => Selection::Split { seed },
            SelectionChoice::MultiSplit => Selection::MultiSplit { seed, splits },
            SelectionChoice::SameData => Selection::SameData,
            SelectionChoice::Fixed => Selection::Fixed,
        }
    }
}

impl fmt::Display for SelectionChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SelectionChoice {
    type Err = String;

    /// The kebab-case or snake-case name.
    fn from_str(s: &str) -> Result<Self, String> {
        SelectionChoice::ALL
            .into_iter()
            .find(|c| c.name() == s || c.file_name() == s)
            .ok_or_else(|| {
                format!(
                    "selection `{s}` is unknown; expected auto, bonferroni, split, multi-split, same-data or fixed"
                )
            })
    }
}

impl TryFrom<String> for SelectionChoice {
    type Error = String;

    /// Files read either spelling, as [`SelectionChoice::from_str`].
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

/// How the threshold (or the guess counts) is chosen. Named in every output.
///
/// Which policies are valid, and why, is written out in
/// `docs/audit-statistics.md`; [`crate::policy::default_selection`] picks
/// one from the method and the number of observations alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "policy", rename_all = "kebab-case")]
pub enum Selection {
    /// Choose on a random half (see [`Observations::split`](crate::observations::Observations::split)), bound on the
    /// other half. Valid at the stated confidence.
    Split {
        /// Seed of the split; fix it before looking at the scores.
        seed: u64,
    },
    /// `splits` independent random halvings, each bounded as [`Selection::Split`]
    /// at level `(1 − confidence)/2`; the reported bound is the
    /// `⌈splits/2⌉`-th largest of them. Valid for any dependence between the
    /// splits (Meinshausen, Meier & Bühlmann 2009, p-value aggregation with
    /// γ = ½: at least half of the splits must reject).
    MultiSplit {
        /// Seed from which the splits' seeds are derived.
        seed: u64,
        /// Number of random halvings.
        splits: u32,
    },
    /// Choose and bound on the same data, as the papers do (Annamalai et
    /// al. 2024 §3.2; Cebere et al. 2024 App. A; Steinke et al. 2023 §5).
    /// The maximum over candidates is **not** a valid bound at the stated
    /// confidence.
    SameData,
    /// Choose on all the data, with a union bound over a family fixed
    /// without looking at the labels. Threshold audits: the rank tests at a
    /// grid of ranks fixed by the class sizes, or, when the pooled scores
    /// take at most [`crate::region::FEW_VALUES_MAX`] distinct values, one
    /// event per value (see [`crate::region`]). One-run audits: every
    /// (k+, k−) candidate of the fixed grid is tested at level
    /// `γ(1 − confidence)/K` ([`crate::tie_break`]). Valid.
    Bonferroni,
    /// No search: the guess counts were fixed before looking at the data
    /// (one-run only). Valid.
    Fixed,
}

impl Selection {
    /// Short name: `split`, `multi-split`, `same-data`, `bonferroni` or `fixed`.
    pub fn name(&self) -> &'static str {
        match self {
            Selection::Split { .. } => "split",
            Selection::MultiSplit { .. } => "multi-split",
            Selection::SameData => "same-data",
            Selection::Bonferroni => "bonferroni",
            Selection::Fixed => "fixed",
        }
    }

    /// Whether the bound depends on the order of the rows under this
    /// policy, in words, for a method that observes `observed`. `split` and
    /// `multi-split` assign each row to a half by its position and a seeded
    /// coin ([`crate::observations::Observations::split`]), so their bound
    /// changes with the row order and the seed (it is valid for every order
    /// and seed fixed before the scores are seen); the other policies read
    /// the scores as a multiset.
    pub fn order_dependence(&self, observed: Observed) -> &'static str {
        const SPLIT: &str = "the bound depends on the row order and the seed: the random halving \
                             assigns each row by its position and a seeded coin (valid for every \
                             order and seed fixed before the scores are seen)";
        const RUNS: &str = "the bound does not depend on the row order: thresholds and their \
                            events are set by the sorted scores";
        const CANARIES: &str = "the bound does not depend on the row order: a guess set that cuts \
                                through tied scores counts them as 95 % of random tie-breaks would, \
                                tested at 95 % of the level";
        match (self, observed) {
            (Selection::Split { .. } | Selection::MultiSplit { .. }, _) => SPLIT,
            (
                Selection::SameData | Selection::Bonferroni | Selection::Fixed,
                Observed::CanariesOfOneRun,
            ) => CANARIES,
            (
                Selection::SameData | Selection::Bonferroni | Selection::Fixed,
                Observed::Runs | Observed::Measurement,
            ) => RUNS,
        }
    }

    /// Whether the reported bound holds at the stated confidence.
    pub fn is_valid(&self) -> bool {
        !matches!(self, Selection::SameData)
    }
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selection::Split { seed } => {
                write!(f, "split (seed {seed}: chosen on one random half, bounded on the other)")
            }
            Selection::MultiSplit { seed, splits } => write!(
                f,
                "multi-split (seed {seed}: {splits} random halvings, each at half the level; the median-rank bound)"
            ),
            Selection::SameData => write!(
                f,
                "same-data (chosen and bounded on the same scores: NOT valid at the stated confidence)"
            ),
            Selection::Bonferroni => write!(
                f,
                "bonferroni (all scores; a union bound over a family fixed without looking at the labels)"
            ),
            Selection::Fixed => write!(f, "fixed (guess counts fixed in advance, no search)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_in_both_spellings_and_serialise_in_kebab_case() {
        for m in Method::ALL {
            assert_eq!(m.name().parse::<Method>(), Ok(m));
            assert_eq!(m.file_name().parse::<Method>(), Ok(m));
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.name()));
            let back: Method = serde_json::from_str(&format!("\"{}\"", m.file_name())).unwrap();
            assert_eq!(back, m);
        }
        for c in SelectionChoice::ALL {
            assert_eq!(c.name().parse::<SelectionChoice>(), Ok(c));
            assert_eq!(c.file_name().parse::<SelectionChoice>(), Ok(c));
            let back: SelectionChoice =
                serde_json::from_str(&format!("\"{}\"", c.file_name())).unwrap();
            assert_eq!(back, c);
        }
        assert!("eps delta".parse::<Method>().is_err());
        assert!("auto-split".parse::<SelectionChoice>().is_err());
    }

    #[test]
    fn assumptions_say_whether_the_row_order_matters_under_the_selection_used() {
        let split = "the bound depends on the row order and the seed";
        let free = "the bound does not depend on the row order";
        for m in Method::ALL {
            for c in SelectionChoice::ALL {
                for n in [100, ONE_RUN_SPLIT_FROM] {
                    let sel = c.resolve(m, n, 3, 4);
                    let said = m.assumptions(false, sel);
                    let count = |s: &str| said.iter().filter(|a| a.contains(s)).count();
                    match (m.observes(), sel) {
                        (Observed::Measurement, _) => {
                            assert_eq!((count(split), count(free)), (0, 0), "{m} {sel}")
                        }
                        (_, Selection::Split { .. } | Selection::MultiSplit { .. }) => {
                            assert_eq!((count(split), count(free)), (1, 0), "{m} {sel}")
                        }
                        (_, _) => assert_eq!((count(split), count(free)), (0, 1), "{m} {sel}"),
                    }
                    // No other sentence speaks of the row order.
                    let order = said.iter().filter(|a| a.contains("row order")).count();
                    assert!(order <= 1, "{m} {sel}: {said:?}");
                }
            }
        }
        // The one-run default: bonferroni below ONE_RUN_SPLIT_FROM canaries
        // (order-free), split from there on (order and seed matter).
        let at = |n| Method::OneRun.assumptions(false, Method::OneRun.default_selection(n, 1));
        assert!(at(ONE_RUN_SPLIT_FROM - 1).iter().any(|a| a.contains(free)));
        assert!(at(ONE_RUN_SPLIT_FROM).iter().any(|a| a.contains(split)));
    }

    #[test]
    fn resolved_selection_names_match_the_choice() {
        for c in SelectionChoice::ALL.into_iter().skip(1) {
            assert_eq!(c.resolve(Method::OneRun, 10, 3, 4).name(), c.name());
        }
    }
}
