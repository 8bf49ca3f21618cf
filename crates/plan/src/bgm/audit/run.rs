//! Simulating a prepared setting, bounding it (every score held, or counts
//! in bounded memory), and the report of a setting and of the experiment.

use std::fmt::Write as _;
use std::time::Instant;

use dpaudit_accounting::{dpsgd_epsilon, shuffle_lower_bound, Accountant};
use dpaudit_attacks::{BgmConfig, BgmDataset, LikelihoodRatio};
use dpaudit_audit::bound::EpsilonLowerBound;
use dpaudit_audit::observations::{Observations, Selection};
use dpaudit_audit::region::{eps_delta_lower_bound, RegionConfig};
use dpaudit_data::sampler::{GameSampler, Sampler};
use dpaudit_data::seed::Mode;
use serde::{Deserialize, Serialize};

use crate::bgm::counts::{
    counted_bound, CountedBound, HistogramAccumulator, ScoreHistogram, PIECE_RUNS,
};
use crate::bgm::engine::BgmEngine;
use crate::error::{PlanError, Result};

use super::setting::*;

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
            PlanError::Audit {
                context: "collecting the simulated scores".into(),
                source,
            }
        })?;
    eps_delta_lower_bound(&observations, region).map_err(|source| PlanError::Audit {
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

/// [`search_guess`] when `search` says so, and the columns to simulate: the
/// chosen k, or the setting's steps without a search.
pub fn search_guess_if(
    search: bool,
    engine: &dyn BgmEngine,
    p: &PreparedSetting,
    clock: &mut SimulationClock,
) -> Result<(Option<GuessSearch>, usize)> {
    let guess_search = if search {
        Some(search_guess(engine, p, clock)?)
    } else {
        None
    };
    let k = guess_search
        .as_ref()
        .map_or(p.setting.steps, |g| g.chosen_columns);
    Ok((guess_search, k))
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
    pub sampler: GameSampler,
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
/// [`crate::bgm::counts`], in pieces of whole engine chunks
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
        .map_err(|source| PlanError::Accounting {
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
        sampler: s.sampler.clone(),
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
/// streamed into histograms. The out-dir path ([`crate::bgm::runner`]) gives
/// the same scores or counts unit by unit.
pub fn audit_setting(p: &PreparedSetting, engine: &dyn BgmEngine) -> Result<SettingReport> {
    let start = Instant::now();
    let mut clock = SimulationClock::default();
    let (guess_search, k) = search_guess_if(p.searches_guess(), engine, p, &mut clock)?;
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

/// The sampler's name in the summary table (its `kind` unless named here).
fn sampler_label(s: &SettingReport) -> String {
    match s.sampler.build(s.steps, s.expected_batch_size) {
        Ok(Sampler::PartialShuffle(p)) => format!("partial K={}", p.buffer_size()),
        Ok(Sampler::BatchThenShuffle(_)) => "batch-then-shuffle".into(),
        _ => s.sampler.kind().to_string(),
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
            sampler_label(s),
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
