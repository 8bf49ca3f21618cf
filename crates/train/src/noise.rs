//! DP-SGD's Gaussian noise, drawn from generators the run owns.
//!
//! # Where the noise comes from
//!
//! The replica trained as run `r` draws the noise of step `t` from ChaCha20
//! keyed by `noise.child(r)` of the run's key tree (see
//! [`dpaudit_data::seed`]) on stream (nonce) `t`. The draws fill the
//! replica's flat parameter vector in [`crate::Model::named_parameters`]
//! order, row-major within a parameter, in blocks of [`NOISE_BLOCK`]
//! coordinates: block `j` starts at word `j·2³⁶` of the stream (block 0 at its
//! start), a range no block comes near using up (and a block that did would
//! fail the step rather than overlap the next). So the blocks of one large
//! model are drawn on several cores, as the rows of a replica stack are.
//! So a run's noise depends on `(key, r, t)` alone: not on how many runs share
//! a replica stack, on which chunk or shard trains it, on other threads, or on
//! libtorch's generator (which is never used). Noise is generated on the host
//! and uploaded; on the CPU that is a copy into the tensor.
//!
//! On a GPU, host generation would cost host time proportional to replicas ×
//! parameters every step, so replayable runs there draw on the device instead
//! ([`NoiseGenerator::DevicePhilox`]): row `r` is Philox4x32-10
//! ([`crate::philox::RowKeys`]) keyed by the first 64 bits of `noise.child(r)`,
//! with the step and the tag "nois" in the counter, turned into normals by
//! Box–Muller in `f64` and rounded once to `f32` after scaling. The noise still
//! depends on `(key, r, t)` alone, but differs from the host stream, so a
//! replayable run replays exactly on the same kind of device. Box–Muller on
//! 52-bit uniforms reaches |z| ≈ 8.6 at most, a truncation at probability
//! below 10⁻¹⁷ per coordinate, far below anything an audit resolves. Secure
//! runs never use it (see [`NoiseStreams::with_generator`]).
//!
//! # The two modes
//!
//! * **Replayable** (audits): the noise key derives from the config's seed, and
//!   each coordinate is one standard normal (`rand_distr`'s ziggurat sampler,
//!   in `f64`, or Box–Muller on a GPU), scaled by `σ·C` in `f64` and rounded
//!   once to `f32`.
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
use crate::philox::RowKeys;

/// Independent standard normals summed per coordinate in secure mode.
pub const SECURE_DRAWS: usize = 4;

/// Below this many coordinates per step (all replicas), noise is drawn on one
/// thread: spawning costs more than it saves.
const PARALLEL_THRESHOLD: usize = 1 << 18;

/// The tag word of the DP noise in a replica's Philox stream (ASCII "nois");
/// the other two tag words are the step.
const NOISE_TAG: u32 = 0x6e6f_6973;

/// Which generator draws a step's noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseGenerator {
    /// ChaCha20 on the host, uploaded: always in secure mode, and for
    /// replayable runs on the CPU, where it is the cheaper of the two.
    HostChaCha20,
    /// Philox4x32-10 ([`crate::philox::RowKeys`]) on the device, every
    /// replica in one draw: replayable runs on a GPU. A fixed number of
    /// libtorch operations per step whatever the number of replicas, and no
    /// `M·P` host work or upload. Never used in secure mode.
    DevicePhilox,
}

impl NoiseGenerator {
    /// The default for a run of `mode` training on `device`.
    pub fn default_for(mode: Mode, device: Device) -> Self {
        match (mode, device) {
            (Mode::Replayable, Device::Cuda(_)) => NoiseGenerator::DevicePhilox,
            // Secure noise is always drawn on the host (no catch-all over
            // the modes: a new mode must say where its noise comes from).
            (Mode::Replayable, _) | (Mode::Secure, _) => NoiseGenerator::HostChaCha20,
        }
    }

    /// Name in outputs.
    pub fn name(self) -> &'static str {
        match self {
            NoiseGenerator::HostChaCha20 => "host-chacha20",
            NoiseGenerator::DevicePhilox => "device-philox",
        }
    }
}

