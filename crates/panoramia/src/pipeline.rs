//! PANORAMIA end to end (Kazmi et al. 2024, Algorithm 1), resumable.
//!
//! Phase 1: split the target's training records `D_f` into `D_G` (the
//! generator's), `D_in^tr`, `D_in^val` and `D_in^te` (`m` audit members);
//! train the generator on `D_G`; generate `D_out^tr`, `D_out^val`,
//! `D_out^te` and the helper's training set; label generated images with a
//! labeler trained on `D_G`; train the helper `h` on generated data only.
//! Phase 2: train the baseline `b` on `(x, loss_h(x))` and, per target, the
//! MIA on `(x, loss_f(x))` — same architecture, data, budget and seed — to
//! tell `D_in^tr` from `D_out^tr`; then the audit game: a fair coin per
//! index picks `D_in^te[i]` or `D_out^te[i]`, and both classifiers score the
//! result. `c_lb`, `{c+ε}_lb` and ε̃ follow from the scores
//! ([`dpaudit_audit::panoramia`]). Beside it, per target, the one-run audit
//! of Steinke et al. (2023) on real members against real non-members (the
//! paper's "O(1) RM;RN"), and the accountant's ε.
//!
//! Every random draw comes from the pipeline's seed ([`Randomness::replayable`];
//! outputs say so): splits from `split`, parameters from `init`, minibatch
//! orders from `sampler`, generator latents from `generator`, audit coins
//! from `membership`. Each stage writes its artifact atomically into the
//! out-dir and is skipped when a valid one is present; `config.json` holds
//! the config's fingerprint and a different config is refused.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use dpaudit_accounting::{calibrate_noise_multiplier, Accountant};
use dpaudit_audit::bound::EpsilonLowerBound;
use dpaudit_audit::observations::Observations;
use dpaudit_audit::one_run::{one_run_lower_bound, GuessFamily, OneRunConfig};
use dpaudit_audit::panoramia::{
    panoramia, EpsilonTilde, PanoramiaConfig as MeasureConfig, PanoramiaMeasurement,
};
use dpaudit_data::dataset::{Dataset, Normalization};
use dpaudit_data::sampler::{BatchSampler, Sampler};
use dpaudit_data::seed::{Mode, Randomness, SeedKey, Stream};
use dpaudit_train::checkpoint;
use dpaudit_train::config::TrainConfig;
use dpaudit_train::models::Model;
use dpaudit_train::trainer::{self, Observer};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use tch::Device;

use crate::classifier::{self, loss_features, FitReport, Labelled, MembershipNet};
use crate::config::{GeneratorConfig, PanoramiaConfig, TargetConfig};
use crate::dcgan;
use crate::error::{config_err, out_err, PanoramiaError, Result};
use crate::figures::{self, PrPoint, PrSeries};
use crate::filter::{self, Filter, FilterReport, Generator};
use crate::nn::{load_into, read_meta, save_tensors, write_atomic, HostInit, Parameters};
use crate::records::{coins, permutation, Records};
use crate::task::{self, TaskMeta};
use crate::vae::{self, Vae, VaeMeta};

/// The format tag of the out-dir's JSON files.
pub const FORMAT: &str = "dpaudit-panoramia/1";

/// Progress of a run; the CLI prints it, tests ignore it.
pub trait Progress {
    /// A stage starts (or is skipped: `message` says so).
    fn stage(&mut self, _stage: &str, _message: &str) {}
    /// An epoch of one of the pipeline's models ended.
    fn epoch(&mut self, _model: &str, _epoch: u64, _epochs: u64, _metric: &str, _value: f64) {}
    /// A target's DP-SGD training starts.
    fn target_start(&mut self, _name: &str, _steps: u64) {}
    /// A DP-SGD step of a target ended.
    fn target_step(&mut self) {}
}

/// Ignores everything.
#[derive(Debug, Default)]
pub struct Quiet;
impl Progress for Quiet {}

struct StepRelay<'a>(&'a mut dyn Progress, String);
impl Observer for StepRelay<'_> {
    fn on_start(&mut self, total: u64) {
        self.0.target_start(&self.1, total);
    }
    fn on_step(&mut self, _r: &dpaudit_train::StepReport) {
        self.0.target_step();
    }
}

/// Sub-keys of the pipeline's streams (children of each named stream).
mod keys {
    pub const SPLIT_DF: u64 = 0;
    pub const SPLIT_HOLDOUT: u64 = 1;
    pub const SPLIT_REAL_NONMEMBERS: u64 = 2;
    pub const GENERATOR: u64 = 0;
    pub const QUALITY: u64 = 1;
    pub const LABELER: u64 = 2;
    pub const HELPER: u64 = 3;
    /// The baseline and every MIA share initialisation and batch order.
    pub const CLASSIFIER: u64 = 4;
    pub const FILTER: u64 = 5;
    pub const GAME: u64 = 0;
    pub const GAME_O1: u64 = 1;
    /// Generator purposes (Philox tags).
    pub const POOL_HELPER: u32 = 0;
    pub const POOL_TRAIN: u32 = 1;
    pub const POOL_VALIDATION: u32 = 2;
    pub const POOL_AUDIT: u32 = 3;
    pub const POOL_QUALITY: u32 = 4;
    pub const POOL_GRID: u32 = 5;
}

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

/// Scores of one classifier on the audit set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ScoresFile {
    format: String,
    fingerprint: String,
    fit: FitReport,
    scores: Vec<f64>,
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

fn read_json<T: DeserializeOwned>(path: &Path) -> Option<T> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| out_err(path, e))?;
    write_atomic(path, text.as_bytes())
}

/// A target with its training config and (once loaded) model.
struct Resolved {
    cfg: TargetConfig,
    train: TrainConfig,
    checkpoint: Option<PathBuf>,
    loaded: Option<checkpoint::Loaded>,
    requested_epsilon: Option<f64>,
}

