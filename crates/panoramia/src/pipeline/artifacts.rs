//! The out-dir's JSON artifacts as types: `quality.json` ([`Quality`]),
//! `baseline.json` (`ScoresFile`), `targets/<name>.json` ([`TargetResult`])
//! and `audit.json` ([`AuditReport`]), with their format tag ([`FORMAT`]).
//! The stages that write them and the store that reads them back both
//! depend on this file; it depends on no stage.

use dpaudit_data::seed::Mode;
use serde::{Deserialize, Serialize};

use crate::classifier::FitReport;
use crate::filter::FilterReport;

/// The format tag of the out-dir's JSON files.
pub const FORMAT: &str = "dpaudit-panoramia/1";

/// The generator's quality check: a classifier separating real `D_G`
/// records from generated ones, accuracy on held-out records of both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Quality {
    /// Held-out accuracy (0.5: indistinguishable; 1: always told apart).
    pub accuracy: f64,
    /// Real and generated records it was trained on (each).
    pub train_per_class: usize,
    /// Real and generated held-out records (each).
    pub test_per_class: usize,
    /// Held-out accuracy after every epoch.
    pub accuracy_per_epoch: Vec<f64>,
}

/// Scores of one classifier on the audit set (`baseline.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct ScoresFile {
    pub format: String,
    pub fingerprint: String,
    pub fit: FitReport,
    pub scores: Vec<f64>,
}

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
