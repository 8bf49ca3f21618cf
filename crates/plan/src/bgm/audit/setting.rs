//! A BGM experiment file, its settings, and their preparation (noise
//! calibration, the accountant's bounds, the memory check).

use std::path::Path;

use dpaudit_accounting::dp_fields::{self, DpContext, DpField, DpFieldError};
use dpaudit_accounting::{calibrate_noise_multiplier, Accountant};
use dpaudit_attacks::likelihood::default_partial_shuffle_guesses;
use dpaudit_attacks::{BgmConfig, BgmDataset, BgmSimulator};
use dpaudit_audit::observations::Selection;
use dpaudit_audit::region::RegionConfig;
use dpaudit_data::sampler::{GameSampler, Sampler};
use serde::{Deserialize, Serialize};

use crate::bgm::counts::PIECE_RUNS;
use crate::bgm::engine::BgmEngine;
use crate::error::{invalid_value as invalid, PlanError, Result};
use crate::train::memory::{self, MemoryEstimate};
use dpaudit_store::error::read_text;
use dpaudit_store::StoreError;

/// A BGM experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BgmExperiment {
    /// Free text shown in the report.
    #[serde(default)]
    pub description: String,
    /// The audited settings, in report order.
    pub settings: Vec<Setting>,
}

impl BgmExperiment {
    /// Parse the TOML text of `file` (named in errors).
    pub fn from_toml(file: &Path, text: &str) -> Result<Self> {
        toml::from_str(text).map_err(|e| {
            PlanError::Store(StoreError::Inconsistent {
                path: file.to_path_buf(),
                reason: format!("not a BGM experiment file: {e}"),
            })
        })
    }

    /// Read and parse `file`.
    pub fn load(file: &Path) -> Result<Self> {
        let text = read_text(file)?;
        Self::from_toml(file, &text)
    }
}

/// One audited setting. The DP-critical fields (steps, epochs,
/// expected_batch_size, the noise, sampler, dataset, runs, delta,
/// confidence, seed) have no defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setting {
    /// Label of the row.
    pub name: String,
    /// Batches per epoch T (Poisson sample rate q = 1/T).
    pub steps: usize,
    /// Epochs E.
    pub epochs: usize,
    /// Batch size B (n = T·B records).
    pub expected_batch_size: usize,
    /// Noise multiplier σ. Exactly one of `noise_multiplier` and `epsilon`.
    pub noise_multiplier: Option<f64>,
    /// Target Poisson ε: σ is calibrated with the PLD accountant so that
    /// DP-SGD with Poisson sampling at q = 1/T for T·E steps reaches (ε, δ)
    /// (Annamalai et al. 2024 §5: "calibrated to ε if Poisson subsampling
    /// was used").
    pub epsilon: Option<f64>,
    /// The batch sampler, e.g. `"shuffle"` or `{ partial_shuffle = { buffer_size = 1000 } }`.
    pub sampler: GameSampler,
    /// The audited dataset pair (selects the matched likelihood ratio):
    /// `shuffle_worst_case` (Λ^WC), `first_batch_positive` (Λ^BtS) or
    /// `poisson_worst_case` (Poisson LR).
    pub dataset: BgmDataset,
    /// Simulated runs per hypothesis (observations N = 2·runs).
    pub runs: usize,
    /// δ of the empirical bound and of the accountants.
    pub delta: f64,
    /// Confidence of the empirical bound (Clopper–Pearson), e.g. 0.95.
    pub confidence: f64,
    /// Run seed: simulation streams and the selection split derive from it.
    pub seed: u64,
    /// Partial shuffling only: the adversary's guesses k (leading batches
    /// scored); default {1, 10, 20, …, T} (Annamalai et al. 2024 §4.3).
    pub guesses: Option<Vec<usize>>,
    /// Partial shuffling only: runs per hypothesis and guess for choosing k
    /// (drawn from streams disjoint from the evaluation runs); default
    /// max(runs/4, 100).
    pub guess_runs: Option<usize>,
    /// How the evaluation runs become a bound: `"scores"` (default: every
    /// score held, `split` selection) or `{ counts = { selection_runs = N } }`
    /// (bounded memory: the threshold chosen on `N` separate runs per
    /// hypothesis, the evaluation runs counted; [`crate::bgm::counts`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation: Option<Evaluation>,
}

