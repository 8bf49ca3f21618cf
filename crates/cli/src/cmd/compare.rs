//! `dpaudit compare DIR... --out-dir D`: several finished audits side by
//! side, as a table (`compare.md`) and a bar plot of their ε lower bounds
//! against the largest accountant's ε (`compare.svg`). One experiment with
//! several `audit.scores` is already a comparison of threat models on the
//! same runs; this command puts different canaries (different trainings)
//! next to each other. It reads `audit.json` only, so it needs no libtorch.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;

use dpaudit_attacks::{ScoreKind, ThreatModel};
use dpaudit_audit::figures::plots::{epsilon_bars_svg, EpsilonBar};
use dpaudit_audit::method::{Method, SelectionChoice};
use dpaudit_store::error::read_text;
use dpaudit_store::outdir::write_atomic;
use dpaudit_store::StoreError;

/// Arguments of `dpaudit compare`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Finished out-dirs (each with `audit.json`).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Write `compare.md` and `compare.svg` here.
    #[arg(long)]
    pub out_dir: PathBuf,
}

/// What `compare` reads of a canary audit's `audit.json`: the fields of the
/// experiment's report (`dpaudit_experiment::audit_report::AuditReport`)
/// with the same names and types.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AuditSummary {
    /// Experiment name.
    pub name: String,
    /// Canary kind, insertion and schedule in words.
    pub canary: String,
    /// The accountant's ε for one canary.
    pub epsilon_upper: f64,
    /// δ of every bound.
    pub delta: f64,
    /// The lower bounds.
    pub lower_bounds: Vec<BoundSummary>,
}

/// One entry of [`AuditSummary::lower_bounds`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BoundSummary {
    /// The method, as labelled.
    pub method: Method,
    /// The score.
    pub score: ScoreKind,
    /// The threat model, in words.
    #[serde(with = "dpaudit_attacks::threat::words")]
    pub threat_model: ThreatModel,
    /// The ε lower bound.
    pub epsilon: f64,
    /// Its confidence.
    pub confidence: f64,
    /// Selection policy name.
    pub selection: SelectionChoice,
    /// False for `same_data`: not a valid bound at `confidence`.
    pub valid_at_confidence: bool,
}

impl AuditSummary {
    /// Reads `path` (an experiment's `audit.json`).
    pub fn read(path: &Path) -> Result<Self, StoreError> {
        let text = read_text(path)?;
        serde_json::from_str(&text).map_err(|e| StoreError::Inconsistent {
            path: path.to_path_buf(),
            reason: format!("not the audit.json of a `dpaudit run` experiment: {e}"),
        })
    }
}

/// `dpaudit compare`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let mut md = String::from(
        "# Comparison\n\n| experiment | canary | score | threat model | method | selection | ε lower bound | claimed ε | ratio |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut bars = Vec::new();
    let mut upper: Option<f64> = None;
    for d in &args.dirs {
        let p = d.join("audit.json");
        let report = AuditSummary::read(&p)?;
        let eps_up = report.epsilon_upper;
        upper = Some(upper.map_or(eps_up, |u: f64| u.max(eps_up)));
        let name = &report.name;
        for b in &report.lower_bounds {
            let eps = b.epsilon;
            md.push_str(&format!(
                "| {name} | {} | {} | {} | {} | {} | {eps:.4} | {eps_up:.4} | {:.3} |\n",
                report.canary,
                b.score.name(),
                b.threat_model.describe(),
                b.method.name(),
                b.selection.name(),
                eps / eps_up
            ));
            bars.push(EpsilonBar {
                label: format!("{name}: {} / {}", b.score.name(), b.method.name()),
                lower: eps,
                valid: b.valid_at_confidence,
            });
        }
    }
    std::fs::create_dir_all(&args.out_dir)
        .with_context(|| format!("creating {}", args.out_dir.display()))?;
    write_atomic(&args.out_dir.join("compare.md"), md.as_bytes())?;
    write_atomic(
        &args.out_dir.join("compare.svg"),
        epsilon_bars_svg("ε lower bounds by threat model / canary", &bars, upper).as_bytes(),
    )?;
    print!("{md}");
    Ok(())
}
