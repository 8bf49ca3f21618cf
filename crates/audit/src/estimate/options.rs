//! The one settings builder: the options of a bound as a front end received
//! them ([`BoundOptions`]: `None` = not given), turned into the
//! [`BoundSettings`] of [`crate::estimate::lower_bound`] by
//! [`BoundOptions::resolve`], which applies the defaults and refuses what the
//! method does not take, once, for the CLI (`dpaudit estimate`), the
//! experiment files and the Python binding.
//!
//! Which options a method takes is the method's own fact
//! ([`Method::options`]); an option given to a method that does not take it
//! is refused with its name, spelled as the front end spells it
//! ([`Spelling`]: `--k-plus` on the command line, `k_plus` in Python and
//! files). The names of the option values (`eps-delta`, `with-one-sided`,
//! `seeded`) are read here too ([`std::str::FromStr`] for
//! [`TradeoffFamily`], [`GuessFamily`] and [`TieBreakChoice`]; clap's
//! `ValueEnum` behind the `clap` feature), so no front end parses them.

use std::str::FromStr;

use crate::bound::GuessFamily;
use crate::error::{check_confidence, check_delta, AuditError, Result};
use crate::estimate::BoundSettings;
use crate::method::{Method, MethodOption, Selection, SelectionChoice};
use crate::one_run_fdp::TradeoffFamily;
use crate::policy::DEFAULT_SPLITS;
use crate::tie_break::TieBreak;

/// The confidence of a bound when none is given.
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// The tie-break rule asked for, before `seeded` takes its seed
/// ([`BoundOptions::seed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum TieBreakChoice {
    /// [`TieBreak::Quantile`].
    #[cfg_attr(
        feature = "clap",
        value(
            help = "A cut run of tied scores counts as 95 % of its random orders would, every test at 95 % of \
                    the level: the bound does not depend on the row order or a seed, and is a little lower"
        )
    )]
    Quantile,
    /// [`TieBreak::Seeded`] with the options' seed (the default).
    #[default]
    #[cfg_attr(
        feature = "clap",
        value(
            help = "Ties broken by a random order keyed by --seed, every test at the full level (the \
                    default): with tied scores the bound depends on the seed and the row order"
        )
    )]
    Seeded,
}

impl TieBreakChoice {
    /// `quantile` or `seeded`.
    pub fn name(self) -> &'static str {
        match self {
            TieBreakChoice::Quantile => "quantile",
            TieBreakChoice::Seeded => "seeded",
        }
    }
}

/// How a front end spells the names of options in its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spelling {
    /// The command line: `--k-plus`, `--method one-run`, `--selection fixed`.
    Flags,
    /// Python keywords and file keys: `k_plus`, `method one-run`, ``selection `fixed` ``.
    Keywords,
}

impl Spelling {
    /// The option `key` (snake case) as this front end spells it.
    pub fn option(self, key: &str) -> String {
        match self {
            Spelling::Flags => format!("--{}", key.replace('_', "-")),
            Spelling::Keywords => key.to_string(),
        }
    }

    fn method(self, method: Method) -> String {
        match self {
            Spelling::Flags => format!("--method {}", method.name()),
            Spelling::Keywords => format!("method {}", method.name()),
        }
    }

    fn selection(self, choice: SelectionChoice) -> String {
        match self {
            Spelling::Flags => format!("--selection {}", choice.name()),
            Spelling::Keywords => format!("selection `{}`", choice.name()),
        }
    }
}

/// The options of one bound as a front end received them. `None` (and the
/// `Default`) means "not given": [`BoundOptions::resolve`] applies the
/// method's default. A front end whose flags carry defaults passes a value
/// only when it differs from that default.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BoundOptions {
    /// Confidence of the bound (default [`DEFAULT_CONFIDENCE`]).
    pub confidence: Option<f64>,
    /// δ of the (ε, δ) statement; required.
    pub delta: Option<f64>,
    /// The selection policy asked for (default `auto`).
    pub selection: SelectionChoice,
    /// Keys `split`, `multi-split` and the seeded tie-break.
    pub seed: u64,
    /// Halvings of `multi-split` (default [`DEFAULT_SPLITS`]).
    pub splits: Option<u32>,
    /// Trade-off family (default `eps-delta`).
    pub family: Option<TradeoffFamily>,
    /// One-run guess candidates (default `symmetric`).
    pub guesses: Option<GuessFamily>,
    /// One-run positive guesses of `fixed`.
    pub k_plus: Option<u64>,
    /// One-run negative guesses of `fixed`.
    pub k_minus: Option<u64>,
    /// Tie-break rule (default `seeded` for the one-run methods that order
    /// tied guesses).
    pub tie_break: Option<TieBreakChoice>,
}

