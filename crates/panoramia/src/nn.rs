//! The few layers, the optimiser and the file format of the pipeline's own
//! models (generator, baseline/MIA classifier), on libtorch with fallible
//! calls only.
//!
//! Parameters are plain tensors that require grad; their initial values are
//! drawn on the host from the run's ChaCha key tree with PyTorch's default
//! rule (`nn.Linear`, `nn.Conv2d`, `nn.ConvTranspose2d` `reset_parameters`:
//! weight and bias `U(−1/√fan_in, 1/√fan_in)`, with `fan_in` = input
//! features, `in_channels·k·k` for a convolution and `out_channels·k·k` for a
//! transposed one, whose weight is `[in, out, k, k]`). Nothing is drawn from
//! libtorch's global generator.
//!
//! Why these are ours rather than tch's `nn` or `dpaudit-train`'s layers
//! (issue 31, measured): tch's `nn::linear`/`nn::conv2d` draw their initial
//! values from libtorch's global generator (the run's ChaCha streams cannot
//! feed them, so every saved model would change), their `Module::forward` is
//! tch's panicking API, and `nn::Adam` (libtorch's) gives different bits:
//! from the same start and gradients, 23 of 640 parameters of a 64→10 layer
//! differ after one step (up to 7.5e-9), 69 after five. `dpaudit-train`'s
//! `Linear`/`Conv2d` hold replica-stacked `[M, …]` weights behind a
//! per-sample-gradient tape (a batched matmul, other tensor shapes in the
//! safetensors files). The pipeline's outputs must stay byte-identical, so
//! the layers and Adam stay here.

use std::path::Path;

use dpaudit_data::seed::SeedKey;
use dpaudit_train::scalar::WithNumber;
use dpaudit_train::TrainError;
use rand::Rng;
use rand_chacha::ChaCha20Rng;
use safetensors::tensor::SafeTensors;
use tch::{Device, Kind, Tensor};

use crate::error::{PanoramiaError, Result};

type TResult<T> = std::result::Result<T, tch::TchError>;

/// A network a pipeline stage trains and keeps in the out-dir: where it is
/// saved, the config fingerprint under which a saved copy is reused instead
/// of retrained, the keys of its initial values and minibatch orders, and
/// where it runs.
#[derive(Debug, Clone, Copy)]
pub struct Trained<'a> {
    /// The out-dir's `.safetensors` file.
    pub path: &'a Path,
    /// The config's fingerprint.
    pub fingerprint: &'a str,
    /// Parameter initialisation.
    pub init: SeedKey,
    /// Minibatch orders.
    pub batches: SeedKey,
    /// Where the model runs.
    pub device: Device,
}

/// Host-side initialiser: one ChaCha stream, parameters created on `device`.
#[derive(Debug)]
pub struct HostInit {
    rng: ChaCha20Rng,
    device: Device,
}

impl HostInit {
    /// Draw from `key`'s generator.
    pub fn new(key: SeedKey, device: Device) -> Self {
        Self {
            rng: key.rng(),
            device,
        }
    }

    /// A parameter of `shape` with entries `U(−bound, bound)`.
    pub fn uniform(&mut self, shape: &[i64], bound: f64) -> Result<Tensor> {
        let n: i64 = shape.iter().product();
        let host: Vec<f32> = (0..n)
            .map(|_| self.rng.gen_range(-bound..bound) as f32)
            .collect();
        Tensor::f_from_slice(&host)
            .and_then(|t| t.f_reshape(shape))
            .and_then(|t| t.f_to_device(self.device))
            .and_then(|t| t.f_set_requires_grad(true))
            .map_err(PanoramiaError::torch("initialising a parameter"))
    }
}

/// `y = x Wᵀ + b`.
#[derive(Debug)]
pub struct Linear {
    /// `[out, in]`.
    pub weight: Tensor,
    /// `[out]`.
    pub bias: Tensor,
}

impl Linear {
    /// PyTorch's default initialisation.
    pub fn new(init: &mut HostInit, input: i64, output: i64) -> Result<Self> {
        let bound = 1.0 / (input as f64).sqrt();
        Ok(Self {
            weight: init.uniform(&[output, input], bound)?,
            bias: init.uniform(&[output], bound)?,
        })
    }

    /// Apply.
    pub fn forward(&self, x: &Tensor) -> TResult<Tensor> {
        x.f_linear(&self.weight, Some(&self.bias))
    }
}

