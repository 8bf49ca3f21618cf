//! Stage "targets": resolve each `[[target]]` (calibrate its noise
//! multiplier, or load its checkpoint) and obtain each target model `f`
//! (given, resumed from the out-dir, or trained with DP-SGD). That every
//! target saw the audit's members is checked by the data stage
//! (`data::check_members`), once `D_f` is split.

use std::path::{Path, PathBuf};

use dpaudit_data::dataset::{Dataset, Normalization};
use dpaudit_data::sampler::claim::{self, Participation};
use dpaudit_data::sampler::{BatchSampler, Sampler};
use dpaudit_data::seed::{Randomness, RunSeed, Stream};
use dpaudit_train::checkpoint::{self, CheckpointMeta};
use dpaudit_train::config::TrainConfig;
use dpaudit_train::models::Model;
use dpaudit_train::trainer;
use tch::Device;

use super::context::{Run, StepRelay};
use super::Progress;
use crate::config::TargetConfig;
use crate::error::{config_err, PanoramiaError, Result};

/// A target with its training config and (once loaded) model.
pub(super) struct Resolved {
    pub cfg: TargetConfig,
    pub train: TrainConfig,
    pub checkpoint: Option<PathBuf>,
    pub loaded: Option<checkpoint::Loaded>,
    pub requested_epsilon: Option<f64>,
}

/// Raw (un-normalised) train and test splits of a training config, and the
/// normalisation the model saw.
pub(super) fn raw_data(cfg: &TrainConfig) -> Result<(Dataset, Dataset, Option<Normalization>)> {
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

/// Every target, checkpoints loaded and noise multipliers calibrated.
pub(super) fn resolve(run: &Run<'_>, progress: &mut dyn Progress) -> Result<Vec<Resolved>> {
    progress.stage(
        "targets",
        "resolving targets (calibrating noise multipliers, loading checkpoints)",
    );
    let file = run.file;
    let mut out = Vec::new();
    for (i, t) in run.config.targets.iter().enumerate() {
        if let Some(path) = &t.checkpoint {
            out.push(load(t, path, i, file, run.device)?);
            continue;
        }
        let Some(train) = &t.train else { continue };
        let mut train = train.clone();
        if let Some(eps) = t.epsilon {
            train.dp.noise_multiplier = calibrate(&train, eps, i, file, progress)?;
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

/// A target given as a checkpoint (`target[i].checkpoint`).
fn load(t: &TargetConfig, path: &Path, i: usize, file: &str, device: Device) -> Result<Resolved> {
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
    Ok(Resolved {
        cfg: t.clone(),
        train: loaded.meta.config.clone(),
        checkpoint: Some(path.to_path_buf()),
        loaded: Some(loaded),
        requested_epsilon: None,
    })
}

/// The noise multiplier that reaches `eps` (`target[i].epsilon`): the
/// sampler's own claim (`dpaudit_data::sampler::claim`, the accounting
/// `dpaudit train` reports for the same config) calibrated, never a rate
/// computed here. Shuffle-type samplers are accounted as Poisson with
/// q = B/n there, flagged as not a valid bound; the progress line says so.
fn calibrate(
    train: &TrainConfig,
    eps: f64,
    i: usize,
    file: &str,
    progress: &mut dyn Progress,
) -> Result<f64> {
    let (d, _) = trainer::prepare_data(train)?;
    let sampler = train.sampler.build(d.len())?;
    // The fixed public sequence does not depend on the run's sampler key.
    let key = RunSeed(train.seed).stream(Stream::Sampler);
    let (cal, claim) = claim::calibrate(
        Participation::Sampled {
            sampler: &sampler,
            key,
        },
        steps_of(train, &sampler),
        train.delta,
        eps,
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
    if !claim.valid_for_sampler {
        progress.stage(
            "targets",
            &format!(
                "target[{i}]: σ = {:.4} calibrated to ε = {eps} as {}",
                cal.noise_multiplier, claim.assumption
            ),
        );
    }
    Ok(cal.noise_multiplier)
}

/// The target's model: the loaded checkpoint, the one in the out-dir
/// (`targets/<name>.safetensors`, same training config), or trained here.
pub(super) fn model(
    run: &Run<'_>,
    t: &mut Resolved,
    progress: &mut dyn Progress,
) -> Result<(Box<dyn Model>, CheckpointMeta)> {
    if let Some(l) = t.loaded.take() {
        return Ok((l.model, l.meta));
    }
    let name = t.cfg.name.clone();
    let path = run.out.join("targets").join(format!("{name}.safetensors"));
    let resumed = checkpoint::load(&path, run.device)
        .ok()
        .filter(|l| l.meta.config == t.train);
    if let Some(l) = resumed {
        progress.stage(
            &format!("target {name}"),
            "model found in the out-dir, not retrained",
        );
        return Ok((l.model, l.meta));
    }
    progress.stage(
        &format!("target {name}"),
        &format!(
            "training {:?} with DP-SGD (noise multiplier {:.4}, replayable)",
            t.train.model, t.train.dp.noise_multiplier
        ),
    );
    let mut relay = StepRelay(progress, name);
    let outcome = trainer::train(&t.train, &Randomness::replayable(t.train.seed), &mut relay)?;
    let meta = outcome.checkpoint_meta(&t.train);
    checkpoint::save(outcome.model.as_ref(), &path, &meta)?;
    Ok((outcome.model, meta))
}