/// How a setting's evaluation runs become a bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Evaluation {
    /// Hold every score; choose the threshold on one random half of the
    /// evaluation runs, bound on the other (`split`).
    Scores,
    /// Bounded memory: choose the threshold on `selection_runs` runs per
    /// hypothesis from seed streams disjoint from the evaluation runs, count
    /// the evaluation runs' errors at it ([`crate::bgm::counts`]).
    Counts {
        /// Selection runs per hypothesis (e.g. a tenth of `runs`).
        selection_runs: usize,
    },
}

impl Evaluation {
    /// `scores` or `counts`.
    pub fn name(self) -> &'static str {
        match self {
            Evaluation::Scores => "scores",
            Evaluation::Counts { .. } => "counts",
        }
    }
}

/// Bytes per run and hypothesis that a scores-mode setting holds until the
/// experiment is finalized: the score (8 B per hypothesis) and its line of
/// `scores.csv` (≈ 50 B).
pub const SCORES_HELD_PER_RUN: u64 = 66;

/// Bytes per run and hypothesis that bounding a scores-mode setting adds:
/// its observations, their two halves and sorted copies (≈ 94 B). With
/// [`SCORES_HELD_PER_RUN`]: 160 B, against 186 B measured at the peak
/// (10⁷ runs per hypothesis, 1.86 GB).
pub const SCORES_BOUND_PER_RUN: u64 = 94;

/// A setting after validation: σ resolved, simulator configuration built.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedSetting {
    /// The setting as written.
    pub setting: Setting,
    /// σ, given or calibrated.
    pub noise_multiplier: f64,
    /// "given" or how σ was calibrated.
    pub noise_source: String,
    /// The simulator's configuration, all T columns scored.
    pub config: BgmConfig,
    /// Partial shuffling: the guesses k; otherwise `[T]`.
    pub guesses: Vec<usize>,
    /// Partial shuffling: selection runs per hypothesis and guess; else 0.
    pub guess_runs: usize,
    /// How the evaluation runs become a bound (`scores` when not given).
    pub evaluation: Evaluation,
}

impl PreparedSetting {
    /// Whether the adversary's guess k is searched (partial shuffling).
    pub fn searches_guess(&self) -> bool {
        is_partial_shuffle(&self.setting)
    }

    /// The configuration scoring the first `k` batches of each epoch.
    pub fn config_with_columns(&self, k: usize) -> BgmConfig {
        BgmConfig {
            score_columns: k,
            ..self.config.clone()
        }
    }

    /// Counts mode: selection runs per hypothesis for the threshold.
    pub fn selection_runs(&self) -> Option<usize> {
        match self.evaluation {
            Evaluation::Counts { selection_runs } => Some(selection_runs),
            Evaluation::Scores => None,
        }
    }

    /// Counts mode: the first engine chunk of the threshold-selection runs
    /// (after the guess search's runs, which start at the engine's
    /// selection chunk), for runs of `chunk_runs` per chunk.
    pub fn threshold_selection_first_chunk(
        &self,
        engine: &dyn BgmEngine,
        chunk_runs: usize,
    ) -> u64 {
        let guess_chunks = if self.searches_guess() {
            self.guess_runs.div_ceil(chunk_runs.max(1)) as u64
        } else {
            0
        };
        engine.selection_first_chunk() + guess_chunks
    }

    /// The region configuration of the reported bound (held-out split,
    /// seeded by the setting).
    pub fn region(&self) -> RegionConfig {
        RegionConfig {
            confidence: self.setting.confidence,
            delta: self.setting.delta,
            selection: Selection::Split {
                seed: self.setting.seed,
            },
        }
    }
}

/// Whether a setting's sampler is a partial shuffle (Annamalai et al. 2024
/// §4.3), whose adversary's guess k is searched. A sampler that does not
/// build is refused by [`BgmSimulator::new`] in [`prepare`].
fn is_partial_shuffle(s: &Setting) -> bool {
    matches!(
        s.sampler.build(s.steps, s.expected_batch_size),
        Ok(Sampler::PartialShuffle(_))
    )
}

