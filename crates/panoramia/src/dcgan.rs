//! A class-conditional DCGAN for `[C, H, W]` images with `H`, `W`
//! divisible by 4 (1×28×28 Fashion-MNIST, 3×32×32 CIFAR-10): the
//! convolutional GAN of Radford, Metz & Chintala (2016, "Unsupervised
//! Representation Learning with Deep Convolutional Generative Adversarial
//! Networks", §3 and §4: strided transposed convolutions up, strided
//! convolutions down, no pooling or fully connected hidden layers, ReLU in
//! the generator, LeakyReLU(0.2) in the discriminator, Adam at learning rate
//! 2·10⁻⁴ with β₁ = 0.5), scaled down to train in minutes on two CPU cores,
//! and made class-conditional (Mirza & Osindero 2014, "Conditional
//! Generative Adversarial Nets", §3.2: the label is given to both networks).
//!
//! Generator `G(z, y)`: `[z ‖ onehot(y)]` → linear → `2w × H/4 × W/4` →
//! pixel norm → ReLU → convᵀ(2w→w, 4, stride 2, pad 1) → pixel norm → ReLU
//! → convᵀ(w→C, 4, 2, 1) → sigmoid. Pixel norm divides each position's
//! feature vector by its root mean square (Karras et al. 2018, "Progressive
//! Growing of GANs", §4.2): a normalisation without batch statistics, so a
//! sample does not depend on the other samples of its batch, in training or
//! when sampling. Discriminator `D(x, y)`: `2x − 1` → conv(C→w, 4, 2, 1) →
//! LeakyReLU(0.2) → conv(w→2w, 4, 2, 1) → LeakyReLU(0.2) → features `φ`;
//! logit = `linear(φ) + ⟨embed(y), φ⟩`, the projection form of a conditional
//! discriminator (Miyato & Koyama 2018, "cGANs with Projection
//! Discriminator", §3). Losses: the non-saturating ones of Goodfellow et al.
//! (2014, §3): `D` minimises the binary cross-entropy of real (label 1) and
//! generated (label 0) records, `G` that of its samples against label 1;
//! one `D` step then one `G` step per minibatch, each with its own Adam.
//! Fake records in `D`'s step are conditioned on the real minibatch's labels.
//!
//! Sampling: a label `y` per record, drawn from `D_G`'s class frequencies,
//! and `z ~ N(0, I)` (Philox, tag `[purpose, chunk, 0]`); the pixels are
//! rounded to multiples of 1/255, as an 8-bit image file would store them
//! (the real records are 8-bit images, and unrounded values would give a
//! classifier a cue unrelated to what the images show). Every draw comes
//! from the run's key tree; nothing from libtorch's global generator.

use std::path::{Path, PathBuf};

use dpaudit_data::seed::SeedKey;
use dpaudit_train::philox::Philox;
use dpaudit_train::scalar::WithNumber;
use rand::Rng;
use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Reduction, Tensor};

use crate::error::{out_err, PanoramiaError, Result};
use crate::nn::Direction::{Forward, Transposed};
use crate::nn::{
    load_into, read_meta, save_tensors, zero_grads, Adam, Conv2d, HostInit, Linear, Parameters,
    Trained,
};
use crate::progress::Progress;
use crate::records::{epoch_batches, Records};

type TResult<T> = std::result::Result<T, tch::TchError>;

/// Format tag of a DCGAN checkpoint's metadata.
pub const FORMAT: &str = "dpaudit-dcgan/1";

/// Adam's β₁ for both networks (Radford et al. 2016, §4).
pub const BETA1: f64 = 0.5;

