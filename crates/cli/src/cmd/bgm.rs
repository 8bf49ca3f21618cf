//! `dpaudit bgm`: shuffling audits of the Batched Gaussian Mechanism (BGM),
//! the Worst-Case threat model of seed 000 (spec 000 §2.3, §3).
//!
//! A TOML config lists settings (σ or a target Poisson ε, T, E, B, sampler,
//! audited dataset pair, runs, δ, confidence, seed). For each setting the
//! report gives, side by side:
//! - the Poisson ε that people report (PLD accountant, q = 1/T, T·E steps;
//!   spec 000 §4);
//! - the Chua et al. lower bound for shuffle-then-batch (spec 000 §4);
//! - the empirical ε lower bound from simulated runs (spec 000 §2.7), with
//!   its confidence and threshold-selection policy.
//!
//! Partial shuffling (spec 000 §2.8, Algorithm 2) searches the adversary's
//! guess k on runs from seed streams disjoint from the evaluation runs and
//! bounds ε at the chosen k on the evaluation runs, so the reported bound stays
//! valid at its confidence (the paper instead maximises over k on the same
//! observations; the per-guess same-data numbers are reported, labelled).
//!
//! Two simulation engines give the same scores in distribution (issue 7
//! point 1): the pure-Rust CPU simulator (`--engine rust`, the default on the
//! CPU, threads over chunks) and the libtorch one (`--engine tensor`,
//! vectorised over chunks of runs; the only engine with `--device cuda`).
//! Each setting reports its simulation throughput (observations per second)
//! and the engine and device it ran on.
//!
//! Every setting is validated (sampler parameters included) before any
//! simulation starts. `audit.json` and `summary.md` are written atomically.

use anyhow::Context;
use dpaudit_accounting::{
    calibrate_noise_multiplier, dpsgd_epsilon, shuffle_lower_bound, Accountant,
};
use dpaudit_attacks::likelihood::default_partial_shuffle_guesses;
use dpaudit_attacks::{
    BgmConfig, BgmDataset, BgmSimulator, LikelihoodRatio, PairedScores, Sampler,
};
use dpaudit_audit::bound::EpsilonLowerBound;
use dpaudit_audit::region::{eps_delta_lower_bound, RegionConfig};
use dpaudit_audit::scores::{Observations, Selection};
use dpaudit_data::seed::Mode;
use dpaudit_experiment::outdir::write_atomic;
use dpaudit_train::bgm::TensorBgmSimulator;
use dpaudit_train::preflight::{self, MemoryEstimate};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The experiment: a TOML file with a `[[settings]]` list.
    #[arg(long)]
    pub config: PathBuf,
    /// Where `audit.json` and `summary.md` go (default: runs/<config file stem>).
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
    /// Print the JSON report instead of the markdown table.
    #[arg(long)]
    pub json: bool,
    /// Simulation threads (0 = all cores): the Rust engine's threads, or
    /// libtorch's intra-op threads for the tensor engine on the CPU.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Where the simulation runs: `cpu` or `cuda` (CUDA device 0; implies
    /// `--engine tensor`).
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Simulation engine: `rust` (pure-Rust CPU simulator) or `tensor`
    /// (libtorch, vectorised in chunks of runs). Default: `rust` on the CPU,
    /// `tensor` on CUDA.
    #[arg(long, value_enum)]
    pub engine: Option<EngineChoice>,
    /// Tensor engine only: runs per chunk and hypothesis (bounds memory;
    /// default from a per-device element budget). The scores depend on it.
    #[arg(long)]
    pub chunk_runs: Option<usize>,
}

/// The `--engine` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineChoice {
    /// The pure-Rust CPU simulator (`dpaudit_attacks::BgmSimulator`).
    Rust,
    /// The libtorch simulator (`dpaudit_train::bgm::TensorBgmSimulator`).
    Tensor,
}

