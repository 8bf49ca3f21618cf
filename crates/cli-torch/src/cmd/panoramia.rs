//! `dpaudit panoramia --config FILE.toml`: PANORAMIA end to end (Kazmi et
//! al. 2024) — train or load the target(s), train the generator, helper,
//! baseline and MIA, and write `audit.json`, `summary.md` and plots into the
//! out-dir. Kill it and run the same command again: finished stages are
//! kept. The pipeline is library code (`dpaudit_panoramia::run`); this
//! module only parses arguments and shows progress.

use std::path::Path;

use anyhow::Context;
use dpaudit_cli::args::panoramia::Args;
use dpaudit_panoramia::{run as run_pipeline, PanoramiaConfig, Progress};
use dpaudit_store::kind::{ExperimentFile, ExperimentKind};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::experiment::open;

struct Lines {
    bar: Option<ProgressBar>,
}

impl Progress for Lines {
    fn stage(&mut self, stage: &str, message: &str) {
        eprintln!("[{stage}] {message}");
    }
    fn epoch(&mut self, model: &str, epoch: u64, epochs: u64, metric: &str, value: f64) {
        eprintln!("  {model}: epoch {epoch}/{epochs}, {metric} {value:.4}");
    }
    fn target_start(&mut self, name: &str, steps: u64) {
        let bar = ProgressBar::with_draw_target(Some(steps), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("  target {msg} {bar:30} {pos}/{len} steps ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_message(name.to_string());
        self.bar = Some(bar);
    }
    fn target_step(&mut self) {
        if let Some(b) = &self.bar {
            b.inc(1);
            if b.position() == b.length().unwrap_or(0) {
                b.finish();
            }
        }
    }
}

/// `dpaudit panoramia`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let (file, out) = open(&args.file, ExperimentKind::Panoramia, "runs/panoramia")?;
    run_file(&file, &out, args.json)
}

/// A `kind = "panoramia"` experiment file into the out-dir `out`.
pub fn run_file(file: &ExperimentFile, out: &Path, json: bool) -> anyhow::Result<()> {
    let label = file.path.display().to_string();
    let config = PanoramiaConfig::from_toml(&file.text, &label)?;
    let start = std::time::Instant::now();
    let report = run_pipeline(&config, &label, out, &mut Lines { bar: None })
        .with_context(|| format!("PANORAMIA audit of {label}"))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    let summary = std::fs::read_to_string(out.join("summary.md"))
        .with_context(|| format!("reading {}", out.join("summary.md").display()))?;
    println!("{summary}");
    println!(
        "out-dir {} (audit.json, summary.md, plots/), {:.0} s",
        out.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