/// What a DCGAN checkpoint says about itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DcganMeta {
    /// [`FORMAT`].
    pub format: String,
    /// One record's shape `[C, H, W]`.
    pub sample_shape: Vec<usize>,
    /// Number of classes it is conditioned on.
    pub classes: i64,
    /// Latent dimension.
    pub latent: i64,
    /// Width (see [`crate::config::GeneratorConfig::Dcgan`]).
    pub width: i64,
    /// Class frequencies of its training records (labels are drawn from them).
    pub class_frequencies: Vec<f64>,
    /// Epochs trained.
    pub epochs: u64,
    /// Records it was trained on.
    pub train_records: usize,
    /// Where the training data came from.
    pub data_source: String,
    /// Mean discriminator loss over the last epoch.
    pub final_discriminator_loss: f64,
    /// Mean generator loss over the last epoch.
    pub final_generator_loss: f64,
    /// Fingerprint of the pipeline state it belongs to (split and settings).
    pub fingerprint: String,
}

/// How to obtain the DCGAN (the fields of the config's `dcgan` variant).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Latent dimension.
    pub latent: i64,
    /// Width.
    pub width: i64,
    /// Epochs over `D_G`.
    pub epochs: u64,
    /// Minibatch size.
    pub batch_size: usize,
    /// Adam's learning rate.
    pub learning_rate: f64,
    /// A trained generator to load instead of training one.
    pub checkpoint: Option<PathBuf>,
}

/// The generator and its discriminator.
#[derive(Debug)]
pub struct Dcgan {
    shape: [i64; 3],
    classes: i64,
    latent: i64,
    width: i64,
    class_frequencies: Vec<f64>,
    g_fc: Linear,
    g_up1: Conv2d,
    g_up2: Conv2d,
    d_conv1: Conv2d,
    d_conv2: Conv2d,
    d_fc: Linear,
    /// `[classes, features]`: the projection's class embedding.
    d_embed: Tensor,
}

fn pair(out: &mut Vec<(String, Tensor)>, name: &str, w: &Tensor, b: &Tensor) {
    out.push((format!("{name}.weight"), w.shallow_clone()));
    out.push((format!("{name}.bias"), b.shallow_clone()));
}

impl Parameters for Dcgan {
    fn parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = self.generator_parameters();
        out.extend(self.discriminator_parameters());
        out
    }
}

/// `max(x, 0.2·x)`.
fn leaky_relu(x: &Tensor) -> TResult<Tensor> {
    x.f_maximum(&x.mul_f64(0.2)?)
}

/// Each position's channel vector divided by its root mean square.
fn pixel_norm(x: &Tensor) -> TResult<Tensor> {
    let channels = x.size().get(1).copied().unwrap_or(1).max(1) as f64;
    let ms = x
        .f_square()?
        .f_sum_dim_intlist(1, true, Kind::Float)?
        .div_f64(channels)?;
    x.f_mul(&ms.add_f64(1e-8)?.f_rsqrt()?)
}

fn bce(logits: &Tensor, target: f64) -> TResult<Tensor> {
    let t = logits.f_ones_like()?.mul_f64(target)?;
    logits.f_binary_cross_entropy_with_logits::<Tensor>(&t, None, None, Reduction::Mean)
}

impl Dcgan {
    /// A freshly initialised DCGAN for images of `shape` and `classes`
    /// classes; `class_frequencies` (one per class) weight the labels of
    /// samples.
    pub fn new(
        init: &mut HostInit,
        shape: [i64; 3],
        classes: i64,
        latent: i64,
        width: i64,
        class_frequencies: Vec<f64>,
    ) -> Result<Self> {
        let [c, h, w] = shape;
        let flat = 2 * width * (h / 4) * (w / 4);
        Ok(Self {
            shape,
            classes,
            latent,
            width,
            class_frequencies,
            g_fc: Linear::new(init, latent + classes, flat)?,
            g_up1: Conv2d::new(init, Transposed, 2 * width, width, 4, 2, 1)?,
            g_up2: Conv2d::new(init, Transposed, width, c, 4, 2, 1)?,
            d_conv1: Conv2d::new(init, Forward, c, width, 4, 2, 1)?,
            d_conv2: Conv2d::new(init, Forward, width, 2 * width, 4, 2, 1)?,
            d_fc: Linear::new(init, flat, 1)?,
            d_embed: init.uniform(&[classes, flat], 1.0 / (flat as f64).sqrt())?,
        })
    }