/// Which simulator runs the audits, and where.
#[derive(Debug, Clone, Copy)]
pub enum Engine {
    /// The pure-Rust simulator on `threads` threads (0 = all cores).
    Rust { threads: usize },
    /// The tensor simulator on `device`, with `chunk_runs` runs per chunk
    /// (`None`: the device's default budget).
    Tensor {
        device: tch::Device,
        chunk_runs: Option<usize>,
    },
}

impl Engine {
    /// From the command-line flags; refuses `--engine rust --device cuda`,
    /// `--chunk-runs` without the tensor engine, and CUDA when none is present.
    pub fn from_flags(
        device: &str,
        engine: Option<EngineChoice>,
        chunk_runs: Option<usize>,
        threads: usize,
    ) -> anyhow::Result<Self> {
        let device = match device {
            "cpu" => tch::Device::Cpu,
            "cuda" if tch::Cuda::is_available() => tch::Device::Cuda(0),
            "cuda" => {
                anyhow::bail!("--device cuda: no CUDA device is available (see `dpaudit doctor`)")
            }
            other => anyhow::bail!("--device {other}: expected `cpu` or `cuda`"),
        };
        let engine = match (engine, device) {
            (Some(EngineChoice::Rust), tch::Device::Cpu) | (None, tch::Device::Cpu) => {
                Engine::Rust { threads }
            }
            (Some(EngineChoice::Rust), _) => anyhow::bail!(
                "--engine rust runs on the CPU only; use --engine tensor (the default) with --device cuda"
            ),
            (Some(EngineChoice::Tensor), device) | (None, device) => {
                if threads > 0 && device == tch::Device::Cpu {
                    tch::set_num_threads(threads as i32);
                }
                Engine::Tensor { device, chunk_runs }
            }
        };
        if let (Engine::Rust { .. }, Some(_)) = (engine, chunk_runs) {
            anyhow::bail!("--chunk-runs applies to --engine tensor only");
        }
        if chunk_runs == Some(0) {
            anyhow::bail!("--chunk-runs 0: expected at least 1 run per chunk");
        }
        Ok(engine)
    }

    /// First chunk of the partial-shuffle guess-selection runs, disjoint
    /// from the evaluation chunks 0, 1, … in this engine's seeding.
    pub fn guess_first_chunk(&self) -> u64 {
        match self {
            Engine::Rust { .. } => GUESS_FIRST_CHUNK,
            Engine::Tensor { .. } => TENSOR_GUESS_FIRST_CHUNK,
        }
    }

    /// `rust` or `tensor`.
    pub fn name(&self) -> &'static str {
        match self {
            Engine::Rust { .. } => "rust",
            Engine::Tensor { .. } => "tensor",
        }
    }

    /// `cpu` or `cuda:N`.
    pub fn device_label(&self) -> String {
        match self {
            Engine::Rust { .. }
            | Engine::Tensor {
                device: tch::Device::Cpu,
                ..
            } => "cpu".into(),
            Engine::Tensor {
                device: tch::Device::Cuda(i),
                ..
            } => format!("cuda:{i}"),
            Engine::Tensor { device, .. } => format!("{device:?}"),
        }
    }

    /// Threads doing the simulation on the CPU (0 on a GPU).
    pub fn threads(&self) -> usize {
        match self {
            Engine::Rust { threads: 0 } => {
                std::thread::available_parallelism().map_or(1, |n| n.get())
            }
            Engine::Rust { threads } => *threads,
            Engine::Tensor {
                device: tch::Device::Cpu,
                ..
            } => tch::get_num_threads().max(1) as usize,
            Engine::Tensor { .. } => 0,
        }
    }

    /// Scores of `runs` runs per hypothesis of `sim`'s configuration, from
    /// chunk `first_chunk` (chunks are each engine's own seeding unit).
    pub fn simulate(
        &self,
        sim: &BgmSimulator,
        first_chunk: u64,
        runs: usize,
    ) -> anyhow::Result<PairedScores> {
        match *self {
            Engine::Rust { threads } => Ok(sim.simulate_from_chunk(first_chunk, runs, threads)),
            Engine::Tensor { device, chunk_runs } => {
                let mut tensor = TensorBgmSimulator::new(sim.config().clone(), device)
                    .context("building the tensor simulator")?;
                if let Some(c) = chunk_runs {
                    tensor = tensor.with_chunk_runs(c)?;
                }
                tensor
                    .simulate_from_chunk(first_chunk, runs)
                    .with_context(|| format!("simulating on {device:?}"))
            }
        }
    }
}

