//! The Batched Gaussian Mechanism (BGM) simulator vectorised on libtorch, for
//! the GPU (`Device::Cuda`) and for CPU tensors (Annamalai et al. 2024 §4,
//! Algorithm 4).
//!
//! It takes the same [`BgmConfig`] as the pure-Rust simulator
//! [`dpaudit_attacks::BgmSimulator`] and returns the same [`PairedScores`],
//! placing the special records exactly as that simulator does for every
//! sampler (Annamalai et al. 2024 §2.2) and scoring with the same log-space likelihood
//! ratios (Annamalai et al. 2024 §4.1–4.2, §5.3). It differs only in how the work is laid out:
//!
//! - **Chunks.** Runs are cut into chunks of [`TensorBgmSimulator::chunk_runs`]
//!   runs. All E×T noisy batch sums of one chunk and one hypothesis are one
//!   `[runs, E, W]` tensor; it is placed, scored and dropped before the next
//!   chunk, so memory is bounded by the chunk size, never by the run count.
//!   `W` is the number of scored columns k (`score_columns`), plus one
//!   "overflow" column when k < T that absorbs the special records landing in
//!   unscored batches: batches beyond k are never drawn.
//! - **Precision: float64.** Scores must agree with the CPU scorer to 1e-9 and
//!   stay finite for T = 1000, E = 500. In float32 the
//!   raw sums `B·f + σz` lose the O(1) signal for large B (an ulp of 1000 is
//!   6e-5), and the per-epoch log ratios, each a difference of terms of order
//!   `B·o/σ²`, would carry errors of about 1e-3 that grow with E. The
//!   simulation is bound by memory traffic and the RNG rather than arithmetic
//!   (about ten passes over the chunk), so float64 costs at most a factor two
//!   in bandwidth, and keeps the two engines interchangeable.
//! - **Log space.** Each epoch's factor is `LSE_t(a·o + c) − LSE_t(a′·o + c′)`,
//!   evaluated as the CPU scorer does: both log-sum-exps are taken around the
//!   row maximum, so every sum is ≥ 1 and nothing under- or overflows
//!   (docs/canary-games.md). The Poisson mixture uses an exact softplus,
//!   `max(e, 0) + log1p(exp(−|e|))`.
//! - **Randomness.** Every draw comes from the simulator's own counter-based
//!   generator ([`dpaudit_train::philox::Philox`]), keyed by the `simulation` stream of
//!   the config's seed; a draw of chunk `c` under hypothesis `h` for purpose
//!   `p` is tagged `(2p + h, c mod 2³², c div 2³²)`, so no two draws of a
//!   simulation share a counter, for any number of chunks. Nothing is drawn
//!   from libtorch's process-global generator: simulations on several threads
//!   of one process do not perturb each other. The scores are a deterministic
//!   function of (config, `chunk_runs`, first chunk, run count), and the same
//!   on every device up to the last bits of `log`, `sin` and `cos`.
//!
//! **The tensor and the pure-Rust engines draw differently** (Philox here,
//! ChaCha streams there): they are equal in distribution, not draw for draw;
//! `tests/bgm_tensor.rs` checks the tensor engine against the pure-Rust one by
//! two-sample Kolmogorov–Smirnov tests, and its scoring exactly.

use dpaudit_attacks::likelihood::LogRatioCoefficients;
use dpaudit_attacks::{
    AttacksError, BgmConfig, BgmDataset, BgmLayout, BgmSimulator, Hypothesis, LikelihoodRatio,
    PairedScores,
};
use dpaudit_data::seed::{RunSeed, Stream};
use tch::{Device, Kind, TchError, Tensor};

use dpaudit_train::philox::Philox;
use dpaudit_train::scalar::{full, int, number, WithNumber};
use dpaudit_train::{Result, TrainError};

/// Default chunk budget on the CPU, in float64 elements of the `[runs, E, W]`
/// tensor (8 MiB): large enough to amortise per-call overhead, small enough
/// for the last-level cache of a small machine to matter.
pub const CPU_CHUNK_ELEMENTS: usize = 1 << 20;