/// The noise generators of a replica stack: one per run, advancing one step at
/// a time.
#[derive(Debug)]
pub struct NoiseStreams {
    keys: Vec<SeedKey>,
    mode: Mode,
    step: u64,
    /// `None`: [`NoiseGenerator::default_for`] the device of each draw.
    generator: Option<NoiseGenerator>,
    /// The replicas' Philox keys on the device of the last device draw.
    row_keys: Option<RowKeys>,
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
            generator: None,
            row_keys: None,
        }
    }

    /// Draw with `generator` whatever the device (benchmarks and tests run the
    /// device generator on the CPU). Secure mode refuses the device generator.
    pub fn with_generator(mut self, generator: NoiseGenerator) -> Result<Self> {
        self.set_generator(generator)?;
        Ok(self)
    }

    /// As [`NoiseStreams::with_generator`], in place.
    pub fn set_generator(&mut self, generator: NoiseGenerator) -> Result<()> {
        if self.mode == Mode::Secure && generator == NoiseGenerator::DevicePhilox {
            return Err(TrainError::InvalidConfig {
                field: "noise generator".into(),
                value: generator.name().into(),
                expected: "host-chacha20 in secure mode: Philox keyed by 64 bits is not a \
                           cryptographic generator"
                    .into(),
            });
        }
        self.generator = Some(generator);
        Ok(())
    }

    /// The generator a draw on `device` uses.
    pub fn generator(&self, device: Device) -> NoiseGenerator {
        self.generator
            .unwrap_or_else(|| NoiseGenerator::default_for(self.mode, device))
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
        let all = match self.generator(device) {
            NoiseGenerator::HostChaCha20 => {
                let flat = self.draw(std, per_replica)?;
                Tensor::f_from_slice(&flat)
                    .and_then(|t| t.f_reshape([m, per_replica as i64]))
                    .and_then(|t| t.f_to_device(device))
                    .map_err(TrainError::torch("uploading DP noise"))?
            }
            NoiseGenerator::DevicePhilox => self
                .draw_on_device(std, per_replica as i64, device)
                .map_err(TrainError::torch("drawing DP noise on the device"))?,
        };
        self.step += 1;
        // all is [M, P]; split it into the parameters.
        let mut out = Vec::with_capacity(params.len());
        let mut offset = 0i64;
        for (p, &n) in params.iter().zip(&sizes) {
            let part = all
                .f_narrow(1, offset, n as i64)
                .and_then(|t| t.f_reshape(p.size()))
                .map_err(TrainError::torch("splitting DP noise"))?;
            out.push(part);
            offset += n as i64;
        }
        Ok(out)
    }

    /// `[M, P]` float32 on `device`: row `i` is `f32(std · z)` with `z` the
    /// Box–Muller normals of replica `i`'s Philox stream (the first 64 bits
    /// of its noise key) tagged with this step.
    fn draw_on_device(
        &mut self,
        std: f64,
        per_replica: i64,
        device: Device,
    ) -> tch::Result<Tensor> {
        let keys = match self.row_keys.take() {
            Some(k) if k.device() == device => k,
            _ => RowKeys::new(&self.keys, device)?,
        };
        let tag = [self.step as u32, (self.step >> 32) as u32, NOISE_TAG];
        let z = keys.scaled_normal(per_replica, tag, std, tch::Kind::Float);
        self.row_keys = Some(keys);
        z
    }

    /// `[M, P]` row-major: row `i` is run `runs[i]`'s noise for this step.
    ///
    /// The work is split into blocks of [`NOISE_BLOCK`] coordinates of a row,
    /// each with its own place in its run's stream ([`fill_gaussian`]), so a
    /// single large replica spreads over every core as a stack of small ones
    /// does; the values do not depend on the split.
    fn draw(&self, std: f64, per_replica: usize) -> Result<Vec<f32>> {
        let mut flat = vec![0f32; self.keys.len() * per_replica];
        if per_replica == 0 {
            return Ok(flat);
        }
        let draws = match self.mode {
            Mode::Secure => SECURE_DRAWS,
            Mode::Replayable => 1,
        };
        let step = self.step;
        // (run key, block index within its row, the block's coordinates)
        let mut blocks: Vec<(SeedKey, u64, &mut [f32])> = self
            .keys
            .iter()
            .zip(flat.chunks_mut(per_replica))
            .flat_map(|(&key, row)| {
                row.chunks_mut(NOISE_BLOCK)
                    .enumerate()
                    .map(move |(j, b)| (key, j as u64, b))
            })
            .collect();
        let fill = |blocks: &mut [(SeedKey, u64, &mut [f32])]| -> Result<()> {
            for (key, j, out) in blocks.iter_mut() {
                fill_gaussian_block(*key, step, *j, std, draws, out)?;
            }
            Ok(())
        };
        let threads = thread::available_parallelism().map_or(1, |n| n.get());
        let total = self.keys.len() * per_replica * draws;
        if total < PARALLEL_THRESHOLD || threads == 1 || blocks.len() == 1 {
            fill(&mut blocks)?;
            return Ok(flat);
        }
        let per_thread = blocks.len().div_ceil(threads);
        thread::scope(|scope| {
            let handles: Vec<_> = blocks
                .chunks_mut(per_thread)
                .map(|part| scope.spawn(move || fill(part)))
                .collect();
            handles
                .into_iter()
                .try_for_each(|h| h.join().unwrap_or_else(|_| Err(noise_thread_failed(step))))
        })?;
        Ok(flat)
    }
}

