//! Stage "generator": the generative model `G` (a VAE or a DCGAN) loaded
//! from `generator.checkpoint`, resumed from the out-dir or trained on
//! `D_G`; the optional real-vs-generated filter; the sample grids.
//!
//! A new generator kind: its model file beside [`crate::vae`] /
//! [`crate::dcgan`], a [`Generator`] variant (its `draw`), a
//! [`GeneratorConfig`] variant, and its arm in [`obtain`].

use std::path::Path;

use dpaudit_data::seed::Stream;
use tch::Device;

use super::context::{keys, Run};
use super::data::{pool_key, Data, Pools};
use super::{quality, Progress};
use crate::config::{FitConfig, GeneratorConfig, GeneratorModel};
use crate::dcgan;
use crate::error::{out_err, PanoramiaError, Result};
use crate::figures;
use crate::filter::{self, Filter, Generator};
use crate::nn::{load_into, read_meta, save_tensors, write_atomic, HostInit, Parameters, Trained};
use crate::records::Records;
use crate::vae::{self, Vae, VaeMeta};

/// The generator and its description: loaded from `generator.checkpoint`,
/// resumed from the out-dir, or trained (None: `real_holdout`).
pub(super) fn obtain(
    run: &Run<'_>,
    data: &Data,
    progress: &mut dyn Progress,
) -> Result<Option<(Generator, String)>> {
    let Some(model) = run.config.generator.model() else {
        return Ok(None);
    };
    if !matches!(run.config.generator, GeneratorConfig::Dcgan { .. }) {
        let (vae, text) = obtain_vae(run, data, &model, progress)?;
        return Ok(Some((Generator::Vae(vae), text)));
    }
    let settings = dcgan::Settings {
        latent: model.latent,
        width: model.width,
        epochs: model.fit.epochs,
        batch_size: model.fit.batch_size,
        learning_rate: model.fit.learning_rate,
        checkpoint: model.checkpoint.map(Path::to_path_buf),
    };
    let path = run.out.join("generator.safetensors");
    let stage = dcgan::Stage {
        d_g: &data.d_g,
        classes: data.classes,
        data_source: &data.source,
        noise: run.rnd.stream(Stream::Generator).child(keys::GENERATOR),
        net: trained(run, &path, keys::GENERATOR),
    };
    let (gan, text) = dcgan::obtain(&settings, &stage, progress)?;
    Ok(Some((Generator::Dcgan(gan), text)))
}

/// The network of the pipeline stage `key` (`keys::GENERATOR`, `keys::FILTER`),
/// kept at `path` in the out-dir under the run's fingerprint.
fn trained<'a>(run: &'a Run<'_>, path: &'a Path, key: u64) -> Trained<'a> {
    Trained {
        path,
        fingerprint: run.fp,
        init: run.rnd.stream(Stream::Init).child(key),
        batches: run.rnd.stream(Stream::Sampler).child(key),
        device: run.device,
    }
}