    /// The generator's parameters.
    pub fn generator_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = Vec::new();
        pair(&mut out, "generator.fc", &self.g_fc.weight, &self.g_fc.bias);
        pair(
            &mut out,
            "generator.up1",
            &self.g_up1.weight,
            &self.g_up1.bias,
        );
        pair(
            &mut out,
            "generator.up2",
            &self.g_up2.weight,
            &self.g_up2.bias,
        );
        out
    }

    /// The discriminator's parameters.
    pub fn discriminator_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = Vec::new();
        let (c1, c2, fc) = (&self.d_conv1, &self.d_conv2, &self.d_fc);
        pair(&mut out, "discriminator.conv1", &c1.weight, &c1.bias);
        pair(&mut out, "discriminator.conv2", &c2.weight, &c2.bias);
        pair(&mut out, "discriminator.fc", &fc.weight, &fc.bias);
        out.push((
            "discriminator.embed".to_string(),
            self.d_embed.shallow_clone(),
        ));
        out
    }

    /// Latent dimension.
    pub fn latent(&self) -> i64 {
        self.latent
    }

    /// One record's shape.
    pub fn shape(&self) -> [i64; 3] {
        self.shape
    }

    /// Number of classes.
    pub fn classes(&self) -> i64 {
        self.classes
    }

    /// The class frequencies labels are drawn from.
    pub fn class_frequencies(&self) -> &[f64] {
        &self.class_frequencies
    }

    /// `[n, classes]` one-hot rows of `labels` (each in `0..classes`).
    pub fn one_hot(&self, labels: &[i64], device: Device) -> Result<Tensor> {
        if let Some(bad) = labels.iter().find(|&&l| !(0..self.classes).contains(&l)) {
            return Err(PanoramiaError::Checkpoint {
                path: "<dcgan>".into(),
                reason: format!(
                    "label {bad}: expected a class in 0..{} (the DCGAN is conditioned on labels)",
                    self.classes
                ),
            });
        }
        Tensor::f_from_slice(labels)
            .and_then(|t| t.f_to_device(device))
            .and_then(|t| t.f_one_hot(self.classes))
            .and_then(|t| t.f_to_kind(Kind::Float))
            .map_err(PanoramiaError::torch("one-hot labels"))
    }

    /// `G(z, y)` in [0, 1] (not rounded).
    pub fn generate(&self, z: &Tensor, y: &Tensor) -> TResult<Tensor> {
        let [_, h, w] = self.shape;
        let n = z.size().first().copied().unwrap_or(0);
        let x = self.g_fc.forward(&Tensor::f_cat(&[z, y], 1)?)?.f_reshape([
            n,
            2 * self.width,
            h / 4,
            w / 4,
        ])?;
        let x = pixel_norm(&x)?.f_relu()?;
        let x = pixel_norm(&self.g_up1.forward(&x)?)?.f_relu()?;
        self.g_up2.forward(&x)?.f_sigmoid()
    }

    /// `D(x, y)`: one logit per record (real ⇔ positive).
    pub fn discriminate(&self, x: &Tensor, y: &Tensor) -> TResult<Tensor> {
        let h = leaky_relu(&self.d_conv1.forward(&x.mul_f64(2.0)?.add_f64(-1.0)?)?)?;
        let phi = leaky_relu(&self.d_conv2.forward(&h)?)?.f_flatten(1, -1)?;
        let projection =
            y.f_matmul(&self.d_embed)?
                .f_mul(&phi)?
                .f_sum_dim_intlist(1, false, Kind::Float)?;
        self.d_fc.forward(&phi)?.f_reshape([-1])?.f_add(&projection)
    }

    /// `n` labels from the class frequencies, drawn from `key`.
    pub fn draw_labels(&self, n: usize, key: SeedKey) -> Vec<i64> {
        let total: f64 = self.class_frequencies.iter().sum();
        let mut rng = key.rng();
        (0..n)
            .map(|_| {
                let mut u = rng.gen::<f64>() * total;
                for (k, &f) in self.class_frequencies.iter().enumerate() {
                    if u < f {
                        return k as i64;
                    }
                    u -= f;
                }
                // Rounding at the top end: the last class with any mass.
                self.class_frequencies
                    .iter()
                    .rposition(|&f| f > 0.0)
                    .unwrap_or(0) as i64
            })
            .collect()
    }

    /// `n` labelled samples: images in [0, 1] rounded to multiples of
    /// 1/255, with the class each was generated for. Labels come from
    /// `key.child(purpose)`, latents from Philox under `key` with tag
    /// `[purpose, chunk, 0]`, in chunks of 1,024.
    pub fn sample(&self, n: usize, key: SeedKey, purpose: u32, device: Device) -> Result<Records> {
        let labels = self.draw_labels(n, key.child(u64::from(purpose)));
        let philox = Philox::new(key, device);
        let mut x = Vec::with_capacity(n * self.record_len());
        let chunk = 1024usize;
        tch::no_grad(|| -> Result<()> {
            for (ci, start) in (0..n).step_by(chunk).enumerate() {
                let len = chunk.min(n - start);
                let y = self.one_hot(&labels[start..start + len], device)?;
                let img = philox
                    .normal(&[len as i64, self.latent], [purpose, ci as u32, 0])
                    .and_then(|z| z.f_to_kind(Kind::Float))
                    .and_then(|z| self.generate(&z, &y))
                    .and_then(|g| g.mul_f64(255.0)?.f_round()?.div_f64(255.0))
                    .map_err(PanoramiaError::torch("generating samples"))?;
                x.extend(crate::nn::to_host(&img)?.into_iter().map(|v| v as f32));
            }
            Ok(())
        })?;
        Ok(Records {
            x,
            y: labels,
            shape: self.shape.iter().map(|&d| d as usize).collect(),
        })
    }

    fn record_len(&self) -> usize {
        self.shape.iter().product::<i64>() as usize
    }

    /// Train on `d_g` (images in [0, 1], labels in `0..classes`): minibatch
    /// orders from `batches`, latents from Philox under `noise` (tag
    /// `[epoch, batch, 0]`). `on_epoch(epoch, D loss, G loss)`. Returns the
    /// last epoch's mean losses `(D, G)`.
    pub fn train(
        &self,
        d_g: &Records,
        settings: &Settings,
        batches: SeedKey,
        noise: SeedKey,
        device: Device,
        on_epoch: &mut dyn FnMut(u64, f64, f64),
    ) -> Result<(f64, f64)> {
        let gp: Vec<Tensor> = self
            .generator_parameters()
            .into_iter()
            .map(|(_, t)| t)
            .collect();
        let dp: Vec<Tensor> = self
            .discriminator_parameters()
            .into_iter()
            .map(|(_, t)| t)
            .collect();
        let mut opt_g = Adam::with_betas(settings.learning_rate, BETA1, 0.999);
        let mut opt_d = Adam::with_betas(settings.learning_rate, BETA1, 0.999);
        let philox = Philox::new(noise, device);
        let context = "a DCGAN step";
        let mut last = (f64::NAN, f64::NAN);
        for epoch in 0..settings.epochs {
            let (mut d_sum, mut g_sum) = (0.0, 0.0);
            let order = epoch_batches(d_g.len(), settings.batch_size, batches, epoch);
            for (bi, idx) in order.into_iter().enumerate() {
                let x = d_g.batch(&idx, device)?;
                let labels: Vec<i64> = idx.iter().map(|&i| d_g.y[i]).collect();
                let y = self.one_hot(&labels, device)?;
                let z = philox
                    .normal(
                        &[idx.len() as i64, self.latent],
                        [epoch as u32, bi as u32, 0],
                    )
                    .and_then(|z| z.f_to_kind(Kind::Float))
                    .map_err(PanoramiaError::torch("drawing the DCGAN's latents"))?;
                // Discriminator step: real → 1, generated (detached) → 0.
                let (fake, d_loss) = (|| -> TResult<(Tensor, Tensor)> {
                    let fake = self.generate(&z, &y)?;
                    let real = bce(&self.discriminate(&x, &y)?, 1.0)?;
                    let gen = bce(&self.discriminate(&fake.f_detach()?, &y)?, 0.0)?;
                    let loss = real.f_add(&gen)?;
                    loss.f_backward()?;
                    Ok((fake, loss))
                })()
                .map_err(PanoramiaError::torch(context))?;
                opt_d.step(&dp)?;
                // Generator step: its samples → 1 (non-saturating).
                let g_loss = (|| -> TResult<Tensor> {
                    let loss = bce(&self.discriminate(&fake, &y)?, 1.0)?;
                    loss.f_backward()?;
                    Ok(loss)
                })()
                .map_err(PanoramiaError::torch(context))?;
                opt_g.step(&gp)?;
                zero_grads(&dp)?;
                let b = idx.len() as f64;
                d_sum += d_loss.f_double_value(&[]).unwrap_or(f64::NAN) * b;
                g_sum += g_loss.f_double_value(&[]).unwrap_or(f64::NAN) * b;
            }
            let n = d_g.len().max(1) as f64;
            last = (d_sum / n, g_sum / n);
            if !(last.0.is_finite() && last.1.is_finite()) {
                return Err(PanoramiaError::NonFinite {
                    model: "generator (DCGAN)".into(),
                    epoch: epoch + 1,
                    value: if last.0.is_finite() { last.1 } else { last.0 },
                });
            }
            on_epoch(epoch + 1, last.0, last.1);
        }
        Ok(last)
    }
}

