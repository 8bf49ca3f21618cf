//! `dpaudit run FILE.toml --out-dir DIR`: an experiment end to end, by the
//! file's `kind` ([`dpaudit_store::kind`]): a canary audit (here), a BGM
//! audit ([`super::bgm`]) or PANORAMIA ([`super::panoramia`]). The
//! experiment, its out-dir and its statistics are library code
//! (`dpaudit_experiment`); this module parses, draws progress and prints.

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use dpaudit_cli::args::run::Args;
use dpaudit_cli::cmd::merge::print_canary_report;
use dpaudit_experiment::canary::audit_report::AuditReport;
use dpaudit_experiment::canary::chunk::Prepared;
use dpaudit_experiment::canary::runner::{check_results_memory, holder_of};
use dpaudit_experiment::canary::settings::ExperimentConfig;
use dpaudit_experiment::{ExperimentDir, Finalized};
use dpaudit_store::kind::{ExperimentFile, ExperimentKind};
use dpaudit_store::{OutDir, Shard};
use dpaudit_train::engine::Fault;
use dpaudit_train::trainer::Observer;
use dpaudit_train::StepReport;

use super::experiment::command_line;

struct Bar {
    bar: ProgressBar,
    chunk: String,
}

impl Observer for Bar {
    fn on_step(&mut self, r: &StepReport) {
        self.bar.inc(1);
        if r.is_read_back() && r.samples > 0.0 {
            self.bar
                .set_message(format!("{}  loss {:.4}", self.chunk, r.mean_loss()));
        }
    }
}

fn progress(quiet: bool, steps: u64) -> ProgressBar {
    let bar = if quiet {
        ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden())
    } else {
        ProgressBar::new(steps)
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} steps  ETA {eta}  {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// `dpaudit run`: the runner of the file's kind.
pub fn run(args: Args) -> anyhow::Result<()> {
    let file = ExperimentFile::read(&args.config)?;
    let given = args.sim.given();
    match file.kind {
        ExperimentKind::Canary => {
            anyhow::ensure!(
                given.is_empty() && !args.sim.json,
                "{}: {} appl{} to `kind = \"bgm\"` (and --json to `\"panoramia\"`) experiments; a canary \
                 audit trains on `train.device` of its file",
                args.config.display(),
                if given.is_empty() { "--json".to_string() } else { given.join(", ") },
                if given.len() > 1 { "y" } else { "ies" },
            );
            run_canary(&file, &args)
        }
        ExperimentKind::Bgm => {
            super::bgm::run_file(&file, &args.out_dir, args.shard.as_deref(), &args.sim)
        }
        ExperimentKind::Panoramia => {
            anyhow::ensure!(
                args.shard.is_none() && given.is_empty(),
                "{}: `kind = \"panoramia\"` takes neither --shard (its stages resume in one out-dir) nor {}",
                args.config.display(),
                ["--threads", "--device", "--engine", "--chunk-runs"].join(", ")
            );
            super::panoramia::run_file(&file, &args.out_dir, args.sim.json)
        }
    }
}

/// A `kind = "canary"` experiment file.
fn run_canary(file: &ExperimentFile, args: &Args) -> anyhow::Result<()> {
    let config = ExperimentConfig::from_toml(&file.text, &file.path.display().to_string())
        .with_context(|| format!("loading {}", args.config.display()))?;
    let shard = match &args.shard {
        Some(s) => Shard::parse(s, |k| std::env::var(k).ok())?,
        None => Shard::ALL,
    };
    // Results that cannot fit in memory are refused before the out-dir is touched.
    check_results_memory(&config, holder_of(shard))
        .with_context(|| format!("checking {}", args.config.display()))?;
    // The out-dir is locked (and known to be writable) before anything is computed.
    let out = OutDir::open(&args.out_dir, &command_line())?;
    if let Some(stale) = out.took_over() {
        eprintln!("note: took over {stale}");
    }
    let prepared = Prepared::new(&config, None)
        .with_context(|| format!("preparing {}", args.config.display()))?;
    let dir = ExperimentDir::claim(out, &prepared, shard)?;
    let plan = dir.plan()?;
    for (c, why) in &plan.damaged {
        eprintln!("chunk {c} is damaged ({why}): set aside as .damaged, retraining it");
    }
    if !plan.done.is_empty() && !args.quiet {
        eprintln!(
            "resuming: {} chunk(s) already on disk, {} to train",
            plan.done.len(),
            plan.todo.len()
        );
    }
    let start = std::time::Instant::now();
    let bar = progress(args.quiet, plan.todo.len() as u64 * config.steps());
    let mut trained = 0;
    for (i, &c) in plan.todo.iter().enumerate() {
        let mut obs = Bar {
            bar: bar.clone(),
            chunk: format!("chunk {}/{} (#{c})", i + 1, plan.todo.len()),
        };
        trained += dir
            .train_chunk(c, &mut obs)
            .with_context(|| format!("training chunk {c}"))?;
    }
    bar.finish_and_clear();
    let train_seconds = start.elapsed().as_secs_f64();
    if trained > 0 {
        println!(
            "trained {trained} runs (one observation each) in {train_seconds:.1} s: {:.2} runs/s on {:?}",
            trained as f64 / train_seconds,
            prepared.device
        );
    }
    match dir.finalize()? {
        Finalized::Complete(report) => {
            print_canary_report(&report);
            println!(
                "wrote {} (audit.json, summary.md, scores.csv, plots/) in {:.1} s",
                args.out_dir.display(),
                start.elapsed().as_secs_f64()
            );
        }
        Finalized::Incomplete(missing) => println!(
            "shard {shard} done in {:.1} s; {} chunk(s) belong to other shards — combine the out-dirs with `dpaudit merge`",
            start.elapsed().as_secs_f64(),
            missing.len()
        ),
    }
    Ok(())
}

/// Run an experiment in memory (no files): for `selftest` and `demo`.
pub fn run_in_memory(
    config: &ExperimentConfig,
    fault: Option<Fault>,
    quiet: bool,
) -> anyhow::Result<AuditReport> {
    let bar = progress(quiet, config.chunks() * config.steps());
    let mut obs = Bar {
        bar: bar.clone(),
        chunk: String::new(),
    };
    let report = dpaudit_experiment::run_in_memory(config, fault, &mut obs)?;
    bar.finish_and_clear();
    Ok(report)
}
