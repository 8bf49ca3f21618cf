//! Stage "report": `audit.json` and the precision–recall plots
//! (`plots/pr-<target>.svg`), then `summary.md` ([`super::summary`]).

use dpaudit_audit::panoramia::EpsilonTilde;

use super::artifacts::{AuditReport, Ordering, Quality, TargetResult, FORMAT};
use super::context::Run;
use super::data::Data;
use super::game::Game;
use super::helper::Labels;
use super::summary::summary;
use crate::classifier::FitReport;
use crate::config::GeneratorConfig;
use crate::error::Result;
use crate::figures::{self, PrPoint, PrSeries};
use crate::filter::FilterReport;
use crate::nn::write_atomic;

/// What the stages hand to the report.
pub(super) struct Parts<'a> {
    pub data: &'a Data,
    pub generator: String,
    pub quality: Quality,
    pub filter: Option<FilterReport>,
    pub labels: Labels,
    pub baseline_fit: FitReport,
    pub targets: Vec<TargetResult>,
}

/// The report of the run.
pub(super) fn assemble(run: &Run<'_>, game: &Game, parts: Parts<'_>) -> AuditReport {
    let (config, data, results) = (run.config, parts.data, parts.targets);
    let selection = config.threshold_selection();
    let audit_members = game.coins.iter().filter(|&&b| b).count();
    let (c_lb, c_lb_sd) = results.first().map_or((0.0, 0.0), |r| (r.c_lb, r.c_lb_sd));
    let ordering = Ordering::of(&results);
    let c_lb_ceiling = results
        .first()
        .and_then(|t| t.measurement.get("baseline")?.get("ceiling")?.as_f64());
    AuditReport {
        format: FORMAT.into(),
        mode: run.rnd.mode(),
        mode_meaning: run.rnd.mode().describe().into(),
        epsilon_tilde_meaning: EpsilonTilde::MEANING.into(),
        fingerprint: run.fp.to_string(),
        data_source: data.source.clone(),
        synthetic_data: data.synthetic,
        target_training_records: data.d_f.len(),
        split: config.split.clone(),
        audit_members,
        confidence: config.confidence,
        selection: selection.name().to_string(),
        selection_valid: selection.is_valid(),
        generator: parts.generator,
        quality: parts.quality,
        filter: parts.filter,
        generator_label_agreement: parts.labels.agreement,
        generated_labels: match (&config.generator, config.generator.labels_from_generator()) {
            (GeneratorConfig::RealHoldout, _) => "their true labels (real held-out records)",
            (_, true) => "the class the conditional generator drew each record for",
            (_, false) => "the labeler's predictions",
        }
        .to_string(),
        labeler_accuracy: parts.labels.labeler_accuracy,
        baseline_fit: parts.baseline_fit,
        classifier_seeds: config.classifier.seeds,
        mia_losses: config.classifier.mia_losses.describe().to_string(),
        c_lb,
        c_lb_sd,
        reference: config.reference.describe(),
        reference_valid: config.reference.is_valid(),
        ordering,
        c_lb_ceiling,
        targets: results,
    }
}

/// `audit.json`, `plots/pr-<target>.svg` and `summary.md`.
pub(super) fn write(
    run: &Run<'_>,
    report: &AuditReport,
    baseline_scores: &[f64],
    s: &[bool],
) -> Result<()> {
    run.store.out_dir().write_json("audit.json", report)?;
    let plots = run.out.join("plots");
    let baseline_pr = figures::precision_recall(baseline_scores, s);
    for r in &report.targets {
        let svg = pr_svg(r, &baseline_pr, s, report.audit_members);
        write_atomic(&plots.join(format!("pr-{}.svg", r.name)), svg.as_bytes())?;
    }
    write_atomic(&run.out.join("summary.md"), summary(report).as_bytes())
}

/// The precision–recall plot of the baseline and one target's MIA, with
/// the points that give `c_lb` and `{c+ε}_lb`.
fn pr_svg(r: &TargetResult, baseline_pr: &[PrPoint], s: &[bool], audit_members: usize) -> String {
    let m = s.len();
    let mia_pr = figures::precision_recall(&r.mia_scores, s);
    // The curves are seed 0's (every seed's numbers are in summary.md).
    let first = r
        .per_seed
        .first()
        .map_or((r.c_lb, r.c_plus_epsilon_lb), |p| {
            (p.c_lb, p.c_plus_epsilon_lb)
        });
    let seed = if r.per_seed.len() > 1 { ", seed 0" } else { "" };
    let ev = |side: &str| -> Option<(PrPoint, String)> {
        let v = r.measurement.get(side)?;
        let count = |k: &str| v.get(k).and_then(|x| x.as_u64());
        let (tp, r_, members) = (
            count("true_positives")?,
            count("predictions")?,
            count("members")?,
        );
        let bound = v.get("lower_bound").and_then(|x| x.as_f64())?;
        figures::marked_point(tp, r_, members).map(|p| (p, format!("{bound:.3}")))
    };
    figures::pr_svg(
        &format!(
            "PANORAMIA, target {}: precision–recall on the audit set (m = {m})",
            r.name
        ),
        &[
            PrSeries {
                label: format!("baseline b (x, loss of h){seed}: c_lb = {:.3}", first.0),
                color: "#1f77b4",
                points: baseline_pr,
                mark: ev("baseline").map(|(p, v)| (p, format!("c_lb {v}"))),
            },
            PrSeries {
                label: format!("MIA (x, loss of f){seed}: {{c+ε}}_lb = {:.3}", first.1),
                color: "#d62728",
                points: &mia_pr,
                mark: ev("mia").map(|(p, v)| (p, format!("{{c+ε}}_lb {v}"))),
            },
        ],
        1.0 / audit_members.max(1) as f64,
    )
}
