//! Shuffling audits of the Batched Gaussian Mechanism (BGM): the
//! Worst-Case threat model of Annamalai et al. 2024 (§4.1, Algorithm 4),
//! setting by setting, as library code. `docs/canary-games.md` states the
//! game, the likelihood ratios and the decisions taken where the paper is
//! silent.
//!
//! An experiment file lists settings (σ or a target Poisson ε, T, E, B,
//! sampler, audited dataset pair, runs, δ, confidence, seed). For each
//! setting the report gives, side by side:
//! - the Poisson ε that people report (PLD accountant, q = 1/T, T·E steps;
//!   Annamalai et al. 2024 §5, "calibrated as if Poisson subsampling were
//!   used");
//! - the Chua et al. 2024 lower bound for shuffle-then-batch
//!   (`dpaudit_accounting::shuffle_lower_bound`);
//! - the empirical ε lower bound from simulated runs (the (ε, δ) region of
//!   Annamalai et al. 2024 Eq. (1), tested by the rank test of
//!   `dpaudit_audit::rank_test`; Clopper–Pearson on both error rates, their
//!   Algorithm 5, for `same_data`), with its confidence and
//!   threshold-selection policy.
//!
//! Partial shuffling (Annamalai et al. 2024 §4.3, Algorithm 2) searches the
//! adversary's guess k on runs from seed streams disjoint from the
//! evaluation runs and bounds ε at the chosen k on the evaluation runs, so
//! the reported bound stays valid at its confidence (the paper maximises over
//! k on the same observations; the per-guess same-data numbers are reported,
//! labelled).
//!
//! Two ways to turn runs into a bound (`evaluation` of a setting):
//! - `"scores"` (the default): every evaluation score is held, the threshold
//!   chosen on one random half and bounded on the other (`split`). About
//!   160–190 bytes per run and hypothesis at the peak: for up to some 10⁷
//!   runs per hypothesis.
//! - `{ counts = { selection_runs = N } }`: bounded memory, for 10⁸–10⁹
//!   runs ([`crate::bgm_counts`]): a threshold chosen on `N` separate
//!   selection runs, the evaluation runs reduced to counts on a grid fixed
//!   in advance.
//!
//! Every setting is validated (sampler parameters and memory included)
//! before any simulation starts ([`prepare_all`]); a scores-mode experiment
//! that cannot fit in memory is refused with the estimate. The simulation
//! runs on any [`BgmEngine`]; the out-dir, shards and merges are
//! [`crate::bgm_runner`].

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use dpaudit_accounting::{
    calibrate_noise_multiplier, dpsgd_epsilon, shuffle_lower_bound, Accountant,
};
use dpaudit_attacks::likelihood::default_partial_shuffle_guesses;
use dpaudit_attacks::{BgmConfig, BgmDataset, BgmSampler, BgmSimulator, LikelihoodRatio};
use dpaudit_audit::bound::EpsilonLowerBound;
use dpaudit_audit::observations::{Observations, Selection};
use dpaudit_audit::region::{eps_delta_lower_bound, RegionConfig};
use dpaudit_data::seed::Mode;
use dpaudit_train::preflight::{self, MemoryEstimate};
use serde::{Deserialize, Serialize};