/// Default chunk budget on a GPU, in float64 elements (512 MiB per tensor; a
/// chunk holds about four such tensors at its peak).
pub const CUDA_CHUNK_ELEMENTS: usize = 1 << 26;

/// What a draw of a chunk is for: the first counter word is `2·purpose + h`.
#[derive(Clone, Copy)]
enum Purpose {
    Noise = 0,
    TargetHit = 1,
    OtherSpecials = 2,
    Fillers = 3,
    Batch = 4,
    Keys = 5,
}

/// The Philox tag of a draw of chunk `chunk` under `hypothesis`.
fn tag(purpose: Purpose, chunk: u64, hypothesis: Hypothesis) -> [u32; 3] {
    let h = match hypothesis {
        Hypothesis::WithTarget => 0,
        Hypothesis::WithoutTarget => 1,
    };
    [2 * purpose as u32 + h, chunk as u32, (chunk >> 32) as u32]
}

/// An [`AttacksError`] as this crate's error, keeping parameter, value and
/// expectation verbatim.
fn from_attacks(e: AttacksError) -> TrainError {
    match e {
        AttacksError::InvalidParameter {
            parameter,
            value,
            expected,
        } => TrainError::InvalidConfig {
            field: parameter.to_string(),
            value,
            expected,
        },
        other => TrainError::InvalidConfig {
            field: "observations".into(),
            value: other.to_string(),
            expected: "finite values of the shape the likelihood ratio needs".into(),
        },
    }
}

/// The per-epoch log-likelihood ratio on tensors (Annamalai et al. 2024 §4.1–4.2, §5.3): for rows
/// `o` of the scored columns, `(a − a′)·o_max + c − c′ + ln Σ exp(a(o − o_max))
/// − ln Σ exp(a′(o − o_max))`, or the Poisson mixture. The coefficients are
/// the log forms of Annamalai et al. 2024 §4.1–4.2, §5.3 (the same as the pure-Rust scorer's).
#[derive(Debug, Clone, Copy)]
struct Scorer(LogRatioCoefficients);

impl Scorer {
    /// Validates `lr` and σ and takes the coefficients from
    /// [`LogRatioCoefficients`], which the pure-Rust scorer uses too.
    fn new(lr: LikelihoodRatio, noise_multiplier: f64) -> Result<Self> {
        let coefficients = LogRatioCoefficients::new(lr, noise_multiplier).map_err(from_attacks)?;
        Ok(Self(coefficients))
    }

