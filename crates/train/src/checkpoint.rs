//! Model checkpoints: safetensors files with PyTorch parameter names and a
//! `__metadata__` entry that says what the weights are and how they were
//! trained — above all the randomness [`Mode`], so a reader knows whether the
//! model's noise can be regenerated from its config.
//!
//! One file holds one model (one replica). The metadata is one key,
//! `"dpaudit"`, whose value is the JSON of [`CheckpointMeta`]: a single key
//! keeps the header's bytes deterministic (safetensors writes its metadata
//! map in hash order), so two replayable runs write byte-identical files.
//! Files are written to a temporary name, synced, and renamed.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use dpaudit_data::seed::Mode;
use safetensors::tensor::{Dtype, SafeTensors, View};
use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

use crate::architecture::build_model;
use crate::config::TrainConfig;
use crate::error::{Result, TrainError};
use crate::init::Init;
use crate::models::Model;

/// The `format` value of this version of the metadata.
pub const FORMAT: &str = "dpaudit-checkpoint/1";

/// The metadata key.
const KEY: &str = "dpaudit";

/// What a checkpoint says about its weights.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointMeta {
    /// [`FORMAT`].
    pub format: String,
    /// The dpaudit version that wrote it.
    pub dpaudit_version: String,
    /// Secure or replayable randomness.
    pub mode: Mode,
    /// The mode in one sentence, for whoever opens the file elsewhere.
    pub mode_meaning: String,
    /// Which replica of the run this file holds.
    pub replica: u64,
    /// The training config (its public `seed` does not determine the sampling
    /// or the noise in secure mode); `config.model` is the architecture and
    /// `config.data` says which records the model was trained on.
    pub config: TrainConfig,
    /// One record's shape (`[C, H, W]` or `[D]`).
    pub sample_shape: Vec<usize>,
    /// Number of classes.
    pub classes: i64,
    /// DP-SGD steps taken.
    pub steps: u64,
    /// The accountant's ε at `config.delta` (None: σ = 0, no privacy).
    pub epsilon: Option<f64>,
    /// What the accountant assumed.
    pub accounting: Option<String>,
    /// Where the training data came from.
    pub data_source: String,
}

impl CheckpointMeta {
    /// The metadata of a model trained with `config` in `mode`; ε and the
    /// accounting are filled in by the caller.
    pub fn new(
        mode: Mode,
        config: TrainConfig,
        sample_shape: Vec<usize>,
        classes: i64,
        steps: u64,
        data_source: String,
    ) -> Self {
        Self {
            format: FORMAT.into(),
            dpaudit_version: env!("CARGO_PKG_VERSION").into(),
            mode,
            mode_meaning: mode.describe().into(),
            replica: 0,
            config,
            sample_shape,
            classes,
            steps,
            epsilon: None,
            accounting: None,
            data_source,
        }
    }
}

