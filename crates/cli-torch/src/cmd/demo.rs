//! `dpaudit demo`: the README's main job.
//!
//! It runs, on the embedded default data, everything that exists end to end:
//! the runtime, the default dataset (real Fashion-MNIST when the Debian package
//! is installed, a labelled synthetic stand-in otherwise), the accountants'
//! ε upper bounds for a DP-SGD configuration, and an audit of that same
//! mechanism in the Worst-Case threat model (the Batched Gaussian Mechanism of
//! Annamalai et al. 2024 §4, Algorithm 4): ε lower bounds from simulated runs, once with Poisson
//! batches (as accounted) and once with shuffled batches accounted as Poisson
//! (Annamalai et al.'s finding), beside the Chua et al. lower bound for shuffling.
//! Before the audit it trains LeNet-5 with exactly that mechanism (100 Poisson
//! steps at q = 0.01, σ = 1) on the default data, so the ε being audited is the
//! ε of a real model whose test accuracy is printed.
//! Then a canary audit of real DP-SGD training: an MLP
//! trained `--canary-runs` times on the same data with a Dirac gradient
//! canary inserted at every step of 10 fixed batches in half of the runs,
//! scored in the hidden-state threat model (final model only), with ε lower
//! bounds beside the accountant's ε (Cebere et al. 2024 App. C, Algorithm 2, App. D, Algorithm 4).

use anyhow::Context;
use dpaudit_accounting::{dpsgd_epsilon, shuffle_lower_bound, Accountant};
use dpaudit_attacks::{BgmConfig, BgmDataset};
use dpaudit_audit::bound::EpsilonLowerBound;
use dpaudit_audit::observations::Selection;
use dpaudit_audit::region::RegionConfig;
use dpaudit_cli::args::demo::Args;
use dpaudit_data::dataset::DatasetKind;
use dpaudit_data::sampler::GameSampler;
use dpaudit_data::seed::{Mode, Randomness};
use dpaudit_experiment::bgm::audit::{simulate_and_bound, SimulationClock};
use dpaudit_experiment::bgm::engine::CpuBgmEngine;
use dpaudit_train::config::TrainConfig;
use dpaudit_train::runtime::RuntimeInfo;
use dpaudit_train::trainer::{train, Silent};
use serde::Serialize;

/// The demo's canary audit: MLP 784→32→2, a Dirac canary at a random
/// coordinate inserted at all 10 steps of fixed public batches of 20 in half of
/// the runs; claimed ε = composition of 10 Gaussian mechanisms at σ = 2.
const CANARY_CONFIG: &str = include_str!("demo-canary.toml");

/// The demo's training run: LeNet-5 on Fashion-MNIST T-shirt/top vs Trouser
/// with the audited mechanism (100 Poisson steps, q = 0.01, σ = 1, δ = 1e-5).
const TRAIN_CONFIG: &str = include_str!("demo-train.toml");

/// The audited DP-SGD configuration: one epoch of T Poisson batches at rate
/// q = 1/T with noise multiplier σ, the BGM setting of Annamalai et al. 2024 §6.2.1
/// (T = 100, σ = 1.0), where shuffling leaks clearly more than its Poisson ε.
pub(crate) const STEPS: usize = 100;
pub(crate) const NOISE_MULTIPLIER: f64 = 1.0;
pub(crate) const DELTA: f64 = 1e-5;
const CONFIDENCE: f64 = 0.95;
/// Batch size B of the BGM (n = T·B records); only the shuffle layout uses it.
const BATCH_SIZE: usize = 10;

#[derive(Debug, Serialize)]
struct DemoReport {
    runtime: RuntimeInfo,
    /// Every draw of the demo follows from its seed (audits replay).
    randomness: Mode,
    randomness_meaning: &'static str,
    data: DataSummary,
    mechanism: Mechanism,
    epsilon_upper_pld: f64,
    epsilon_upper_rdp: f64,
    shuffle_epsilon_lower_chua: f64,
    training: Option<TrainingSummary>,
    audits: Vec<AuditRow>,
    canary_audit: Option<CanaryAudit>,
}

#[derive(Debug, Serialize)]
struct CanaryAudit {
    runs: u64,
    canary: String,
    epsilon_upper: f64,
    upper_assumption: String,
    test_accuracy_mean: f64,
    lower_bounds: Vec<dpaudit_experiment::canary::audit_report::LowerBoundEntry>,
    seconds: f64,
}

#[derive(Debug, Serialize)]
struct TrainingSummary {
    model: &'static str,
    steps: u64,
    test_accuracy: f64,
    epsilon_upper: Option<f64>,
    seconds: f64,
}

#[derive(Debug, Serialize)]
struct DataSummary {
    dataset: &'static str,
    classes: Vec<String>,
    train_count: usize,
    test_count: usize,
    source: String,
    synthetic: bool,
}