/// A BGM experiment file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// Free text shown in the report.
    #[serde(default)]
    pub description: String,
    /// The audited settings, in report order.
    pub settings: Vec<Setting>,
}

/// One audited setting. The DP-critical fields (steps, epochs,
/// expected_batch_size, the noise, sampler, dataset, runs, delta,
/// confidence, seed) have no defaults.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    /// (spec 000 §4, "calibrated to ε = X if Poisson sub-sampling was used").
    pub epsilon: Option<f64>,
    /// The batch sampler, e.g. `"shuffle"` or `{ partial_shuffle = { buffer_size = 1000 } }`.
    pub sampler: Sampler,
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
    /// scored); default {1, 10, 20, …, T} (spec 000 §2.8).
    pub guesses: Option<Vec<usize>>,
    /// Partial shuffling only: runs per hypothesis and guess for choosing k
    /// (drawn from streams disjoint from the evaluation runs); default runs/4.
    pub guess_runs: Option<usize>,
}

/// First chunk of the guess-selection runs of the Rust engine: far above any
/// evaluation chunk, so selection and evaluation never share a ChaCha stream.
const GUESS_FIRST_CHUNK: u64 = 1 << 40;

/// First chunk of the guess-selection runs of the tensor engine: above any
/// evaluation chunk (2³⁰ chunks of runs are more than any audit draws); every
/// chunk has its own Philox counters (`dpaudit_train::bgm`).
const TENSOR_GUESS_FIRST_CHUNK: u64 = 1 << 30;

/// Simulates `runs` runs per hypothesis of `sim` from chunk `first_chunk`
/// on `threads` threads and bounds ε with spec 000 Algorithm 5 (Clopper–Pearson
/// on both error rates) under `region`. Shared by `dpaudit demo`.
pub fn simulate_and_bound(
    sim: &BgmSimulator,
    first_chunk: u64,
    runs: usize,
    threads: usize,
    region: &RegionConfig,
) -> anyhow::Result<EpsilonLowerBound> {
    let mut clock = SimulationClock::default();
    simulate_and_bound_on(
        &Engine::Rust { threads },
        sim,
        first_chunk,
        runs,
        region,
        &mut clock,
    )
}

/// Time spent simulating (not bounding), and what it produced.
#[derive(Debug, Default, Clone, Copy)]
pub struct SimulationClock {
    /// Seconds spent in the simulator.
    pub seconds: f64,
    /// Observations simulated (runs, both hypotheses).
    pub observations: usize,
}

/// [`simulate_and_bound`] on any engine, adding the simulation time to `clock`.
pub fn simulate_and_bound_on(
    engine: &Engine,
    sim: &BgmSimulator,
    first_chunk: u64,
    runs: usize,
    region: &RegionConfig,
    clock: &mut SimulationClock,
) -> anyhow::Result<EpsilonLowerBound> {
    let start = Instant::now();
    let scores = engine.simulate(sim, first_chunk, runs)?;
    clock.seconds += start.elapsed().as_secs_f64();
    clock.observations += 2 * runs;
    let observations = Observations::from_classes(&scores.with_target, &scores.without_target)
        .context("collecting the simulated scores")?;
    eps_delta_lower_bound(&observations, region).context("bounding ε from the simulated scores")
}

/// A setting after validation: σ resolved, simulator built.
struct Prepared {
    setting: Setting,
    noise_multiplier: f64,
    noise_source: String,
    simulator: BgmSimulator,
    guesses: Vec<usize>,
    guess_runs: usize,
}

