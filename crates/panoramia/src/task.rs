//! Models of the target's task and architecture: the labeler (trained on
//! real `D_G`, it labels generated images), the helper `h` (trained on
//! generated images only, Kazmi et al. 2024 §5.1 and Table 3), and the
//! per-record losses of the target `f` and of `h` that the MIA and the
//! baseline see. These are ordinary, non-private models (Adam on
//! cross-entropy); their parameters start from the run's own generator.

use dpaudit_data::seed::SeedKey;
use dpaudit_train::config::ModelConfig;
use dpaudit_train::init::Init;
use dpaudit_train::layers::Tape;
use dpaudit_train::models::Model;
use dpaudit_train::trainer::build_model;
use tch::{Device, Kind, Tensor};

use crate::config::FitConfig;
use crate::error::{PanoramiaError, Result};
use crate::nn::{read_meta, save_tensors, to_host, Adam};
use crate::records::{epoch_batches, Records};

/// `[n, shape…]` records as the `[n, 1, shape…]` input of a one-replica model.
fn model_input(data: &Records, idx: &[usize], device: Device) -> Result<Tensor> {
    data.batch(idx, device)?
        .f_unsqueeze(1)
        .map_err(PanoramiaError::torch("shaping a model input"))
}

fn logits(model: &dyn Model, x: &Tensor) -> Result<Tensor> {
    // [n, 1, classes] → [n, classes]
    model
        .forward(x, &mut Tape::off())?
        .f_select(1, 0)
        .map_err(PanoramiaError::torch("selecting the one replica's logits"))
}

/// A fresh one-replica model of `config` for records of `shape`.
pub fn new_model(
    config: &ModelConfig,
    shape: &[usize],
    classes: i64,
    key: SeedKey,
    device: Device,
) -> Result<Box<dyn Model>> {
    let mut init = Init::for_runs(key, &[0], device);
    Ok(build_model(config, shape, classes, &mut init)?)
}

/// Train `model` on `data` (normalised inputs, labels in `0..classes`) with
/// Adam; `on_epoch(epoch, mean loss)`.
pub fn fit_model(
    model: &dyn Model,
    data: &Records,
    fit: &FitConfig,
    key: SeedKey,
    device: Device,
    name: &str,
    on_epoch: &mut dyn FnMut(u64, f64),
) -> Result<()> {
    let params: Vec<Tensor> = model
        .named_parameters()
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    let mut adam = Adam::new(fit.learning_rate);
    for epoch in 0..fit.epochs {
        let mut total = 0.0;
        for idx in epoch_batches(data.len(), fit.batch_size, key, epoch) {
            let x = model_input(data, &idx, device)?;
            let y: Vec<i64> = idx.iter().map(|&i| data.y[i]).collect();
            let y = Tensor::f_from_slice(&y)
                .and_then(|t| t.f_to_device(device))
                .map_err(PanoramiaError::torch("moving labels"))?;
            let loss = logits(model, &x)?
                .f_cross_entropy_loss::<Tensor>(&y, None, tch::Reduction::Mean, -100, 0.0)
                .map_err(PanoramiaError::torch(format!("the {name}'s forward pass")))?;
            loss.f_backward()
                .map_err(PanoramiaError::torch(format!("the {name}'s backward pass")))?;
            adam.step(&params)?;
            total += loss.f_double_value(&[]).unwrap_or(f64::NAN) * idx.len() as f64;
        }
        let mean = total / data.len().max(1) as f64;
        if !mean.is_finite() {
            return Err(PanoramiaError::NonFinite {
                model: name.to_string(),
                epoch: epoch + 1,
                value: mean,
            });
        }
        on_epoch(epoch + 1, mean);
    }
    Ok(())
}