/// Raw (un-normalised) train and test splits of a training config, and the
/// normalisation the model saw.
fn raw_data(cfg: &TrainConfig) -> Result<(Dataset, Dataset, Option<Normalization>)> {
    let mut raw = cfg.clone();
    raw.data.normalize = false;
    let (train, test) = trainer::prepare_data(&raw)?;
    let norm = if cfg.data.normalize {
        Some(Normalization::fit(&train)?)
    } else {
        None
    };
    Ok((train, test, norm))
}

fn steps_of(cfg: &TrainConfig, sampler: &Sampler) -> u64 {
    match (cfg.steps, cfg.epochs) {
        (Some(s), _) => s,
        (None, Some(e)) => e * sampler.steps_per_epoch() as u64,
        (None, None) => 0,
    }
}

fn resolve_targets(config: &PanoramiaConfig, file: &str, device: Device) -> Result<Vec<Resolved>> {
    let mut out = Vec::new();
    for (i, t) in config.targets.iter().enumerate() {
        if let Some(path) = &t.checkpoint {
            let loaded = checkpoint::load(path, device)?;
            if let Some(want) = &t.model {
                if &loaded.meta.config.model != want {
                    return Err(PanoramiaError::Checkpoint {
                        path: path.display().to_string(),
                        reason: format!(
                            "holds a {:?}: expected a {:?} ({file}: `target[{i}].model`)",
                            loaded.meta.config.model, want
                        ),
                    });
                }
            }
            out.push(Resolved {
                cfg: t.clone(),
                train: loaded.meta.config.clone(),
                checkpoint: Some(path.clone()),
                loaded: Some(loaded),
                requested_epsilon: None,
            });
            continue;
        }
        let Some(train) = &t.train else { continue };
        let mut train = train.clone();
        if let Some(eps) = t.epsilon {
            let (d, _) = trainer::prepare_data(&train)?;
            let sampler = train.sampler.build(d.len())?;
            let q = match &sampler {
                Sampler::Poisson(s) => s.sample_rate(),
                other => other.batch_size().unwrap_or(1) as f64 / d.len().max(1) as f64,
            };
            let cal = calibrate_noise_multiplier(
                q,
                steps_of(&train, &sampler),
                train.delta,
                eps,
                Accountant::Pld,
                1e-3,
            )
            .map_err(|e| {
                config_err(
                    file,
                    format!("target[{i}].epsilon"),
                    eps,
                    format!("an ε the accountant can reach: {e}"),
                )
            })?;
            train.dp.noise_multiplier = cal.noise_multiplier;
        }
        out.push(Resolved {
            cfg: t.clone(),
            train,
            checkpoint: None,
            loaded: None,
            requested_epsilon: t.epsilon,
        });
    }
    Ok(out)
}

fn keyset(r: &Records) -> HashSet<u64> {
    (0..r.len()).map(|i| r.record_hash(i)).collect()
}

/// The pipeline's state between stages.
struct Data {
    classes: i64,
    d_f: Records,
    test: Records,
    norm: Option<Normalization>,
    source: String,
    synthetic: bool,
    d_g: Records,
    in_tr: Records,
    in_val: Records,
    in_te: Records,
}

fn split_data(
    config: &PanoramiaConfig,
    file: &str,
    first: &TrainConfig,
    rnd: &Randomness,
) -> Result<Data> {
    let (train, test, norm) = raw_data(first)?;
    let source = train.source().label();
    let classes = train.num_classes() as i64;
    let synthetic = train.source().is_synthetic();
    let d_f = Records::from_dataset(&train);
    let test = Records::from_dataset(&test);
    let s = &config.split;
    let g = s.generator;
    let need = g + s.classifier_train + s.classifier_validation + s.audit;
    if need > d_f.len() {
        return Err(config_err(
            file,
            "split",
            format!(
                "generator {g} + classifier_train {} + classifier_validation {} + audit {} = {need}",
                s.classifier_train, s.classifier_validation, s.audit
            ),
            format!(
                "at most {} records: the target's training set D_f (target[0], {source})",
                d_f.len()
            ),
        ));
    }
    let perm = permutation(d_f.len(), rnd.stream(Stream::Split).child(keys::SPLIT_DF));
    let mut at = 0;
    let mut take = |n: usize| {
        let part = d_f.subset(&perm[at..at + n]);
        at += n;
        part
    };
    let d_g = take(g);
    let in_tr = take(s.classifier_train);
    let in_val = take(s.classifier_validation);
    let in_te = take(s.audit);
    Ok(Data {
        classes,
        d_f,
        test,
        norm,
        source,
        synthetic,
        d_g,
        in_tr,
        in_val,
        in_te,
    })
}

/// Generated (or held-out real) pools: helper, train, validation, audit, quality.
struct Pools {
    helper: Records,
    out_tr: Records,
    out_val: Records,
    out_te: Records,
    quality: Records,
}

/// Every generated pool, each an independent draw (through the filter
/// when there is one).
fn generated_pools(
    gen: &Generator,
    mut filter: Option<&mut Filter>,
    config: &PanoramiaConfig,
    file: &str,
    key: SeedKey,
    device: Device,
    quality: usize,
) -> Result<Pools> {
    let s = &config.split;
    let mut draw = |pool: &str, n: usize, purpose: u32| -> Result<Records> {
        filter::draw(
            gen,
            filter.as_deref_mut(),
            pool,
            n,
            key,
            purpose,
            file,
            device,
        )
    };
    Ok(Pools {
        helper: draw("helper", s.helper, keys::POOL_HELPER)?,
        out_tr: draw("classifier_train", s.classifier_train, keys::POOL_TRAIN)?,
        out_val: draw(
            "classifier_validation",
            s.classifier_validation,
            keys::POOL_VALIDATION,
        )?,
        out_te: draw("audit", s.audit, keys::POOL_AUDIT)?,
        quality: draw("quality", quality, keys::POOL_QUALITY)?,
    })
}