use crate::bgm_counts::{
    counted_bound, CountedBound, HistogramAccumulator, ScoreHistogram, PIECE_RUNS,
};
use crate::bgm_engine::BgmEngine;
use crate::error::{invalid, ExperimentError, Result};

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
        toml::from_str(text).map_err(|e| ExperimentError::Inconsistent {
            path: file.to_path_buf(),
            reason: format!("not a BGM experiment file: {e}"),
        })
    }

    /// Read and parse `file`.
    pub fn load(file: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(file).map_err(|source| ExperimentError::Io {
            path: file.to_path_buf(),
            action: "reading",
            source,
        })?;
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
    pub sampler: BgmSampler,
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
    /// hypothesis, the evaluation runs counted; [`crate::bgm_counts`]).
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
    /// the evaluation runs' errors at it ([`crate::bgm_counts`]).
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
        matches!(self.setting.sampler, BgmSampler::PartialShuffle { .. })
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

/// Validate every setting of `experiment` before anything is simulated;
/// errors name `file`, the setting's position and name, and the field.
pub fn prepare_all(file: &Path, experiment: &BgmExperiment) -> Result<Vec<PreparedSetting>> {
    if experiment.settings.is_empty() {
        return Err(ExperimentError::Inconsistent {
            path: file.to_path_buf(),
            reason: "`settings` is empty; expected at least one [[settings]] table".into(),
        });
    }
    let prepared = experiment
        .settings
        .iter()
        .enumerate()
        .map(|(index, s)| {
            prepare(s.clone()).map_err(|e| ExperimentError::Setting {
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
        preflight::check(
            "the experiment's scores",
            "`runs` (or `evaluation = { counts = { selection_runs = … } }`, which holds no scores)",
            &estimate,
        )
        .map_err(|e| ExperimentError::Inconsistent {
            path: file.to_path_buf(),
            reason: e.to_string(),
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
    if !(s.delta.is_finite() && s.delta > 0.0 && s.delta < 1.0) {
        return Err(invalid(
            "delta",
            s.delta.to_string(),
            "a value in (0, 1), e.g. 1e-5",
        ));
    }
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
        (Some(sigma), None) => (sigma, "given".to_string()),
        (None, Some(eps)) => {
            let cal = calibrate_noise_multiplier(
                sample_rate,
                total_steps,
                s.delta,
                eps,
                Accountant::Pld,
                1e-4,
            )
            .map_err(|source| ExperimentError::Accounting {
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
    let partial = matches!(s.sampler, BgmSampler::PartialShuffle { .. });
    if !partial && (s.guesses.is_some() || s.guess_runs.is_some()) {
        return Err(invalid(
            "guesses / guess_runs",
            "given",
            "them only with sampler partial_shuffle",
        ));
    }
    let config = BgmConfig {
        steps: s.steps,
        expected_batch_size: s.expected_batch_size,
        epochs: s.epochs,
        noise_multiplier,
        sampler: s.sampler,
        dataset: s.dataset,
        score: s
            .dataset
            .matched_likelihood_ratio(s.expected_batch_size, s.steps),
        score_columns: s.steps,
        seed: s.seed,
    };
    BgmSimulator::new(config.clone())?;
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
                        3 * (2 * crate::bgm_counts::MAX_BUCKET as u64 + 1) * 16,
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
    preflight::check("the simulation", field, &estimate)?;
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

/// Time spent simulating (not bounding), and what it produced.
#[derive(Debug, Default, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SimulationClock {
    /// Seconds spent in the simulator.
    pub seconds: f64,
    /// Observations simulated (runs, both hypotheses).
    pub observations: usize,
}

/// Bound ε from simulated scores under `region`.
pub fn bound_scores(
    with_target: &[f64],
    without_target: &[f64],
    region: &RegionConfig,
) -> Result<EpsilonLowerBound> {
    let observations =
        Observations::from_classes(with_target, without_target).map_err(|source| {
            ExperimentError::Audit {
                context: "collecting the simulated scores".into(),
                source,
            }
        })?;
    eps_delta_lower_bound(&observations, region).map_err(|source| ExperimentError::Audit {
        context: "bounding ε from the simulated scores".into(),
        source,
    })
}

/// Simulate `runs` runs per hypothesis of `config` on `engine` from chunk
/// `first_chunk` and bound ε (the (ε, δ) region, Annamalai et al. 2024
/// Eq. (1), tested as `region`'s policy says) under `region`, adding the
/// simulation time to `clock`.
pub fn simulate_and_bound(
    engine: &dyn BgmEngine,
    config: &BgmConfig,
    first_chunk: u64,
    runs: usize,
    region: &RegionConfig,
    clock: &mut SimulationClock,
) -> Result<EpsilonLowerBound> {
    let start = Instant::now();
    let scores = engine.simulate(config, first_chunk, runs)?;
    clock.seconds += start.elapsed().as_secs_f64();
    clock.observations += 2 * runs;
    bound_scores(&scores.with_target, &scores.without_target, region)
}

/// The partial-shuffle guess search (Annamalai et al. 2024 §4.3) on
/// selection runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuessSearch {
    /// Selection runs per hypothesis and guess.
    pub runs_per_hypothesis: usize,
    /// (k, same-data ε on the selection runs; NOT a valid bound by itself).
    pub per_guess: Vec<(usize, f64)>,
    /// The k of the largest same-data ε (the first on ties).
    pub chosen_columns: usize,
}

/// Choose the guess k of a partial-shuffle setting on selection runs
/// (same-data selection, from the engine's selection chunks).
pub fn search_guess(
    engine: &dyn BgmEngine,
    p: &PreparedSetting,
    clock: &mut SimulationClock,
) -> Result<GuessSearch> {
    let choose = RegionConfig {
        selection: Selection::SameData,
        ..p.region()
    };
    let mut per_guess = Vec::with_capacity(p.guesses.len());
    for &k in &p.guesses {
        let lb = simulate_and_bound(
            engine,
            &p.config_with_columns(k),
            engine.selection_first_chunk(),
            p.guess_runs,
            &choose,
            clock,
        )?;
        per_guess.push((k, lb.epsilon));
    }
    let chosen = per_guess
        .iter()
        .copied()
        .fold(per_guess[0], |b, g| if g.1 > b.1 { g } else { b })
        .0;
    Ok(GuessSearch {
        runs_per_hypothesis: p.guess_runs,
        per_guess,
        chosen_columns: chosen,
    })
}

/// The report of one setting.
#[derive(Debug, Clone, Serialize)]
pub struct SettingReport {
    pub name: String,
    pub steps: usize,
    pub epochs: usize,
    pub expected_batch_size: usize,
    pub sample_rate: f64,
    pub noise_multiplier: f64,
    /// "given" or how σ was calibrated.
    pub noise_multiplier_source: String,
    pub sampler: BgmSampler,
    pub dataset: BgmDataset,
    pub score: LikelihoodRatio,
    pub runs_per_hypothesis: usize,
    pub delta: f64,
    /// `scores` (every score held, `lower_bound`) or `counts` (bounded
    /// memory, `counted_bound`).
    pub evaluation: &'static str,
    /// Poisson ε (PLD upper bound, q = 1/T, T·E steps): what people report.
    pub epsilon_poisson_pld: f64,
    /// Chua et al. lower bound for shuffle-then-batch with the same (σ, T, E, δ);
    /// `null` when the accountant could not compute it (see `chua_error`).
    pub epsilon_shuffle_lower_chua: Option<f64>,
    pub chua_error: Option<String>,
    /// Scores mode: the empirical ε lower bound (valid at its confidence
    /// unless labelled otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lower_bound: Option<EpsilonLowerBound>,
    /// Counts mode: the bound at the held-out threshold (valid), with the
    /// same-data figure beside it (not valid).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counted_bound: Option<CountedBound>,
    /// Partial shuffling: the guess search (same-data ε per guess on the
    /// selection runs, for choosing k only) and the chosen k.
    pub guess_search: Option<GuessSearch>,
    /// Compute time of the simulation and bound, seconds (summed over the
    /// processes of a sharded run).
    pub wall_seconds: f64,
    /// Simulated observations (runs, both hypotheses, selection included) per second.
    pub observations_per_second: f64,
    /// Seconds spent in the simulator alone (the bounds excluded).
    pub simulation_seconds: f64,
    /// Simulator throughput: observations per simulation second.
    pub simulation_observations_per_second: f64,
}

impl SettingReport {
    /// The reported ε lower bound, whichever the mode.
    pub fn epsilon_emp(&self) -> f64 {
        match (&self.lower_bound, &self.counted_bound) {
            (Some(b), _) => b.epsilon,
            (None, Some(c)) => c.epsilon,
            (None, None) => 0.0,
        }
    }

    /// Whether the reported bound is valid at its confidence.
    pub fn valid_at_confidence(&self) -> bool {
        match (&self.lower_bound, &self.counted_bound) {
            (Some(b), _) => b.valid_at_confidence,
            (None, Some(c)) => c.valid_at_confidence,
            (None, None) => false,
        }
    }

    /// Confidence of the reported bound.
    pub fn confidence(&self) -> f64 {
        match (&self.lower_bound, &self.counted_bound) {
            (Some(b), _) => b.confidence,
            (None, Some(c)) => c.confidence,
            (None, None) => 0.0,
        }
    }

    /// The selection policy's short name (`split`, `held-out-threshold`, …).
    pub fn selection_name(&self) -> &'static str {
        match (&self.lower_bound, &self.counted_bound) {
            (Some(b), _) => b.selection.name(),
            (None, Some(c)) => c.selection,
            (None, None) => "none",
        }
    }

    /// Counts mode: the same-data figure (the papers' practice; NOT valid).
    pub fn same_data_epsilon(&self) -> Option<f64> {
        self.counted_bound.as_ref().map(|c| c.same_data.epsilon)
    }
}

/// The names of the [`SettingReport`] fields that are timings: the only
/// fields of `audit.json` that differ between two runs of one experiment.
pub const TIMING_FIELDS: [&str; 4] = [
    "wall_seconds",
    "observations_per_second",
    "simulation_seconds",
    "simulation_observations_per_second",
];

/// The simulated scores of a whole setting, and what producing them cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SettingScores {
    /// log Λ of the evaluation runs on D, in run order (scores mode).
    pub with_target: Vec<f64>,
    /// log Λ of the evaluation runs on D′, in run order (scores mode).
    pub without_target: Vec<f64>,
    /// Counts mode: the histograms of the selection and evaluation runs.
    pub counts: Option<SettingCounts>,
    /// Partial shuffling: the guess search.
    pub guess_search: Option<GuessSearch>,
    /// Compute seconds (simulation and guess search).
    pub seconds: f64,
    /// Simulation alone.
    pub clock: SimulationClock,
}

/// The histograms of a counts-mode setting.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SettingCounts {
    /// Threshold-selection runs.
    pub selection: ScoreHistogram,
    /// Evaluation runs.
    pub evaluation: ScoreHistogram,
}

/// Simulate `runs` runs per hypothesis of `config` on `engine` from chunk
/// `first_chunk` into a histogram on the fixed grid of
/// [`crate::bgm_counts`], in pieces of whole engine chunks
/// ([`PIECE_RUNS`] runs, at least one chunk of `chunk_runs`): memory does not
/// grow with `runs`, and the counts equal those of one call (the engines
/// seed per chunk). Adds the simulation time to `clock`.
pub fn simulate_histogram(
    engine: &dyn BgmEngine,
    config: &BgmConfig,
    first_chunk: u64,
    runs: usize,
    chunk_runs: usize,
    clock: &mut SimulationClock,
) -> Result<ScoreHistogram> {
    let chunk_runs = chunk_runs.max(1);
    let piece_chunks = (PIECE_RUNS / chunk_runs).max(1);
    let mut acc = HistogramAccumulator::new();
    let mut done = 0usize;
    let mut chunk = first_chunk;
    while done < runs {
        let n = (piece_chunks * chunk_runs).min(runs - done);
        let start = Instant::now();
        let scores = engine.simulate(config, chunk, n)?;
        clock.seconds += start.elapsed().as_secs_f64();
        clock.observations += 2 * n;
        acc.add(&scores.with_target, &scores.without_target)?;
        done += n;
        chunk += piece_chunks as u64;
    }
    Ok(acc.histogram())
}

/// The report of a setting from its scores: the accountants' ε beside the
/// empirical bound.
pub fn report_setting(p: &PreparedSetting, scores: &SettingScores) -> Result<SettingReport> {
    let s = &p.setting;
    let sample_rate = 1.0 / s.steps as f64;
    let total_steps = (s.steps * s.epochs) as u64;
    let sigma = p.noise_multiplier;
    let poisson = dpsgd_epsilon(sample_rate, sigma, total_steps, s.delta, Accountant::Pld)
        .map_err(|source| ExperimentError::Accounting {
            context: "Poisson ε (PLD)".into(),
            source,
        })?;
    let (chua, chua_error) =
        match shuffle_lower_bound(sigma, s.steps as u64, s.epochs as u64, s.delta) {
            Ok(b) => (Some(b.epsilon), None),
            Err(e) => (None, Some(e.to_string())),
        };
    let start = Instant::now();
    let (lower_bound, counted) = match &scores.counts {
        None => (
            Some(bound_scores(
                &scores.with_target,
                &scores.without_target,
                &p.region(),
            )?),
            None,
        ),
        Some(c) => (
            None,
            Some(counted_bound(
                &c.selection,
                &c.evaluation,
                s.confidence,
                s.delta,
            )?),
        ),
    };
    let wall_seconds = scores.seconds + start.elapsed().as_secs_f64();
    let clock = scores.clock;
    Ok(SettingReport {
        name: s.name.clone(),
        steps: s.steps,
        epochs: s.epochs,
        expected_batch_size: s.expected_batch_size,
        sample_rate,
        noise_multiplier: sigma,
        noise_multiplier_source: p.noise_source.clone(),
        sampler: s.sampler,
        dataset: s.dataset,
        score: p.config.score,
        runs_per_hypothesis: s.runs,
        delta: s.delta,
        evaluation: p.evaluation.name(),
        epsilon_poisson_pld: poisson.epsilon,
        epsilon_shuffle_lower_chua: chua,
        chua_error,
        lower_bound,
        counted_bound: counted,
        guess_search: scores.guess_search.clone(),
        wall_seconds,
        observations_per_second: clock.observations as f64 / wall_seconds.max(1e-9),
        simulation_seconds: clock.seconds,
        simulation_observations_per_second: clock.observations as f64 / clock.seconds.max(1e-9),
    })
}

/// A setting audited in one process on `engine`, without an out-dir: the
/// guess search if any, all evaluation runs, the bound. In scores mode every
/// score is held; in counts mode the selection and evaluation runs are
/// streamed into histograms. The out-dir path ([`crate::bgm_runner`]) gives
/// the same scores or counts unit by unit.
pub fn audit_setting(p: &PreparedSetting, engine: &dyn BgmEngine) -> Result<SettingReport> {
    let start = Instant::now();
    let mut clock = SimulationClock::default();
    let guess_search = if p.searches_guess() {
        Some(search_guess(engine, p, &mut clock)?)
    } else {
        None
    };
    let k = guess_search
        .as_ref()
        .map_or(p.setting.steps, |g| g.chosen_columns);
    if let Some(selection_runs) = p.selection_runs() {
        let config = p.config_with_columns(k);
        let chunk_runs = engine.chunk_runs(&config)?;
        let selection = simulate_histogram(
            engine,
            &config,
            p.threshold_selection_first_chunk(engine, chunk_runs),
            selection_runs,
            chunk_runs,
            &mut clock,
        )?;
        let evaluation =
            simulate_histogram(engine, &config, 0, p.setting.runs, chunk_runs, &mut clock)?;
        return report_setting(
            p,
            &SettingScores {
                counts: Some(SettingCounts {
                    selection,
                    evaluation,
                }),
                guess_search,
                seconds: start.elapsed().as_secs_f64(),
                clock,
                ..SettingScores::default()
            },
        );
    }
    let sim_start = Instant::now();
    let scores = engine.simulate(&p.config_with_columns(k), 0, p.setting.runs)?;
    clock.seconds += sim_start.elapsed().as_secs_f64();
    clock.observations += 2 * p.setting.runs;
    report_setting(
        p,
        &SettingScores {
            with_target: scores.with_target,
            without_target: scores.without_target,
            counts: None,
            guess_search,
            seconds: start.elapsed().as_secs_f64(),
            clock,
        },
    )
}

/// The whole report, written to `audit.json`.
#[derive(Debug, Clone, Serialize)]
pub struct BgmReport {
    /// The experiment file, as given.
    pub config: String,
    pub description: String,
    /// `rust` or `tensor`.
    pub engine: String,
    /// `cpu` or `cuda:N`.
    pub device: String,
    /// CPU threads simulating (0 on a GPU).
    pub threads: usize,
    /// Simulations are replayable: every draw follows from the seed.
    pub randomness: Mode,
    pub settings: Vec<SettingReport>,
}

fn sampler_label(s: BgmSampler) -> String {
    match s {
        BgmSampler::Shuffle => "shuffle".into(),
        BgmSampler::PartialShuffle { buffer_size } => format!("partial K={buffer_size}"),
        BgmSampler::BatchThenShuffle => "batch-then-shuffle".into(),
        BgmSampler::Poisson => "poisson".into(),
    }
}

/// `throughput 1.234e6 observations/s on cpu (rust engine, 2 threads; …)`.
pub fn throughput_line(s: &SettingReport, report: &BgmReport) -> String {
    let threads = match report.threads {
        0 => String::new(),
        n => format!(", {n} threads"),
    };
    format!(
        "throughput {:.4e} observations/s on {} ({} engine{threads}; simulation only, {:.3e} observations in {:.2} s)",
        s.simulation_observations_per_second,
        report.device,
        report.engine,
        s.simulation_observations_per_second * s.simulation_seconds,
        s.simulation_seconds
    )
}

/// The markdown table of `summary.md`.
pub fn summary_markdown(r: &BgmReport) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# BGM audit: {}\n", r.config);
    if !r.description.is_empty() {
        let _ = writeln!(md, "{}\n", r.description.trim());
    }
    let _ = writeln!(
        md,
        "Poisson ε: PLD, q = 1/T, T·E steps. Chua: lower bound for shuffle-then-batch (Chua et al. 2024). \
         ε_emp: lower bound from the (ε, δ) region (rank test; Clopper–Pearson on both rates for same_data), \
         Worst-Case BGM (Annamalai et al. 2024 §4.1, Algorithm 5); in counts mode (bounded memory) Clopper–Pearson \
         on both error counts at a threshold chosen on separate selection runs (held-out-threshold), with the \
         same-data figure (the paper's practice: best threshold on the counted runs; NOT valid) beside it. \
         Simulated by the {} engine on {} ({} CPU threads). Randomness: {} (every draw follows from each \
         setting's seed).\n",
        r.engine, r.device, r.threads, r.randomness
    );
    let _ = writeln!(
        md,
        "| setting | sampler | dataset | σ | T | E | B | δ | Poisson ε | Chua LB | ε_emp (conf., selection) | same-data ε (NOT valid) | k | runs/hyp. | wall s | sim. obs/s |"
    );
    let _ = writeln!(
        md,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for s in &r.settings {
        let chua = s
            .epsilon_shuffle_lower_chua
            .map_or_else(|| "n/a".to_string(), |c| format!("{c:.3}"));
        let same = s
            .same_data_epsilon()
            .map_or_else(|| "—".to_string(), |e| format!("{e:.3}"));
        let k = s
            .guess_search
            .as_ref()
            .map_or_else(|| "T".to_string(), |g| g.chosen_columns.to_string());
        let _ = writeln!(
            md,
            "| {} | {} | {:?} | {:.4} | {} | {} | {} | {:e} | {:.3} | {} | {:.3} ({:.0}%, {}{}) | {} | {} | {} | {:.1} | {:.3e} |",
            s.name,
            sampler_label(s.sampler),
            s.dataset,
            s.noise_multiplier,
            s.steps,
            s.epochs,
            s.expected_batch_size,
            s.delta,
            s.epsilon_poisson_pld,
            chua,
            s.epsilon_emp(),
            s.confidence() * 100.0,
            s.selection_name(),
            if s.valid_at_confidence() {
                ""
            } else {
                ", NOT valid"
            },
            same,
            k,
            s.runs_per_hypothesis,
            s.wall_seconds,
            s.simulation_observations_per_second
        );
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<BgmExperiment> {
        BgmExperiment::from_toml(Path::new("t.toml"), text)
    }

    const SETTING: &str = r#"
[[settings]]
name = "t"
steps = 10
epochs = 1
expected_batch_size = 10
noise_multiplier = 1.0
sampler = { partial_shuffle = { buffer_size = 15 } }
dataset = "shuffle_worst_case"
runs = 1000
delta = 1e-5
confidence = 0.95
seed = 0
"#;

    #[test]
    fn bad_buffer_size_is_refused_before_simulation_naming_the_field() {
        let e = parse(SETTING).unwrap();
        let err = prepare_all(Path::new("t.toml"), &e)
            .unwrap_err()
            .to_string();
        assert!(err.contains("buffer_size"), "{err}");
        assert!(
            err.contains("multiple of expected_batch_size = 10"),
            "{err}"
        );
        assert!(err.contains("t.toml: settings[0]"), "{err}");
        // K > n = T·B = 100.
        let e = parse(&SETTING.replace("buffer_size = 15", "buffer_size = 110")).unwrap();
        let err = prepare(e.settings[0].clone()).unwrap_err().to_string();
        assert!(
            err.contains("buffer_size") && err.contains("= 100"),
            "{err}"
        );
    }

    #[test]
    fn noise_must_be_given_exactly_once() {
        let both = SETTING.replace(
            "noise_multiplier = 1.0",
            "noise_multiplier = 1.0\nepsilon = 1.0",
        );
        let err = prepare(parse(&both).unwrap().settings[0].clone())
            .unwrap_err()
            .to_string();
        assert!(err.contains("exactly one"), "{err}");
        let none = SETTING.replace("noise_multiplier = 1.0", "");
        let err = prepare(parse(&none).unwrap().settings[0].clone())
            .unwrap_err()
            .to_string();
        assert!(err.contains("exactly one"), "{err}");
    }

    #[test]
    fn missing_dp_fields_and_unknown_fields_are_refused() {
        let err = parse(&SETTING.replace("delta = 1e-5\n", ""))
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing field `delta`"), "{err}");
        let err = parse(&SETTING.replace("seed = 0", "seed = 0\nsede = 1"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `sede`"), "{err}");
        assert!(err.contains("t.toml"), "{err}");
    }

    #[test]
    fn calibrated_sigma_reaches_the_target_poisson_epsilon() {
        // σ for ε = 1.0 at q = 0.01, 100 steps, δ = 1e-5 is 0.902 (PLD,
        // reproduced by dp_accounting's PLD accountant; Annamalai et al.
        // 2024 §5 calibrates the same way).
        let text = SETTING
            .replace("noise_multiplier = 1.0", "epsilon = 1.0")
            .replace("steps = 10", "steps = 100")
            .replace("buffer_size = 15", "buffer_size = 100");
        let p = prepare(parse(&text).unwrap().settings[0].clone()).unwrap();
        assert!(
            (p.noise_multiplier - 0.902).abs() < 0.01,
            "σ = {}",
            p.noise_multiplier
        );
        assert_eq!(p.guesses, vec![1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    }
}
