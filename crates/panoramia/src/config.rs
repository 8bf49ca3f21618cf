//! The `dpaudit panoramia` configuration (TOML), validated once at load.
//!
//! ```toml
//! seed = 1                    # the pipeline's seed (replayable randomness)
//! confidence = 0.95           # overall; each of the two tests at (1 − confidence)/2
//! selection = "same-data"     # threshold choice: same-data (the paper), bonferroni, split
//! # [reference] guesses, selection: the O(1) reference ordering (crate::reference)
//!
//! [split]                     # sizes drawn from the target's training set D_f
//! generator = 5000            # |D_G|: real records the generator (and labeler) learn from
//! helper = 5000               # generated records the helper h is trained on
//! classifier_train = 1000     # members in the baseline/MIA training set (+ as many generated)
//! classifier_validation = 250 # members in their validation set (+ as many generated)
//! audit = 2000                # m: audit pairs (member or generated, by a fair coin each)
//!
//! [generator]
//! kind = "vae"                # or "real_holdout" (a control: the real distribution itself)
//! latent = 32
//! width = 32
//! epochs = 20
//! batch_size = 128
//! learning_rate = 1e-3
//!
//! # or kind = "dcgan" with latent, width, epochs, batch_size, learning_rate
//! # (a class-conditional DCGAN, Adam with beta1 = 0.5) and
//! # labels = "generator" (the class drawn for each record) or "labeler"
//!
//! [filter]                    # optional: drop generated records a real-vs-generated
//! threshold = 0.5             #   classifier finds likely generated (P(generated) >= threshold)
//! max_candidates = 20         # candidates drawn per needed record before giving up
//! keep_class_frequencies = false # true: per-class quotas (conditional generators)
//! epochs = 5
//! batch_size = 128
//! learning_rate = 1e-3
//!
//! [helper]                    # labeler and helper: the target's architecture, non-private
//! model = { kind = "lenet5" }
//! epochs = 5
//! batch_size = 128
//! learning_rate = 1e-3
//!
//! [classifier]                # baseline b and MIA: one architecture, one budget
//! epochs = 10
//! batch_size = 128
//! learning_rate = 1e-3
//! seeds = 5                   # optional (default 1): b and every MIA trained with 5 seeds;
//!                             #   ε̃ reported as mean ± standard deviation over them
//! mia_losses = "target"       # optional: "target" (the paper: the MIA reads f's loss),
//!                             #   "target_and_helper" (the MIA reads h's loss and f's, b reads h's) or
//!                             #   "stacked" (logistic regressions: b's network score and a reference
//!                             #   model's loss; the MIA adds f's loss)
//!
//! [quality]                   # the real-vs-generated check of the generator
//! epochs = 3
//! batch_size = 128
//! learning_rate = 1e-3
//!
//! [[target]]
//! name = "eps4"
//! epsilon = 4.0               # calibrate the noise multiplier for this ε (train.dp.noise_multiplier = 0)
//! [target.train]              # a whole `dpaudit train` config
//! ...
//!
//! [[target]]
//! name = "given"
//! checkpoint = "models/lenet.safetensors"
//! model = { kind = "lenet5" } # optional: the architecture the checkpoint must hold
//! ```
//!
//! Unknown fields are errors; nothing that decides what is measured has a
//! default.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use dpaudit_accounting::dp_fields::{self, DpContext, DpField, DpFieldError};
use dpaudit_audit::observations::Selection;
use dpaudit_store::kind::{ExperimentFile, ExperimentKind};
use dpaudit_train::config::{parse_toml, DeviceChoice, ModelConfig, TrainConfig};
use dpaudit_train::TrainError;
use serde::{Deserialize, Serialize};

use crate::error::{config_err, Result};
use crate::reference::ReferenceConfig;

/// How the threshold of each test is chosen on the audit set: the audit
/// crate's policy names. PANORAMIA accepts `same-data` (the best threshold
/// on the audit set itself, Kazmi et al. 2024, Algorithm 1 lines 4–7; not
/// valid at the stated confidence), `bonferroni` (every threshold at level
/// `(β/2)/m`, valid) and `split` (chosen on a random half, bounded on the
/// other, valid).
pub use dpaudit_audit::method::SelectionChoice;