impl BoundOptions {
    /// The method options given, in the order of [`MethodOption::ALL`].
    fn given(&self) -> impl Iterator<Item = MethodOption> + '_ {
        MethodOption::ALL.into_iter().filter(|o| match o {
            MethodOption::Splits => self.splits.is_some(),
            MethodOption::Family => self.family.is_some(),
            MethodOption::KPlus => self.k_plus.is_some(),
            MethodOption::KMinus => self.k_minus.is_some(),
            MethodOption::Guesses => self.guesses.is_some(),
            MethodOption::TieBreak => self.tie_break.is_some(),
        })
    }

    /// Everything that can be checked before the data is read: each option
    /// given is one `method` takes, δ is given (to a method that bounds ε)
    /// and in range, the confidence
    /// is in range, and the guess counts go with `fixed` (both) and only with
    /// it. Errors name the option as `spelling` spells it.
    pub fn check(&self, method: Method, spelling: Spelling) -> Result<()> {
        if let Some(option) = self.given().find(|o| !method.takes(*o)) {
            let takes: Vec<String> = method
                .options()
                .iter()
                .map(|o| spelling.option(o.key()))
                .collect();
            return Err(AuditError::InvalidOption {
                option: spelling.option(option.key()),
                problem: format!(
                    "is not an option of {} (its options: {})",
                    spelling.method(method),
                    if takes.is_empty() {
                        "none".to_string()
                    } else {
                        takes.join(", ")
                    }
                ),
            });
        }
        if let Some(c) = self.confidence {
            check_confidence(c)?;
        }
        match self.delta {
            Some(d) => check_delta(d)?,
            // PANORAMIA's ε̃ has no δ.
            None if !method.bounds() => {}
            None => {
                return Err(AuditError::InvalidOption {
                    option: spelling.option("delta"),
                    problem: format!(
                        "is required for {} (the δ of the guarantee being audited, e.g. 1e-5)",
                        spelling.method(method)
                    ),
                })
            }
        }
        match (self.selection, self.k_plus, self.k_minus) {
            (SelectionChoice::Fixed, Some(_), Some(_)) => Ok(()),
            // A method without guess counts refuses `fixed` itself, with its reason.
            (SelectionChoice::Fixed, _, _) if method.takes(MethodOption::KPlus) => {
                Err(AuditError::InvalidOption {
                    option: spelling.selection(SelectionChoice::Fixed),
                    problem: format!(
                        "needs both {} and {} (the guess counts fixed in advance)",
                        spelling.option("k_plus"),
                        spelling.option("k_minus")
                    ),
                })
            }
            (SelectionChoice::Fixed, _, _) | (_, None, None) => Ok(()),
            _ => Err(AuditError::InvalidOption {
                option: format!(
                    "{}/{}",
                    spelling.option("k_plus"),
                    spelling.option("k_minus")
                ),
                problem: format!(
                    "are only used with {} (and the one-run methods)",
                    spelling.selection(SelectionChoice::Fixed)
                ),
            }),
        }
    }

    /// The selection policy of `method` on `n` observations.
    pub fn selection(&self, method: Method, n: usize) -> Selection {
        self.selection
            .resolve(method, n, self.seed, self.splits.unwrap_or(DEFAULT_SPLITS))
    }

    /// The settings of `method` on `n` observations: [`BoundOptions::check`],
    /// then the defaults of what was not given.
    pub fn resolve(&self, method: Method, n: usize, spelling: Spelling) -> Result<BoundSettings> {
        self.check(method, spelling)?;
        Ok(BoundSettings {
            confidence: self.confidence.unwrap_or(DEFAULT_CONFIDENCE),
            // `check` refused a missing δ.
            delta: self.delta.unwrap_or_default(),
            selection: self.selection(method, n),
            family: self.family.unwrap_or(TradeoffFamily::EpsDelta),
            guesses: self.guesses.unwrap_or_default(),
            fixed_guesses: self.k_plus.zip(self.k_minus),
            tie_break: match self.tie_break {
                Some(TieBreakChoice::Quantile) => TieBreak::Quantile,
                Some(TieBreakChoice::Seeded) => TieBreak::Seeded { seed: self.seed },
                None => default_tie_break(method, self.seed),
            },
        })
    }
}

/// The tie-break rule `method` gets when none is asked for: the seeded rule
/// keyed by `seed` where the method orders tied guesses; the others ignore
/// the rule (and [`BoundOptions::check`] refuses one given to them), so they
/// get the order-free [`TieBreak::Quantile`].
pub fn default_tie_break(method: Method, seed: u64) -> TieBreak {
    if method.takes(MethodOption::TieBreak) {
        TieBreak::Seeded { seed }
    } else {
        TieBreak::Quantile
    }
}