    /// `log Λ` of every run: `[runs, E, k]` (float64, the scored columns
    /// only) → `[runs]`, the sum over epochs of the per-epoch factors.
    fn scores(&self, o: &Tensor) -> Result<Tensor, TchError> {
        let k = o.size()[2];
        let rows = if let LikelihoodRatio::Poisson { .. } = self.0.lr {
            if self.0.log_1mq == f64::NEG_INFINITY {
                // q = 1: every step holds the target; the Gaussian ratio per step.
                o.mul_f64(self.0.a)?.add_f64(self.0.c)?.f_sum_dim_intlist(
                    -1,
                    false,
                    Kind::Double,
                )?
            } else {
                // Σ_t log((1−q) + q·exp(a·o + c)) = k·log(1−q) + Σ_t softplus(e_t),
                // e_t = a·o + c + log q − log(1−q); softplus(e) = max(e, 0) + log1p(exp(−|e|)).
                let shift = self.0.c + self.0.log_q - self.0.log_1mq;
                let mut e = o.mul_f64(self.0.a)?.add_f64(shift)?;
                let positive = e.f_relu()?.f_sum_dim_intlist(-1, false, Kind::Double)?;
                let _ = e.f_abs_()?;
                let _ = e.f_neg_()?;
                let _ = e.f_exp_()?;
                let _ = e.f_log1p_()?;
                e.f_sum_dim_intlist(-1, false, Kind::Double)?
                    .f_add(&positive)?
                    .add_f64(k as f64 * self.0.log_1mq)?
            }
        } else {
            // d = o − o_max is the one chunk-sized allocation; the exps are
            // taken in place on it (or on one copy for Λ^BtS's two slopes).
            let o_max = o.f_amax(-1, true)?;
            let mut d = o.f_sub(&o_max)?;
            let o_max = o_max.f_squeeze_dim(-1)?;
            let log_sum_exp_in_place = |x: &mut Tensor, slope: f64| -> Result<Tensor, TchError> {
                let _ = x.mul_f64_(slope)?;
                let _ = x.f_exp_()?;
                x.f_sum_dim_intlist(-1, false, Kind::Double)?.f_log()
            };
            match self.0.lr {
                LikelihoodRatio::Natural => o_max
                    .mul_f64(self.0.a)?
                    .add_f64(self.0.c)?
                    .f_add(&log_sum_exp_in_place(&mut d, self.0.a)?)?,
                LikelihoodRatio::PartiallyInformed | LikelihoodRatio::WorstCase { .. } => {
                    // a = 2a′: the numerator's terms are the squares of the
                    // denominator's (one exp per entry, as on the CPU).
                    let den = log_sum_exp_in_place(&mut d, self.0.a_den)?;
                    let _ = d.f_square_()?;
                    let num = d.f_sum_dim_intlist(-1, false, Kind::Double)?.f_log()?;
                    o_max
                        .mul_f64(self.0.a - self.0.a_den)?
                        .add_f64(self.0.c - self.0.c_den)?
                        .f_add(&num)?
                        .f_sub(&den)?
                }
                _ => {
                    let mut d_num = d.mul_f64(self.0.a)?;
                    let num = log_sum_exp_in_place(&mut d_num, 1.0)?;
                    drop(d_num);
                    let den = log_sum_exp_in_place(&mut d, self.0.a_den)?;
                    o_max
                        .mul_f64(self.0.a - self.0.a_den)?
                        .add_f64(self.0.c - self.0.c_den)?
                        .f_add(&num)?
                        .f_sub(&den)?
                }
            }
        };
        rows.f_sum_dim_intlist(-1, false, Kind::Double)
    }
}

/// Fails unless every value of `t` is finite.
fn all_finite(t: &Tensor) -> Result<bool, TchError> {
    Ok(t.f_isfinite()?.f_all()?.f_int64_value(&[])? == 1)
}

/// `log Λ` of a batch of observation matrices on any device: the tensor
/// counterpart of [`dpaudit_attacks::log_likelihood_ratio`] (Annamalai et al. 2024 §4.1–4.2, §5.3),
/// scoring the first `columns` steps of every epoch.
///
/// `observations` is `[runs, E, T]` (float32 or float64; computed in
/// float64); the result is `[runs]` float64 on the same device. Refuses what
/// the pure-Rust scorer refuses (σ, the ratio's parameters, `columns` outside
/// 1..=T, non-finite observations or scores), with the same parameter names.
pub fn log_likelihood_ratios(
    lr: LikelihoodRatio,
    observations: &Tensor,
    noise_multiplier: f64,
    columns: usize,
) -> Result<Tensor> {
    let scorer = Scorer::new(lr, noise_multiplier)?;
    let size = observations.size();
    if size.len() != 3 || size[1] == 0 || size[2] == 0 {
        return Err(TrainError::Shape {
            what: "BGM observations".into(),
            got: size,
            expected: "[runs, epochs ≥ 1, steps ≥ 1]".into(),
        });
    }
    if columns == 0 || columns as i64 > size[2] {
        return Err(TrainError::InvalidConfig {
            field: "columns".into(),
            value: columns.to_string(),
            expected: format!("1 ..= {} (the steps per epoch)", size[2]),
        });
    }
    let run = || -> Result<(Tensor, bool, bool), TchError> {
        let o = observations
            .f_to_kind(Kind::Double)?
            .f_narrow(2, 0, columns as i64)?;
        let finite_in = all_finite(&o)?;
        let scores = scorer.scores(&o)?;
        let finite_out = all_finite(&scores)?;
        Ok((scores, finite_in, finite_out))
    };
    let (scores, finite_in, finite_out) =
        run().map_err(TrainError::torch("scoring BGM observations"))?;
    if !finite_in {
        return Err(TrainError::InvalidConfig {
            field: "observations".into(),
            value: "a NaN or infinite value".into(),
            expected: "finite observations".into(),
        });
    }
    if !finite_out {
        return Err(TrainError::InvalidConfig {
            field: "noise_multiplier".into(),
            value: noise_multiplier.to_string(),
            expected: "a σ for which the log-likelihood ratios are finite".into(),
        });
    }
    Ok(scores)
}

