//! `dpaudit train --config FILE.toml`: one DP-SGD run.
//!
//! Secure by default: batch sampling and noise are keyed by OS entropy that is
//! never written, so the checkpoint is private against whoever holds the
//! config. `--replayable` derives them from the seed instead (exact replay)
//! and says, everywhere it reports, that the model is then not private against
//! anyone who has the config.

use std::path::PathBuf;

use anyhow::Context;
use dpaudit_data::seed::{Mode, Randomness};
use dpaudit_store::OutDir;
use dpaudit_train::checkpoint;
use dpaudit_train::config::{DeviceChoice, TrainConfig};
use dpaudit_train::trainer::{self, Observer};
use dpaudit_train::StepReport;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

pub use dpaudit_cli::args::train::{Args, TrainDevice};

struct Bar(ProgressBar);

impl Observer for Bar {
    fn on_start(&mut self, total_steps: u64) {
        self.0.set_length(total_steps);
    }
    fn on_step(&mut self, r: &StepReport) {
        self.0.inc(1);
        if r.is_read_back() && r.samples > 0.0 {
            self.0.set_message(format!(
                "loss {:.4}  clipped {:.0}%",
                r.mean_loss(),
                100.0 * r.clipped_fraction
            ));
        }
    }
}

#[derive(Serialize)]
struct Output {
    mode: Mode,
    mode_meaning: &'static str,
    steps: u64,
    replicas: usize,
    train_records: usize,
    test_records: usize,
    data_source: String,
    synthetic_data: bool,
    test_accuracy: Vec<f64>,
    last_loss: f64,
    epsilon: Option<f64>,
    delta: f64,
    accounting: Option<String>,
    accounting_valid_for_sampler: Option<bool>,
    checkpoints: Vec<PathBuf>,
    seconds: f64,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.config)
        .with_context(|| format!("reading {}", args.config.display()))?;
    let mut config = TrainConfig::from_toml(&text, &args.config.display().to_string())?;
    if let Some(s) = args.seed {
        config.seed = s;
    }
    if let Some(s) = args.steps {
        config.steps = Some(s);
        config.epochs = None;
    }
    if let Some(r) = args.replicas {
        config.replicas = r;
    }
    if let Some(d) = args.device {
        config.device = match d {
            TrainDevice::Cpu => DeviceChoice::Cpu,
            TrainDevice::Cuda => DeviceChoice::Cuda,
        };
    }
    if let Some(v) = args.noise_multiplier {
        config.dp.noise_multiplier = v;
    }
    if let Some(v) = args.max_grad_norm {
        config.dp.max_grad_norm = v;
    }
    if let Some(v) = args.learning_rate {
        config.dp.learning_rate = v;
    }
    config
        .validate()
        .context("validating the config after flag overrides")?;
    let out_dir = args.out_dir.clone().unwrap_or_else(|| {
        let stem = args
            .config
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "train".into());
        PathBuf::from("runs").join(stem)
    });

    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} steps  {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mode = if args.replayable {
        Mode::Replayable
    } else {
        Mode::Secure
    };
    let randomness = Randomness::new(mode, config.seed)?;
    // Locked, and known to be writable, before anything is computed.
    let dir = OutDir::open(&out_dir, &std::env::args().collect::<Vec<_>>().join(" "))?;
    if let Some(stale) = dir.took_over() {
        eprintln!("note: took over {stale}");
    }
    let mut observer = Bar(bar);
    let start = std::time::Instant::now();
    let outcome = trainer::train(&config, &randomness, &mut observer).context("training")?;
    observer.0.finish_and_clear();
    let seconds = start.elapsed().as_secs_f64();
    let checkpoints = checkpoint::save(
        outcome.model.as_ref(),
        &out_dir.join("model.safetensors"),
        &outcome.checkpoint_meta(&config),
    )
    .context("writing the checkpoint")?;
    let out = Output {
        mode,
        mode_meaning: mode.describe(),
        steps: outcome.steps,
        replicas: config.replicas,
        train_records: outcome.train_records,
        test_records: outcome.test_records,
        data_source: outcome.data_source.clone(),
        synthetic_data: outcome.synthetic_data,
        test_accuracy: outcome.test_accuracy.clone(),
        last_loss: outcome.last_loss,
        epsilon: outcome.privacy.as_ref().map(|p| p.bound.epsilon),
        delta: config.delta,
        accounting: outcome.privacy.as_ref().map(|p| p.assumption.clone()),
        accounting_valid_for_sampler: outcome.privacy.as_ref().map(|p| p.valid_for_sampler),
        checkpoints,
        seconds,
    };
    let json = serde_json::to_string_pretty(&out)?;
    dir.write("result.json", json.as_bytes())?;
    if args.json {
        println!("{json}");
        return Ok(());
    }
    println!("randomness   : {}", out.mode_meaning);
    println!(
        "data         : {} ({} train / {} test records)",
        out.data_source, out.train_records, out.test_records
    );
    println!("steps        : {} in {:.1} s", out.steps, out.seconds);
    for (r, a) in out.test_accuracy.iter().enumerate() {
        println!("test accuracy: {:.4} (replica {r})", a);
    }
    match (&out.epsilon, &out.accounting) {
        (Some(e), Some(how)) => println!(
            "epsilon      : {e:.4} at delta = {} (PLD; {how})",
            out.delta
        ),
        _ => println!("epsilon      : infinite (noise_multiplier = 0: no privacy)"),
    }
    for c in &out.checkpoints {
        println!("checkpoint   : {}", c.display());
    }
    Ok(())
}
