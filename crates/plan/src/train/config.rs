//! The `dpaudit train` configuration (TOML), validated once at load.
//!
//! DP-critical fields (`seed`, `noise_multiplier`, `max_grad_norm`, the
//! sampler's `sample_rate`/`batch_size`, `steps` or `epochs`, `delta`) have no
//! defaults; unknown fields are errors.
//!
//! ```toml
//! seed = 1
//! replicas = 1
//! device = "cpu"
//! steps = 300
//! delta = 1e-5
//!
//! [model]
//! kind = "lenet5"
//!
//! [data]
//! dataset = "fmnist"
//! classes = [0, 1]
//!
//! [sampler]
//! kind = "poisson"
//! sample_rate = 0.01
//!
//! [dp]
//! noise_multiplier = 1.0
//! max_grad_norm = 1.0
//! learning_rate = 0.5
//! ```

use std::path::{Path, PathBuf};

use dpaudit_accounting::dp_fields::{self, DpContext, DpField};
use dpaudit_data::sampler::SamplerConfig;
use serde::{Deserialize, Serialize};

use crate::error::{invalid, PlanError, Result};

/// Where tensors live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceChoice {
    /// The CPU.
    Cpu,
    /// CUDA device 0.
    Cuda,
}

/// Which normalisation layer a residual network uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NormChoice {
    /// GroupNorm (the only one DP training accepts).
    Group,
    /// BatchNorm: refused at load (it mixes samples, so per-sample gradients
    /// and the DP guarantee do not exist).
    Batch,
}

/// Which architecture, with its options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ModelConfig {
    /// `dpaudit_train::models::Mlp`; `hidden` widths between the data's features and
    /// classes (default `[32]`, the Purchase-100 MLP of Annamalai et al. 2024 §6.1).
    Mlp {
        /// Hidden widths.
        #[serde(default = "default_hidden")]
        hidden: Vec<i64>,
    },
    /// `dpaudit_train::models::LeNet5`.
    Lenet5,
    /// `dpaudit_train::models::ShallowCnn`.
    ShallowCnn,
    /// `dpaudit_train::models::ConvNet`.
    Convnet,
    /// `dpaudit_train::models::ResNet18`.
    Resnet18 {
        /// Normalisation layer; must be `group`.
        norm: NormChoice,
        /// GroupNorm groups (capped at the channel count).
        #[serde(default = "default_groups_32")]
        groups: i64,
    },
    /// `dpaudit_train::models::WideResNet`.
    Wrn {
        /// Depth, `≡ 4 (mod 6)`.
        depth: i64,
        /// Widening factor.
        width: i64,
        /// Normalisation layer; must be `group`.
        norm: NormChoice,
        /// GroupNorm groups (capped at the channel count).
        #[serde(default = "default_groups_16")]
        groups: i64,
    },
}

fn default_hidden() -> Vec<i64> {
    vec![32]
}
fn default_groups_32() -> i64 {
    32
}
fn default_groups_16() -> i64 {
    16
}

/// Which dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DatasetChoice {
    /// Fashion-MNIST.
    Fmnist,
    /// CIFAR-10.
    Cifar10,
    /// Purchase-100.
    Purchase100,
}

/// The data section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataConfig {
    /// The dataset.
    pub dataset: DatasetChoice,
    /// Keep only these classes, relabelled `0..k` (e.g. `[0, 1]`: T-shirt/top vs
    /// Trouser on Fashion-MNIST, Annamalai et al. 2024 §6.1). Absent: all classes.
    #[serde(default)]
    pub classes: Option<Vec<i64>>,
    /// Directory with the real files; absent: the default location, else the
    /// synthetic stand-in (the output says which).
    #[serde(default)]
    pub data_dir: Option<PathBuf>,
    /// Downsample the training split to this many records (Annamalai et al. 2024 §6.1 uses
    /// 10,000), drawn from the run seed's `split` stream.
    #[serde(default)]
    pub train_size: Option<usize>,
    /// Per-channel standardisation fitted on the training split (default true).
    #[serde(default = "default_true")]
    pub normalize: bool,
}