/// A (transposed) convolution's weight of `shape` and bias of `output`
/// entries, both `U(±1/√(fan_channels·k·k))` with `k = shape[3]`.
fn conv_parameters(
    init: &mut HostInit,
    shape: [i64; 4],
    fan_channels: i64,
    output: i64,
) -> Result<(Tensor, Tensor)> {
    let kernel = shape[3];
    let bound = 1.0 / ((fan_channels * kernel * kernel) as f64).sqrt();
    Ok((
        init.uniform(&shape, bound)?,
        init.uniform(&[output], bound)?,
    ))
}

/// Which way a [`Conv2d`] maps its channels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// A convolution (`nn.Conv2d`), weight `[out, in, k, k]`.
    Forward,
    /// A transposed convolution (`nn.ConvTranspose2d`), weight `[in, out, k, k]`.
    Transposed,
}

/// A square 2-D convolution, or transposed convolution, with bias.
#[derive(Debug)]
pub struct Conv2d {
    /// `[out, in, k, k]`, or `[in, out, k, k]` when transposed.
    pub weight: Tensor,
    /// `[out]`.
    pub bias: Tensor,
    stride: i64,
    padding: i64,
    direction: Direction,
}

impl Conv2d {
    /// `input → output` channels, with PyTorch's default initialisation
    /// (`fan_in = in·k·k`, or `out·k·k` when transposed).
    pub fn new(
        init: &mut HostInit,
        direction: Direction,
        input: i64,
        output: i64,
        kernel: i64,
        stride: i64,
        padding: i64,
    ) -> Result<Self> {
        let (shape, fan_channels) = match direction {
            Direction::Forward => ([output, input, kernel, kernel], input),
            Direction::Transposed => ([input, output, kernel, kernel], output),
        };
        let (weight, bias) = conv_parameters(init, shape, fan_channels, output)?;
        Ok(Self {
            weight,
            bias,
            stride,
            padding,
            direction,
        })
    }

    /// Apply.
    pub fn forward(&self, x: &Tensor) -> TResult<Tensor> {
        let (stride, padding) = ([self.stride, self.stride], [self.padding, self.padding]);
        if self.direction == Direction::Transposed {
            x.f_conv_transpose2d(
                &self.weight,
                Some(&self.bias),
                stride,
                padding,
                [0, 0],
                1,
                [1, 1],
            )
        } else {
            x.f_conv2d(&self.weight, Some(&self.bias), stride, padding, [1, 1], 1)
        }
    }
}

/// A model of this module: named parameters in a fixed order.
pub trait Parameters {
    /// `(name, parameter)` pairs, shallow clones.
    fn parameters(&self) -> Vec<(String, Tensor)>;
}

/// Adam (Kingma & Ba 2015, Algorithm 1) with β₁ = 0.9, β₂ = 0.999,
/// ε̂ = 1e-8, as `torch.optim.Adam`'s defaults ([`Adam::with_betas`] for
/// others, e.g. the DCGAN's β₁ = 0.5).
#[derive(Debug)]
pub struct Adam {
    learning_rate: f64,
    betas: (f64, f64),
    step: i32,
    moments: Vec<(Tensor, Tensor)>,
}

impl Adam {
    /// A fresh optimiser.
    pub fn new(learning_rate: f64) -> Self {
        Self::with_betas(learning_rate, 0.9, 0.999)
    }

    /// A fresh optimiser with moment decay rates `β₁`, `β₂`.
    pub fn with_betas(learning_rate: f64, beta1: f64, beta2: f64) -> Self {
        Self {
            learning_rate,
            betas: (beta1, beta2),
            step: 0,
            moments: Vec::new(),
        }
    }

    /// One step on the gradients held by `params`, which are then zeroed.
    pub fn step(&mut self, params: &[Tensor]) -> Result<()> {
        let ((b1, b2), eps) = (self.betas, 1e-8_f64);
        self.step += 1;
        let c1 = 1.0 - b1.powi(self.step);
        let c2 = 1.0 - b2.powi(self.step);
        let context = "an Adam step";
        tch::no_grad(|| -> Result<()> {
            if self.moments.is_empty() {
                for p in params {
                    let z = p.f_zeros_like().map_err(PanoramiaError::torch(context))?;
                    let z2 = p.f_zeros_like().map_err(PanoramiaError::torch(context))?;
                    self.moments.push((z, z2));
                }
            }
            for (p, (m, v)) in params.iter().zip(self.moments.iter_mut()) {
                let mut g = p.grad();
                if !g.defined() {
                    continue;
                }
                let update = (|| -> TResult<Tensor> {
                    *m = m.mul_f64(b1)?.f_add(&g.mul_f64(1.0 - b1)?)?;
                    *v = v.mul_f64(b2)?.f_add(&g.f_square()?.mul_f64(1.0 - b2)?)?;
                    let denom = v.div_f64(c2)?.f_sqrt()?.add_f64(eps)?;
                    m.f_div(&denom)?.mul_f64(self.learning_rate / c1)
                })()
                .map_err(PanoramiaError::torch(context))?;
                let _ = p
                    .shallow_clone()
                    .f_sub_(&update)
                    .map_err(PanoramiaError::torch(context))?;
                let _ = g.f_zero_().map_err(PanoramiaError::torch(context))?;
            }
            Ok(())
        })
    }
}

