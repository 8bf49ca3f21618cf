//! The generative model: a small convolutional variational autoencoder
//! (Kingma & Welling 2014, "Auto-Encoding Variational Bayes", §2.4 and
//! Appendix C.2 for the Bernoulli decoder) for `[C, H, W]` images with
//! `H, W` divisible by 4 (1×28×28 Fashion-MNIST, 3×32×32 CIFAR-10).
//!
//! Why a VAE and not a GAN (the paper uses StyleGAN2): PANORAMIA's closeness
//! is one-sided (Kazmi et al. 2024, Definition 3) — the generator must put
//! mass wherever the data has mass, while bad samples are tolerated — and
//! missing modes inflate `c_lb` (their §C.4). A VAE maximises a likelihood
//! bound, which penalises missing modes, where a GAN's adversarial loss does
//! not; and it trains stably in minutes on a CPU with one loss and no
//! balancing of two networks. Its samples are blurrier than a GAN's, which
//! the quality check and the baseline's `c_lb` report.
//!
//! Encoder: conv(C→w, 4, stride 2, pad 1) → ReLU → conv(w→2w, 4, 2, 1) →
//! ReLU → linear(2w·H/4·W/4 → 2·latent) giving (μ, log σ²). Decoder:
//! linear(latent → 2w·H/4·W/4) → ReLU → convᵀ(2w→w, 4, 2, 1) → ReLU →
//! convᵀ(w→C, 4, 2, 1) → pixel logits. Loss per image: the binary
//! cross-entropy of the pixels in [0, 1] against the logits, summed, plus
//! `KL(N(μ, σ²) ‖ N(0, I))`. A sample is `sigmoid(decoder(z))`, `z ~ N(0, I)`
//! drawn with the run's Philox generator.

use dpaudit_data::seed::SeedKey;
use dpaudit_train::philox::Philox;
use dpaudit_train::scalar::WithNumber;
use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Reduction, Tensor};

use crate::error::{PanoramiaError, Result};
use crate::nn::Direction::{Forward, Transposed};
use crate::nn::{Conv2d, HostInit, Linear, Parameters};

type TResult<T> = std::result::Result<T, tch::TchError>;

/// Format tag of a generator checkpoint's metadata.
pub const FORMAT: &str = "dpaudit-vae/1";

/// What a generator checkpoint says about itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VaeMeta {
    /// [`FORMAT`].
    pub format: String,
    /// One record's shape `[C, H, W]`.
    pub sample_shape: Vec<usize>,
    /// Latent dimension.
    pub latent: i64,
    /// Width of the first convolution.
    pub width: i64,
    /// Epochs trained.
    pub epochs: u64,
    /// Records it was trained on.
    pub train_records: usize,
    /// Where the training data came from.
    pub data_source: String,
    /// Mean loss per image over the last epoch.
    pub final_loss: f64,
    /// Fingerprint of the pipeline state it belongs to (split and settings).
    pub fingerprint: String,
}

/// The VAE.
#[derive(Debug)]
pub struct Vae {
    shape: [i64; 3],
    latent: i64,
    width: i64,
    enc1: Conv2d,
    enc2: Conv2d,
    enc_fc: Linear,
    dec_fc: Linear,
    dec1: Conv2d,
    dec2: Conv2d,
}

impl Parameters for Vae {
    fn parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = Vec::new();
        let mut push = |name: &str, w: &Tensor, b: &Tensor| {
            out.push((format!("{name}.weight"), w.shallow_clone()));
            out.push((format!("{name}.bias"), b.shallow_clone()));
        };
        push("encoder.conv1", &self.enc1.weight, &self.enc1.bias);
        push("encoder.conv2", &self.enc2.weight, &self.enc2.bias);
        push("encoder.fc", &self.enc_fc.weight, &self.enc_fc.bias);
        push("decoder.fc", &self.dec_fc.weight, &self.dec_fc.bias);
        push("decoder.deconv1", &self.dec1.weight, &self.dec1.bias);
        push("decoder.deconv2", &self.dec2.weight, &self.dec2.bias);
        out
    }
}

/// `[C, H, W]` with `H`, `W` divisible by 4, or an error naming `what`.
pub fn image_shape(shape: &[usize], what: &str) -> Result<[i64; 3]> {
    match *shape {
        [c, h, w] if c > 0 && h >= 4 && w >= 4 && h % 4 == 0 && w % 4 == 0 => {
            Ok([c as i64, h as i64, w as i64])
        }
        _ => Err(PanoramiaError::Config {
            file: "<data>".into(),
            field: what.into(),
            value: format!("records of shape {shape:?}"),
            expected:
                "images [C, H, W] with H and W divisible by 4 (e.g. [1, 28, 28], [3, 32, 32])"
                    .into(),
        }),
    }
}