/// The report of one setting.
#[derive(Debug, Serialize)]
pub struct SettingReport {
    pub name: String,
    pub steps: usize,
    pub epochs: usize,
    pub expected_batch_size: usize,
    pub sample_rate: f64,
    pub noise_multiplier: f64,
    /// "given" or how σ was calibrated.
    pub noise_multiplier_source: String,
    pub sampler: Sampler,
    pub dataset: BgmDataset,
    pub score: LikelihoodRatio,
    pub runs_per_hypothesis: usize,
    pub delta: f64,
    /// Poisson ε (PLD upper bound, q = 1/T, T·E steps): what people report.
    pub epsilon_poisson_pld: f64,
    /// Chua et al. lower bound for shuffle-then-batch with the same (σ, T, E, δ);
    /// `null` when the accountant could not compute it (see `chua_error`).
    pub epsilon_shuffle_lower_chua: Option<f64>,
    pub chua_error: Option<String>,
    /// The empirical ε lower bound (valid at its confidence unless labelled otherwise).
    pub lower_bound: EpsilonLowerBound,
    /// Partial shuffling: the guess search (same-data ε per guess on the
    /// selection runs, for choosing k only) and the chosen k.
    pub guess_search: Option<GuessSearch>,
    /// Wall time of the simulation and bound, seconds.
    pub wall_seconds: f64,
    /// Simulated observations (runs, both hypotheses, selection included) per second.
    pub observations_per_second: f64,
    /// Seconds spent in the simulator alone (the bounds excluded).
    pub simulation_seconds: f64,
    /// Simulator throughput: observations per simulation second.
    pub simulation_observations_per_second: f64,
}

/// The partial-shuffle guess search (spec 000 §2.8) on selection runs.
#[derive(Debug, Serialize)]
pub struct GuessSearch {
    pub runs_per_hypothesis: usize,
    /// (k, same-data ε on the selection runs; NOT a valid bound by itself).
    pub per_guess: Vec<(usize, f64)>,
    pub chosen_columns: usize,
}