/// The policies a PANORAMIA config accepts.
const SELECTIONS: [SelectionChoice; 3] = [
    SelectionChoice::SameData,
    SelectionChoice::Bonferroni,
    SelectionChoice::Split,
];

/// Sizes of the parts the pipeline carves out of the data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SplitConfig {
    /// `|D_G|`: real training records of the target the generator (and the
    /// labeler) learn from; disjoint from every audit member.
    pub generator: usize,
    /// Generated records the helper `h` is trained on.
    pub helper: usize,
    /// Members in the classifiers' training set `D_in^tr` (with as many
    /// generated non-members `D_out^tr`).
    pub classifier_train: usize,
    /// Members in the classifiers' validation set (with as many generated).
    pub classifier_validation: usize,
    /// `m`: audit pairs `(D_in^te[i], D_out^te[i])`; a fair coin picks one of each.
    pub audit: usize,
}

/// The generative model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum GeneratorConfig {
    /// A convolutional variational autoencoder ([`crate::vae`]).
    Vae {
        /// Latent dimension.
        latent: i64,
        /// Channels of the first convolution (the second has twice as many).
        width: i64,
        /// Epochs over `D_G`.
        epochs: u64,
        /// Minibatch size.
        batch_size: usize,
        /// Adam's learning rate.
        learning_rate: f64,
        /// Use this trained generator instead of training one.
        #[serde(default)]
        checkpoint: Option<PathBuf>,
    },
    /// A class-conditional DCGAN ([`crate::dcgan`]), trained with Adam at
    /// β₁ = 0.5 (Radford et al. 2016).
    Dcgan {
        /// Latent dimension of `z`.
        latent: i64,
        /// Channels of the generator's last hidden layer and the
        /// discriminator's first (the other hidden layer has twice as many).
        width: i64,
        /// Epochs over `D_G`.
        epochs: u64,
        /// Minibatch size.
        batch_size: usize,
        /// Adam's learning rate (generator and discriminator).
        learning_rate: f64,
        /// Where generated records' labels come from: `generator` (the
        /// class each was generated for) or `labeler` (as for the VAE).
        labels: LabelSource,
        /// Use this trained generator instead of training one.
        #[serde(default)]
        checkpoint: Option<PathBuf>,
    },
    /// A control, not an audit: "generated" records are real records the
    /// target never saw (its test split), with their true labels — the
    /// generator is the data distribution itself, so `c = 0`.
    RealHoldout,
}

/// Where the labels of generated records come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LabelSource {
    /// The class a conditional generator drew each record for: the
    /// generator models (image, label) pairs, as the data does.
    Generator,
    /// The labeler's prediction (a model of the target's architecture
    /// trained on `D_G`), as for unconditional generators.
    Labeler,
}

/// What the generative models (VAE, DCGAN) share: their size, training
/// budget and optional trained checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratorModel<'a> {
    /// Latent dimension.
    pub latent: i64,
    /// Channels of the width-defining layer.
    pub width: i64,
    /// Epochs, minibatch size and Adam's learning rate.
    pub fit: FitConfig,
    /// A trained generator to use instead of training one.
    pub checkpoint: Option<&'a Path>,
}

impl GeneratorConfig {
    /// The shared fields of a generative model (None: `real_holdout`).
    pub fn model(&self) -> Option<GeneratorModel<'_>> {
        match self {
            Self::Vae {
                latent,
                width,
                epochs,
                batch_size,
                learning_rate,
                checkpoint,
            }
            | Self::Dcgan {
                latent,
                width,
                epochs,
                batch_size,
                learning_rate,
                checkpoint,
                ..
            } => Some(GeneratorModel {
                latent: *latent,
                width: *width,
                fit: FitConfig {
                    epochs: *epochs,
                    batch_size: *batch_size,
                    learning_rate: *learning_rate,
                },
                checkpoint: checkpoint.as_deref(),
            }),
            Self::RealHoldout => None,
        }
    }

    /// Whether generated records keep the generator's own labels.
    pub fn labels_from_generator(&self) -> bool {
        matches!(
            self,
            Self::Dcgan {
                labels: LabelSource::Generator,
                ..
            }
        )
    }
}

