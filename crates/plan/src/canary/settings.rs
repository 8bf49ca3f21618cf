//! The experiment file: the training config, the canaries, the statistics,
//! and the guarantee the accountant claims for one canary.

use std::path::Path;

use serde::{Deserialize, Serialize};

use dpaudit_accounting::dp_fields::{self, DpContext, DpField};
use dpaudit_accounting::EpsilonUpperBound;
use dpaudit_data::sampler::claim::{self, Participation};
use dpaudit_data::sampler::Sampler;
use dpaudit_data::seed::{RunSeed, Stream};

use crate::error::{invalid, PlanError, Result};
use crate::train::config::TrainConfig;

use crate::canary::canaries::{CanaryConfig, CanaryKind, Insertion, ScoreKind};

use dpaudit_audit::bound::GuessFamily;
use dpaudit_audit::estimate::options::{BoundOptions, Spelling};
use dpaudit_audit::method::{Method, MethodOption, Observed};
/// The methods and selection policies are the audit crate's
/// ([`dpaudit_audit::method`]); these are their old names here.
pub use dpaudit_audit::method::{Method as MethodChoice, SelectionChoice};

/// Experiment files (and `config.json`) spell methods and policies in snake
/// case (`eps_delta`, `same_data`); reading accepts either spelling.
mod snake_case {
    use dpaudit_audit::method::{Method, SelectionChoice};
    use serde::Serializer;

    pub fn methods<S: Serializer>(methods: &[Method], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(methods.iter().map(|m| m.file_name()))
    }

    pub fn selection<S: Serializer>(c: &SelectionChoice, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&c.file_name())
    }
}

fn default_confidence() -> f64 {
    0.95
}

/// The `[audit]` table of an experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditSettings {
    /// Scores (threat models) to compute; several = a comparison.
    pub scores: Vec<ScoreKind>,
    /// Lower-bound methods.
    #[serde(serialize_with = "snake_case::methods")]
    pub methods: Vec<Method>,
    /// Confidence of every bound.
    #[serde(default = "default_confidence")]
    pub confidence: f64,
    /// Selection policy (`fixed` is refused: nothing fixes the guess counts).
    #[serde(default, serialize_with = "snake_case::selection")]
    pub selection: SelectionChoice,
}

/// A whole experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentConfig {
    /// Free text, shown in the summary.
    #[serde(default)]
    pub name: String,
    /// `R`, the number of trained models.
    pub runs: u64,
    /// The training config; `replicas` = models trained at once (a chunk).
    pub train: TrainConfig,
    /// The canaries.
    pub canary: CanaryConfig,
    /// The statistics.
    pub audit: AuditSettings,
}

impl ExperimentConfig {
    /// Parse and check a TOML document (no data is read).
    pub fn from_toml(text: &str, origin: &str) -> Result<Self> {
        let config: ExperimentConfig = crate::train::config::parse_toml(text, origin)?;
        config.validate_static()?;
        Ok(config)
    }