/// The whole report, written to `audit.json`.
#[derive(Debug, Serialize)]
pub struct Report {
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

pub fn run(args: Args) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.config)
        .with_context(|| format!("reading {}", args.config.display()))?;
    let experiment: Experiment =
        toml::from_str(&text).with_context(|| format!("parsing {}", args.config.display()))?;
    anyhow::ensure!(
        !experiment.settings.is_empty(),
        "{}: `settings` is empty; expected at least one [[settings]] table",
        args.config.display()
    );
    // Validate every setting before simulating any.
    let prepared = experiment
        .settings
        .iter()
        .enumerate()
        .map(|(i, s)| {
            prepare(s.clone())
                .with_context(|| format!("{}: settings[{i}] ({:?})", args.config.display(), s.name))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let engine = Engine::from_flags(&args.device, args.engine, args.chunk_runs, args.threads)?;
    let out_dir = args.out_dir.clone().unwrap_or_else(|| {
        let stem = args
            .config
            .file_stem()
            .map_or_else(|| "bgm".into(), |s| s.to_string_lossy().into_owned());
        PathBuf::from("runs").join(stem)
    });
    let mut settings = Vec::with_capacity(prepared.len());
    for p in prepared {
        let name = p.setting.name.clone();
        let report = audit(p, &engine).with_context(|| format!("auditing setting {name:?}"))?;
        eprintln!(
            "{}: Poisson ε {:.3}, ε_emp {:.3} ({:.1} s; {})",
            report.name,
            report.epsilon_poisson_pld,
            report.lower_bound.epsilon,
            report.wall_seconds,
            throughput_line(&report, &engine)
        );
        settings.push(report);
    }
    let report = Report {
        config: args.config.display().to_string(),
        description: experiment.description,
        engine: engine.name().into(),
        device: engine.device_label(),
        threads: engine.threads(),
        randomness: Mode::Replayable,
        settings,
    };
    let json = serde_json::to_string_pretty(&report)?;
    let markdown = summary_markdown(&report);
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    write_atomic(&out_dir.join("audit.json"), json.as_bytes())?;
    write_atomic(&out_dir.join("summary.md"), markdown.as_bytes())?;
    if args.json {
        println!("{json}");
    } else {
        print!("{markdown}");
        println!();
        for s in &report.settings {
            println!("{}: {}", s.name, throughput_line(s, &engine));
        }
        println!(
            "\nwritten: {}/audit.json, {}/summary.md",
            out_dir.display(),
            out_dir.display()
        );
    }
    Ok(())
}

fn prepare(setting: Setting) -> anyhow::Result<Prepared> {
    let s = &setting;
    anyhow::ensure!(
        s.runs >= 100,
        "runs = {}: expected at least 100 runs per hypothesis",
        s.runs
    );
    anyhow::ensure!(
        s.confidence > 0.0 && s.confidence < 1.0,
        "confidence = {}: expected a probability in (0, 1), e.g. 0.95",
        s.confidence
    );
    anyhow::ensure!(
        s.delta.is_finite() && s.delta > 0.0 && s.delta < 1.0,
        "delta = {}: expected a value in (0, 1), e.g. 1e-5",
        s.delta
    );
    anyhow::ensure!(
        s.steps >= 1,
        "steps = 0: expected at least 1 batch per epoch"
    );
    anyhow::ensure!(s.epochs >= 1, "epochs = 0: expected at least 1");
    let sample_rate = 1.0 / s.steps as f64;
    let total_steps = (s.steps as u64)
        .checked_mul(s.epochs as u64)
        .context("steps × epochs overflows")?;
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
            .with_context(|| format!("calibrating the noise multiplier to Poisson ε = {eps}"))?;
            (
                cal.noise_multiplier,
                format!(
                    "calibrated: smallest σ (±{:.1e}) with PLD Poisson ε ≤ {eps} at q = 1/{}, {} steps, δ = {:e}",
                    cal.tolerance, s.steps, total_steps, s.delta
                ),
            )
        }
        _ => anyhow::bail!(
            "give exactly one of `noise_multiplier` (σ) and `epsilon` (target Poisson ε to calibrate σ)"
        ),
    };
    let partial = matches!(s.sampler, Sampler::PartialShuffle { .. });
    anyhow::ensure!(
        partial || (s.guesses.is_none() && s.guess_runs.is_none()),
        "`guesses` and `guess_runs` apply only to sampler partial_shuffle"
    );
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
    let simulator = BgmSimulator::new(config).context("invalid BGM setting")?;
    let (guesses, guess_runs) = if partial {
        let guesses = s
            .guesses
            .clone()
            .unwrap_or_else(|| default_partial_shuffle_guesses(s.steps));
        anyhow::ensure!(
            !guesses.is_empty(),
            "`guesses` is empty: expected at least one k"
        );
        for &k in &guesses {
            // The simulator checks 1 ≤ k ≤ T.
            BgmSimulator::new(BgmConfig {
                score_columns: k,
                ..simulator.config().clone()
            })
            .with_context(|| format!("guess k = {k}"))?;
        }
        let guess_runs = s.guess_runs.unwrap_or((s.runs / 4).max(100));
        anyhow::ensure!(
            guess_runs >= 100,
            "guess_runs = {guess_runs}: expected at least 100 runs per hypothesis and guess"
        );
        (guesses, guess_runs)
    } else {
        (vec![s.steps], 0)
    };
    // The scores of both hypotheses are held in memory (as scores, then as
    // the sorted observations of the bound): refuse what cannot fit before
    // simulating anything.
    let per_run = 2 * 8 * 3u64;
    let estimate = MemoryEstimate {
        parts: vec![(
            format!(
                "{} evaluation and {} selection runs per hypothesis × 48 bytes",
                s.runs,
                guess_runs * guesses.len()
            ),
            (s.runs as u64)
                .saturating_add((guess_runs as u64).saturating_mul(guesses.len() as u64))
                .saturating_mul(per_run),
        )],
    };
    preflight::check("the simulation", "`runs` (or `guess_runs`)", &estimate)?;
    Ok(Prepared {
        setting,
        noise_multiplier,
        noise_source,
        simulator,
        guesses,
        guess_runs,
    })
}

