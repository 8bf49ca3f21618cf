//! `dpaudit merge --out-dir D SHARD...`: the out-dirs of `--shard` runs
//! combined into one finished audit, by the kind their manifest says
//! ([`dpaudit_store::kind::out_dir_kind`]). Merging reads the verified units
//! and finalizes the audit (`dpaudit_plan`), which needs no libtorch: a BGM
//! out-dir's engine is only named in its `config.json`, nothing is simulated.

use std::path::{Path, PathBuf};

use dpaudit_plan::bgm::audit::{summary_markdown, throughput_line, BgmReport};
use dpaudit_plan::bgm::runner::merge_bgm;
use dpaudit_plan::canary::audit_report::AuditReport;
use dpaudit_store::kind::{out_dir_kind, ExperimentKind};

use crate::args::merge::Args;

/// `dpaudit merge`: the merge of the first shard's kind (each kind refuses
/// shards of another experiment).
pub fn run(args: Args) -> anyhow::Result<()> {
    let kind = args
        .shards
        .first()
        .map_or(ExperimentKind::Canary, |d| out_dir_kind(d));
    match kind {
        ExperimentKind::Canary => merge_canary(&args.out_dir, &args.shards),
        ExperimentKind::Bgm => merge_bgm_dirs(&args.out_dir, &args.shards),
        ExperimentKind::Panoramia => Err(anyhow::anyhow!(
            "{}: a PANORAMIA out-dir; PANORAMIA audits run in one process (their stages resume), there are no \
             shards to merge",
            args.shards
                .first()
                .map_or_else(String::new, |d| d.display().to_string())
        )),
    }
}

/// The command line, for the out-dir's lock.
pub fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

/// `dpaudit merge` of canary shard out-dirs.
pub fn merge_canary(out_dir: &Path, shards: &[PathBuf]) -> anyhow::Result<()> {
    let merged = dpaudit_plan::canary::outdir::merge(out_dir, shards, &command_line())?;
    println!(
        "merged {} chunk(s) into {}",
        merged.copied,
        out_dir.display()
    );
    print_canary_report(&merged.report);
    Ok(())
}

/// `dpaudit merge` of BGM shard out-dirs.
pub fn merge_bgm_dirs(out_dir: &Path, shards: &[PathBuf]) -> anyhow::Result<()> {
    let merged = merge_bgm(out_dir, shards, &command_line())?;
    eprintln!(
        "merged {} chunk(s) into {}",
        merged.copied,
        out_dir.display()
    );
    print_bgm_report(&merged.report, false, out_dir)
}

/// A BGM audit's report on stdout (`dpaudit bgm`, `dpaudit run` of a BGM
/// file and `dpaudit merge`): the summary and each setting's throughput, or
/// with `json` the report itself.
pub fn print_bgm_report(report: &BgmReport, json: bool, out_dir: &Path) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
        return Ok(());
    }
    print!("{}", summary_markdown(report));
    println!();
    for s in &report.settings {
        println!("{}: {}", s.name, throughput_line(s, report));
    }
    println!(
        "\nwritten: {}/audit.json, {}/summary.md",
        out_dir.display(),
        out_dir.display()
    );
    Ok(())
}

/// A canary audit's report on stdout (`dpaudit run` and `dpaudit merge`).
pub fn print_canary_report(report: &AuditReport) {
    println!("randomness: {}", report.randomness_meaning);
    println!("data: {}", report.data.source);
    println!(
        "claimed ε = {:.4} (δ = {:e}; {})",
        report.epsilon_upper, report.delta, report.upper_assumption
    );
    for b in &report.lower_bounds {
        println!(
            "  {:<16} {:<10} ε_lb = {:.4}  ({} confidence, {} selection{}){}",
            b.score,
            b.method,
            b.epsilon,
            b.confidence,
            b.selection,
            if b.valid_at_confidence {
                ""
            } else {
                ", NOT valid"
            },
            if b.exceeds_upper {
                "  ABOVE THE CLAIMED ε"
            } else {
                ""
            }
        );
    }
    for n in &report.notes {
        println!("  note: {n}");
    }
}