/// The BGM simulator on libtorch tensors: the Worst-Case threat model of
/// Annamalai et al. 2024 (§4, Algorithm 4) for every sampler of Annamalai et al. 2024 §2.2, on the CPU or
/// a GPU, in chunks of runs. See the module documentation for precision,
/// memory and seeding.
#[derive(Debug, Clone)]
pub struct TensorBgmSimulator {
    config: BgmConfig,
    layout: BgmLayout,
    device: Device,
    chunk_runs: usize,
    scorer: Scorer,
    records: usize,
    specials: usize,
    filler: f64,
}

impl TensorBgmSimulator {
    /// Validates `config` exactly as [`BgmSimulator::new`] does (T, B, E ≥ 1,
    /// σ > 0, for partial shuffling B ≤ K ≤ n with K a multiple of B,
    /// 1 ≤ `score_columns` ≤ T; the same parameter names and expectations)
    /// and sizes chunks from [`CPU_CHUNK_ELEMENTS`] or [`CUDA_CHUNK_ELEMENTS`].
    pub fn new(config: BgmConfig, device: Device) -> Result<Self> {
        let layout = BgmSimulator::new(config.clone())
            .map_err(from_attacks)?
            .layout();
        let scorer = Scorer::new(config.score, config.noise_multiplier)?;
        let (specials, filler) = match config.dataset {
            BgmDataset::ShuffleWorstCase => (1, -1.0),
            BgmDataset::PoissonWorstCase => (1, 0.0),
            BgmDataset::FirstBatchPositive => (config.expected_batch_size, -1.0),
        };
        let records = config.steps * config.expected_batch_size;
        let mut sim = Self {
            config,
            layout,
            device,
            chunk_runs: 1,
            scorer,
            records,
            specials,
            filler,
        };
        let budget = match device {
            Device::Cpu => CPU_CHUNK_ELEMENTS,
            _ => CUDA_CHUNK_ELEMENTS,
        };
        sim.chunk_runs = (budget / sim.elements_per_run()).max(1);
        Ok(sim)
    }

    /// The same simulator with `chunk_runs` runs per chunk (at least 1).
    /// Memory per chunk is about `4 · chunk_runs ·` [`Self::elements_per_run`]
    /// float64 values at its peak.
    pub fn with_chunk_runs(mut self, chunk_runs: usize) -> Result<Self> {
        if chunk_runs == 0 {
            return Err(TrainError::InvalidConfig {
                field: "chunk_runs".into(),
                value: "0".into(),
                expected: "at least 1 run per chunk".into(),
            });
        }
        self.chunk_runs = chunk_runs;
        Ok(self)
    }

    /// The validated configuration.
    pub fn config(&self) -> &BgmConfig {
        &self.config
    }

    /// Where the tensors live.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Runs per chunk and hypothesis.
    pub fn chunk_runs(&self) -> usize {
        self.chunk_runs
    }

    /// The positions a fixed-size sampler draws the special records from: K
    /// for partial shuffling, n otherwise (Annamalai et al. 2024 §2.2).
    fn range(&self) -> usize {
        match self.layout {
            BgmLayout::Uniform { range } => range,
            BgmLayout::Poisson | BgmLayout::BatchOrder => self.records,
        }
    }

    /// Whether several special records are placed as a uniform subset of the
    /// first `range` positions (shuffling the batch-then-shuffle dataset).
    fn places_subset(&self) -> bool {
        self.specials > 1 && matches!(self.layout, BgmLayout::Uniform { .. })
    }

    /// Drawn columns W per epoch: the scored k, plus an overflow column for
    /// special records in unscored batches when k < T (fixed-size samplers).
    fn width(&self) -> usize {
        let k = self.config.score_columns;
        if self.layout != BgmLayout::Poisson && k < self.config.steps {
            k + 1
        } else {
            k
        }
    }