/// `throughput: 1.234e6 observations/s on cpu (rust engine, 2 threads)`.
fn throughput_line(s: &SettingReport, engine: &Engine) -> String {
    let threads = match engine.threads() {
        0 => String::new(),
        n => format!(", {n} threads"),
    };
    format!(
        "throughput {:.4e} observations/s on {} ({} engine{threads}; simulation only, {:.3e} observations in {:.2} s)",
        s.simulation_observations_per_second,
        engine.device_label(),
        engine.name(),
        s.simulation_observations_per_second * s.simulation_seconds,
        s.simulation_seconds
    )
}

fn audit(p: Prepared, engine: &Engine) -> anyhow::Result<SettingReport> {
    let s = &p.setting;
    let sample_rate = 1.0 / s.steps as f64;
    let total_steps = (s.steps * s.epochs) as u64;
    let sigma = p.noise_multiplier;
    let poisson = dpsgd_epsilon(sample_rate, sigma, total_steps, s.delta, Accountant::Pld)
        .context("Poisson ε (PLD)")?;
    let (chua, chua_error) =
        match shuffle_lower_bound(sigma, s.steps as u64, s.epochs as u64, s.delta) {
            Ok(b) => (Some(b.epsilon), None),
            Err(e) => (None, Some(e.to_string())),
        };
    let region = RegionConfig {
        confidence: s.confidence,
        delta: s.delta,
        selection: Selection::Split { seed: s.seed },
    };
    let start = Instant::now();
    let mut clock = SimulationClock::default();
    let (simulator, guess_search) = if matches!(s.sampler, Sampler::PartialShuffle { .. }) {
        // Choose k on selection runs (disjoint streams), same-data; bound on fresh runs.
        let choose = RegionConfig {
            selection: Selection::SameData,
            ..region
        };
        let mut per_guess = Vec::with_capacity(p.guesses.len());
        for &k in &p.guesses {
            let sim = BgmSimulator::new(BgmConfig {
                score_columns: k,
                ..p.simulator.config().clone()
            })?;
            let lb = simulate_and_bound_on(
                engine,
                &sim,
                engine.guess_first_chunk(),
                p.guess_runs,
                &choose,
                &mut clock,
            )
            .with_context(|| format!("guess k = {k}"))?;
            per_guess.push((k, lb.epsilon));
        }
        let chosen = per_guess
            .iter()
            .copied()
            .fold(per_guess[0], |b, g| if g.1 > b.1 { g } else { b })
            .0;
        let sim = BgmSimulator::new(BgmConfig {
            score_columns: chosen,
            ..p.simulator.config().clone()
        })?;
        let search = GuessSearch {
            runs_per_hypothesis: p.guess_runs,
            per_guess,
            chosen_columns: chosen,
        };
        (sim, Some(search))
    } else {
        (p.simulator.clone(), None)
    };
    let lower_bound = simulate_and_bound_on(engine, &simulator, 0, s.runs, &region, &mut clock)?;
    let wall_seconds = start.elapsed().as_secs_f64();
    Ok(SettingReport {
        name: s.name.clone(),
        steps: s.steps,
        epochs: s.epochs,
        expected_batch_size: s.expected_batch_size,
        sample_rate,
        noise_multiplier: sigma,
        noise_multiplier_source: p.noise_source,
        sampler: s.sampler,
        dataset: s.dataset,
        score: simulator.config().score,
        runs_per_hypothesis: s.runs,
        delta: s.delta,
        epsilon_poisson_pld: poisson.epsilon,
        epsilon_shuffle_lower_chua: chua,
        chua_error,
        lower_bound,
        guess_search,
        wall_seconds,
        observations_per_second: clock.observations as f64 / wall_seconds.max(1e-9),
        simulation_seconds: clock.seconds,
        simulation_observations_per_second: clock.observations as f64 / clock.seconds.max(1e-9),
    })
}