/// A noise thread that panicked (it has no reason to).
fn noise_thread_failed(step: u64) -> TrainError {
    TrainError::Noise {
        step,
        reason: "a thread drawing it panicked".into(),
    }
}

/// Coordinates of a row drawn from one place in its run's stream: block `j`
/// of a row starts at word `j · 2^NOISE_BLOCK_WORDS_LOG2` of the run's
/// ChaCha20 stream for the step. Block 0 starts at word 0, so a row of at
/// most `NOISE_BLOCK` coordinates is the stream's first draws.
pub const NOISE_BLOCK: usize = 1 << 14;

/// log₂ of the words of stream reserved for each block: 2³⁶ 32-bit words,
/// against about 2¹⁷ that a block of 2¹⁴ coordinates with four ziggurat
/// draws each consumes (one 64-bit word per attempt, about 1 % of attempts
/// rejected). ChaCha20's 68-bit word position leaves room for 2³² blocks.
const NOISE_BLOCK_WORDS_LOG2: u32 = 36;

/// One run's noise for one step: `out[i] = f32(std · z_i)` with `z_i` one
/// standard normal (`draws = 1`) or the hardened sum of `draws` of them scaled
/// to unit variance, drawn from ChaCha20 keyed by `key` on stream `step`,
/// block by block ([`NOISE_BLOCK`]): the same values [`NoiseStreams`] draws
/// for that run, on one thread.
pub fn fill_gaussian(
    key: SeedKey,
    step: u64,
    std: f64,
    draws: usize,
    out: &mut [f32],
) -> Result<()> {
    for (j, block) in out.chunks_mut(NOISE_BLOCK).enumerate() {
        fill_gaussian_block(key, step, j as u64, std, draws, block)?;
    }
    Ok(())
}