fn holdout_pools(
    config: &PanoramiaConfig,
    file: &str,
    test: &Records,
    rnd: &Randomness,
    quality: usize,
) -> Result<Pools> {
    let s = &config.split;
    let need = s.helper + s.classifier_train + s.classifier_validation + s.audit + quality;
    if need > test.len() {
        return Err(config_err(
            file,
            "generator",
            "real_holdout",
            format!(
                "a test split of at least {need} records (helper + classifier_train + classifier_validation + audit \
                 + quality {quality}); it has {}",
                test.len()
            ),
        ));
    }
    let perm = permutation(
        test.len(),
        rnd.stream(Stream::Split).child(keys::SPLIT_HOLDOUT),
    );
    let mut at = 0;
    let mut take = |n: usize| {
        let part = test.subset(&perm[at..at + n]);
        at += n;
        part
    };
    Ok(Pools {
        helper: take(s.helper),
        out_tr: take(s.classifier_train),
        out_val: take(s.classifier_validation),
        out_te: take(s.audit),
        quality: take(quality),
    })
}

fn train_vae(
    vae: &Vae,
    d_g: &Records,
    fit: &crate::config::FitConfig,
    rnd: &Randomness,
    device: Device,
    progress: &mut dyn Progress,
) -> Result<f64> {
    let params: Vec<tch::Tensor> = vae.parameters().into_iter().map(|(_, t)| t).collect();
    let (epochs, batch) = (fit.epochs, fit.batch_size);
    let mut adam = crate::nn::Adam::new(fit.learning_rate);
    let batch_key = rnd.stream(Stream::Sampler).child(keys::GENERATOR);
    let noise = dpaudit_train::philox::Philox::new(
        rnd.stream(Stream::Generator).child(keys::GENERATOR),
        device,
    );
    let mut last = f64::NAN;
    for epoch in 0..epochs {
        let mut total = 0.0;
        for (bi, idx) in crate::records::epoch_batches(d_g.len(), batch, batch_key, epoch)
            .into_iter()
            .enumerate()
        {
            let x = d_g.batch(&idx, device)?;
            let eps = noise
                .normal(
                    &[idx.len() as i64, vae.latent()],
                    [epoch as u32, bi as u32, 1],
                )
                .and_then(|e| e.f_to_kind(tch::Kind::Float))
                .map_err(PanoramiaError::torch("drawing the VAE's noise"))?;
            let loss = vae
                .loss(&x, &eps)
                .map_err(PanoramiaError::torch("the VAE's forward pass"))?;
            loss.f_backward()
                .map_err(PanoramiaError::torch("the VAE's backward pass"))?;
            adam.step(&params)?;
            total += loss.f_double_value(&[]).unwrap_or(f64::NAN) * idx.len() as f64;
        }
        last = total / d_g.len().max(1) as f64;
        if !last.is_finite() {
            return Err(PanoramiaError::NonFinite {
                model: "generator".into(),
                epoch: epoch + 1,
                value: last,
            });
        }
        progress.epoch("generator", epoch + 1, epochs, "loss/image", last);
    }
    Ok(last)
}

/// The generator: loaded from `generator.checkpoint`, resumed from the
/// out-dir, or trained.
#[allow(clippy::too_many_arguments)]
fn generator(
    config: &PanoramiaConfig,
    file: &str,
    data: &Data,
    out: &Path,
    fp: &str,
    rnd: &Randomness,
    device: Device,
    progress: &mut dyn Progress,
) -> Result<Option<(Generator, String)>> {
    if let GeneratorConfig::Dcgan {
        latent,
        width,
        epochs,
        batch_size,
        learning_rate,
        checkpoint,
        ..
    } = &config.generator
    {
        let settings = dcgan::Settings {
            latent: *latent,
            width: *width,
            epochs: *epochs,
            batch_size: *batch_size,
            learning_rate: *learning_rate,
            checkpoint: checkpoint.clone(),
        };
        let stage = dcgan::Stage {
            d_g: &data.d_g,
            classes: data.classes,
            data_source: &data.source,
            path: &out.join("generator.safetensors"),
            fingerprint: fp,
            init: rnd.stream(Stream::Init).child(keys::GENERATOR),
            batches: rnd.stream(Stream::Sampler).child(keys::GENERATOR),
            noise: rnd.stream(Stream::Generator).child(keys::GENERATOR),
            device,
        };
        let (gan, text) = dcgan::obtain(&settings, &stage, progress)?;
        return Ok(Some((Generator::Dcgan(gan), text)));
    }
    let GeneratorConfig::Vae {
        latent,
        width,
        epochs,
        batch_size,
        learning_rate,
        checkpoint,
    } = &config.generator
    else {
        return Ok(None);
    };
    let shape = vae::image_shape(&data.d_f.shape, "data")?;
    let load = |path: &Path, check_fp: bool| -> Result<Option<(Vae, VaeMeta)>> {
        let (bytes, meta) = read_meta(path)?;
        let meta: VaeMeta =
            serde_json::from_str(&meta).map_err(|e| PanoramiaError::Checkpoint {
                path: path.display().to_string(),
                reason: format!(
                    "metadata: {e}; expected a generator written by dpaudit ({})",
                    vae::FORMAT
                ),
            })?;
        if meta.format != vae::FORMAT {
            return Err(PanoramiaError::Checkpoint {
                path: path.display().to_string(),
                reason: format!("format `{}`: expected `{}`", meta.format, vae::FORMAT),
            });
        }
        if meta.sample_shape != data.d_f.shape {
            return Err(PanoramiaError::Checkpoint {
                path: path.display().to_string(),
                reason: format!(
                    "a generator for records of shape {:?}: expected {:?}, the shape of the target's data ({file}: `generator.checkpoint`)",
                    meta.sample_shape, data.d_f.shape
                ),
            });
        }
        if check_fp && meta.fingerprint != fp {
            return Ok(None);
        }
        let mut init = HostInit::new(rnd.stream(Stream::Init).child(keys::GENERATOR), device);
        let vae = Vae::new(&mut init, shape, meta.latent, meta.width)?;
        load_into(path, &bytes, &vae.parameters())?;
        Ok(Some((vae, meta)))
    };
    if let Some(path) = checkpoint {
        progress.stage("generator", &format!("loading {}", path.display()));
        let (vae, meta) = load(path, false)?.ok_or_else(|| PanoramiaError::Checkpoint {
            path: path.display().to_string(),
            reason: "unusable".into(),
        })?;
        let text = format!(
            "VAE (latent {}, width {}) loaded from {} ({} epochs on {} records)",
            meta.latent,
            meta.width,
            path.display(),
            meta.epochs,
            meta.train_records
        );
        return Ok(Some((Generator::Vae(vae), text)));
    }
    let path = out.join("generator.safetensors");
    if path.exists() {
        if let Ok(Some((vae, meta))) = load(&path, true) {
            progress.stage("generator", "found in the out-dir, not retrained");
            return Ok(Some((Generator::Vae(vae), describe_vae(&meta))));
        }
    }
    progress.stage(
        "generator",
        &format!("training a VAE on D_G ({} records)", data.d_g.len()),
    );
    let mut init = HostInit::new(rnd.stream(Stream::Init).child(keys::GENERATOR), device);
    let vae = Vae::new(&mut init, shape, *latent, *width)?;
    let fit = crate::config::FitConfig {
        epochs: *epochs,
        batch_size: *batch_size,
        learning_rate: *learning_rate,
    };
    let final_loss = train_vae(&vae, &data.d_g, &fit, rnd, device, progress)?;
    let meta = VaeMeta {
        format: vae::FORMAT.into(),
        sample_shape: data.d_f.shape.clone(),
        latent: *latent,
        width: *width,
        epochs: *epochs,
        train_records: data.d_g.len(),
        data_source: data.source.clone(),
        final_loss,
        fingerprint: fp.to_string(),
    };
    let json = serde_json::to_string(&meta).map_err(|e| out_err(&path, e))?;
    save_tensors(&path, &vae.parameters(), &json)?;
    Ok(Some((Generator::Vae(vae), describe_vae(&meta))))
}

