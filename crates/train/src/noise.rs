//! DP-SGD's Gaussian noise, drawn from generators the run owns.
//!
//! # Where the noise comes from
//!
//! The replica trained as run `r` draws the noise of step `t` from ChaCha20
//! keyed by `noise.child(r)` of the run's key tree (see
//! [`dpaudit_data::seed`]) on stream (nonce) `t`, starting at block 0. The
//! draws fill the replica's flat parameter vector in
//! [`crate::Model::named_parameters`] order, row-major within a parameter.
//! So a run's noise depends on `(key, r, t)` alone: not on how many runs share
//! a replica stack, on which chunk or shard trains it, on other threads, or on
//! libtorch's generator (which is never used). Noise is generated on the host
//! and uploaded; on the CPU that is a copy into the tensor.
//!
//! # The two modes
//!
//! * **Replayable** (audits): the noise key derives from the config's seed, and
//!   each coordinate is one standard normal (`rand_distr`'s ziggurat sampler,
//!   in `f64`), scaled by `σ·C` in `f64` and rounded once to `f32`.
//! * **Secure** (models that may be released): the key derives from 256 bits
//!   of OS entropy that are never written, so nothing in the run's files
//!   determines the noise (ChaCha20 is a cryptographically secure generator:
//!   its output does not reveal its key). Each coordinate is hardened against
//!   floating-point attacks as follows.
//!
//! # Hardening against floating-point attacks (secure mode)
//!
//! Mironov (2012) showed for the Laplace mechanism, and Jin et al. (2022,
//! "Are We There Yet? Timing and Floating-Point Attacks on Differential Privacy
//! Systems", IEEE S&P, §IV; arXiv 2112.05307) for the Gaussian mechanism and
//! DP-SGD, that a floating-point sampler reaches only an irregular subset of
//! the representable numbers, and which numbers it can reach depends on its
//! input uniforms: an observed noisy value `g + z` can then rule out some
//! values of `g`. Holohan & Braghin (2021, "Secure Random Sampling in
//! Differential Privacy", ESORICS, §5) remove the attack for any infinitely
//! divisible distribution by releasing the sum of `n` independent samples
//! scaled to the target variance: inverting the sum means searching over the
//! `n`-fold preimage, exponential in `n`. Opacus' `secure_mode` does the same
//! with four Box–Muller draws. Here each coordinate is
//!
//! ```text
//! z = (z₁ + z₂ + z₃ + z₄) / 2,   zᵢ ~ N(0, 1) i.i.d., each its own ziggurat draw
//! ```
//!
//! computed in `f64` (the `zᵢ` share no uniforms, unlike the two outputs of
//! one Box–Muller pair, so four draws give Holohan & Braghin's `n = 4`), then
//! `σC·z` is rounded once to `f32`, the precision of the update. That final
//! rounding is a second, independent argument: the `f64` sum takes values on
//! a grid about 2²⁹ times finer than the `f32` grid the adversary observes, so
//! in the bulk of the distribution every `f32` cell receives noise with
//! probability equal to the Gaussian mass of that cell up to a relative error
//! of order 2⁻²⁹, and no `f32` value is unreachable from one input and
//! reachable from its neighbour. The price is four normals per coordinate
//! instead of one (measured in `benches/RESULTS.md`).
//!
//! # Tails
//!
//! The ziggurat sampler has no truncation beyond what `f64` imposes, so the
//! noise has the Gaussian's tails to far beyond anything an audit or an
//! accountant resolves.

use std::thread;

use dpaudit_data::seed::{Mode, Randomness, SeedKey, Stream};
use rand::Rng;
use rand_chacha::ChaCha20Rng;
use rand_distr::StandardNormal;
use tch::{Device, Tensor};

use crate::error::{Result, TrainError};

/// Independent standard normals summed per coordinate in secure mode.
pub const SECURE_DRAWS: usize = 4;

/// Below this many coordinates per step (all replicas), noise is drawn on one
/// thread: spawning costs more than it saves.
const PARALLEL_THRESHOLD: usize = 1 << 18;

/// The noise generators of a replica stack: one per run, advancing one step at
/// a time.
#[derive(Debug)]
pub struct NoiseStreams {
    keys: Vec<SeedKey>,
    mode: Mode,
    step: u64,
}

impl NoiseStreams {
    /// One generator per listed run (replica `i` trains run `runs[i]`), keyed
    /// by `randomness`'s noise stream.
    pub fn new(randomness: &Randomness, runs: &[u64]) -> Self {
        let root = randomness.stream(Stream::Noise);
        Self {
            keys: runs.iter().map(|&r| root.child(r)).collect(),
            mode: randomness.mode(),
            step: 0,
        }
    }