/// Zero the gradients `params` hold (those a backward pass reached through
/// a model that is not stepped, e.g. the discriminator in a generator step).
pub fn zero_grads(params: &[Tensor]) -> Result<()> {
    tch::no_grad(|| {
        for p in params {
            let mut g = p.grad();
            if g.defined() {
                let _ = g
                    .f_zero_()
                    .map_err(PanoramiaError::torch("zeroing gradients"))?;
            }
        }
        Ok(())
    })
}

/// Detached copies of the parameters (to keep the best epoch's weights).
pub fn snapshot(params: &[Tensor]) -> Result<Vec<Tensor>> {
    params
        .iter()
        .map(|p| {
            p.f_detach_copy()
                .map_err(PanoramiaError::torch("copying parameters"))
        })
        .collect()
}

/// Copy `saved` back into `params`.
pub fn restore(params: &[Tensor], saved: &[Tensor]) -> Result<()> {
    tch::no_grad(|| {
        for (p, s) in params.iter().zip(saved) {
            p.shallow_clone()
                .f_copy_(s)
                .map_err(PanoramiaError::torch("restoring parameters"))?;
        }
        Ok(())
    })
}

/// Write `bytes` to a hidden temporary file beside `path`, sync it, rename it
/// over `path` and sync the directory: the file appears whole or not at all,
/// with the mode of an ordinary new file (the workspace's one atomic writer,
/// [`dpaudit_data::atomic::write_atomic`], through the out-dir's errors).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    Ok(dpaudit_store::outdir::write_atomic(path, bytes)?)
}

/// The metadata key of the pipeline's safetensors files.
pub const META_KEY: &str = "dpaudit_panoramia";

/// Save named tensors as safetensors (f32) with `meta` (JSON) under
/// [`META_KEY`], atomically.
pub fn save_tensors(path: &Path, params: &[(String, Tensor)], meta: &str) -> Result<()> {
    let bytes =
        dpaudit_train::checkpoint::safetensors_bytes(path, params, META_KEY, meta.to_string())?;
    write_atomic(path, &bytes)
}

/// The metadata JSON of a file written by [`save_tensors`].
pub fn read_meta(path: &Path) -> Result<(Vec<u8>, String)> {
    let bad = |reason: String| PanoramiaError::Checkpoint {
        path: path.display().to_string(),
        reason,
    };
    let bytes = std::fs::read(path).map_err(|e| bad(format!("unreadable: {e}")))?;
    let (_, header) = SafeTensors::read_metadata(&bytes)
        .map_err(|e| bad(format!("not a safetensors file: {e}")))?;
    let meta = header
        .metadata()
        .as_ref()
        .and_then(|m| m.get(META_KEY))
        .cloned()
        .ok_or_else(|| {
            bad(format!(
                "no `{META_KEY}` metadata: expected a file written by dpaudit's PANORAMIA pipeline"
            ))
        })?;
    Ok((bytes, meta))
}

/// Copy the tensors of `bytes` (a safetensors file read by [`read_meta`])
/// into `params`; every name must be present with the same shape. The loop is
/// the train crate's one safetensors reader
/// ([`dpaudit_train::checkpoint::read_safetensors_into`]); a file that does
/// not fit is a [`PanoramiaError::Checkpoint`].
pub fn load_into(path: &Path, bytes: &[u8], params: &[(String, Tensor)]) -> Result<()> {
    let st = SafeTensors::deserialize(bytes).map_err(|e| PanoramiaError::Checkpoint {
        path: path.display().to_string(),
        reason: format!("not a safetensors file: {e}"),
    })?;
    dpaudit_train::checkpoint::read_safetensors_into(path, &st, params, 0, "this architecture")
        .map_err(|e| match e {
            TrainError::Checkpoint { path, reason } => PanoramiaError::Checkpoint { path, reason },
            other => PanoramiaError::Train(other),
        })
}