fn describe_vae(meta: &VaeMeta) -> String {
    format!(
        "VAE (latent {}, width {}), {} epochs on D_G ({} real records), final loss {:.2} per image",
        meta.latent, meta.width, meta.epochs, meta.train_records, meta.final_loss
    )
}

/// Train or resume a task model (labeler, helper).
#[allow(clippy::too_many_arguments)]
fn task_model(
    role: &str,
    config: &PanoramiaConfig,
    data: &Records,
    classes: i64,
    key: u64,
    out: &Path,
    fp: &str,
    rnd: &Randomness,
    device: Device,
    progress: &mut dyn Progress,
) -> Result<Box<dyn Model>> {
    let path = out.join(format!("{role}.safetensors"));
    let meta = TaskMeta {
        format: "dpaudit-task-model/1".into(),
        role: role.into(),
        model: config.helper.model.clone(),
        sample_shape: data.shape.clone(),
        classes,
        fingerprint: fp.into(),
    };
    if let Some(m) = task::load_model(&path, &meta, device)? {
        progress.stage(role, "found in the out-dir, not retrained");
        return Ok(m);
    }
    progress.stage(role, &format!("training on {} records", data.len()));
    let model = task::new_model(
        &config.helper.model,
        &data.shape,
        classes,
        rnd.stream(Stream::Init).child(key),
        device,
    )?;
    let fit = config.helper.fit();
    let epochs = fit.epochs;
    task::fit_model(
        model.as_ref(),
        data,
        &fit,
        rnd.stream(Stream::Sampler).child(key),
        device,
        role,
        &mut |e, l| progress.epoch(role, e, epochs, "loss", l),
    )?;
    task::save_model(model.as_ref(), &path, &meta)?;
    Ok(model)
}

/// Train a membership classifier (baseline or MIA) and score the audit set.
#[allow(clippy::too_many_arguments)]
fn membership_scores(
    name: &str,
    config: &PanoramiaConfig,
    shape: [i64; 3],
    train: (&Records, &[bool], &[[f64; 2]]),
    validation: (&Records, &[bool], &[[f64; 2]]),
    audit: (&Records, &[[f64; 2]]),
    rnd: &Randomness,
    device: Device,
    progress: &mut dyn Progress,
) -> Result<(FitReport, Vec<f64>)> {
    let mut init = HostInit::new(rnd.stream(Stream::Init).child(keys::CLASSIFIER), device);
    let mut net = MembershipNet::new(&mut init, shape, true)?;
    let epochs = config.classifier.epochs;
    let fit = classifier::fit(
        &mut net,
        &Labelled {
            data: train.0,
            labels: train.1,
            side: Some(train.2),
        },
        &Labelled {
            data: validation.0,
            labels: validation.1,
            side: Some(validation.2),
        },
        &config.classifier,
        rnd.stream(Stream::Sampler).child(keys::CLASSIFIER),
        device,
        name,
        &mut |e, a| progress.epoch(name, e, epochs, "validation accuracy", a),
    )?;
    let scores = net.scores(audit.0, Some(audit.1), device)?;
    Ok((fit, scores))
}