/// The real-vs-generated filter ([`crate::filter`]): a classifier trained on
/// part of `D_G` against extra generated records; generated records it
/// finds too likely to be generated are dropped before any pool is drawn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterConfig {
    /// Keep a generated record when the filter's `P(generated)` is below
    /// this (1 keeps every record, 0 none).
    pub threshold: f64,
    /// At most this many candidates are drawn per record a pool needs;
    /// a pool still short then is an error.
    pub max_candidates: usize,
    /// With a conditional generator: fill each pool with `D_G`'s class
    /// frequencies (a quota per class) instead of keeping whatever passes.
    pub keep_class_frequencies: bool,
    /// Epochs of the filter's classifier.
    pub epochs: u64,
    /// Its minibatch size.
    pub batch_size: usize,
    /// Its Adam learning rate.
    pub learning_rate: f64,
}

/// A training budget (Adam, minibatches, epochs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FitConfig {
    /// Epochs.
    pub epochs: u64,
    /// Minibatch size.
    pub batch_size: usize,
    /// Adam's learning rate.
    pub learning_rate: f64,
}

/// The baseline and the MIAs: one architecture, one budget, `seeds`
/// independent trainings of each (seed `k` of the baseline and of every MIA
/// share initialisation and minibatch order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassifierConfig {
    /// Epochs.
    pub epochs: u64,
    /// Minibatch size.
    pub batch_size: usize,
    /// Adam's learning rate.
    pub learning_rate: f64,
    /// Trainings per classifier (default 1). With more than one, each
    /// target's ε̃ is the mean over seeds with its standard deviation, and
    /// the paper's choice (the seed with the best validation accuracy,
    /// Kazmi et al. 2024, Appendix C.1) is reported beside it. Left out of
    /// the fingerprint when 1, so out-dirs of one-seed configs stay valid.
    #[serde(default = "one_seed", skip_serializing_if = "is_one_seed")]
    pub seeds: u32,
    /// The losses the MIA reads beside the image (default: the paper's,
    /// the target's only). Left out of the fingerprint at the default.
    #[serde(default, skip_serializing_if = "MiaLosses::is_paper")]
    pub mia_losses: MiaLosses,
}

/// The side information of the MIA (the baseline reads the helper's loss
/// either way).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MiaLosses {
    /// The paper's (Kazmi et al. 2024, §5.1): the MIA reads the target's
    /// loss, the baseline the helper's; otherwise the two are identical.
    #[default]
    Target,
    /// The MIA reads the helper's loss and the target's, the baseline the
    /// helper's and two zero columns (same network, same initialisation):
    /// the MIA knows everything the baseline knows, plus the target. Still
    /// a classifier of `(x, f)` and data independent of the audit coins,
    /// so Proposition 2 applies unchanged; the baseline never sees `f`.
    TargetAndHelper,
    /// Stacked by logistic regressions fitted on the validation sets (the
    /// paper stacks its modules with a logistic regression too, Appendix
    /// B.1): the baseline is the baseline network's score with a reference
    /// model's loss (the labeler, trained on `D_G`), the MIA the same plus
    /// the target's loss features. The baseline's network is the only one
    /// trained, and the MIA differs from the baseline exactly by what the
    /// target's loss adds (`pipeline/stacked.rs`).
    /// Still a function of `(x, f)` fitted on data independent of the
    /// audit coins, so Proposition 2 applies; the baseline never sees `f`.
    Stacked,
}

impl MiaLosses {
    fn is_paper(&self) -> bool {
        *self == Self::Target
    }

    /// In words, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Target => "the MIA reads the target's loss, the baseline the helper's (the paper's, §5.1)",
            Self::TargetAndHelper => {
                "the MIA reads the helper's loss and the target's, the baseline the helper's (and zeros): \
                 the MIA knows all the baseline knows, plus the target (a departure from the paper, docs/panoramia.md)"
            }
            Self::Stacked => {
                "stacked: the baseline network reads the helper's loss; per seed, logistic regressions fitted on the \
                 validation sets score the audit set: the baseline from the network's score and a reference model's loss \
                 (the labeler, trained on D_G), the MIA from the same plus the target's loss (the paper stacks its modules \
                 with a logistic regression, App. B.1; docs/panoramia.md)"
            }
        }
    }
}

fn one_seed() -> u32 {
    1
}

fn is_one_seed(s: &u32) -> bool {
    *s == 1
}

/// Most classifier seeds a config may ask for.
pub const MAX_CLASSIFIER_SEEDS: u32 = 64;