/// A `[n, record]` float tensor of host records on `device`, reshaped to
/// `[n, shape…]`.
pub fn to_tensor(values: &[f32], n: usize, shape: &[usize], device: Device) -> Result<Tensor> {
    let mut full = vec![n as i64];
    full.extend(shape.iter().map(|&d| d as i64));
    Tensor::f_from_slice(values)
        .and_then(|t| t.f_reshape(full.as_slice()))
        .and_then(|t| t.f_to_device(device))
        .map_err(PanoramiaError::torch("moving records to the device"))
}

/// The values of a float tensor on the host.
pub fn to_host(t: &Tensor) -> Result<Vec<f64>> {
    let flat = t
        .f_detach()
        .and_then(|t| t.f_to_device(Device::Cpu))
        .and_then(|t| t.f_to_kind(Kind::Double))
        .and_then(|t| t.f_reshape([-1]))
        .map_err(PanoramiaError::torch("copying values to the host"))?;
    Vec::<f64>::try_from(flat).map_err(PanoramiaError::torch("copying values to the host"))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;
    use dpaudit_data::seed::{RunSeed, Stream};

    #[test]
    fn adam_first_step_moves_each_coordinate_by_the_learning_rate() {
        // Adam's first step is −lr·sign(g) (m̂ = g, v̂ = g², up to ε̂):
        // Kingma & Ba 2015, §2 ("the effective step … |Δ| ≈ α" at t = 1).
        let p = Tensor::from_slice(&[1.0f32, -2.0, 3.0]).set_requires_grad(true);
        let loss = p
            .f_mul(&Tensor::from_slice(&[2.0f32, -0.5, 0.1]))
            .unwrap()
            .f_sum(Kind::Float)
            .unwrap();
        loss.f_backward().unwrap();
        let mut adam = Adam::new(0.1);
        adam.step(std::slice::from_ref(&p)).unwrap();
        let got = to_host(&p).unwrap();
        for (g, want) in got.iter().zip([0.9, -1.9, 2.9]) {
            assert!((g - want).abs() < 1e-5, "{got:?}");
        }
        assert_eq!(to_host(&p.grad()).unwrap(), vec![0.0; 3]);
    }

    #[test]
    fn initialisation_is_owned_and_bounded() {
        let key = RunSeed(3).stream(Stream::Init);
        let a = Linear::new(&mut HostInit::new(key, Device::Cpu), 16, 4).unwrap();
        let b = Linear::new(&mut HostInit::new(key, Device::Cpu), 16, 4).unwrap();
        let (wa, wb) = (to_host(&a.weight).unwrap(), to_host(&b.weight).unwrap());
        assert_eq!(wa, wb);
        assert!(wa.iter().all(|w| w.abs() <= 0.25));
        assert!(wa.iter().any(|w| w.abs() > 0.1));
    }

    #[test]
    fn tensors_round_trip_through_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.safetensors");
        let mut init = HostInit::new(RunSeed(1).stream(Stream::Init), Device::Cpu);
        let a = Conv2d::new(&mut init, Direction::Forward, 1, 2, 3, 1, 1).unwrap();
        let params = vec![
            ("w".to_string(), a.weight.shallow_clone()),
            ("b".to_string(), a.bias.shallow_clone()),
        ];
        save_tensors(&path, &params, "{\"k\":1}").unwrap();
        let mut init = HostInit::new(RunSeed(2).stream(Stream::Init), Device::Cpu);
        let b = Conv2d::new(&mut init, Direction::Forward, 1, 2, 3, 1, 1).unwrap();
        let target = vec![
            ("w".to_string(), b.weight.shallow_clone()),
            ("b".to_string(), b.bias.shallow_clone()),
        ];
        let (bytes, meta) = read_meta(&path).unwrap();
        assert_eq!(meta, "{\"k\":1}");
        load_into(&path, &bytes, &target).unwrap();
        assert_eq!(to_host(&a.weight).unwrap(), to_host(&b.weight).unwrap());
        // Another shape is refused, with the tensor's name.
        let c = Conv2d::new(&mut init, Direction::Forward, 1, 3, 3, 1, 1).unwrap();
        let wrong = vec![
            ("w".to_string(), c.weight.shallow_clone()),
            ("b".to_string(), c.bias.shallow_clone()),
        ];
        let err = load_into(&path, &bytes, &wrong).unwrap_err().to_string();
        assert!(
            err.contains("tensor `w`") && err.contains("expected F32"),
            "{err}"
        );
    }
}