fn unknown(option: &str, value: &str, expected: &str) -> AuditError {
    AuditError::InvalidOption {
        option: format!("{option} `{value}`"),
        problem: format!("is unknown; expected {expected}"),
    }
}

impl FromStr for TradeoffFamily {
    type Err = AuditError;

    /// `eps-delta` or `gaussian`.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "eps-delta" => Ok(TradeoffFamily::EpsDelta),
            "gaussian" => Ok(TradeoffFamily::Gaussian),
            other => Err(unknown(
                "family",
                other,
                "eps-delta (valid for any mechanism) or gaussian",
            )),
        }
    }
}

impl FromStr for GuessFamily {
    type Err = AuditError;

    /// `symmetric`, `with-one-sided` or `all-counts`.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "symmetric" => Ok(GuessFamily::Symmetric),
            "with-one-sided" => Ok(GuessFamily::WithOneSided),
            "all-counts" => Ok(GuessFamily::AllCounts),
            other => Err(unknown(
                "guesses",
                other,
                "symmetric, with-one-sided or all-counts",
            )),
        }
    }
}

impl FromStr for TieBreakChoice {
    type Err = AuditError;

    /// `quantile` or `seeded`.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "quantile" => Ok(TieBreakChoice::Quantile),
            "seeded" => Ok(TieBreakChoice::Seeded),
            other => Err(unknown(
                "tie_break",
                other,
                "quantile (order-free, the default) or seeded (a random order keyed by `seed`)",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_delta() -> BoundOptions {
        BoundOptions {
            delta: Some(1e-5),
            ..BoundOptions::default()
        }
    }

    fn message(o: &BoundOptions, m: Method, s: Spelling) -> String {
        o.resolve(m, 100, s).unwrap_err().to_string()
    }

    #[test]
    fn defaults_are_those_of_every_front_end() {
        for m in Method::ALL.into_iter().filter(|m| m.bounds()) {
            let s = with_delta().resolve(m, 100, Spelling::Keywords).unwrap();
            assert_eq!(s.confidence, 0.95, "{m}");
            assert_eq!(s.delta, 1e-5, "{m}");
            assert_eq!(s.selection, m.default_selection(100, 0), "{m}");
            assert_eq!(s.family, TradeoffFamily::EpsDelta, "{m}");
            assert_eq!(s.guesses, GuessFamily::Symmetric, "{m}");
            assert_eq!(s.fixed_guesses, None, "{m}");
            // The one-run methods that order tied guesses break ties by the
            // seeded key; the rule means nothing to the others.
            let tie_break = if m.takes(MethodOption::TieBreak) {
                TieBreak::Seeded { seed: 0 }
            } else {
                TieBreak::Quantile
            };
            assert_eq!(s.tie_break, tie_break, "{m}");
        }
        assert!(Method::OneRun.takes(MethodOption::TieBreak));
        assert!(Method::OneRunFdp.takes(MethodOption::TieBreak));
        assert!(!Method::EpsDelta.takes(MethodOption::TieBreak));
        // From 5000 canaries the one-run default is a split keyed by the seed.
        let o = BoundOptions {
            seed: 7,
            ..with_delta()
        };
        let s = o.resolve(Method::OneRun, 5000, Spelling::Flags).unwrap();
        assert_eq!(s.selection, Selection::Split { seed: 7 });
        let o = BoundOptions {
            selection: SelectionChoice::MultiSplit,
            seed: 3,
            ..with_delta()
        };
        let s = o.resolve(Method::EpsDelta, 10, Spelling::Flags).unwrap();
        assert_eq!(
            s.selection,
            Selection::MultiSplit {
                seed: 3,
                splits: DEFAULT_SPLITS
            }
        );
    }

    #[test]
    fn given_options_are_kept() {
        let o = BoundOptions {
            confidence: Some(0.9),
            selection: SelectionChoice::Fixed,
            seed: 11,
            family: Some(TradeoffFamily::Gaussian),
            guesses: Some(GuessFamily::WithOneSided),
            k_plus: Some(4),
            k_minus: Some(2),
            tie_break: Some(TieBreakChoice::Quantile),
            ..with_delta()
        };
        let s = o.resolve(Method::OneRunFdp, 100, Spelling::Flags).unwrap();
        assert_eq!(
            s,
            BoundSettings {
                confidence: 0.9,
                delta: 1e-5,
                selection: Selection::Fixed,
                family: TradeoffFamily::Gaussian,
                guesses: GuessFamily::WithOneSided,
                fixed_guesses: Some((4, 2)),
                tie_break: TieBreak::Quantile,
            }
        );
    }

    #[test]
    fn each_refusal_names_the_option_as_the_front_end_spells_it() {
        let family = BoundOptions {
            family: Some(TradeoffFamily::Gaussian),
            ..with_delta()
        };
        assert_eq!(
            message(&family, Method::EpsDelta, Spelling::Keywords),
            "family is not an option of method eps-delta (its options: splits)"
        );
        assert_eq!(
            message(&family, Method::EpsDelta, Spelling::Flags),
            "--family is not an option of --method eps-delta (its options: --splits)"
        );
        let splits = BoundOptions {
            splits: Some(3),
            ..with_delta()
        };
        assert_eq!(
            message(&splits, Method::OneRunGaussianScores, Spelling::Keywords),
            "splits is not an option of method one-run-gaussian-scores (its options: none)"
        );
        let tie = BoundOptions {
            tie_break: Some(TieBreakChoice::Seeded),
            ..with_delta()
        };
        assert!(message(&tie, Method::OneRunOrder, Spelling::Keywords)
            .starts_with("tie_break is not an option of method one-run-order"));
        assert_eq!(
            message(&BoundOptions::default(), Method::Gdp, Spelling::Flags),
            "--delta is required for --method gdp (the δ of the guarantee being audited, e.g. 1e-5)"
        );
        let fixed = BoundOptions {
            selection: SelectionChoice::Fixed,
            k_plus: Some(1),
            ..with_delta()
        };
        assert_eq!(
            message(&fixed, Method::OneRun, Spelling::Keywords),
            "selection `fixed` needs both k_plus and k_minus (the guess counts fixed in advance)"
        );
        assert_eq!(
            message(&fixed, Method::OneRun, Spelling::Flags),
            "--selection fixed needs both --k-plus and --k-minus (the guess counts fixed in advance)"
        );
        let neither = BoundOptions {
            selection: SelectionChoice::Fixed,
            ..with_delta()
        };
        assert_eq!(
            message(&neither, Method::OneRunOrder, Spelling::Keywords),
            "selection `fixed` needs both k_plus and k_minus (the guess counts fixed in advance)"
        );
        let unfixed = BoundOptions {
            k_plus: Some(1),
            k_minus: Some(1),
            ..with_delta()
        };
        assert_eq!(
            message(&unfixed, Method::OneRunFdp, Spelling::Flags),
            "--k-plus/--k-minus are only used with --selection fixed (and the one-run methods)"
        );
        let bad_delta = BoundOptions {
            delta: Some(1.5),
            ..BoundOptions::default()
        };
        assert!(message(&bad_delta, Method::EpsDelta, Spelling::Flags)
            .starts_with("parameter `delta` = 1.5 is invalid"));
        let bad_confidence = BoundOptions {
            confidence: Some(1.0),
            ..with_delta()
        };
        assert!(message(&bad_confidence, Method::OneRun, Spelling::Flags)
            .starts_with("parameter `confidence` = 1 is invalid"));
        // A threshold method given `fixed` and both counts refuses the
        // policy itself (with its own reason), as before.
        let threshold_fixed = BoundOptions {
            selection: SelectionChoice::Fixed,
            ..with_delta()
        };
        assert!(threshold_fixed
            .resolve(Method::EpsDelta, 10, Spelling::Flags)
            .is_ok());
    }

    #[test]
    fn option_values_parse_by_name_and_unknown_names_are_refused() {
        assert_eq!("gaussian".parse().ok(), Some(TradeoffFamily::Gaussian));
        assert_eq!("eps-delta".parse().ok(), Some(TradeoffFamily::EpsDelta));
        assert_eq!(
            "with-one-sided".parse().ok(),
            Some(GuessFamily::WithOneSided)
        );
        assert_eq!("seeded".parse().ok(), Some(TieBreakChoice::Seeded));
        assert_eq!(
            "laplace".parse::<TradeoffFamily>().unwrap_err().to_string(),
            "family `laplace` is unknown; expected eps-delta (valid for any mechanism) or gaussian"
        );
        assert_eq!(
            "some".parse::<GuessFamily>().unwrap_err().to_string(),
            "guesses `some` is unknown; expected symmetric, with-one-sided or all-counts"
        );
        assert_eq!("all-counts".parse().ok(), Some(GuessFamily::AllCounts));
        assert!("random"
            .parse::<TieBreakChoice>()
            .unwrap_err()
            .to_string()
            .starts_with("tie_break `random` is unknown"));
        for c in [TieBreakChoice::Quantile, TieBreakChoice::Seeded] {
            assert_eq!(c.name().parse().ok(), Some(c));
        }
    }
}