    /// Read and parse a file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| invalid(&path.display().to_string(), "unreadable", e.to_string()))?;
        Self::from_toml(&text, &path.display().to_string())
    }

    /// The options of `method`'s bounds, through the audit crate's one
    /// builder: the file's confidence and selection, the training δ, the
    /// split seed drawn from the run seed; the methods that search guess
    /// counts also try one-sided ones (the runs draw each canary's coin with
    /// probability exactly ½).
    pub fn bound_options(&self, method: Method) -> BoundOptions {
        BoundOptions {
            confidence: Some(self.audit.confidence),
            delta: Some(self.train.delta),
            selection: self.audit.selection,
            seed: RunSeed(self.train.seed)
                .stream(Stream::Split)
                .child(0xA0D1)
                .to_u64(),
            guesses: method
                .takes(MethodOption::Guesses)
                .then_some(GuessFamily::WithOneSided),
            ..BoundOptions::default()
        }
    }

    /// Checks that need no data.
    pub fn validate_static(&self) -> Result<()> {
        // An audit compares with the accountant's ε, so σ is claimed
        // (checked before the training rules, which admit σ = 0).
        dp_fields::check(
            DpContext::Claimed,
            DpField::NoiseMultiplier,
            self.train.dp.noise_multiplier,
        )
        .map_err(|e| invalid("train.dp.noise_multiplier", e.value, e.expected))?;
        self.train.validate().map_err(|e| match e {
            PlanError::InvalidConfig {
                field,
                value,
                expected,
            } => invalid(&format!("train.{field}"), value, expected),
            other => other,
        })?;
        if self.runs == 0 {
            return Err(invalid("runs", 0, "at least 1"));
        }
        if self.train.steps.is_none() {
            return Err(invalid(
                "train.steps",
                "missing",
                "`steps` (audits fix the number of steps; `epochs` is not accepted here)",
            ));
        }
        let a = &self.audit;
        if !(a.confidence > 0.0 && a.confidence < 1.0) {
            return Err(invalid("audit.confidence", a.confidence, "in (0, 1)"));
        }
        if a.scores.is_empty() {
            return Err(invalid("audit.scores", "[]", "at least one score"));
        }
        if a.methods.is_empty() {
            return Err(invalid("audit.methods", "[]", "at least one method"));
        }
        for s in &a.scores {
            if !self.canary.kind.admits(*s) {
                return Err(invalid(
                    "audit.scores",
                    s.name(),
                    format!(
                        "a score defined for {:?} canaries ({})",
                        self.canary.kind,
                        applicable_scores(self.canary.kind)
                    ),
                ));
            }
        }
        let m = self.canary.count;
        if m == 0 {
            return Err(invalid("canary.count", 0, "at least 1"));
        }
        for method in &a.methods {
            match method.observes() {
                Observed::Runs if m != 1 => {
                    return Err(invalid(
                        "audit.methods",
                        format!("{method:?}"),
                        format!(
                            "`one_run` or `one_run_fdp` for {m} canaries per run: the threshold methods treat runs as independent \
                             observations and need canary.count = 1"
                        ),
                    ))
                }
                Observed::CanariesOfOneRun if m < 2 => {
                    return Err(invalid(
                        "audit.methods",
                        method.file_name(),
                        "canary.count ≥ 2: a one-run audit guesses the bits of many canaries",
                    ))
                }
                Observed::Measurement => {
                    return Err(invalid(
                        "audit.methods",
                        method.file_name(),
                        "a lower-bound method: PANORAMIA is a measurement with its own pipeline (`dpaudit panoramia`)",
                    ))
                }
                _ => {}
            }
        }
        if a.methods.contains(&Method::OneRunGaussianScores)
            && !matches!(
                a.selection,
                SelectionChoice::Auto | SelectionChoice::Bonferroni
            )
        {
            return Err(invalid(
                "audit.selection",
                a.selection.file_name(),
                "auto or bonferroni with one_run_gaussian_scores: it chooses no threshold or guess count",
            ));
        }
        if a.selection == SelectionChoice::Fixed {
            return Err(invalid(
                "audit.selection",
                "fixed",
                "auto, bonferroni, split, multi_split or same_data: an experiment fixes no guess counts",
            ));
        }
        for &method in &a.methods {
            self.bound_options(method)
                .check(method, Spelling::Keywords)
                .map_err(|e| invalid("audit", method.file_name(), e.to_string()))?;
        }
        let lr_scores = a
            .scores
            .iter()
            .any(|s| matches!(s, ScoreKind::NaturalLr | ScoreKind::PartiallyInformedLr));
        if lr_scores || self.canary.partially_informed {
            let what = if lr_scores {
                "the likelihood-ratio scores (natural_lr, pi_lr)"
            } else {
                "canary.partially_informed"
            };
            if self.canary.count != 1
                || !self.canary.kind.is_gradient()
                || self.canary.insertion != Insertion::Sampled
            {
                return Err(invalid(
                    "canary",
                    format!("{:?} × {}, insertion {:?}", self.canary.kind, self.canary.count, self.canary.insertion),
                    format!("one gradient canary with insertion = \"sampled\" for {what} (Annamalai et al. 2024, Alg. 1)"),
                ));
            }
            if self.canary.scale != 1.0 {
                return Err(invalid(
                    "canary.scale",
                    self.canary.scale,
                    format!("1 for {what}: the likelihood ratios assume a canary of norm C (Annamalai et al. 2024, §5.3)"),
                ));
            }
            if self.train.dp.momentum != 0.0 || self.train.dp.weight_decay != 0.0 {
                return Err(invalid(
                    "train.dp.momentum/weight_decay",
                    format!("{}/{}", self.train.dp.momentum, self.train.dp.weight_decay),
                    format!("0 for {what}: observations are read from plain SGD updates"),
                ));
            }
            let one_batch_per_epoch = self.train.sampler.one_batch_per_epoch();
            if !one_batch_per_epoch {
                return Err(invalid(
                    "train.sampler",
                    "poisson/fixed_sequence",
                    format!(
                        "a shuffle-type sampler for {what} (the target is in one batch per epoch)"
                    ),
                ));
            }
        }
        if let Insertion::Every = self.canary.insertion {
            let steps = self.train.steps.unwrap_or(0);
            if self.canary.every > steps {
                return Err(invalid(
                    "canary.every",
                    self.canary.every,
                    format!("at most the number of steps ({steps})"),
                ));
            }
        }
        Ok(())
    }

    /// Steps per run.
    pub fn steps(&self) -> u64 {
        self.train.steps.unwrap_or(0)
    }

    /// Models per chunk.
    pub fn chunk_size(&self) -> u64 {
        self.train.replicas as u64
    }

    /// Number of chunks.
    pub fn chunks(&self) -> u64 {
        self.runs.div_ceil(self.chunk_size())
    }
}