fn quality_check(
    config: &PanoramiaConfig,
    data: &Data,
    pools: &Pools,
    shape: [i64; 3],
    rnd: &Randomness,
    device: Device,
    progress: &mut dyn Progress,
) -> Result<Quality> {
    let n = data.d_g.len().min(pools.quality.len());
    let n_test = (n / 5).max(1).min(n.saturating_sub(1));
    let n_train = n - n_test;
    let real_tr = data.d_g.range(0, n_train);
    let real_te = data.d_g.range(n_train, n_test);
    let gen_tr = pools.quality.range(0, n_train);
    let gen_te = pools.quality.range(n_train, n_test);
    let train = real_tr.concat(&gen_tr);
    let test = real_te.concat(&gen_te);
    let labels = |k: usize| -> Vec<bool> { (0..2 * k).map(|i| i < k).collect() };
    let (ytr, yte) = (labels(n_train), labels(n_test));
    let mut init = HostInit::new(rnd.stream(Stream::Init).child(keys::QUALITY), device);
    let mut net = MembershipNet::new(&mut init, shape, false)?;
    let epochs = config.quality.epochs;
    let fit = classifier::fit(
        &mut net,
        &Labelled {
            data: &train,
            labels: &ytr,
            side: None,
        },
        &Labelled {
            data: &test,
            labels: &yte,
            side: None,
        },
        &config.quality,
        rnd.stream(Stream::Sampler).child(keys::QUALITY),
        device,
        "quality check",
        &mut |e, a| progress.epoch("quality check", e, epochs, "held-out accuracy", a),
    )?;
    Ok(Quality {
        // The last epoch's held-out accuracy: no selection on the held-out set.
        accuracy: fit.validation_accuracy.last().copied().unwrap_or(f64::NAN),
        train_per_class: n_train,
        test_per_class: n_test,
        accuracy_per_epoch: fit.validation_accuracy,
    })
}

/// Guard the out-dir: `config.json` holds this config's fingerprint.
fn guard_out_dir(config: &PanoramiaConfig, out: &Path, fp: &str) -> Result<()> {
    std::fs::create_dir_all(out).map_err(|e| out_err(out, format!("cannot create: {e}")))?;
    let path = out.join("config.json");
    if path.exists() {
        let v: Option<serde_json::Value> = read_json(&path);
        let theirs = v
            .as_ref()
            .and_then(|v| v.get("fingerprint"))
            .and_then(|f| f.as_str())
            .map(str::to_string);
        if theirs.as_deref() != Some(fp) {
            return Err(out_err(
                &path,
                format!(
                    "belongs to another config (fingerprint {} vs this config's {fp}): use another --out-dir",
                    theirs.unwrap_or_else(|| "unreadable".into())
                ),
            ));
        }
        return Ok(());
    }
    write_json(
        &path,
        &serde_json::json!({"format": FORMAT, "fingerprint": fp, "config": config}),
    )
}