/// The VAE: loaded from `checkpoint`, resumed from the out-dir, or trained.
fn obtain_vae(
    run: &Run<'_>,
    data: &Data,
    model: &GeneratorModel<'_>,
    progress: &mut dyn Progress,
) -> Result<(Vae, String)> {
    let shape = vae::image_shape(&data.d_f.shape, "data")?;
    if let Some(path) = model.checkpoint {
        progress.stage("generator", &format!("loading {}", path.display()));
        let (vae, meta) =
            load_vae(run, data, path, false)?.ok_or_else(|| PanoramiaError::Checkpoint {
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
        return Ok((vae, text));
    }
    let path = run.out.join("generator.safetensors");
    if path.exists() {
        if let Ok(Some((vae, meta))) = load_vae(run, data, &path, true) {
            progress.stage("generator", "found in the out-dir, not retrained");
            return Ok((vae, describe_vae(&meta)));
        }
    }
    progress.stage(
        "generator",
        &format!("training a VAE on D_G ({} records)", data.d_g.len()),
    );
    let mut init = HostInit::new(
        run.rnd.stream(Stream::Init).child(keys::GENERATOR),
        run.device,
    );
    let vae = Vae::new(&mut init, shape, model.latent, model.width)?;
    let final_loss = train_vae(&vae, &data.d_g, &model.fit, run, progress)?;
    let meta = VaeMeta {
        format: vae::FORMAT.into(),
        sample_shape: data.d_f.shape.clone(),
        latent: model.latent,
        width: model.width,
        epochs: model.fit.epochs,
        train_records: data.d_g.len(),
        data_source: data.source.clone(),
        final_loss,
        fingerprint: run.fp.to_string(),
    };
    let json = serde_json::to_string(&meta).map_err(|e| out_err(&path, e))?;
    save_tensors(&path, &vae.parameters(), &json)?;
    Ok((vae, describe_vae(&meta)))
}

/// A VAE file written by this pipeline, checked against the data's shape
/// and (with `check_fp`) this config's fingerprint (None: another config's).
fn load_vae(
    run: &Run<'_>,
    data: &Data,
    path: &Path,
    check_fp: bool,
) -> Result<Option<(Vae, VaeMeta)>> {
    let shape = vae::image_shape(&data.d_f.shape, "data")?;
    let (bytes, meta) = read_meta(path)?;
    let meta: VaeMeta = serde_json::from_str(&meta).map_err(|e| PanoramiaError::Checkpoint {
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
                "a generator for records of shape {:?}: expected {:?}, the shape of the target's data ({}: `generator.checkpoint`)",
                meta.sample_shape, data.d_f.shape, run.file
            ),
        });
    }
    if check_fp && meta.fingerprint != run.fp {
        return Ok(None);
    }
    let mut init = HostInit::new(
        run.rnd.stream(Stream::Init).child(keys::GENERATOR),
        run.device,
    );
    let vae = Vae::new(&mut init, shape, meta.latent, meta.width)?;
    load_into(path, &bytes, &vae.parameters())?;
    Ok(Some((vae, meta)))
}

/// Adam on the VAE's loss over `D_G`; the last epoch's loss per image.
fn train_vae(
    vae: &Vae,
    d_g: &Records,
    fit: &FitConfig,
    run: &Run<'_>,
    progress: &mut dyn Progress,
) -> Result<f64> {
    let device: Device = run.device;
    let params: Vec<tch::Tensor> = vae.parameters().into_iter().map(|(_, t)| t).collect();
    let (epochs, batch) = (fit.epochs, fit.batch_size);
    let mut adam = crate::nn::Adam::new(fit.learning_rate);
    let batch_key = run.rnd.stream(Stream::Sampler).child(keys::GENERATOR);
    let noise = dpaudit_train::philox::Philox::new(
        run.rnd.stream(Stream::Generator).child(keys::GENERATOR),
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

fn describe_vae(meta: &VaeMeta) -> String {
    format!(
        "VAE (latent {}, width {}), {} epochs on D_G ({} real records), final loss {:.2} per image",
        meta.latent, meta.width, meta.epochs, meta.train_records, meta.final_loss
    )
}

/// The real-vs-generated filter (Kazmi et al. 2024, App. B.1), when the
/// config has one and there is a generator.
pub(super) fn filter(
    run: &Run<'_>,
    data: &Data,
    gen: Option<&(Generator, String)>,
    progress: &mut dyn Progress,
) -> Result<Option<Filter>> {
    let (Some((g, _)), Some(cfg)) = (gen, &run.config.filter) else {
        return Ok(None);
    };
    // The real records the quality check trains on (its held-out ones stay
    // unseen by the filter).
    let quality_n = data.d_g.len();
    let held_out = quality::held_out(quality_n);
    let real = data.d_g.range(0, quality_n - held_out);
    let path = run.out.join("filter.safetensors");
    let stage = filter::Stage {
        file: run.file,
        config: cfg,
        real: &real,
        generator: g,
        pool_key: pool_key(run),
        net: trained(run, &path, keys::FILTER),
    };
    Ok(Some(filter::obtain(&stage, progress)?))
}

/// `plots/samples.png` (generated) and `plots/real.png` (`D_G`), when there
/// is a generator.
pub(super) fn sample_grids(
    run: &Run<'_>,
    data: &Data,
    gen: Option<&(Generator, String)>,
    pools: &Pools,
    filtered: bool,
) -> Result<()> {
    let Some((g, _)) = gen else { return Ok(()) };
    let plots = run.out.join("plots");
    // With a filter, the first 64 records of the quality check's pool
    // (filtered like every generated set; a separate 64-record draw can
    // run out of candidates where the large pools do not).
    let grid = match filtered {
        true => pools.quality.range(0, pools.quality.len().min(64)),
        false => g.draw(64, pool_key(run), keys::POOL_GRID, run.device)?,
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
    Ok(())
}