/// Validate every setting of `experiment` before anything is simulated;
/// errors name `file`, the setting's position and name, and the field.
pub fn prepare_all(file: &Path, experiment: &BgmExperiment) -> Result<Vec<PreparedSetting>> {
    if experiment.settings.is_empty() {
        return Err(PlanError::Store(StoreError::Inconsistent {
            path: file.to_path_buf(),
            reason: "`settings` is empty; expected at least one [[settings]] table".into(),
        }));
    }
    let prepared = experiment
        .settings
        .iter()
        .enumerate()
        .map(|(index, s)| {
            prepare(s.clone()).map_err(|e| PlanError::Setting {
                file: file.display().to_string(),
                index,
                name: s.name.clone(),
                reason: e.to_string(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    // Finalizing holds the scores of every scores-mode setting at once (and
    // bounds one at a time): refuse what cannot fit, before simulating.
    let held: Vec<u64> = prepared
        .iter()
        .filter(|p| p.evaluation == Evaluation::Scores)
        .map(|p| p.setting.runs as u64)
        .collect();
    if held.len() > 1 {
        let total: u64 = held.iter().sum();
        let largest = held.iter().copied().max().unwrap_or(0);
        let estimate = MemoryEstimate {
            parts: vec![
                (
                    format!(
                        "the scores and scores.csv lines of {total} runs per hypothesis over {} scores-mode settings × {SCORES_HELD_PER_RUN} B",
                        held.len()
                    ),
                    total.saturating_mul(SCORES_HELD_PER_RUN),
                ),
                (
                    format!("bounding the largest setting ({largest} runs) × {SCORES_BOUND_PER_RUN} B"),
                    largest.saturating_mul(SCORES_BOUND_PER_RUN),
                ),
            ],
        };
        memory::check(
            "the experiment's scores",
            "`runs` (or `evaluation = { counts = { selection_runs = … } }`, which holds no scores)",
            &estimate,
        )
        .map_err(|e| {
            PlanError::Store(StoreError::Inconsistent {
                path: file.to_path_buf(),
                reason: e.to_string(),
            })
        })?;
    }
    Ok(prepared)
}

/// Validate one setting: the DP fields, σ (given or calibrated), the
/// simulator's parameters, the guesses, and that the scores fit in memory.
pub fn prepare(setting: Setting) -> Result<PreparedSetting> {
    let s = &setting;
    if s.runs < 100 {
        return Err(invalid(
            "runs",
            s.runs.to_string(),
            "at least 100 runs per hypothesis",
        ));
    }
    if !(s.confidence > 0.0 && s.confidence < 1.0) {
        return Err(invalid(
            "confidence",
            s.confidence.to_string(),
            "a probability in (0, 1), e.g. 0.95",
        ));
    }
    // The DP fields, through the one validation: σ when given is claimed
    // (the report sets the accountant's ε beside the bound); a target ε
    // calibrates σ.
    let refused = |e: DpFieldError| invalid(e.field.name(), e.value.to_string(), e.expected);
    dp_fields::check(DpContext::Claimed, DpField::Delta, s.delta).map_err(refused)?;
    if s.steps == 0 {
        return Err(invalid("steps", "0", "at least 1 batch per epoch"));
    }
    if s.epochs == 0 {
        return Err(invalid("epochs", "0", "at least 1"));
    }
    let sample_rate = 1.0 / s.steps as f64;
    let total_steps = (s.steps as u64)
        .checked_mul(s.epochs as u64)
        .ok_or_else(|| invalid("steps × epochs", "overflow", "a product below 2⁶⁴"))?;
    let (noise_multiplier, noise_source) = match (s.noise_multiplier, s.epsilon) {
        (Some(sigma), None) => {
            dp_fields::check(DpContext::Claimed, DpField::NoiseMultiplier, sigma)
                .map_err(refused)?;
            (sigma, "given".to_string())
        }
        (None, Some(eps)) => {
            dp_fields::check(DpContext::Calibrated, DpField::TargetEpsilon, eps)
                .map_err(|e| invalid("epsilon", e.value.to_string(), e.expected))?;
            let cal = calibrate_noise_multiplier(
                sample_rate,
                total_steps,
                s.delta,
                eps,
                Accountant::Pld,
                1e-4,
            )
            .map_err(|source| PlanError::Accounting {
                context: format!("calibrating the noise multiplier to Poisson ε = {eps}"),
                source,
            })?;
            (
                cal.noise_multiplier,
                format!(
                    "calibrated: smallest σ (±{:.1e}) with PLD Poisson ε ≤ {eps} at q = 1/{}, {} steps, δ = {:e}",
                    cal.tolerance, s.steps, total_steps, s.delta
                ),
            )
        }
        _ => return Err(invalid(
            "noise_multiplier / epsilon",
            "both or neither",
            "exactly one of `noise_multiplier` (σ) and `epsilon` (target Poisson ε to calibrate σ)",
        )),
    };
    let config = BgmConfig {
        steps: s.steps,
        expected_batch_size: s.expected_batch_size,
        epochs: s.epochs,
        noise_multiplier,
        sampler: s.sampler.clone(),
        dataset: s.dataset,
        score: s
            .dataset
            .matched_likelihood_ratio(s.expected_batch_size, s.steps),
        score_columns: s.steps,
        seed: s.seed,
    };
    BgmSimulator::new(config.clone())?;
    let partial = is_partial_shuffle(s);
    if !partial && (s.guesses.is_some() || s.guess_runs.is_some()) {
        return Err(invalid(
            "guesses / guess_runs",
            "given",
            "them only with sampler partial_shuffle",
        ));
    }
    let (guesses, guess_runs) = if partial {
        let guesses = s
            .guesses
            .clone()
            .unwrap_or_else(|| default_partial_shuffle_guesses(s.steps));
        if guesses.is_empty() {
            return Err(invalid("guesses", "[]", "at least one k"));
        }
        for &k in &guesses {
            // The simulator checks 1 ≤ k ≤ T.
            BgmSimulator::new(BgmConfig {
                score_columns: k,
                ..config.clone()
            })
            .map_err(|e| invalid("guesses", k.to_string(), format!("a valid guess k ({e})")))?;
        }
        let guess_runs = s.guess_runs.unwrap_or((s.runs / 4).max(100));
        if guess_runs < 100 {
            return Err(invalid(
                "guess_runs",
                guess_runs.to_string(),
                "at least 100 runs per hypothesis and guess",
            ));
        }
        (guesses, guess_runs)
    } else {
        (vec![s.steps], 0)
    };
    let evaluation = s.evaluation.unwrap_or(Evaluation::Scores);
    // The guess search holds one guess's selection runs at a time, bounded
    // as the scores mode bounds (≈ 160 B per run and hypothesis).
    let guess_part = (
        format!(
            "the guess search: {guess_runs} selection runs per hypothesis × {} B",
            SCORES_HELD_PER_RUN + SCORES_BOUND_PER_RUN
        ),
        (guess_runs as u64).saturating_mul(SCORES_HELD_PER_RUN + SCORES_BOUND_PER_RUN),
    );
    // Refuse what cannot fit before simulating anything.
    let estimate = match evaluation {
        Evaluation::Scores => MemoryEstimate {
            parts: vec![
                (
                    format!(
                        "{} evaluation runs per hypothesis × {} B (scores, scores.csv lines, the bound's copies; 186 B measured)",
                        s.runs,
                        SCORES_HELD_PER_RUN + SCORES_BOUND_PER_RUN
                    ),
                    (s.runs as u64).saturating_mul(SCORES_HELD_PER_RUN + SCORES_BOUND_PER_RUN),
                ),
                guess_part,
            ],
        },
        Evaluation::Counts { selection_runs } => {
            if selection_runs < 1000 {
                return Err(invalid(
                    "evaluation.counts.selection_runs",
                    selection_runs.to_string(),
                    "at least 1000 runs per hypothesis to choose the threshold on (e.g. a tenth of `runs`)",
                ));
            }
            MemoryEstimate {
                parts: vec![
                    (
                        format!("one piece of {PIECE_RUNS} runs per hypothesis × 16 B"),
                        (PIECE_RUNS as u64) * 16,
                    ),
                    (
                        "three histograms on the fixed grid (8.5 MB each)".into(),
                        3 * (2 * crate::bgm::counts::MAX_BUCKET as u64 + 1) * 16,
                    ),
                    guess_part,
                ],
            }
        }
    };
    let field = match evaluation {
        Evaluation::Scores => {
            "`runs` (or `guess_runs`; `evaluation = { counts = { selection_runs = … } }` holds no scores)"
        }
        Evaluation::Counts { .. } => "`guess_runs`",
    };
    memory::check("the simulation", field, &estimate)?;
    Ok(PreparedSetting {
        setting,
        noise_multiplier,
        noise_source,
        config,
        guesses,
        guess_runs,
        evaluation,
    })
}
