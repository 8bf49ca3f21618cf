//! Stage "report": `audit.json` and the precision–recall plots
//! (`plots/pr-<target>.svg`), then `summary.md` ([`super::summary`]).

use dpaudit_audit::panoramia::EpsilonTilde;
use serde::{Deserialize, Serialize};

use super::data::Data;
use super::game::Game;
use super::helper::Labels;
use super::quality::Quality;
use super::summary::summary;
use super::{Run, FORMAT};
use crate::classifier::FitReport;
use crate::config::GeneratorConfig;
use crate::error::Result;
use crate::figures::{self, PrPoint, PrSeries};
use crate::filter::FilterReport;
use crate::nn::write_atomic;
use dpaudit_data::seed::Mode;

/// Everything measured for one target.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TargetResult {
    /// The target's name.
    pub name: String,
    /// `trained here` or the checkpoint path.
    pub source: String,
    /// The architecture.
    pub model: String,
    /// Secure or replayable, from the target's own training.
    pub target_mode: String,
    /// DP-SGD noise multiplier (0: not private).
    pub noise_multiplier: f64,
    /// The ε it was calibrated to, if any.
    pub requested_epsilon: Option<f64>,
    /// The accountant's ε at `delta` (None: no DP).
    pub accountant_epsilon: Option<f64>,
    /// δ of the accountant's ε.
    pub delta: f64,
    /// What the accountant assumed.
    pub accounting: Option<String>,
    /// Accuracy on its training records.
    pub train_accuracy: f64,
    /// Accuracy on the test split.
    pub test_accuracy: f64,
    /// The MIA's training report.
    pub mia_fit: FitReport,
    /// MIA scores on the audit set.
    pub mia_scores: Vec<f64>,
    /// `c_lb`, `{c+ε}_lb`, ε̃ and their evidence.
    pub measurement: serde_json::Value,
    /// ε̃.
    pub epsilon_tilde: f64,
    /// `c_lb`.
    pub c_lb: f64,
    /// `{c+ε}_lb`.
    pub c_plus_epsilon_lb: f64,
    /// The one-run audit on real members vs real non-members (δ = 0).
    pub o1: serde_json::Value,
    /// Its ε lower bound.
    pub o1_epsilon: f64,
    /// Audit pairs of the one-run audit.
    pub o1_pairs: usize,
    /// Fingerprint of the config it belongs to.
    pub fingerprint: String,
}

/// The report of a whole run (`audit.json`).
#[derive(Debug, Clone, Serialize)]
pub struct AuditReport {
    /// [`FORMAT`].
    pub format: String,
    /// The pipeline's randomness mode.
    pub mode: Mode,
    /// What the mode means.
    pub mode_meaning: String,
    /// What ε̃ means.
    pub epsilon_tilde_meaning: String,
    /// The config's fingerprint.
    pub fingerprint: String,
    /// Where the data came from.
    pub data_source: String,
    /// Whether the data is the synthetic stand-in.
    pub synthetic_data: bool,
    /// Records in `D_f` (the target's training set).
    pub target_training_records: usize,
    /// Sizes used.
    pub split: crate::config::SplitConfig,
    /// Members among the `m` audit points (coins that came up 1).
    pub audit_members: usize,
    /// Overall confidence; each test at `(1 − confidence)/2`.
    pub confidence: f64,
    /// Threshold selection.
    pub selection: String,
    /// Whether the selection makes the two bounds valid at `confidence`.
    pub selection_valid: bool,
    /// The generator in words.
    pub generator: String,
    /// The real-vs-generated check.
    pub quality: Quality,
    /// The real-vs-generated filter: its training and, per pool, the
    /// candidates drawn and kept (None: no filter).
    pub filter: Option<FilterReport>,
    /// Share of generated records (helper, classifier and audit pools) the labeler
    /// gives the class the conditional generator drew them for (None: the
    /// generator draws no classes).
    pub generator_label_agreement: Option<f64>,
    /// Where the generated records' labels come from.
    pub generated_labels: String,
    /// Accuracy of the labeler on held-out real records (None: no labeler).
    pub labeler_accuracy: Option<f64>,
    /// The baseline's training report.
    pub baseline_fit: FitReport,
    /// `c_lb` with its evidence.
    pub c_lb: f64,
    /// The largest `c_lb` the audit set can show at this level (all
    /// members found without error): a `c_lb` near it leaves no room for ε̃.
    pub c_lb_ceiling: Option<f64>,
    /// One entry per target.
    pub targets: Vec<TargetResult>,
}

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
    let c_lb = results.first().map_or(0.0, |r| r.c_lb);
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
        c_lb,
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
                label: format!("baseline b (x, loss of h): c_lb = {:.3}", r.c_lb),
                color: "#1f77b4",
                points: baseline_pr,
                mark: ev("baseline").map(|(p, v)| (p, format!("c_lb {v}"))),
            },
            PrSeries {
                label: format!(
                    "MIA (x, loss of f): {{c+ε}}_lb = {:.3}",
                    r.c_plus_epsilon_lb
                ),
                color: "#d62728",
                points: &mia_pr,
                mark: ev("mia").map(|(p, v)| (p, format!("{{c+ε}}_lb {v}"))),
            },
        ],
        1.0 / audit_members.max(1) as f64,
    )
}