fn default_true() -> bool {
    true
}

/// The DP-SGD section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DpConfig {
    /// σ.
    pub noise_multiplier: f64,
    /// C.
    pub max_grad_norm: f64,
    /// η.
    pub learning_rate: f64,
    /// SGD momentum (default 0, as in the seeds).
    #[serde(default)]
    pub momentum: f64,
    /// Weight decay (default 0).
    #[serde(default)]
    pub weight_decay: f64,
}

impl DpConfig {
    /// The engine's hyperparameters with this `normaliser`: the one place the
    /// DP fields are copied into [`crate::train::dp_sgd::DpSgdConfig`], whose
    /// `validate` is their one range check.
    pub fn engine(
        &self,
        normaliser: crate::train::dp_sgd::Normaliser,
    ) -> crate::train::dp_sgd::DpSgdConfig {
        crate::train::dp_sgd::DpSgdConfig {
            noise_multiplier: self.noise_multiplier,
            max_grad_norm: self.max_grad_norm,
            learning_rate: self.learning_rate,
            normaliser,
            momentum: self.momentum,
            weight_decay: self.weight_decay,
        }
    }
}

/// A whole `dpaudit train` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainConfig {
    /// The one seed of the run; all randomness derives from it.
    pub seed: u64,
    /// Independent replicas trained together (default 1).
    #[serde(default = "default_one")]
    pub replicas: usize,
    /// `cpu` or `cuda` (default `cpu`).
    #[serde(default = "default_device")]
    pub device: DeviceChoice,
    /// Number of steps; exactly one of `steps` and `epochs`.
    #[serde(default)]
    pub steps: Option<u64>,
    /// Number of epochs (of the sampler's steps per epoch).
    #[serde(default)]
    pub epochs: Option<u64>,
    /// δ of the reported ε.
    pub delta: f64,
    /// The model.
    pub model: ModelConfig,
    /// The data.
    pub data: DataConfig,
    /// The sampler (the data crate's config, `kind = ...`).
    pub sampler: SamplerConfig,
    /// DP-SGD hyperparameters.
    pub dp: DpConfig,
}

fn default_one() -> usize {
    1
}
fn default_device() -> DeviceChoice {
    DeviceChoice::Cpu
}

/// Parse a TOML document into `T`; errors name `origin`, the line and the
/// byte offset, and say what was expected (unknown fields, missing fields).
pub fn parse_toml<T: serde::de::DeserializeOwned>(text: &str, origin: &str) -> Result<T> {
    toml::from_str(text).map_err(|e| {
        let at = e
            .span()
            .map(|s| {
                let line = text[..s.start].matches('\n').count() + 1;
                format!(" at line {line}, byte {}", s.start)
            })
            .unwrap_or_default();
        PlanError::InvalidConfig {
            field: origin.to_string(),
            value: format!("TOML{at}"),
            expected: e.message().to_string(),
        }
    })
}