impl ClassifierConfig {
    /// The budget part.
    pub fn fit(&self) -> FitConfig {
        FitConfig {
            epochs: self.epochs,
            batch_size: self.batch_size,
            learning_rate: self.learning_rate,
        }
    }
}

/// The labeler and the helper: the target's task and architecture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HelperConfig {
    /// Architecture (a `dpaudit train` model).
    pub model: ModelConfig,
    /// Epochs.
    pub epochs: u64,
    /// Minibatch size.
    pub batch_size: usize,
    /// Adam's learning rate.
    pub learning_rate: f64,
}

impl HelperConfig {
    /// The budget part.
    pub fn fit(&self) -> FitConfig {
        FitConfig {
            epochs: self.epochs,
            batch_size: self.batch_size,
            learning_rate: self.learning_rate,
        }
    }
}

/// One audited model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetConfig {
    /// Name in outputs and file names (`[A-Za-z0-9_-]+`).
    pub name: String,
    /// A dpaudit checkpoint to audit.
    #[serde(default)]
    pub checkpoint: Option<PathBuf>,
    /// The architecture `checkpoint` must hold (optional check).
    #[serde(default)]
    pub model: Option<ModelConfig>,
    /// Train the target with this config instead.
    #[serde(default)]
    pub train: Option<TrainConfig>,
    /// Calibrate `train.dp.noise_multiplier` (which must then be 0) so the
    /// accountant's ε at `train.delta` is at most this.
    #[serde(default)]
    pub epsilon: Option<f64>,
}

/// A whole `dpaudit panoramia` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PanoramiaConfig {
    /// The pipeline's seed: splits, generator, classifiers, audit coins.
    pub seed: u64,
    /// Overall confidence `1 − β`; each test runs at `β/2`.
    pub confidence: f64,
    /// Threshold selection of both tests (the O(1) reference has its own).
    pub selection: SelectionChoice,
    /// The O(1) reference ordering ([`ReferenceConfig`]; default: every
    /// guess count under Bonferroni).
    #[serde(default)]
    pub reference: ReferenceConfig,
    /// `cpu` or `cuda` (default `cpu`) for the pipeline's own models.
    #[serde(default = "default_device")]
    pub device: DeviceChoice,
    /// Sizes.
    pub split: SplitConfig,
    /// The generative model.
    pub generator: GeneratorConfig,
    /// The optional real-vs-generated filter of generated records (absent:
    /// every generated record is used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<FilterConfig>,
    /// Labeler and helper.
    pub helper: HelperConfig,
    /// Baseline and MIA.
    pub classifier: ClassifierConfig,
    /// The real-vs-generated quality check.
    pub quality: FitConfig,
    /// The audited models (at least one).
    #[serde(rename = "target")]
    pub targets: Vec<TargetConfig>,
}

fn default_device() -> DeviceChoice {
    DeviceChoice::Cpu
}

/// Smallest audit size `m` for which perfect guesses on the expected `m/2`
/// members can give a positive bound at `level` per threshold (`level` may
/// depend on `m`, as with Bonferroni): `logit(level^{2/m}) > 0`.
pub fn minimum_audit_size(confidence: f64, selection: SelectionChoice) -> usize {
    let per_test = (1.0 - confidence) / 2.0;
    for m in 2..10_000_000usize {
        let (members, level) = match selection {
            SelectionChoice::SameData => (m / 2, per_test),
            SelectionChoice::Bonferroni => (m / 2, per_test / m as f64),
            // Bounded on half of the audit set (the others are refused by
            // `PanoramiaConfig::validate`).
            SelectionChoice::Split
            | SelectionChoice::Auto
            | SelectionChoice::MultiSplit
            | SelectionChoice::Fixed => (m / 4, per_test),
        };
        if members > 0 && dpaudit_audit::panoramia::ceiling(members as u64, level) > 0.0 {
            return m;
        }
    }
    usize::MAX
}

impl PanoramiaConfig {
    /// The audit crate's policy of both tests; the pipeline's seed keys
    /// the split.
    pub fn threshold_selection(&self) -> Selection {
        match self.selection {
            SelectionChoice::SameData => Selection::SameData,
            SelectionChoice::Bonferroni => Selection::Bonferroni,
            _ => Selection::Split { seed: self.seed },
        }
    }