/// Class frequencies of `labels` over `classes` classes.
pub fn class_frequencies(labels: &[i64], classes: i64) -> Vec<f64> {
    let mut counts = vec![0.0; classes.max(0) as usize];
    for &l in labels {
        if let Some(c) = usize::try_from(l).ok().and_then(|l| counts.get_mut(l)) {
            *c += 1.0;
        }
    }
    let n = labels.len().max(1) as f64;
    counts.iter().map(|c| c / n).collect()
}

/// Save `gan` (both networks) with `meta`.
pub fn save(gan: &Dcgan, path: &Path, meta: &DcganMeta) -> Result<()> {
    let json = serde_json::to_string(meta).map_err(|e| out_err(path, e))?;
    save_tensors(path, &gan.parameters(), &json)
}

/// Load a DCGAN written by [`save`] for records of `shape` (as the data
/// holds them) and `classes` classes; `init` only builds the tensors the
/// file's values are copied into.
pub fn load(
    path: &Path,
    shape: &[usize],
    classes: i64,
    init: &mut HostInit,
) -> Result<(Dcgan, DcganMeta)> {
    let bad = |reason: String| PanoramiaError::Checkpoint {
        path: path.display().to_string(),
        reason,
    };
    let (bytes, meta) = read_meta(path)?;
    let meta: DcganMeta = serde_json::from_str(&meta).map_err(|e| {
        bad(format!(
            "metadata: {e}; expected a DCGAN written by dpaudit ({FORMAT})"
        ))
    })?;
    if meta.format != FORMAT {
        return Err(bad(format!(
            "format `{}`: expected `{FORMAT}`",
            meta.format
        )));
    }
    if meta.sample_shape != shape {
        return Err(bad(format!(
            "a generator for records of shape {:?}: expected {shape:?}, the shape of the target's data \
             (`generator.checkpoint`)",
            meta.sample_shape
        )));
    }
    if meta.classes != classes || meta.class_frequencies.len() != classes as usize {
        return Err(bad(format!(
            "a generator for {} classes: expected {classes}, the classes of the target's data",
            meta.classes
        )));
    }
    let dims = crate::vae::image_shape(shape, "data")?;
    let gan = Dcgan::new(
        init,
        dims,
        classes,
        meta.latent,
        meta.width,
        meta.class_frequencies.clone(),
    )?;
    load_into(path, &bytes, &gan.parameters())?;
    Ok((gan, meta))
}