impl Vae {
    /// A freshly initialised VAE for images of `shape`.
    pub fn new(init: &mut HostInit, shape: [i64; 3], latent: i64, width: i64) -> Result<Self> {
        let [c, h, w] = shape;
        let flat = 2 * width * (h / 4) * (w / 4);
        Ok(Self {
            shape,
            latent,
            width,
            enc1: Conv2d::new(init, Forward, c, width, 4, 2, 1)?,
            enc2: Conv2d::new(init, Forward, width, 2 * width, 4, 2, 1)?,
            enc_fc: Linear::new(init, flat, 2 * latent)?,
            dec_fc: Linear::new(init, latent, flat)?,
            dec1: Conv2d::new(init, Transposed, 2 * width, width, 4, 2, 1)?,
            dec2: Conv2d::new(init, Transposed, width, c, 4, 2, 1)?,
        })
    }

    /// Latent dimension.
    pub fn latent(&self) -> i64 {
        self.latent
    }

    /// Width of the first convolution.
    pub fn width(&self) -> i64 {
        self.width
    }

    /// One record's shape.
    pub fn shape(&self) -> [i64; 3] {
        self.shape
    }

    fn encode(&self, x: &Tensor) -> TResult<(Tensor, Tensor)> {
        let h = self.enc1.forward(x)?.f_relu()?;
        let h = self.enc2.forward(&h)?.f_relu()?;
        let h = h.f_flatten(1, -1)?;
        let out = self.enc_fc.forward(&h)?;
        let mu = out.f_narrow(1, 0, self.latent)?;
        let logvar = out.f_narrow(1, self.latent, self.latent)?;
        Ok((mu, logvar))
    }

    fn decode_logits(&self, z: &Tensor) -> TResult<Tensor> {
        let [_, h, w] = self.shape;
        let n = z.size().first().copied().unwrap_or(0);
        let d = self
            .dec_fc
            .forward(z)?
            .f_relu()?
            .f_reshape([n, 2 * self.width, h / 4, w / 4])?;
        let d = self.dec1.forward(&d)?.f_relu()?;
        self.dec2.forward(&d)
    }

    /// Mean negative ELBO per image of the batch `x` (`[B, C, H, W]` in
    /// [0, 1]), with `eps ~ N(0, I)` of shape `[B, latent]` for the
    /// reparameterisation `z = μ + σ·eps`.
    pub fn loss(&self, x: &Tensor, eps: &Tensor) -> TResult<Tensor> {
        let b = x.size().first().copied().unwrap_or(1).max(1) as f64;
        let (mu, logvar) = self.encode(x)?;
        let std = logvar.mul_f64(0.5)?.f_exp()?;
        let z = mu.f_add(&std.f_mul(eps)?)?;
        let logits = self.decode_logits(&z)?;
        let rec =
            logits.f_binary_cross_entropy_with_logits::<Tensor>(x, None, None, Reduction::Sum)?;
        // KL(N(μ, σ²) ‖ N(0, 1)) = ½ Σ (μ² + σ² − 1 − log σ²).
        let kl = mu
            .f_square()?
            .f_add(&logvar.f_exp()?)?
            .add_f64(-1.0)?
            .f_sub(&logvar)?
            .f_sum(Kind::Float)?
            .mul_f64(0.5)?;
        rec.f_add(&kl)?.div_f64(b)
    }

    /// `n` samples `[n, C, H, W]` in [0, 1]; the latents are Philox normals
    /// under `key` with tag `[purpose, chunk, 0]`, in chunks of 1,024, so
    /// each purpose is an independent, replayable draw.
    pub fn sample(&self, n: usize, key: SeedKey, purpose: u32, device: Device) -> Result<Tensor> {
        let philox = Philox::new(key, device);
        let mut parts = Vec::new();
        let chunk = 1024usize;
        tch::no_grad(|| -> Result<()> {
            for (ci, start) in (0..n).step_by(chunk).enumerate() {
                let len = chunk.min(n - start) as i64;
                let z = philox
                    .normal(&[len, self.latent], [purpose, ci as u32, 0])
                    .and_then(|z| z.f_to_kind(Kind::Float))
                    .map_err(PanoramiaError::torch("drawing latents"))?;
                let x = self
                    .decode_logits(&z)
                    .and_then(|l| l.f_sigmoid())
                    .map_err(PanoramiaError::torch("decoding samples"))?;
                parts.push(x);
            }
            Ok(())
        })?;
        if parts.is_empty() {
            let [c, h, w] = self.shape;
            return Tensor::f_zeros([0, c, h, w], (Kind::Float, device))
                .map_err(PanoramiaError::torch("an empty sample"));
        }
        Tensor::f_cat(&parts, 0).map_err(PanoramiaError::torch("joining samples"))
    }
}