    /// Parse and validate TOML; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self> {
        let config: PanoramiaConfig = parse_toml(text, origin).map_err(TrainError::from)?;
        config.validate(origin)?;
        Ok(config)
    }

    /// Read, parse and validate a file: `kind = "panoramia"` or no `kind`
    /// (as `dpaudit panoramia` takes it); the `kind` line is left out of
    /// the config, so its fingerprint is the same either way.
    pub fn load(path: &Path) -> Result<Self> {
        let file = ExperimentFile::read_as(path, ExperimentKind::Panoramia)?;
        Self::from_toml(&file.text, &path.display().to_string())
    }

    /// Range and consistency checks that need no data; `file` names the
    /// config in errors.
    pub fn validate(&self, file: &str) -> Result<()> {
        let err = |field: &str, value: &dyn std::fmt::Display, expected: &str| {
            Err(config_err(file, field, value, expected))
        };
        if !(self.confidence > 0.0 && self.confidence < 1.0) {
            return err(
                "confidence",
                &self.confidence,
                "a number strictly between 0 and 1",
            );
        }
        if !SELECTIONS.contains(&self.selection) {
            return err(
                "selection",
                &self.selection,
                "same-data, bonferroni or split",
            );
        }
        let s = &self.split;
        let min_audit = minimum_audit_size(self.confidence, self.selection);
        if s.audit < min_audit {
            return Err(config_err(
                file,
                "split.audit",
                s.audit,
                format!(
                    "at least {min_audit} audit pairs: the audit set is too small for confidence {} with {:?} \
                     selection (even perfect guesses on its ~{} members could not reject c = 0 at level {:.3e})",
                    self.confidence,
                    self.selection,
                    s.audit / 2,
                    (1.0 - self.confidence) / 2.0
                ),
            ));
        }
        if s.classifier_train == 0 {
            return err("split.classifier_train", &0, "at least 1 member");
        }
        if s.classifier_validation == 0 {
            return err("split.classifier_validation", &0, "at least 1 member");
        }
        if s.helper == 0 {
            return err("split.helper", &0, "at least 1 generated record");
        }
        if s.generator < 10 {
            return err(
                "split.generator",
                &s.generator,
                "at least 10 real records (D_G trains the generator and the labeler, and the quality check compares \
                 it with generated records)",
            );
        }
        match self.generator.model() {
            Some(g) => {
                if !(1..=4096).contains(&g.latent) {
                    return err("generator.latent", &g.latent, "an integer in 1..=4096");
                }
                if !(1..=1024).contains(&g.width) {
                    return err("generator.width", &g.width, "an integer in 1..=1024");
                }
                let f = &g.fit;
                check_fit(file, "generator", f.epochs, f.batch_size, f.learning_rate)?;
            }
            None => {
                if self.filter.is_some() {
                    return err(
                        "filter",
                        &"given",
                        "no [filter] with generator kind \"real_holdout\" (real records are not filtered)",
                    );
                }
            }
        }
        if let Some(f) = &self.filter {
            if !(0.0..=1.0).contains(&f.threshold) {
                return err(
                    "filter.threshold",
                    &f.threshold,
                    "a probability in [0, 1] (keep a record when P(generated) is below it)",
                );
            }
            if !(1..=10_000).contains(&f.max_candidates) {
                return err(
                    "filter.max_candidates",
                    &f.max_candidates,
                    "an integer in 1..=10000 (candidates drawn per record a pool needs)",
                );
            }
            check_fit(file, "filter", f.epochs, f.batch_size, f.learning_rate)?;
        }
        check_fit(
            file,
            "helper",
            self.helper.epochs,
            self.helper.batch_size,
            self.helper.learning_rate,
        )?;
        for (name, f) in [
            ("classifier", &self.classifier.fit()),
            ("quality", &self.quality),
        ] {
            check_fit(file, name, f.epochs, f.batch_size, f.learning_rate)?;
        }
        if !(1..=MAX_CLASSIFIER_SEEDS).contains(&self.classifier.seeds) {
            return err(
                "classifier.seeds",
                &self.classifier.seeds,
                &format!("an integer in 1..={MAX_CLASSIFIER_SEEDS} (trainings of the baseline and of each MIA)"),
            );
        }
        if self.targets.is_empty() {
            return err("target", &"none", "at least one [[target]]");
        }
        let mut names = BTreeSet::new();
        for (i, t) in self.targets.iter().enumerate() {
            let field = |f: &str| format!("target[{i}].{f}");
            if t.name.is_empty()
                || !t
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return Err(config_err(
                    file,
                    field("name"),
                    format!("{:?}", t.name),
                    "a non-empty name of letters, digits, `-` and `_` (it names files)",
                ));
            }
            if !names.insert(t.name.clone()) {
                return Err(config_err(
                    file,
                    field("name"),
                    &t.name,
                    "a name no other target has",
                ));
            }
            match (&t.checkpoint, &t.train) {
                (Some(_), Some(_)) | (None, None) => return Err(config_err(
                    file,
                    format!("target[{i}]"),
                    &t.name,
                    "exactly one of `checkpoint` (audit a trained model) and `train` (train one)",
                )),
                (Some(_), None) => {
                    if t.epsilon.is_some() {
                        return Err(config_err(
                            file,
                            field("epsilon"),
                            t.epsilon.unwrap_or_default(),
                            "no `epsilon` with `checkpoint` (its metadata holds the accountant's ε)",
                        ));
                    }
                }
                (None, Some(train)) => {
                    if let Some(eps) = t.epsilon {
                        // σ is calibrated to `epsilon`: the one DP-field
                        // validation in its calibrated context, before the
                        // training rules (which would admit any σ ≥ 0).
                        let refused = |name: &str, e: DpFieldError| {
                            config_err(file, field(name), e.value, e.expected)
                        };
                        dp_fields::check(DpContext::Calibrated, DpField::TargetEpsilon, eps)
                            .map_err(|e| refused("epsilon", e))?;
                        dp_fields::check(
                            DpContext::Calibrated,
                            DpField::NoiseMultiplier,
                            train.dp.noise_multiplier,
                        )
                        .map_err(|e| refused("train.dp.noise_multiplier", e))?;
                    }
                    train
                        .validate()
                        .map_err(|e| config_err(file, field("train"), "invalid", e.to_string()))?;
                    if train.replicas != 1 {
                        return Err(config_err(
                            file,
                            field("train.replicas"),
                            train.replicas,
                            "1 (one audited model per target)",
                        ));
                    }
                    if t.model.is_some() {
                        return Err(config_err(
                            file,
                            field("model"),
                            "given",
                            "no `model` with `train` (use `train.model`)",
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// A stable fingerprint of the parsed config (FNV-1a 64 of its JSON).
    pub fn fingerprint(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        fnv1a(&json)
    }
}

/// FNV-1a, 64 bits (Fowler–Noll–Vo): tells two configs apart, not a
/// security hash.
pub fn fnv1a(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn check_fit(file: &str, section: &str, epochs: u64, batch: usize, lr: f64) -> Result<()> {
    if epochs == 0 {
        return Err(config_err(
            file,
            format!("{section}.epochs"),
            0,
            "at least 1",
        ));
    }
    if batch == 0 {
        return Err(config_err(
            file,
            format!("{section}.batch_size"),
            0,
            "at least 1",
        ));
    }
    if !(lr.is_finite() && lr > 0.0) {
        return Err(config_err(
            file,
            format!("{section}.learning_rate"),
            lr,
            "a finite number > 0",
        ));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        // FNV-1a 64 test vectors (Fowler–Noll–Vo reference: "" and "a").
        assert_eq!(fnv1a(""), "cbf29ce484222325");
        assert_eq!(fnv1a("a"), "af63dc4c8601ec8c");
    }

    #[test]
    fn minimum_audit_size_is_where_the_ceiling_turns_positive() {
        // Same data at 0.95: level 0.025, need logit(0.025^{1/k}) > 0 for
        // k = m/2 members, i.e. 0.025^{1/k} > 1/2, k > log2(40) = 5.32.
        assert_eq!(minimum_audit_size(0.95, SelectionChoice::SameData), 12);
        let m = minimum_audit_size(0.95, SelectionChoice::Bonferroni);
        assert!(m > 12);
        assert!(dpaudit_audit::panoramia::ceiling((m / 2) as u64, 0.025 / m as f64) > 0.0);
        assert!(
            dpaudit_audit::panoramia::ceiling(((m - 1) / 2) as u64, 0.025 / (m - 1) as f64) <= 0.0
        );
    }
}