/// Run the pipeline for `config` (read from `file`, named in errors) with
/// its state in `out`.
pub fn run(
    config: &PanoramiaConfig,
    file: &str,
    out: &Path,
    progress: &mut dyn Progress,
) -> Result<AuditReport> {
    config.validate(file)?;
    let fp = config.fingerprint();
    // The lock is held until the pipeline returns: a second process on this
    // out-dir is refused with the holder's pid and host, and an unwritable
    // out-dir is refused before anything is computed.
    let _lock =
        dpaudit_experiment::outdir::OutDir::open(out, &format!("dpaudit panoramia {file}"))?;
    guard_out_dir(config, out, &fp)?;
    let device = trainer::resolve_device(config.device, "device")?;
    let rnd = Randomness::replayable(config.seed);

    // Targets and data.
    progress.stage(
        "targets",
        "resolving targets (calibrating noise multipliers, loading checkpoints)",
    );
    let mut targets = resolve_targets(config, file, device)?;
    let first = targets
        .first()
        .map(|t| t.train.clone())
        .ok_or_else(|| config_err(file, "target", "none", "at least one [[target]]"))?;
    let data = split_data(config, file, &first, &rnd)?;
    progress.stage(
        "data",
        &format!(
            "D_f = {} records ({}), test split {} records",
            data.d_f.len(),
            data.source,
            data.test.len()
        ),
    );
    let members = data.in_tr.concat(&data.in_val).concat(&data.in_te);
    for t in targets.iter().skip(1) {
        let (train, _, _) = raw_data(&t.train)?;
        let theirs = Records::from_dataset(&train);
        if theirs.shape != data.d_f.shape {
            return Err(PanoramiaError::Checkpoint {
                path: t
                    .checkpoint
                    .as_ref()
                    .map_or_else(|| format!("target `{}`", t.cfg.name), |p| p.display().to_string()),
                reason: format!(
                    "trained on records of shape {:?}: expected {:?}, the shape of target[0]'s data",
                    theirs.shape, data.d_f.shape
                ),
            });
        }
        let set = keyset(&theirs);
        let missing = (0..members.len())
            .filter(|&i| !set.contains(&members.record_hash(i)))
            .count();
        if missing > 0 {
            return Err(PanoramiaError::NotMembers {
                target: t.cfg.name.clone(),
                missing,
                members: members.len(),
                detail: format!(
                    "it was trained on {} records of {:?} (train_size {:?}, seed {}), the members come from target[0]'s training set",
                    theirs.len(),
                    t.train.data.dataset,
                    t.train.data.train_size,
                    t.train.seed
                ),
            });
        }
    }
    let shape = vae::image_shape(&data.d_f.shape, "data")?;
    let classes = data.classes;

    // Phase 1: generator, generated pools, labels, helper.
    let gen = generator(config, file, &data, out, &fp, &rnd, device, progress)?;
    let quality_n = data.d_g.len();
    let pool_key = rnd.stream(Stream::Generator).child(keys::GENERATOR + 1);
    let mut filter = match (&gen, &config.filter) {
        (Some((g, _)), Some(cfg)) => {
            // The real records the quality check trains on (its held-out
            // ones stay unseen by the filter).
            let held_out = (quality_n / 5).max(1).min(quality_n.saturating_sub(1));
            let real = data.d_g.range(0, quality_n - held_out);
            let stage = filter::Stage {
                file,
                config: cfg,
                real: &real,
                generator: g,
                pool_key,
                init: rnd.stream(Stream::Init).child(keys::FILTER),
                batches: rnd.stream(Stream::Sampler).child(keys::FILTER),
                path: &out.join("filter.safetensors"),
                fingerprint: &fp,
                device,
            };
            Some(filter::obtain(&stage, progress)?)
        }
        _ => None,
    };
    let (mut pools, generator_text) = match &gen {
        Some((g, text)) => (
            generated_pools(g, filter.as_mut(), config, file, pool_key, device, quality_n)?,
            text.clone(),
        ),
        None => (
            holdout_pools(config, file, &data.test, &rnd, quality_n)?,
            "real_holdout: the data distribution itself (held-out real records with their true labels; a control, c = 0)".to_string(),
        ),
    };
    let plots = out.join("plots");
    if let Some((g, _)) = &gen {
        // With a filter, the first 64 records of the quality check's pool
        // (filtered like every generated set; a separate 64-record draw can
        // run out of candidates where the large pools do not).
        let grid = match filter {
            Some(_) => pools.quality.range(0, pools.quality.len().min(64)),
            None => g.draw(64, pool_key, keys::POOL_GRID, device)?,
        };
        write_atomic(
            &plots.join("samples.png"),
            &figures::grid_png(&grid.x, grid.len(), &data.d_f.shape, 8)?,
        )?;
        let n = data.d_g.len().min(64);
        write_atomic(
            &plots.join("real.png"),
            &figures::grid_png(&data.d_g.x, n, &data.d_f.shape, 8)?,
        )?;
    }
    let norm = data.norm.as_ref();
    let mut labeler_accuracy = None;
    let mut label_agreement = None;
    if gen.is_some() {
        let d_g_norm = data.d_g.normalized(norm);
        let labeler = task_model(
            "labeler",
            config,
            &d_g_norm,
            classes,
            keys::LABELER,
            out,
            &fp,
            &rnd,
            device,
            progress,
        )?;
        labeler_accuracy = Some(task::accuracy(
            labeler.as_ref(),
            &data.test.normalized(norm),
            device,
        )?);
        let (mut agree, mut drawn) = (0usize, 0usize);
        for pool in [
            &mut pools.helper,
            &mut pools.out_tr,
            &mut pools.out_val,
            &mut pools.out_te,
        ] {
            let labels = task::predict(labeler.as_ref(), &pool.normalized(norm), device)?;
            for (&given, &seen) in pool.y.iter().zip(&labels) {
                if given >= 0 {
                    drawn += 1;
                    agree += usize::from(given == seen);
                }
            }
            if !config.generator.labels_from_generator() {
                pool.y = labels;
            }
        }
        if drawn > 0 {
            label_agreement = Some(agree as f64 / drawn as f64);
        }
    }
    let helper = task_model(
        "helper",
        config,
        &pools.helper.normalized(norm),
        classes,
        keys::HELPER,
        out,
        &fp,
        &rnd,
        device,
        progress,
    )?;

    // The generator's quality.
    let quality_path = out.join("quality.json");
    let quality = match read_json::<Quality>(&quality_path) {
        Some(q) => {
            progress.stage("quality", "found in the out-dir");
            q
        }
        None => {
            progress.stage("quality", "real D_G vs generated, held-out accuracy");
            let q = quality_check(config, &data, &pools, shape, &rnd, device, progress)?;
            write_json(&quality_path, &q)?;
            q
        }
    };

    // The audit game (Definition 2): a fair coin per index.
    let m = config.split.audit;
    let s = coins(m, rnd.stream(Stream::Membership).child(keys::GAME));
    let pick: Vec<Records> = (0..m)
        .map(|i| {
            if s[i] {
                data.in_te.range(i, 1)
            } else {
                pools.out_te.range(i, 1)
            }
        })
        .collect();
    let mut audit = Records {
        x: Vec::with_capacity(m * data.d_f.record_len()),
        y: Vec::with_capacity(m),
        shape: data.d_f.shape.clone(),
    };
    for p in &pick {
        audit.x.extend_from_slice(&p.x);
        audit.y.extend_from_slice(&p.y);
    }
    let train_set = data.in_tr.concat(&pools.out_tr);
    let y_train: Vec<bool> = (0..train_set.len()).map(|i| i < data.in_tr.len()).collect();
    let val_set = data.in_val.concat(&pools.out_val);
    let y_val: Vec<bool> = (0..val_set.len()).map(|i| i < data.in_val.len()).collect();
    let (train_n, val_n, audit_n) = (
        train_set.normalized(norm),
        val_set.normalized(norm),
        audit.normalized(norm),
    );

    // Baseline: x and the helper's loss.
    let baseline_path = out.join("baseline.json");
    let baseline = match read_json::<ScoresFile>(&baseline_path) {
        Some(b) if b.fingerprint == fp && b.scores.len() == m => {
            progress.stage("baseline", "found in the out-dir");
            b
        }
        _ => {
            progress.stage("baseline", "training b on (x, loss of h)");
            let side = |r: &Records| -> Result<Vec<[f64; 2]>> {
                Ok(loss_features(&task::losses(helper.as_ref(), r, device)?))
            };
            let (fit, scores) = membership_scores(
                "baseline",
                config,
                shape,
                (&train_set, &y_train, &side(&train_n)?),
                (&val_set, &y_val, &side(&val_n)?),
                (&audit, &side(&audit_n)?),
                &rnd,
                device,
                progress,
            )?;
            let b = ScoresFile {
                format: FORMAT.into(),
                fingerprint: fp.clone(),
                fit,
                scores,
            };
            write_json(&baseline_path, &b)?;
            b
        }
    };
    let measure_cfg = MeasureConfig {
        confidence: config.confidence,
        selection: config.threshold_selection(),
    };
    let baseline_obs = Observations::new(baseline.scores.clone(), s.clone())?;

    // Per target: the MIA, the measurement, the one-run audit.
    let test_n = data.test.normalized(norm);
    let d_f_n = data.d_f.normalized(norm);
    let o1_pairs = m.min(data.test.len());
    let real_perm = permutation(
        data.test.len(),
        rnd.stream(Stream::Split).child(keys::SPLIT_REAL_NONMEMBERS),
    );
    let s_o1 = coins(
        o1_pairs,
        rnd.stream(Stream::Membership).child(keys::GAME_O1),
    );
    let mut o1_set = Records {
        x: Vec::new(),
        y: Vec::new(),
        shape: data.d_f.shape.clone(),
    };
    for (i, &si) in s_o1.iter().enumerate() {
        let (src, j) = if si {
            (&data.in_te, i)
        } else {
            (&data.test, real_perm[i])
        };
        o1_set.x.extend_from_slice(src.record(j));
        o1_set.y.push(src.y[j]);
    }
    let o1_n = o1_set.normalized(norm);
    let mut results = Vec::new();
    std::fs::create_dir_all(out.join("targets")).map_err(|e| out_err(&out.join("targets"), e))?;
    for t in targets.iter_mut() {
        let name = t.cfg.name.clone();
        let result_path = out.join("targets").join(format!("{name}.json"));
        if let Some(r) = read_json::<TargetResult>(&result_path) {
            if r.fingerprint == fp && r.mia_scores.len() == m {
                progress.stage(&format!("target {name}"), "found in the out-dir");
                results.push(r);
                continue;
            }
        }
        // The model.
        let (model, meta) = match t.loaded.take() {
            Some(l) => (l.model, l.meta),
            None => {
                let path = out.join("targets").join(format!("{name}.safetensors"));
                let resumed = checkpoint::load(&path, device)
                    .ok()
                    .filter(|l| l.meta.config == t.train);
                match resumed {
                    Some(l) => {
                        progress.stage(
                            &format!("target {name}"),
                            "model found in the out-dir, not retrained",
                        );
                        (l.model, l.meta)
                    }
                    None => {
                        progress.stage(
                            &format!("target {name}"),
                            &format!(
                                "training {:?} with DP-SGD (noise multiplier {:.4}, replayable)",
                                t.train.model, t.train.dp.noise_multiplier
                            ),
                        );
                        let mut relay = StepRelay(progress, name.clone());
                        let outcome = trainer::train(
                            &t.train,
                            &Randomness::replayable(t.train.seed),
                            &mut relay,
                        )?;
                        let meta = outcome.checkpoint_meta(&t.train);
                        checkpoint::save(outcome.model.as_ref(), &path, &meta)?;
                        (outcome.model, meta)
                    }
                }
            }
        };
        progress.stage(
            &format!("target {name}"),
            "MIA on (x, loss of f), one-run audit",
        );
        let train_accuracy = task::accuracy(model.as_ref(), &d_f_n, device)?;
        let test_accuracy = task::accuracy(model.as_ref(), &test_n, device)?;
        let side = |r: &Records| -> Result<Vec<[f64; 2]>> {
            Ok(loss_features(&task::losses(model.as_ref(), r, device)?))
        };
        let (mia_fit, mia_scores) = membership_scores(
            &format!("MIA {name}"),
            config,
            shape,
            (&train_set, &y_train, &side(&train_n)?),
            (&val_set, &y_val, &side(&val_n)?),
            (&audit, &side(&audit_n)?),
            &rnd,
            device,
            progress,
        )?;
        let mia_obs = Observations::new(mia_scores.clone(), s.clone())?;
        let measurement: PanoramiaMeasurement = panoramia(&baseline_obs, &mia_obs, &measure_cfg)?;
        // O(1), real members vs real non-members, score = −loss.
        let o1_scores: Vec<f64> = task::losses(model.as_ref(), &o1_n, device)?
            .into_iter()
            .map(|l| -l)
            .collect();
        let o1: EpsilonLowerBound = one_run_lower_bound(
            &Observations::new(o1_scores, s_o1.clone())?,
            &OneRunConfig {
                confidence: config.confidence,
                delta: 0.0,
                selection: config.threshold_selection(),
                fixed_guesses: None,
                guesses: GuessFamily::WithOneSided,
            },
        )?;
        let r = TargetResult {
            name: name.clone(),
            source: t.checkpoint.as_ref().map_or_else(
                || "trained by this run".to_string(),
                |p| p.display().to_string(),
            ),
            model: format!("{:?}", meta.config.model),
            target_mode: meta.mode.name().to_string(),
            noise_multiplier: meta.config.dp.noise_multiplier,
            requested_epsilon: t.requested_epsilon,
            accountant_epsilon: meta.epsilon,
            delta: meta.config.delta,
            accounting: meta.accounting.clone(),
            train_accuracy,
            test_accuracy,
            mia_fit,
            mia_scores,
            epsilon_tilde: measurement.epsilon_tilde.value,
            c_lb: measurement.c_lb,
            c_plus_epsilon_lb: measurement.c_plus_epsilon_lb,
            measurement: serde_json::to_value(&measurement)
                .map_err(|e| out_err(&result_path, e))?,
            o1_epsilon: o1.epsilon,
            o1: serde_json::to_value(&o1).map_err(|e| out_err(&result_path, e))?,
            o1_pairs,
            fingerprint: fp.clone(),
        };
        write_json(&result_path, &r)?;
        results.push(r);
    }

    // Report.
    let audit_members = s.iter().filter(|&&b| b).count();
    let c_lb = results.first().map_or(0.0, |r| r.c_lb);
    let c_lb_ceiling = results
        .first()
        .and_then(|t| t.measurement.get("baseline")?.get("ceiling")?.as_f64());
    let report = AuditReport {
        format: FORMAT.into(),
        mode: rnd.mode(),
        mode_meaning: rnd.mode().describe().into(),
        epsilon_tilde_meaning: EpsilonTilde::MEANING.into(),
        fingerprint: fp.clone(),
        data_source: data.source.clone(),
        synthetic_data: data.synthetic,
        target_training_records: data.d_f.len(),
        split: config.split.clone(),
        audit_members,
        confidence: config.confidence,
        selection: measure_cfg.selection.name().to_string(),
        selection_valid: measure_cfg.selection.is_valid(),
        generator: generator_text,
        quality,
        filter: filter.map(|f| f.report().clone()),
        generator_label_agreement: label_agreement,
        generated_labels: match (&config.generator, config.generator.labels_from_generator()) {
            (GeneratorConfig::RealHoldout, _) => "their true labels (real held-out records)",
            (_, true) => "the class the conditional generator drew each record for",
            (_, false) => "the labeler's predictions",
        }
        .to_string(),
        labeler_accuracy,
        baseline_fit: baseline.fit.clone(),
        c_lb,
        c_lb_ceiling,
        targets: results,
    };
    write_json(&out.join("audit.json"), &report)?;
    let baseline_pr = figures::precision_recall(&baseline.scores, &s);
    for r in &report.targets {
        let mia_pr = figures::precision_recall(&r.mia_scores, &s);
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
        let svg = figures::pr_svg(
            &format!(
                "PANORAMIA, target {}: precision–recall on the audit set (m = {m})",
                r.name
            ),
            &[
                PrSeries {
                    label: format!("baseline b (x, loss of h): c_lb = {:.3}", r.c_lb),
                    color: "#1f77b4",
                    points: &baseline_pr,
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
        );
        write_atomic(&plots.join(format!("pr-{}.svg", r.name)), svg.as_bytes())?;
    }
    write_atomic(&out.join("summary.md"), summary(&report).as_bytes())?;
    Ok(report)
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "∞ (no DP)".to_string(), |e| format!("{e:.3}"))
}

/// `summary.md`.
pub fn summary(r: &AuditReport) -> String {
    let mut s = String::new();
    use std::fmt::Write as _;
    let _ = writeln!(s, "# PANORAMIA audit\n");
    let _ = writeln!(s, "**ε̃ meaning.** {}.\n", r.epsilon_tilde_meaning);
    let _ = writeln!(
        s,
        "- data: {} ({}), D_f = {} training records of the target",
        r.data_source,
        if r.synthetic_data {
            "SYNTHETIC stand-in"
        } else {
            "real"
        },
        r.target_training_records
    );
    let _ = writeln!(
        s,
        "- split: D_G = {}, helper's generated set = {}, classifier train = {} + {} generated, validation = {} + {} generated, audit m = {} ({} members by the coins)",
        r.split.generator,
        r.split.helper,
        r.split.classifier_train,
        r.split.classifier_train,
        r.split.classifier_validation,
        r.split.classifier_validation,
        r.split.audit,
        r.audit_members
    );
    let _ = writeln!(s, "- generator: {}", r.generator);
    let _ = writeln!(
        s,
        "- generator quality: a classifier tells real D_G from generated records with held-out accuracy {:.3} (0.5 = indistinguishable; {} + {} held out)",
        r.quality.accuracy, r.quality.test_per_class, r.quality.test_per_class
    );
    if let Some(f) = &r.filter {
        let _ = writeln!(
            s,
            "- filter (Kazmi et al. 2024, App. B.1): a real-vs-generated classifier (validation accuracy {:.3}, {} + {} records) kept {} of {} generated candidates ({:.1} %) with P(generated) < {}",
            f.fit.best_validation_accuracy,
            f.validation_per_class,
            f.validation_per_class,
            f.kept,
            f.drawn,
            100.0 * f.keep_rate(),
            f.threshold
        );
    }
    let _ = writeln!(s, "- labels of generated records: {}", r.generated_labels);
    if let Some(a) = r.generator_label_agreement {
        let _ = writeln!(
            s,
            "- the labeler gives {:.1} % of generated records the class the generator drew them for",
            100.0 * a
        );
    }
    if let Some(a) = r.labeler_accuracy {
        let _ = writeln!(
            s,
            "- labeler (labels generated images): test accuracy {a:.3}"
        );
    }
    let _ = writeln!(
        s,
        "- confidence {} (each test at {:.3}), threshold selection `{}`{}",
        r.confidence,
        (1.0 - r.confidence) / 2.0,
        r.selection,
        if r.selection_valid {
            ""
        } else {
            " (the paper's practice: the best threshold on the audit set itself; NOT valid at the stated confidence)"
        }
    );
    let _ = writeln!(
        s,
        "- baseline: validation accuracy {:.3} (epoch {}), c_lb = {:.4}",
        r.baseline_fit.best_validation_accuracy, r.baseline_fit.best_epoch, r.c_lb
    );
    if let Some(ceil) = r.c_lb_ceiling {
        let _ = writeln!(
            s,
            "- ceiling: with {} audit members no bound can exceed {ceil:.4} at this level",
            r.audit_members
        );
        if ceil > 0.0 && r.c_lb >= 0.99 * ceil {
            let _ = writeln!(
                s,
                "- **c_lb is at the ceiling**: the baseline tells (almost) every member from generated data, so no target \
                 can show {{c+ε}}_lb above it and ε̃ is 0 whatever the target leaks (Kazmi et al. 2024, §C.3: the synthetic \
                 data is not good enough). A better generator (quality accuracy nearer 0.5) or a larger audit set is needed."
            );
        }
    }
    let _ = writeln!(s, "- randomness: {}\n", r.mode_meaning);
    let _ = writeln!(
        s,
        "| target | accountant ε (δ) | σ | train acc | test acc | c_lb | {{c+ε}}_lb | ε̃ (not a bound) | O(1) ε lower bound, RM;RN (δ = 0) |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|");
    for t in &r.targets {
        let _ = writeln!(
            s,
            "| {} | {} ({:.0e}) | {:.3} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} (m = {}) |",
            t.name,
            opt(t.accountant_epsilon),
            t.delta,
            t.noise_multiplier,
            t.train_accuracy,
            t.test_accuracy,
            t.c_lb,
            t.c_plus_epsilon_lb,
            t.epsilon_tilde,
            t.o1_epsilon,
            t.o1_pairs
        );
    }
    let _ = writeln!(
        s,
        "\nPlots: `plots/pr-<target>.svg` (precision–recall of b and the MIA, with the points giving c_lb and {{c+ε}}_lb), `plots/samples.png` (generated), `plots/real.png` (D_G)."
    );
    s
}