/// Per-record cross-entropy `−log softmax(f(x))_y` (no gradient).
pub fn losses(model: &dyn Model, data: &Records, device: Device) -> Result<Vec<f64>> {
    let mut out = Vec::with_capacity(data.len());
    tch::no_grad(|| -> Result<()> {
        for start in (0..data.len()).step_by(1024) {
            let idx: Vec<usize> = (start..(start + 1024).min(data.len())).collect();
            let x = model_input(data, &idx, device)?;
            let y: Vec<i64> = idx.iter().map(|&i| data.y[i]).collect();
            let y = Tensor::f_from_slice(&y)
                .and_then(|t| t.f_to_device(device))
                .and_then(|y| y.f_unsqueeze(1))
                .map_err(PanoramiaError::torch("moving labels"))?;
            let l = logits(model, &x)?
                .f_log_softmax(-1, Kind::Double)
                .and_then(|lp| lp.f_gather(1, &y, false))
                .and_then(|g| g.f_neg())
                .map_err(PanoramiaError::torch("computing per-record losses"))?;
            out.extend(to_host(&l)?);
        }
        Ok(())
    })?;
    Ok(out)
}

/// The model's predicted class of every record.
pub fn predict(model: &dyn Model, data: &Records, device: Device) -> Result<Vec<i64>> {
    let mut out = Vec::with_capacity(data.len());
    tch::no_grad(|| -> Result<()> {
        for start in (0..data.len()).step_by(1024) {
            let idx: Vec<usize> = (start..(start + 1024).min(data.len())).collect();
            let x = model_input(data, &idx, device)?;
            let p = logits(model, &x)?
                .f_argmax(-1, false)
                .and_then(|p| p.f_to_device(Device::Cpu))
                .map_err(PanoramiaError::torch("predicting classes"))?;
            out.extend(
                Vec::<i64>::try_from(p).map_err(PanoramiaError::torch("predicting classes"))?,
            );
        }
        Ok(())
    })?;
    Ok(out)
}

/// Fraction of records whose predicted class is their label.
pub fn accuracy(model: &dyn Model, data: &Records, device: Device) -> Result<f64> {
    let pred = predict(model, data, device)?;
    let hits = pred.iter().zip(&data.y).filter(|(p, y)| p == y).count();
    Ok(hits as f64 / data.len().max(1) as f64)
}

/// Metadata of a saved labeler or helper.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskMeta {
    /// `dpaudit-task-model/1`.
    pub format: String,
    /// `labeler` or `helper`.
    pub role: String,
    /// Architecture.
    pub model: ModelConfig,
    /// One record's shape.
    pub sample_shape: Vec<usize>,
    /// Classes.
    pub classes: i64,
    /// Fingerprint of the pipeline state it belongs to.
    pub fingerprint: String,
}

/// Save a labeler or helper (one replica, PyTorch parameter names).
pub fn save_model(model: &dyn Model, path: &std::path::Path, meta: &TaskMeta) -> Result<()> {
    let json = serde_json::to_string(meta).map_err(|e| PanoramiaError::Checkpoint {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    save_tensors(path, &model.named_parameters(), &json)
}

/// Load a model saved by [`save_model`] if it exists and its metadata is
/// `expected`; `Ok(None)` when absent or stale (it is then retrained).
pub fn load_model(
    path: &std::path::Path,
    expected: &TaskMeta,
    device: Device,
) -> Result<Option<Box<dyn Model>>> {
    if !path.exists() {
        return Ok(None);
    }
    let Ok((bytes, meta)) = read_meta(path) else {
        return Ok(None);
    };
    match serde_json::from_str::<TaskMeta>(&meta) {
        Ok(m) if &m == expected => {}
        _ => return Ok(None),
    }
    let model = new_model(
        &expected.model,
        &expected.sample_shape,
        expected.classes,
        dpaudit_data::seed::RunSeed(0).stream(dpaudit_data::seed::Stream::Init),
        device,
    )?;
    crate::nn::load_into(path, &bytes, &model.named_parameters())?;
    Ok(Some(model))
}