#[derive(Debug, Serialize)]
struct Mechanism {
    steps: usize,
    sample_rate: f64,
    noise_multiplier: f64,
    delta: f64,
    runs_per_hypothesis: usize,
}

#[derive(Debug, Serialize)]
struct AuditRow {
    sampler: &'static str,
    accounted_as: &'static str,
    epsilon_upper: f64,
    lower_bound: EpsilonLowerBound,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.runs >= 100,
        "--runs must be at least 100, got {}",
        args.runs
    );
    let runtime = RuntimeInfo::probe();
    let data = data_summary(args.seed)?;
    let sample_rate = 1.0 / STEPS as f64;
    let pld = dpsgd_epsilon(
        sample_rate,
        NOISE_MULTIPLIER,
        STEPS as u64,
        DELTA,
        Accountant::Pld,
    )?;
    let rdp = dpsgd_epsilon(
        sample_rate,
        NOISE_MULTIPLIER,
        STEPS as u64,
        DELTA,
        Accountant::Rdp,
    )?;
    let chua = shuffle_lower_bound(NOISE_MULTIPLIER, STEPS as u64, 1, DELTA)?;
    let training = if args.no_train {
        None
    } else {
        Some(train_lenet(args.seed)?)
    };

    let mut audits = Vec::new();
    for (sampler, dataset, name) in [
        (
            GameSampler::new("poisson"),
            BgmDataset::PoissonWorstCase,
            "poisson",
        ),
        (
            GameSampler::new("shuffle"),
            BgmDataset::ShuffleWorstCase,
            "shuffle",
        ),
    ] {
        let lower_bound = bgm_audit(sampler, dataset, args.runs, args.seed, CONFIDENCE)
            .with_context(|| format!("auditing the {name} sampler"))?;
        audits.push(AuditRow {
            sampler: name,
            accounted_as: "poisson",
            epsilon_upper: pld.epsilon,
            lower_bound,
        });
    }
    let canary_audit = if args.canary_runs == 0 {
        None
    } else {
        Some(canary_audit(args.canary_runs, args.seed, args.json)?)
    };
    let report = DemoReport {
        runtime,
        randomness: Mode::Replayable,
        randomness_meaning: Mode::Replayable.describe(),
        data,
        mechanism: Mechanism {
            steps: STEPS,
            sample_rate,
            noise_multiplier: NOISE_MULTIPLIER,
            delta: DELTA,
            runs_per_hypothesis: args.runs,
        },
        epsilon_upper_pld: pld.epsilon,
        epsilon_upper_rdp: rdp.epsilon,
        shuffle_epsilon_lower_chua: chua.epsilon,
        training,
        audits,
        canary_audit,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_text(&report);
    }
    Ok(())
}

