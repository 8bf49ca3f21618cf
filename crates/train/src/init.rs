//! PyTorch's default initialisation, drawn on the host from one ChaCha stream
//! per replica.
//!
//! `nn.Linear` and `nn.Conv2d` initialise their weight with
//! `kaiming_uniform_(a = √5)`, whose bound is `gain·√(3/fan_in)` with
//! `gain = √(2/(1+a²)) = √(1/3)`, i.e. `1/√fan_in`; their bias is
//! `U(−1/√fan_in, 1/√fan_in)` (PyTorch `torch/nn/modules/linear.py`,
//! `conv.py`, `reset_parameters`). `fan_in = in_features` for Linear and
//! `in_channels/groups · kh · kw` for Conv2d. GroupNorm starts at weight 1,
//! bias 0.
//!
//! The replica trained as run `r` draws from the generator of
//! `init.child(r)` in the run's key tree ([`dpaudit_data::seed`]), so its
//! initial parameters do not depend on how many replicas are trained beside
//! it, nor on the device; nothing is drawn from libtorch's generator.
//!
//! A parameter is allocated by libtorch on its device first and then filled
//! from the host in slices of [`FILL_SLICE`] values, so a parameter that
//! cannot be allocated is a [`crate::TrainError::Torch`] (not an abort of the
//! process), and the host never holds more than one slice.

use dpaudit_data::seed::{RunSeed, SeedKey, Stream};
use rand::Rng;
use rand_chacha::ChaCha20Rng;
use tch::{Device, Kind, TchError, Tensor};

use crate::error::{torch, Result};
use crate::scalar;

/// Values drawn on the host per upload (4 MiB of `f32`).
pub const FILL_SLICE: usize = 1 << 20;

/// Per-replica random streams for parameter initialisation, plus the device the
/// parameters live on.
#[derive(Debug)]
pub struct Init {
    rngs: Vec<ChaCha20Rng>,
    device: Device,
}

impl Init {
    /// One replica per listed run, replica `i` drawing from `key.child(runs[i])`
    /// (`key` = the run's [`Stream::Init`] key). Listing the same run twice
    /// gives identical replicas.
    pub fn for_runs(key: SeedKey, runs: &[u64], device: Device) -> Self {
        let rngs = runs.iter().map(|&r| key.child(r).rng()).collect();
        Self { rngs, device }
    }

    /// Runs `0..replicas` of a replayable run with this seed.
    pub fn new(seed: u64, replicas: usize, device: Device) -> Self {
        let runs: Vec<u64> = (0..replicas as u64).collect();
        Self::with_streams(seed, &runs, device)
    }

    /// The listed runs of a replayable run with this seed:
    /// `with_streams(seed, &[m], d)` gives the initial parameters run `m` has
    /// in a stack of any size.
    pub fn with_streams(seed: u64, runs: &[u64], device: Device) -> Self {
        Self::for_runs(RunSeed(seed).stream(Stream::Init), runs, device)
    }

    /// Number of replicas `M`.
    pub fn replicas(&self) -> i64 {
        self.rngs.len() as i64
    }

    /// The device parameters are created on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// A `[M, shape]` parameter with entries `U(−bound, bound)`, requiring grad.
    /// Replica `i`'s entries are the next values of its own stream, in
    /// row-major order.
    pub fn uniform(&mut self, shape: &[i64], bound: f64) -> Result<Tensor> {
        let per: usize = shape.iter().product::<i64>() as usize;
        let full = self.full_shape(shape);
        let device = self.device;
        let rngs = &mut self.rngs;
        torch("allocating and drawing an initial parameter", || {
            let param = Tensor::f_empty(full.as_slice(), (Kind::Float, device))?;
            let flat = param.f_view([-1])?;
            let mut host = Vec::with_capacity(FILL_SLICE.min(per * rngs.len()));
            let mut offset = 0;
            for r in rngs.iter_mut() {
                for _ in 0..per {
                    host.push(r.gen_range(-bound..bound) as f32);
                    if host.len() == FILL_SLICE {
                        upload(&flat, &mut offset, &mut host)?;
                    }
                }
            }
            upload(&flat, &mut offset, &mut host)?;
            param.f_set_requires_grad(true)
        })
    }

    /// A `[M, shape]` parameter filled with `value`, requiring grad.
    pub fn constant(&mut self, shape: &[i64], value: f64) -> Result<Tensor> {
        let full = self.full_shape(shape);
        torch("allocating an initial parameter", || {
            let value = scalar::number(value, Kind::Float)?;
            scalar::full(&full, &value, (Kind::Float, self.device))?.f_set_requires_grad(true)
        })
    }

    fn full_shape(&self, shape: &[i64]) -> Vec<i64> {
        let mut full = vec![self.replicas()];
        full.extend_from_slice(shape);
        full
    }
}

/// Copy `host` into `flat[offset..]`, advance `offset` and empty `host`.
fn upload(flat: &Tensor, offset: &mut i64, host: &mut Vec<f32>) -> Result<(), TchError> {
    if host.is_empty() {
        return Ok(());
    }
    let n = host.len() as i64;
    flat.f_narrow(0, *offset, n)?
        .f_copy_(&Tensor::f_from_slice(host)?)?;
    *offset += n;
    host.clear();
    Ok(())
}