/// What the pipeline's generator stage needs to train or resume a DCGAN.
#[derive(Debug)]
pub struct Stage<'a> {
    /// `D_G` (images in [0, 1] with their labels).
    pub d_g: &'a Records,
    /// Classes of the task.
    pub classes: i64,
    /// Where the data came from.
    pub data_source: &'a str,
    /// Latents during training.
    pub noise: SeedKey,
    /// The two networks as one saved model (`generator.safetensors`).
    pub net: Trained<'a>,
}

fn describe(meta: &DcganMeta, from: &str) -> String {
    format!(
        "conditional DCGAN (latent {}, width {}, {} classes), {} epochs on {} real records{from}, final losses D {:.3}, G {:.3}",
        meta.latent,
        meta.width,
        meta.classes,
        meta.epochs,
        meta.train_records,
        meta.final_discriminator_loss,
        meta.final_generator_loss
    )
}

/// The DCGAN of the generator stage: loaded from `settings.checkpoint`,
/// resumed from `stage.path` (same fingerprint), or trained and saved there.
pub fn obtain(
    settings: &Settings,
    stage: &Stage<'_>,
    progress: &mut dyn Progress,
) -> Result<(Dcgan, String)> {
    let shape = &stage.d_g.shape;
    let net = &stage.net;
    let mut init = HostInit::new(net.init, net.device);
    if let Some(path) = &settings.checkpoint {
        progress.stage("generator", &format!("loading {}", path.display()));
        let (gan, meta) = load(path, shape, stage.classes, &mut init)?;
        let text = describe(&meta, &format!(", loaded from {}", path.display()));
        return Ok((gan, text));
    }
    if net.path.exists() {
        if let Ok((gan, meta)) = load(net.path, shape, stage.classes, &mut init) {
            if meta.fingerprint == net.fingerprint {
                progress.stage("generator", "found in the out-dir, not retrained");
                return Ok((gan, describe(&meta, " (D_G)")));
            }
        }
    }
    progress.stage(
        "generator",
        &format!(
            "training a conditional DCGAN on D_G ({} records)",
            stage.d_g.len()
        ),
    );
    let mut init = HostInit::new(net.init, net.device);
    let freq = class_frequencies(&stage.d_g.y, stage.classes);
    let gan = Dcgan::new(
        &mut init,
        crate::vae::image_shape(shape, "data")?,
        stage.classes,
        settings.latent,
        settings.width,
        freq.clone(),
    )?;
    let epochs = settings.epochs;
    let (d, g) = gan.train(
        stage.d_g,
        settings,
        net.batches,
        stage.noise,
        net.device,
        &mut |e, d, g| {
            progress.epoch("discriminator", e, epochs, "loss", d);
            progress.epoch("generator", e, epochs, "loss", g);
        },
    )?;
    let meta = DcganMeta {
        format: FORMAT.into(),
        sample_shape: shape.clone(),
        classes: stage.classes,
        latent: settings.latent,
        width: settings.width,
        class_frequencies: freq,
        epochs,
        train_records: stage.d_g.len(),
        data_source: stage.data_source.to_string(),
        final_discriminator_loss: d,
        final_generator_loss: g,
        fingerprint: net.fingerprint.to_string(),
    };
    save(&gan, net.path, &meta)?;
    Ok((gan, describe(&meta, " (D_G)")))
}