/// Train LeNet-5 with the audited mechanism on the default data.
fn train_lenet(seed: u64) -> anyhow::Result<TrainingSummary> {
    let mut config = TrainConfig::from_toml(TRAIN_CONFIG, "the demo's training config")?;
    config.seed = seed;
    let start = std::time::Instant::now();
    let outcome = train(&config, &Randomness::replayable(seed), &mut Silent)
        .context("training LeNet-5 for the demo")?;
    Ok(TrainingSummary {
        model: "LeNet-5",
        steps: outcome.steps,
        test_accuracy: outcome.test_accuracy.first().copied().unwrap_or(f64::NAN),
        epsilon_upper: outcome.privacy.map(|p| p.bound.epsilon),
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// The canary audit of real training (see [`CANARY_CONFIG`]).
fn canary_audit(runs: u64, seed: u64, quiet: bool) -> anyhow::Result<CanaryAudit> {
    anyhow::ensure!(
        runs >= 20,
        "--canary-runs must be 0 or at least 20, got {runs}"
    );
    let mut config = dpaudit_experiment::canary::settings::ExperimentConfig::from_toml(
        CANARY_CONFIG,
        "the demo's canary audit",
    )?;
    config.runs = runs;
    config.train.seed = seed;
    config.train.replicas = runs.min(500) as usize;
    let start = std::time::Instant::now();
    let report =
        super::run::run_in_memory(&config, None, quiet).context("the demo's canary audit")?;
    Ok(CanaryAudit {
        runs,
        canary: report.canary,
        epsilon_upper: report.epsilon_upper,
        upper_assumption: report.upper_assumption,
        test_accuracy_mean: report.test_accuracy_mean,
        lower_bounds: report.lower_bounds,
        seconds: start.elapsed().as_secs_f64(),
    })
}

fn data_summary(seed: u64) -> anyhow::Result<DataSummary> {
    // The shuffling paper's Fashion-MNIST task: T-shirt/top (0) vs Trouser (1).
    let classes = [0_i64, 1];
    let splits = dpaudit_data::load(DatasetKind::Fmnist, None, seed)
        .context("loading the default Fashion-MNIST data")?
        .select_classes(&classes)?;
    let source = splits.source();
    Ok(DataSummary {
        dataset: DatasetKind::Fmnist.name(),
        classes: splits.train.class_names().to_vec(),
        train_count: splits.train.len(),
        test_count: splits.test.len(),
        source: source.label(),
        synthetic: source.is_synthetic(),
    })
}

/// Worst-Case audit (Annamalai et al. 2024 §5.1) of one epoch of `STEPS` batches: simulate the
/// BGM under both hypotheses, score each run with the likelihood ratio that is
/// exact for its dataset pair, and bound ε at 95 % (the (ε, δ) region tested by
/// the rank test), choosing the threshold on one half of the runs and bounding
/// on the other.
pub(crate) fn bgm_audit(
    sampler: GameSampler,
    dataset: BgmDataset,
    runs: usize,
    seed: u64,
    confidence: f64,
) -> anyhow::Result<EpsilonLowerBound> {
    let config = BgmConfig {
        steps: STEPS,
        expected_batch_size: BATCH_SIZE,
        epochs: 1,
        noise_multiplier: NOISE_MULTIPLIER,
        sampler,
        dataset,
        score: dataset.matched_likelihood_ratio(BATCH_SIZE, STEPS),
        score_columns: STEPS,
        seed,
    };
    let region = RegionConfig {
        confidence,
        delta: DELTA,
        selection: Selection::Split { seed },
    };
    let mut clock = SimulationClock::default();
    Ok(simulate_and_bound(
        &CpuBgmEngine { threads: 0 },
        &config,
        0,
        runs,
        &region,
        &mut clock,
    )?)
}

fn print_text(r: &DemoReport) {
    let rt = &r.runtime;
    println!("dpaudit demo");
    println!(
        "runtime   libtorch {} | CUDA {} | device {} | {} threads",
        rt.libtorch_version,
        if rt.cuda_available { "yes" } else { "no" },
        rt.device_name.as_deref().unwrap_or("cpu"),
        rt.num_threads
    );
    println!("random    {}", r.randomness_meaning);
    let d = &r.data;
    println!(
        "data      {} {} : {} train / {} test records, source: {}{}",
        d.dataset,
        d.classes.join(" vs "),
        d.train_count,
        d.test_count,
        d.source,
        if d.synthetic {
            "  (SYNTHETIC stand-in: install dataset-fashion-mnist for the real data)"
        } else {
            ""
        }
    );
    let m = &r.mechanism;
    println!(
        "mechanism DP-SGD, {} steps, sample rate q = {}, noise multiplier σ = {}, δ = {:e}",
        m.steps, m.sample_rate, m.noise_multiplier, m.delta
    );
    if let Some(t) = &r.training {
        println!(
            "train     {} with this mechanism: test accuracy {:.4} after {} steps ({:.1} s), accountant ε ≤ {}",
            t.model,
            t.test_accuracy,
            t.steps,
            t.seconds,
            t.epsilon_upper.map_or("n/a".to_string(), |e| format!("{e:.4}"))
        );
    }
    println!(
        "upper     ε ≤ {:.4} (PLD)   ε ≤ {:.4} (RDP)",
        r.epsilon_upper_pld, r.epsilon_upper_rdp
    );
    println!(
        "audit     Worst-Case threat model (BGM, Annamalai et al. 2024 §4, Algorithm 4), {} simulated runs per hypothesis, \
         rank test at {:.0}%",
        m.runs_per_hypothesis,
        CONFIDENCE * 100.0
    );
    for a in &r.audits {
        let lb = &a.lower_bound;
        let verdict = if lb.epsilon > a.epsilon_upper {
            "LEAKS MORE THAN ACCOUNTED"
        } else {
            "consistent with the accountant"
        };
        println!(
            "  {:<8} batches, accounted as {}: ε_lb = {:.4}  vs  ε_ub = {:.4}  → {verdict}",
            a.sampler, a.accounted_as, lb.epsilon, a.epsilon_upper
        );
        println!("           selection: {}", lb.selection);
    }
    println!(
        "shuffle   Chua et al. lower bound for shuffled batches: ε ≥ {:.4} (Poisson accounting says {:.4})",
        r.shuffle_epsilon_lower_chua, r.epsilon_upper_pld
    );
    if let Some(c) = &r.canary_audit {
        println!(
            "canary    real DP-SGD, {} trained MLPs ({:.1} s, mean test accuracy {:.4}): {}",
            c.runs, c.seconds, c.test_accuracy_mean, c.canary
        );
        println!(
            "          claimed ε ≤ {:.4} ({})",
            c.epsilon_upper, c.upper_assumption
        );
        for b in &c.lower_bounds {
            println!(
                "          hidden state, {} score, {}: ε_lb = {:.4} ({} confidence, {} selection){}",
                b.score,
                b.method,
                b.epsilon,
                b.confidence,
                b.selection,
                if b.exceeds_upper { "  ABOVE THE CLAIMED ε" } else { "" }
            );
        }
    }
}