    /// Runs `0..replicas` of a replayable run with this seed (tests, benches).
    pub fn replayable(seed: u64, replicas: usize) -> Self {
        let runs: Vec<u64> = (0..replicas as u64).collect();
        Self::new(&Randomness::replayable(seed), &runs)
    }

    /// Secure or replayable.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Number of replicas.
    pub fn replicas(&self) -> usize {
        self.keys.len()
    }

    /// The step whose noise the next call of [`NoiseStreams::next_step`] draws.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// Advance one step without drawing (a step with `σ = 0`).
    pub fn skip_step(&mut self) {
        self.step += 1;
    }

    /// `N(0, std²)` noise shaped like each of `params` (`[M, ...]`, `M` the
    /// number of runs), as `f32` on `device`, for the current step; then
    /// advances to the next step.
    pub fn next_step(
        &mut self,
        std: f64,
        params: &[Tensor],
        device: Device,
    ) -> Result<Vec<Tensor>> {
        let m = self.keys.len() as i64;
        let mut sizes = Vec::with_capacity(params.len());
        for p in params {
            let shape = p.size();
            if shape.first() != Some(&m) {
                return Err(TrainError::Shape {
                    what: "parameter for noise".into(),
                    got: shape,
                    expected: format!("[{m}, ...]: one row per run of the noise streams"),
                });
            }
            sizes.push(shape[1..].iter().product::<i64>() as usize);
        }
        let per_replica: usize = sizes.iter().sum();
        let flat = self.draw(std, per_replica);
        self.step += 1;
        // flat is [M, P]; split it into the parameters.
        let all = Tensor::f_from_slice(&flat)
            .and_then(|t| t.f_reshape([m, per_replica as i64]))
            .map_err(TrainError::torch("uploading DP noise"))?;
        let mut out = Vec::with_capacity(params.len());
        let mut offset = 0i64;
        for (p, &n) in params.iter().zip(&sizes) {
            let part = all
                .f_narrow(1, offset, n as i64)
                .and_then(|t| t.f_reshape(p.size()))
                .and_then(|t| t.f_to_device(device))
                .map_err(TrainError::torch("uploading DP noise"))?;
            out.push(part);
            offset += n as i64;
        }
        Ok(out)
    }

    /// `[M, P]` row-major: row `i` is run `runs[i]`'s noise for this step.
    fn draw(&self, std: f64, per_replica: usize) -> Vec<f32> {
        let mut flat = vec![0f32; self.keys.len() * per_replica];
        if per_replica == 0 {
            return flat;
        }
        let draws = match self.mode {
            Mode::Secure => SECURE_DRAWS,
            Mode::Replayable => 1,
        };
        let fill = |keys: &[SeedKey], rows: &mut [f32]| {
            for (key, row) in keys.iter().zip(rows.chunks_mut(per_replica)) {
                fill_gaussian(*key, self.step, std, draws, row);
            }
        };
        let threads = thread::available_parallelism().map_or(1, |n| n.get());
        if flat.len() * draws < PARALLEL_THRESHOLD || threads == 1 || self.keys.len() == 1 {
            fill(&self.keys, &mut flat);
            return flat;
        }
        let per_thread = self.keys.len().div_ceil(threads);
        thread::scope(|scope| {
            for (keys, rows) in self
                .keys
                .chunks(per_thread)
                .zip(flat.chunks_mut(per_thread * per_replica))
            {
                scope.spawn(move || fill(keys, rows));
            }
        });
        flat
    }
}

/// One run's noise for one step: `out[i] = f32(std · z_i)` with `z_i` one
/// standard normal (`draws = 1`) or the hardened sum of `draws` of them scaled
/// to unit variance, drawn from ChaCha20 keyed by `key` on stream `step`.
pub fn fill_gaussian(key: SeedKey, step: u64, std: f64, draws: usize, out: &mut [f32]) {
    let mut rng: ChaCha20Rng = key.rng();
    rng.set_stream(step);
    if draws == 1 {
        for x in out.iter_mut() {
            let z: f64 = rng.sample(StandardNormal);
            *x = (std * z) as f32;
        }
        return;
    }
    let scale = std / (draws as f64).sqrt();
    for x in out.iter_mut() {
        let mut sum = 0.0f64;
        for _ in 0..draws {
            let z: f64 = rng.sample(StandardNormal);
            sum += z;
        }
        *x = (scale * sum) as f32;
    }
}