impl TrainConfig {
    /// Parse and validate a TOML document; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self> {
        let config: TrainConfig = parse_toml(text, origin)?;
        config.validate()?;
        Ok(config)
    }

    /// Read, parse and validate a file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| PlanError::InvalidConfig {
            field: path.display().to_string(),
            value: "unreadable".into(),
            expected: e.to_string(),
        })?;
        Self::from_toml(&text, &path.display().to_string())
    }

    /// Range checks that need no data.
    pub fn validate(&self) -> Result<()> {
        if self.replicas == 0 {
            return Err(invalid("replicas", 0, "at least 1"));
        }
        match (self.steps, self.epochs) {
            (Some(0), _) | (_, Some(0)) => return Err(invalid("steps/epochs", 0, "at least 1")),
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "steps/epochs",
                    "both given",
                    "exactly one of `steps` and `epochs`",
                ))
            }
            (None, None) => {
                return Err(invalid(
                    "steps/epochs",
                    "neither given",
                    "exactly one of `steps` and `epochs`",
                ))
            }
            _ => {}
        }
        dp_fields::check(DpContext::Claimed, DpField::Delta, self.delta)?;
        if let Some(n) = self.data.train_size {
            if n < 2 {
                return Err(invalid(
                    "data.train_size",
                    n,
                    "at least 2 records (a classifier needs records of two classes)",
                ));
            }
        }
        if let Some(classes) = &self.data.classes {
            let mut distinct = classes.clone();
            distinct.sort_unstable();
            distinct.dedup();
            if distinct.len() < 2 {
                return Err(invalid(
                    "data.classes",
                    format!("{classes:?}"),
                    "at least two distinct classes: training on one class teaches nothing",
                ));
            }
        }
        let refuse_batch = |norm: NormChoice, model: &str| -> Result<()> {
            if norm == NormChoice::Batch {
                return Err(PlanError::Unsupported {
                    layer: format!("model.norm = \"batch\" ({model})"),
                    reason: "BatchNorm normalises with statistics of the whole batch, so one sample's gradient depends on \
                             the others: per-sample clipping does not bound a record's influence and DP-SGD's guarantee \
                             does not hold. Use norm = \"group\" (GroupNorm)."
                        .into(),
                });
            }
            Ok(())
        };
        match &self.model {
            ModelConfig::Mlp { hidden } if hidden.iter().any(|&w| w < 1) => {
                return Err(invalid("model.hidden", format!("{hidden:?}"), "widths ≥ 1"));
            }
            ModelConfig::Resnet18 { norm, groups } => {
                refuse_batch(*norm, "resnet18")?;
                if *groups < 1 || 64 % groups.min(&64) != 0 {
                    return Err(invalid(
                        "model.groups",
                        groups,
                        "a divisor of 64 (it must divide every width 64…512)",
                    ));
                }
            }
            ModelConfig::Wrn {
                depth,
                width,
                norm,
                groups,
            } => {
                refuse_batch(*norm, "wrn")?;
                if *depth < 10 || (depth - 4) % 6 != 0 {
                    return Err(invalid(
                        "model.depth",
                        depth,
                        "10, 16, 22, 28, … (depth ≡ 4 mod 6)",
                    ));
                }
                if *width < 1 {
                    return Err(invalid("model.width", width, "at least 1"));
                }
                if *groups < 1 || 16 % groups.min(&16) != 0 {
                    return Err(invalid(
                        "model.groups",
                        groups,
                        "a divisor of 16 (it must divide every width)",
                    ));
                }
            }
            _ => {}
        }
        let (shape_ok, needs) = match (&self.model, self.data.dataset) {
            (ModelConfig::Mlp { .. }, _) => (true, ""),
            (ModelConfig::Lenet5, DatasetChoice::Fmnist) => (true, ""),
            (ModelConfig::Lenet5, _) => {
                (false, "LeNet-5 takes 1×28×28 images (dataset = \"fmnist\")")
            }
            (ModelConfig::ShallowCnn | ModelConfig::Convnet, DatasetChoice::Cifar10) => (true, ""),
            (ModelConfig::ShallowCnn | ModelConfig::Convnet, _) => (
                false,
                "this model takes 3×32×32 images (dataset = \"cifar10\")",
            ),
            (
                ModelConfig::Resnet18 { .. } | ModelConfig::Wrn { .. },
                DatasetChoice::Purchase100,
            ) => (
                false,
                "a convolutional network needs image data (fmnist or cifar10)",
            ),
            _ => (true, ""),
        };
        if !shape_ok {
            return Err(invalid(
                "data.dataset",
                format!("{:?}", self.data.dataset).to_lowercase(),
                needs,
            ));
        }
        // The normaliser is checked where the sampler is built; a
        // placeholder here lets the one range check read the DP fields.
        self.dp
            .engine(crate::train::dp_sgd::Normaliser::ExpectedBatchSize(1.0))
            .validate()
            .map_err(|e| match e {
                PlanError::InvalidConfig {
                    field,
                    value,
                    expected,
                } => PlanError::InvalidConfig {
                    field: format!("dp.{field}"),
                    value,
                    expected,
                },
                other => other,
            })?;
        Ok(())
    }
}