fn applicable_scores(kind: CanaryKind) -> String {
    [
        ScoreKind::Dirac,
        ScoreKind::InnerProduct,
        ScoreKind::Cosine,
        ScoreKind::Iterates,
        ScoreKind::Loss,
        ScoreKind::LossDifference,
        ScoreKind::UpdateNorm,
    ]
    .iter()
    .filter(|&&s| kind.admits(s))
    .map(|s| s.name())
    .collect::<Vec<_>>()
    .join(", ")
}

/// The claimed guarantee of one canary.
#[derive(Debug, Clone)]
pub struct ClaimedBound {
    /// The accountant's bound.
    pub bound: EpsilonUpperBound,
    /// What was accounted, in words.
    pub assumption: String,
    /// False when the accounting does not match how the canary was sampled.
    pub valid_for_sampler: bool,
}

/// The accountant's ε for one canary of the experiment (PLD, add/remove),
/// from [`dpaudit_data::sampler::claim`]: a canary inserted every `k`-th step is in
/// `⌊T/k⌋` known steps; a sampled canary is accounted as its sampler's
/// records are (shuffle-type samplers by the Poisson proxy, flagged).
pub fn claimed_bound(config: &ExperimentConfig, sampler: &Sampler) -> Result<ClaimedBound> {
    let sigma = config.train.dp.noise_multiplier;
    let participation = match config.canary.insertion {
        Insertion::Every => Participation::EveryKth {
            every: config.canary.every,
        },
        Insertion::Sampled => Participation::Sampled {
            sampler,
            // The fixed sequence does not depend on the run's sampler key.
            key: RunSeed(config.train.seed).stream(Stream::Sampler),
        },
    };
    let claim = claim::mechanism(participation, sigma, config.steps());
    let bound = claim::claimed_epsilon(&claim, config.train.delta).map_err(|e| {
        invalid(
            "train.dp.noise_multiplier",
            sigma,
            format!("a value the accountant accepts: {e}"),
        )
    })?;
    Ok(ClaimedBound {
        bound,
        assumption: match config.canary.insertion {
            Insertion::Every => format!("canary {}", claim.assumption),
            Insertion::Sampled => format!("canary sampled like a record: {}", claim.assumption),
        },
        valid_for_sampler: claim.valid_for_sampler,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_and_selection_keep_their_snake_case_spelling_in_files() {
        let path = std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../experiments/one-run/whitebox-mlp-fmnist-m1000-smoke.toml"
        ));
        let file = dpaudit_store::kind::ExperimentFile::read_as(
            path,
            dpaudit_store::kind::ExperimentKind::Canary,
        )
        .unwrap();
        let mut config = ExperimentConfig::from_toml(&file.text, "one-run smoke").unwrap();
        config.audit.methods = vec![Method::EpsDelta, Method::OneRunFdpGaussian];
        config.audit.selection = SelectionChoice::MultiSplit;
        let json = serde_json::to_value(&config).unwrap();
        assert_eq!(
            json["audit"]["methods"],
            serde_json::json!(["eps_delta", "one_run_fdp_gaussian"])
        );
        assert_eq!(json["audit"]["selection"], "multi_split");
        let back: ExperimentConfig = serde_json::from_value(json).unwrap();
        assert_eq!(back, config);
    }
}