/// One parameter as raw little-endian `f32` bytes.
struct Raw {
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl View for &Raw {
    fn dtype(&self) -> Dtype {
        Dtype::F32
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

fn checkpoint_err(path: &Path, reason: impl ToString) -> TrainError {
    TrainError::Checkpoint {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

/// The file replica `r` of an `m`-replica model goes to: `path` itself for one
/// replica, `stem.replica{r}.safetensors` beside it otherwise.
pub fn replica_path(path: &Path, r: i64, m: i64) -> PathBuf {
    if m == 1 {
        return path.to_path_buf();
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    path.with_file_name(format!("{stem}.replica{r}.safetensors"))
}

/// `tensors` as a safetensors file (f32, copied to the host) with `json`
/// under the metadata key `key`; `path` (where it will go) names errors.
pub fn safetensors_bytes(
    path: &Path,
    tensors: &[(String, Tensor)],
    key: &str,
    json: String,
) -> Result<Vec<u8>> {
    let mut raws = Vec::with_capacity(tensors.len());
    for (name, t) in tensors {
        let t = t
            .f_detach()
            .and_then(|t| t.f_to_device(Device::Cpu))
            .and_then(|t| t.f_to_kind(Kind::Float))
            .and_then(|t| t.f_contiguous())
            .map_err(TrainError::torch("copying a tensor to save"))?;
        let shape: Vec<usize> = t.size().iter().map(|&d| d as usize).collect();
        let values = Vec::<f32>::try_from(
            t.f_reshape([-1])
                .map_err(TrainError::torch("flattening a tensor"))?,
        )
        .map_err(TrainError::torch("copying a tensor to save"))?;
        let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        raws.push((name.clone(), Raw { shape, bytes }));
    }
    let info = HashMap::from([(key.to_string(), json)]);
    safetensors::tensor::serialize(raws.iter().map(|(n, r)| (n.as_str(), r)), Some(info))
        .map_err(|e| checkpoint_err(path, e))
}

/// Write every replica of `model` with its metadata (the `replica` field is
/// set per file); returns the files written.
pub fn save(model: &dyn Model, path: &Path, meta: &CheckpointMeta) -> Result<Vec<PathBuf>> {
    let m = model.replicas();
    let params = model.named_parameters();
    let mut written = Vec::new();
    for r in 0..m {
        let file = replica_path(path, r, m);
        let tensors = params
            .iter()
            .map(|(name, t)| {
                Ok((
                    name.clone(),
                    t.f_get(r)
                        .map_err(TrainError::torch("selecting a replica"))?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut meta = meta.clone();
        meta.replica = r as u64;
        let json = serde_json::to_string(&meta).map_err(|e| checkpoint_err(&file, e))?;
        let bytes = safetensors_bytes(&file, &tensors, KEY, json)?;
        write_atomically(&file, &bytes)?;
        written.push(file);
    }
    Ok(written)
}

/// Write `bytes` to `path` whole or not at all, with the mode of an ordinary
/// new file ([`dpaudit_data::atomic::write_atomic`]).
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    dpaudit_data::atomic::write_atomic(path, bytes).map_err(|e| {
        checkpoint_err(
            path,
            format!("{}: {}: {}", e.action, e.path.display(), e.source),
        )
    })
}

/// A checkpoint read back: the model (one replica) and its metadata.
#[derive(Debug)]
pub struct Loaded {
    /// The model with `M = 1`, on `device`.
    pub model: Box<dyn Model>,
    /// What the file says about it.
    pub meta: CheckpointMeta,
}

/// Read a checkpoint written by [`save`]; every parameter must be present
/// with the shape the metadata's architecture has, and nothing else.
pub fn load(path: &Path, device: Device) -> Result<Loaded> {
    let bytes =
        std::fs::read(path).map_err(|e| checkpoint_err(path, format!("unreadable: {e}")))?;
    let st = SafeTensors::deserialize(&bytes)
        .map_err(|e| checkpoint_err(path, format!("not a safetensors file: {e}")))?;
    let (_, header) = SafeTensors::read_metadata(&bytes)
        .map_err(|e| checkpoint_err(path, format!("not a safetensors file: {e}")))?;
    let json = header
        .metadata()
        .as_ref()
        .and_then(|m| m.get(KEY))
        .ok_or_else(|| {
            checkpoint_err(
                path,
                format!("no `{KEY}` metadata: expected a checkpoint written by dpaudit ({FORMAT})"),
            )
        })?;
    let meta: CheckpointMeta = serde_json::from_str(json)
        .map_err(|e| checkpoint_err(path, format!("metadata `{KEY}`: {e}")))?;
    if meta.format != FORMAT {
        return Err(checkpoint_err(
            path,
            format!("format `{}`: expected `{FORMAT}`", meta.format),
        ));
    }
    let mut init = Init::new(0, 1, device);
    let model = build_model(
        &meta.config.model,
        &meta.sample_shape,
        meta.classes,
        &mut init,
    )?;
    let architecture = format!("the architecture in its metadata ({:?})", meta.config.model);
    read_safetensors_into(path, &st, &model.named_parameters(), 1, &architecture)?;
    Ok(Loaded { model, meta })
}

/// Copy the tensors of a safetensors file into `params`, matched by their
/// names: the workspace's one safetensors reader (checkpoints here, and any
/// crate that stores parameters as safetensors, e.g. PANORAMIA's networks).
///
/// `st` must hold exactly the names of `params` (no more), each as little-endian
/// `F32` with the shape of its parameter without the parameter's first `skip`
/// axes (1 for a model with one replica, whose parameters are
/// `[1, <PyTorch shape>]`; 0 for plain tensors). Each is copied, without
/// gradient, to its parameter's device. `architecture` says what the
/// parameters are, in the messages ("… tensors: {architecture} has …",
/// "no tensor …, which {architecture} has"); `path` names the file.
/// Errors: [`TrainError::Checkpoint`] for a file that does not fit,
/// [`TrainError::Torch`] for a copy libtorch refuses.
pub fn read_safetensors_into(
    path: &Path,
    st: &SafeTensors<'_>,
    params: &[(String, Tensor)],
    skip: usize,
    architecture: &str,
) -> Result<()> {
    let stored = st.names().len();
    if stored != params.len() {
        return Err(checkpoint_err(
            path,
            format!("{stored} tensors: {architecture} has {}", params.len()),
        ));
    }
    tch::no_grad(|| -> Result<()> {
        for (name, p) in params {
            let view = st.tensor(name).map_err(|_| {
                checkpoint_err(
                    path,
                    format!("no tensor `{name}`, which {architecture} has"),
                )
            })?;
            let want: Vec<usize> = p.size()[skip.min(p.dim())..]
                .iter()
                .map(|&d| d as usize)
                .collect();
            if view.dtype() != Dtype::F32 || view.shape() != want.as_slice() {
                return Err(checkpoint_err(
                    path,
                    format!(
                        "tensor `{name}` is {:?} {:?}: expected F32 {want:?}",
                        view.dtype(),
                        view.shape()
                    ),
                ));
            }
            let values: Vec<f32> = view
                .data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            let src = Tensor::f_from_slice(&values)
                .and_then(|t| t.f_reshape(p.size()))
                .and_then(|t| t.f_to_device(p.device()))
                .map_err(TrainError::torch("loading a checkpoint tensor"))?;
            p.shallow_clone()
                .f_copy_(&src)
                .map_err(TrainError::torch("loading a checkpoint tensor"))?;
        }
        Ok(())
    })
}