    /// float64 elements of the largest per-run tensor: E·W, or E·K for the
    /// random keys that place a subset of special records.
    pub fn elements_per_run(&self) -> usize {
        let per_epoch = if self.places_subset() {
            self.width().max(self.range())
        } else {
            self.width()
        };
        self.config.epochs.saturating_mul(per_epoch)
    }

    /// Simulates `runs_per_hypothesis` runs on D and as many on D′, from
    /// chunks 0, 1, ….
    pub fn simulate(&self, runs_per_hypothesis: usize) -> Result<PairedScores> {
        self.simulate_from_chunk(0, runs_per_hypothesis)
    }

    /// Like [`Self::simulate`] but from chunk `first_chunk`, so that a caller
    /// can stream many runs in slices of whole chunks (slice `s` of `c`
    /// chunks is `simulate_from_chunk(s·c, c·chunk_runs)`), or draw selection
    /// runs from chunks disjoint from the evaluation runs.
    pub fn simulate_from_chunk(
        &self,
        first_chunk: u64,
        runs_per_hypothesis: usize,
    ) -> Result<PairedScores> {
        let mut out = PairedScores {
            with_target: vec![0.0; runs_per_hypothesis],
            without_target: vec![0.0; runs_per_hypothesis],
        };
        let chunks = out
            .with_target
            .chunks_mut(self.chunk_runs)
            .zip(out.without_target.chunks_mut(self.chunk_runs));
        for (i, (with, without)) in chunks.enumerate() {
            let chunk = first_chunk + i as u64;
            self.fill_scores(chunk, Hypothesis::WithTarget, with)?;
            self.fill_scores(chunk, Hypothesis::WithoutTarget, without)?;
        }
        Ok(out)
    }

    /// The raw observations of the first `runs` runs of chunk `chunk` under
    /// `hypothesis`: `[runs, E, W]` float64 on the device (W = k, or k + 1
    /// with the overflow column last when k < T on a fixed-size sampler).
    /// The same draws [`Self::simulate_from_chunk`] scores; for inspection
    /// and tests.
    pub fn sample_observations(
        &self,
        chunk: u64,
        hypothesis: Hypothesis,
        runs: usize,
    ) -> Result<Tensor> {
        self.draw(chunk, hypothesis, runs as i64)
            .map_err(TrainError::torch("drawing BGM observations"))
    }

    fn fill_scores(&self, chunk: u64, hypothesis: Hypothesis, out: &mut [f64]) -> Result<()> {
        let k = self.config.score_columns as i64;
        let observations = self.sample_observations(chunk, hypothesis, out.len())?;
        let mut run = || -> Result<bool, TchError> {
            let scores = self.scorer.scores(&observations.f_narrow(2, 0, k)?)?;
            scores.f_copy_data(out, out.len())?;
            Ok(out.iter().all(|s| s.is_finite()))
        };
        if !run().map_err(TrainError::torch("scoring BGM observations"))? {
            return Err(TrainError::InvalidConfig {
                field: "noise_multiplier".into(),
                value: self.config.noise_multiplier.to_string(),
                expected: "a σ for which the log-likelihood ratios are finite".into(),
            });
        }
        Ok(())
    }