/// Block `j` of a run's noise for one step (see [`fill_gaussian`]). Fails,
/// rather than let two blocks share stream words, if a block ever consumed
/// its whole reserved range (see [`NOISE_BLOCK_WORDS_LOG2`]; it would take
/// about 2¹⁹ times the expected number of draws).
fn fill_gaussian_block(
    key: SeedKey,
    step: u64,
    j: u64,
    std: f64,
    draws: usize,
    out: &mut [f32],
) -> Result<()> {
    let mut rng: ChaCha20Rng = key.rng();
    rng.set_stream(step);
    let start = u128::from(j) << NOISE_BLOCK_WORDS_LOG2;
    if j > 0 {
        rng.set_word_pos(start);
    }
    if draws == 1 {
        for x in out.iter_mut() {
            let z: f64 = rng.sample(StandardNormal);
            *x = (std * z) as f32;
        }
    } else {
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
    if rng.get_word_pos() - start >= 1u128 << NOISE_BLOCK_WORDS_LOG2 {
        return Err(TrainError::Noise {
            step,
            reason: format!(
                "block {j} used its whole range of the stream; refusing to let blocks overlap"
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The step's noise of one run as the plain stream gives it: ChaCha20
    /// keyed by `key` on stream `step` from word `start`, `n` coordinates of
    /// `draws` ziggurat normals each (the definition, written out).
    fn by_hand(key: SeedKey, step: u64, start: u128, std: f64, draws: usize, n: usize) -> Vec<f32> {
        let mut rng: ChaCha20Rng = key.rng();
        rng.set_stream(step);
        rng.set_word_pos(start);
        let scale = std / (draws as f64).sqrt();
        (0..n)
            .map(|_| {
                let sum: f64 = (0..draws)
                    .map(|_| rng.sample::<f64, _>(StandardNormal))
                    .sum();
                (scale * sum) as f32
            })
            .collect()
    }

    /// A row of 10½ blocks: every block is its own place in the run's stream
    /// (block 0 the stream's start, so rows of one block are unchanged), and
    /// drawing the stack on several threads gives the one-thread values.
    #[test]
    fn blocks_are_fixed_places_in_the_stream_whatever_the_threads() {
        let per_replica = 10 * NOISE_BLOCK + NOISE_BLOCK / 2;
        for (mode, draws) in [(Mode::Replayable, 1), (Mode::Secure, SECURE_DRAWS)] {
            let randomness = match mode {
                Mode::Replayable => Randomness::replayable(7),
                Mode::Secure => Randomness::secure(7).unwrap(),
            };
            let mut streams = NoiseStreams::new(&randomness, &[3, 9]);
            streams.skip_step();
            // Two replicas × 10½ blocks: above the threshold, so threaded
            // wherever the machine has two cores.
            assert!(2 * per_replica * draws >= PARALLEL_THRESHOLD);
            let flat = streams.draw(0.5, per_replica).unwrap();
            for (i, key) in streams.keys.iter().enumerate() {
                let row = &flat[i * per_replica..(i + 1) * per_replica];
                let mut one_thread = vec![0f32; per_replica];
                fill_gaussian(*key, 1, 0.5, draws, &mut one_thread).unwrap();
                assert!(row == one_thread.as_slice(), "{mode:?} row {i}");
                for j in [0usize, 1, 10] {
                    let start = (j as u128) << NOISE_BLOCK_WORDS_LOG2;
                    let n = NOISE_BLOCK.min(per_replica - j * NOISE_BLOCK);
                    let expected = by_hand(*key, 1, start, 0.5, draws, n);
                    assert!(
                        row[j * NOISE_BLOCK..j * NOISE_BLOCK + n] == expected[..],
                        "{mode:?} row {i} block {j}"
                    );
                }
            }
        }
    }

    /// Blocks of one row are not correlated with each other (distinct stream
    /// words), and each has the intended spread: over 16,384 pairs a
    /// correlation beyond 5/√n = 0.039 or a standard deviation off by more
    /// than 5·√(1/2n) = 2.8 % has probability below 10⁻⁶ under independence.
    #[test]
    fn blocks_are_independent_normals_of_the_intended_scale() {
        let streams = NoiseStreams::replayable(11, 1);
        let std = 2.0;
        let flat = streams.draw(std, 3 * NOISE_BLOCK).unwrap();
        let n = NOISE_BLOCK as f64;
        let block = |j: usize| &flat[j * NOISE_BLOCK..(j + 1) * NOISE_BLOCK];
        for j in 0..3 {
            let sd = (block(j).iter().map(|&x| f64::from(x).powi(2)).sum::<f64>() / n).sqrt();
            assert!(
                (sd / std - 1.0).abs() < 5.0 * (0.5 / n).sqrt(),
                "block {j}: sd {sd}"
            );
        }
        for (a, b) in [(0, 1), (1, 2), (0, 2)] {
            let r = block(a)
                .iter()
                .zip(block(b))
                .map(|(&x, &y)| f64::from(x) * f64::from(y))
                .sum::<f64>()
                / (n * std * std);
            assert!(
                r.abs() < 5.0 / n.sqrt(),
                "blocks {a} and {b}: correlation {r}"
            );
        }
    }
}