fn sampler_label(s: Sampler) -> String {
    match s {
        Sampler::Shuffle => "shuffle".into(),
        Sampler::PartialShuffle { buffer_size } => format!("partial K={buffer_size}"),
        Sampler::BatchThenShuffle => "batch-then-shuffle".into(),
        Sampler::Poisson => "poisson".into(),
    }
}

/// The markdown table of `summary.md`.
pub fn summary_markdown(r: &Report) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# BGM audit: {}\n", r.config);
    if !r.description.is_empty() {
        let _ = writeln!(md, "{}\n", r.description.trim());
    }
    let _ = writeln!(
        md,
        "Poisson ε: PLD, q = 1/T, T·E steps. Chua: lower bound for shuffle-then-batch (Chua et al.). \
         ε_emp: Clopper–Pearson lower bound, Worst-Case BGM (spec 000 §2.3, §2.7). \
         Simulated by the {} engine on {} ({} CPU threads). Randomness: {} (every draw follows from each \
         setting's seed).\n",
        r.engine, r.device, r.threads, r.randomness
    );
    let _ = writeln!(
        md,
        "| setting | sampler | dataset | σ | T | E | B | δ | Poisson ε | Chua LB | ε_emp (conf., selection) | k | runs/hyp. | wall s | sim. obs/s |"
    );
    let _ = writeln!(
        md,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for s in &r.settings {
        let chua = s
            .epsilon_shuffle_lower_chua
            .map_or_else(|| "n/a".to_string(), |c| format!("{c:.3}"));
        let lb = &s.lower_bound;
        let k = s
            .guess_search
            .as_ref()
            .map_or_else(|| "T".to_string(), |g| g.chosen_columns.to_string());
        let _ = writeln!(
            md,
            "| {} | {} | {:?} | {:.4} | {} | {} | {} | {:e} | {:.3} | {} | {:.3} ({:.0}%, {}{}) | {} | {} | {:.1} | {:.3e} |",
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
            lb.epsilon,
            lb.confidence * 100.0,
            lb.selection.name(),
            if lb.valid_at_confidence { "" } else { ", NOT valid" },
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

    fn parse(text: &str) -> Result<Experiment, toml::de::Error> {
        toml::from_str(text)
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
        let err = format!("{:#}", prepare(e.settings[0].clone()).err().unwrap());
        assert!(err.contains("buffer_size"), "{err}");
        assert!(
            err.contains("multiple of expected_batch_size = 10"),
            "{err}"
        );
        // K > n = T·B = 100.
        let e = parse(&SETTING.replace("buffer_size = 15", "buffer_size = 110")).unwrap();
        let err = format!("{:#}", prepare(e.settings[0].clone()).err().unwrap());
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
        let err = format!(
            "{:#}",
            prepare(parse(&both).unwrap().settings[0].clone())
                .err()
                .unwrap()
        );
        assert!(err.contains("exactly one"), "{err}");
        let none = SETTING.replace("noise_multiplier = 1.0", "");
        let err = format!(
            "{:#}",
            prepare(parse(&none).unwrap().settings[0].clone())
                .err()
                .unwrap()
        );
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
    }

    #[test]
    fn engine_flags_are_checked() {
        let e = Engine::from_flags("cpu", None, None, 0).unwrap();
        assert!(matches!(e, Engine::Rust { threads: 0 }));
        assert_eq!((e.name(), e.device_label().as_str()), ("rust", "cpu"));
        let e = Engine::from_flags("cpu", Some(EngineChoice::Tensor), Some(64), 0).unwrap();
        assert!(matches!(
            e,
            Engine::Tensor {
                device: tch::Device::Cpu,
                chunk_runs: Some(64)
            }
        ));
        let refused = |device, engine, chunk_runs| {
            format!(
                "{:#}",
                Engine::from_flags(device, engine, chunk_runs, 0).unwrap_err()
            )
        };
        assert!(refused("gpu", None, None).contains("expected `cpu` or `cuda`"));
        assert!(refused("cpu", Some(EngineChoice::Rust), Some(8)).contains("--chunk-runs"));
        assert!(refused("cpu", Some(EngineChoice::Tensor), Some(0)).contains("at least 1"));
        // Without a GPU: no CUDA device; with one: the Rust engine is CPU-only.
        assert!(refused("cuda", Some(EngineChoice::Rust), None).contains("cuda"));
    }

    #[test]
    fn tensor_engine_certifies_more_than_poisson_and_less_than_chua() {
        // The first setting of tests/cli_bgm.rs on the tensor engine: T = 100,
        // σ = 1, full shuffle, 2·10⁴ runs per hypothesis. Spec 000 §4/§7:
        // Poisson ε = 0.718, Chua lower bound 4.06; 2·10⁴ runs certify an
        // ε_emp between the two (the Rust engine's end-to-end test asserts the same).
        let text = SETTING
            .replace("steps = 10", "steps = 100")
            .replace("expected_batch_size = 10", "expected_batch_size = 1")
            .replace(
                "sampler = { partial_shuffle = { buffer_size = 15 } }",
                "sampler = \"shuffle\"",
            )
            .replace("runs = 1000", "runs = 20000");
        let p = prepare(parse(&text).unwrap().settings[0].clone()).unwrap();
        let engine = Engine::from_flags("cpu", Some(EngineChoice::Tensor), None, 0).unwrap();
        let r = audit(p, &engine).unwrap();
        let chua = r.epsilon_shuffle_lower_chua.unwrap();
        assert!((r.epsilon_poisson_pld - 0.718).abs() < 1e-2);
        assert!(
            r.lower_bound.epsilon > r.epsilon_poisson_pld && r.lower_bound.epsilon < chua,
            "ε_emp = {}, Poisson {}, Chua {chua}",
            r.lower_bound.epsilon,
            r.epsilon_poisson_pld
        );
        assert!(r.lower_bound.valid_at_confidence);
        assert!(r.simulation_seconds > 0.0 && r.simulation_seconds <= r.wall_seconds);
        assert!(
            (r.simulation_observations_per_second * r.simulation_seconds - 40_000.0).abs() < 1e-6
        );
    }

    #[test]
    fn tensor_engine_partial_shuffle_search_picks_the_first_batch_for_k_equal_b() {
        // The second setting of tests/cli_bgm.rs on the tensor engine: K = B,
        // so the target is always in batch 0 and the guess k = 1 wins; the
        // bound at k = 1 (a plain Gaussian, σ = 1) exceeds the Poisson ε.
        let text = SETTING
            .replace("steps = 10", "steps = 100")
            .replace("buffer_size = 15", "buffer_size = 10")
            .replace("runs = 1000", "runs = 20000\nguesses = [1, 100]");
        let p = prepare(parse(&text).unwrap().settings[0].clone()).unwrap();
        let engine = Engine::from_flags("cpu", Some(EngineChoice::Tensor), None, 0).unwrap();
        assert_eq!(engine.guess_first_chunk(), TENSOR_GUESS_FIRST_CHUNK);
        let r = audit(p, &engine).unwrap();
        let search = r.guess_search.as_ref().unwrap();
        assert_eq!(search.chosen_columns, 1, "{:?}", search.per_guess);
        assert!(
            r.lower_bound.epsilon > r.epsilon_poisson_pld,
            "ε_emp = {} vs Poisson {}",
            r.lower_bound.epsilon,
            r.epsilon_poisson_pld
        );
        // Selection runs (2 guesses × 5000 runs × 2) are counted with the evaluation runs.
        let simulated = r.simulation_observations_per_second * r.simulation_seconds;
        assert!((simulated - 60_000.0).abs() < 1e-6, "{simulated}");
    }

    #[test]
    fn calibrated_sigma_reaches_the_target_poisson_epsilon() {
        // Spec 000 §4: σ for ε = 1.0 at q = 0.01, 100 steps, δ = 1e-5 is 0.902 (PLD exact).
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