    /// One chunk of E×W noisy batch sums (Annamalai et al. 2024 Algorithm 4, lines 3–5),
    /// with the special records placed as the pure-Rust simulator places them.
    fn draw(&self, chunk: u64, hypothesis: Hypothesis, r: i64) -> Result<Tensor, TchError> {
        let c = &self.config;
        let rng = Philox::new(RunSeed(c.seed).stream(Stream::Simulation), self.device);
        let tag = |purpose| tag(purpose, chunk, hypothesis);
        let opts = (Kind::Double, self.device);
        let (e, t, k) = (c.epochs as i64, c.steps as i64, c.score_columns as i64);
        let b = c.expected_batch_size;
        let f = self.filler;
        let sigma = c.noise_multiplier;
        let target = match hypothesis {
            Hypothesis::WithTarget => 1.0,
            Hypothesis::WithoutTarget => 0.0,
        };
        if self.layout == BgmLayout::Poisson {
            // Every step independently: the target with probability q = 1/T,
            // Binomial(S − 1, q) other specials and Binomial(n − S, q) fillers.
            let q = 1.0 / t as f64;
            let mut o = rng.normal(&[r, e, k], tag(Purpose::Noise))?;
            let _ = o.mul_f64_(sigma)?;
            if target != 0.0 {
                let hit = rng
                    .uniform(&[r, e, k], tag(Purpose::TargetHit))?
                    .lt_f64(q)?
                    .f_to_kind(Kind::Double)?;
                let _ = o.f_add_(&hit.mul_f64(target)?)?;
            }
            if self.specials > 1 {
                let trials = (self.specials - 1) as u64;
                let _ =
                    o.f_add_(&rng.binomial(trials, q, &[r, e, k], tag(Purpose::OtherSpecials))?)?;
            }
            if f != 0.0 {
                let trials = (self.records - self.specials) as u64;
                let fillers = rng.binomial(trials, q, &[r, e, k], tag(Purpose::Fillers))?;
                let _ = o.f_add_(&fillers.mul_f64(f)?)?;
            }
            return Ok(o);
        }
        // Fixed-size batches: B fillers' worth of f per batch, corrected by
        // (value − f) for every special record in the batch. Batches ≥ k go
        // to the overflow column W − 1 (= k when k < T; never hit when k = T).
        let w = self.width() as i64;
        let mut o = rng.normal(&[r, e, w], tag(Purpose::Noise))?;
        let _ = o.mul_f64_(sigma)?;
        let _ = o.add_f64_(b as f64 * f)?;
        let target_shift = target - f;
        let other_shift = 1.0 - f;
        let add_at = |o: &mut Tensor, batch: &Tensor, shift: f64| -> Result<(), TchError> {
            let batch = batch.f_clamp_max_tensor(&int(w - 1)?)?;
            let src = full(&[r, e, 1], &number(shift, Kind::Double)?, opts)?;
            let _ = o.f_scatter_add_(2, &batch, &src)?;
            Ok(())
        };
        match self.layout {
            BgmLayout::BatchOrder => {
                // The stored first batch holds every special record; only its
                // position among the T batches is uniform.
                let batch = rng.below(t, &[r, e, 1], tag(Purpose::Batch))?;
                let shift = target_shift + (self.specials - 1) as f64 * other_shift;
                add_at(&mut o, &batch, shift)?;
            }
            BgmLayout::Uniform { .. } => {
                let range = self.range();
                if self.specials == 1 {
                    // A uniform position among the first `range` (a multiple
                    // of B) lies in a uniform one of their range/B batches.
                    let batches = (range / b) as i64;
                    let batch = rng.below(batches, &[r, e, 1], tag(Purpose::Batch))?;
                    add_at(&mut o, &batch, target_shift)?;
                } else {
                    // A uniform `specials`-subset of the first `range`
                    // positions: the indices of the largest of `range` i.i.d.
                    // uniform keys. Sorted by key, its first member is a
                    // uniform member of the subset: the target.
                    let s = self.specials as i64;
                    let keys = rng.uniform(&[r, e, range as i64], tag(Purpose::Keys))?;
                    let (_, positions) = keys.f_topk(s, 2, true, true)?;
                    drop(keys);
                    let batches = positions
                        .f_floor_divide(&int(b as i64)?)?
                        .f_clamp_max_tensor(&int(w - 1)?)?;
                    let mut counts = Tensor::f_zeros([r, e, w], opts)?;
                    let _ =
                        counts.f_scatter_add_(2, &batches, &Tensor::f_ones([r, e, s], opts)?)?;
                    // Integer counts: exact whatever the order of the atomic adds.
                    let _ = o.f_add_(&counts.mul_f64(other_shift)?)?;
                    add_at(
                        &mut o,
                        &batches.f_narrow(2, 0, 1)?,
                        target_shift - other_shift,
                    )?;
                }
            }
            BgmLayout::Poisson => unreachable!("handled above"),
        }
        Ok(o)
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, clippy::arithmetic_side_effects)] // tests may panic
mod tests {
    use super::*;
    use dpaudit_attacks::LikelihoodRatio;
    use dpaudit_data::sampler::GameSampler;

    fn config(sampler: GameSampler, dataset: BgmDataset, score_columns: usize) -> BgmConfig {
        BgmConfig {
            steps: 10,
            expected_batch_size: 4,
            epochs: 2,
            noise_multiplier: 1.0,
            sampler,
            dataset,
            score: dataset.matched_likelihood_ratio(4, 10),
            score_columns,
            seed: 5,
        }
    }

    #[test]
    fn chunks_follow_the_memory_budget() {
        // T = 10, E = 2: W = 10 columns, 20 elements per run.
        let sim = TensorBgmSimulator::new(
            config(
                GameSampler::new("shuffle"),
                BgmDataset::ShuffleWorstCase,
                10,
            ),
            Device::Cpu,
        )
        .unwrap();
        assert_eq!(sim.elements_per_run(), 20);
        assert_eq!(sim.chunk_runs(), CPU_CHUNK_ELEMENTS / 20);
        // k = 3 < T: an overflow column, W = 4.
        let sim = TensorBgmSimulator::new(
            config(GameSampler::new("shuffle"), BgmDataset::ShuffleWorstCase, 3),
            Device::Cpu,
        )
        .unwrap();
        assert_eq!(sim.elements_per_run(), 8);
        // Shuffling the batch-then-shuffle dataset: keys over n = 40 positions.
        let sim = TensorBgmSimulator::new(
            config(
                GameSampler::new("shuffle"),
                BgmDataset::FirstBatchPositive,
                10,
            ),
            Device::Cpu,
        )
        .unwrap();
        assert_eq!(sim.elements_per_run(), 80);
        let sim = sim.with_chunk_runs(7).unwrap();
        assert_eq!(sim.chunk_runs(), 7);
        assert!(matches!(
            sim.with_chunk_runs(0),
            Err(TrainError::InvalidConfig { field, .. }) if field == "chunk_runs"
        ));
        // Poisson draws only the scored columns.
        let sim = TensorBgmSimulator::new(
            BgmConfig {
                score: LikelihoodRatio::Poisson { sample_rate: 0.1 },
                ..config(GameSampler::new("poisson"), BgmDataset::PoissonWorstCase, 3)
            },
            Device::Cpu,
        )
        .unwrap();
        assert_eq!(sim.elements_per_run(), 6);
    }

    #[test]
    fn overflow_column_keeps_unscored_batches_out_of_the_scored_ones() {
        // K = n = 40, k = 1 < T = 10: the target (shift +2 under D on the
        // −1 fillers) lands in the scored batch 0 w.p. 1/10, else in the
        // overflow column. Noise σ = 1e-6 makes the shift visible exactly.
        let mut c = config(GameSampler::new("shuffle"), BgmDataset::ShuffleWorstCase, 1);
        c.noise_multiplier = 1e-6;
        c.epochs = 1;
        let sim = TensorBgmSimulator::new(c, Device::Cpu).unwrap();
        let o = sim
            .sample_observations(0, Hypothesis::WithTarget, 4000)
            .unwrap();
        assert_eq!(o.size(), vec![4000, 1, 2]);
        let v: Vec<f64> = Vec::try_from(&o.flatten(0, -1)).unwrap();
        let mut in_scored = 0;
        for pair in v.chunks(2) {
            // Exactly one of the two columns holds −B + 2 = −2, the other −B = −4.
            let shifted: Vec<bool> = pair.iter().map(|x| (x + 2.0).abs() < 1e-3).collect();
            assert!(
                shifted[0] ^ shifted[1],
                "{pair:?}: the target must be in exactly one column"
            );
            assert!(pair
                .iter()
                .all(|x| (x + 2.0).abs() < 1e-3 || (x + 4.0).abs() < 1e-3));
            in_scored += usize::from(shifted[0]);
        }
        // Binomial(4000, 0.1): mean 400, sd 19; 6 sd either way.
        assert!((286..=514).contains(&in_scored), "{in_scored}");
    }
}
