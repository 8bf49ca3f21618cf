//! The Batched Gaussian Mechanism (BGM) simulator: the Worst-Case threat
//! model of Annamalai et al. 2024 (§4, Algorithm 4; Chua et al.'s ABLQ),
//! simulated on the CPU without a network.
//!
//! One *observation* is one full run of the mechanism: an E×T matrix of noisy
//! batch sums `g̃ᵢₜ = Σ_{x∈Bₜ} x + N(0, σ²)`, scored with a likelihood ratio.
//! The simulator draws runs under both hypotheses (dataset D with the target,
//! D′ with the target replaced by ⊥ = 0) and returns one score per run, ready
//! for an (ε,δ) estimator.
//!
//! How it stays fast and bounded in memory:
//! - only the few *special* records (the target, and for the batch-then-shuffle
//!   layout the other +1 records) are placed explicitly; the fillers are
//!   identical, so fixed-size batches need no permutation of n records;
//! - one epoch row (T values) is drawn, scored with log-sum-exp and dropped,
//!   so memory is O(T) per thread plus the output scores;
//! - runs are cut into chunks of [`CHUNK_SIZE`]; chunk `c` under hypothesis
//!   `h` draws from its own ChaCha stream `2c + h` of the run seed, so the
//!   scores do not depend on the number of threads or the chunk order.

use crate::error::{check_positive, AttacksError, Result};
use crate::likelihood::{LikelihoodRatio, LogRatioCoefficients, ObservationMatrix};
use dpaudit_data::sampler::{BatchSampler, GameSampler, Sampler};
use dpaudit_data::DataError;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Binomial, Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

/// Runs per chunk: the unit of work, of seeding and of streaming.
pub const CHUNK_SIZE: usize = 4096;

/// Where the game's sampler puts the records of an epoch, as the simulators
/// draw it: decided once per sampler of [`dpaudit_data::sampler`]
/// ([`BgmLayout::of`], an exhaustive match), which refuses, by name, the
/// samplers the game does not simulate. The dataset is in stored order with
/// the target (or ⊥) at position 0 (docs/canary-games.md); every sampler is
/// called afresh each epoch (Annamalai et al. 2024 §2.2, §7; docs/samplers.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BgmLayout {
    /// Poisson at q = 1/T: each of the T batches includes each record
    /// independently; batch sizes vary.
    Poisson,
    /// A uniform position among the first `range` stored records, batches of
    /// B consecutive positions: shuffle-then-batch (`range` = n) or a partial
    /// shuffle with buffer K (`range` = K; K = B is "no shuffling").
    Uniform {
        /// The positions the target can reach: n or K.
        range: usize,
    },
    /// Consecutive batches of B in stored order, then a uniform permutation
    /// of the batch order (the `dataset.batch().shuffle()` bug, Sec. 7.2).
    BatchOrder,
}

/// The samplers the BGM game simulates, for error messages.
pub const BGM_SAMPLERS: &str = "poisson, shuffle, partial_shuffle or batch_then_shuffle";

impl BgmLayout {
    /// The layout of a sampler over the game's n = T·B records; the fixed
    /// batch sequence (public batches, nothing to shuffle) is refused.
    pub fn of(sampler: &Sampler) -> Result<Self> {
        Ok(match sampler {
            Sampler::Poisson(_) => Self::Poisson,
            Sampler::Shuffle(s) => Self::Uniform {
                range: s.num_records(),
            },
            Sampler::PartialShuffle(s) => Self::Uniform {
                range: s.buffer_size(),
            },
            Sampler::BatchThenShuffle(_) => Self::BatchOrder,
            Sampler::FixedSequence(_) => {
                return Err(invalid(
                    "sampler",
                    sampler.kind(),
                    format!("a sampler the BGM game simulates: {BGM_SAMPLERS}"),
                ))
            }
        })
    }
}

/// The audited pair of datasets (D with the target, D′ with ⊥ = 0 in its place).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BgmDataset {
    /// D = (+1, −1, …, −1), D′ = (⊥, −1, …, −1): Chua et al.'s conjectured
    /// worst case for shuffling (Annamalai et al. 2024 §4, Algorithm 4). Score with Λ^WC.
    ShuffleWorstCase,
    /// D = (+1, 0, …, 0), D′ = (⊥, 0, …, 0): the proven worst case for
    /// Poisson subsampling (Annamalai et al. 2024 §4, Algorithm 4, Zhu et al.). Score with the Poisson LR.
    PoissonWorstCase,
    /// The first B records +1 (target at position 0), the rest −1: the
    /// Worst-Case layout that exposes batch-then-shuffle (Annamalai et al. 2024 §4.1–4.2, §5.3,
    /// Sec. 7.2). Score with Λ^BtS.
    FirstBatchPositive,
}

impl BgmDataset {
    /// The likelihood ratio that is exact for this dataset under full
    /// shuffling (Λ^WC, Λ^BtS) or Poisson sampling (the mixture LR).
    pub fn matched_likelihood_ratio(self, batch_size: usize, steps: usize) -> LikelihoodRatio {
        match self {
            BgmDataset::ShuffleWorstCase => LikelihoodRatio::WorstCase { batch_size },
            BgmDataset::FirstBatchPositive => LikelihoodRatio::BatchThenShuffle { batch_size },
            BgmDataset::PoissonWorstCase => LikelihoodRatio::Poisson {
                sample_rate: 1.0 / steps as f64,
            },
        }
    }
}

/// Which dataset a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Hypothesis {
    /// D: the target record is present (value +1).
    WithTarget,
    /// D′: the target is replaced by ⊥ (value 0).
    WithoutTarget,
}

/// A BGM audit configuration. Every field is required (no defaults: they
/// decide what is being audited).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BgmConfig {
    /// Batches per epoch T (n = T·B records).
    pub steps: usize,
    /// Batch size B (the expected batch size for Poisson).
    pub expected_batch_size: usize,
    /// Epochs E (independent re-sampling each epoch).
    pub epochs: usize,
    /// Noise multiplier σ: the noise std on each batch sum (sensitivity 1).
    pub noise_multiplier: f64,
    /// The batch sampler, sized by the game (n = T·B records, batches of B;
    /// Poisson at q = 1/T).
    pub sampler: GameSampler,
    /// The audited dataset pair.
    pub dataset: BgmDataset,
    /// The score applied to each run.
    pub score: LikelihoodRatio,
    /// How many leading batches of each epoch the score looks at (the
    /// adversary's guess k for partial shuffling, Annamalai et al. 2024 §7.1, Algorithm 2); T for all.
    pub score_columns: usize,
    /// Run seed: all randomness is derived from it.
    pub seed: u64,
}

/// Scores of the simulated runs, one per run and hypothesis, in run order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PairedScores {
    /// log Λ of runs on D (target present).
    pub with_target: Vec<f64>,
    /// log Λ of runs on D′ (target replaced by ⊥).
    pub without_target: Vec<f64>,
}

fn invalid(
    parameter: &'static str,
    value: impl std::fmt::Display,
    expected: String,
) -> AttacksError {
    AttacksError::InvalidParameter {
        parameter,
        value: value.to_string(),
        expected,
    }
}

/// A validated BGM simulator.
#[derive(Debug, Clone)]
pub struct BgmSimulator {
    config: BgmConfig,
    layout: BgmLayout,
    records: usize,
    specials: usize,
    filler: f64,
    scorer: LogRatioCoefficients,
}

impl BgmSimulator {
    /// Validates `config`: T, B, E ≥ 1, σ > 0, for partial shuffling
    /// B ≤ K ≤ n with K a multiple of B, 1 ≤ `score_columns` ≤ T.
    pub fn new(config: BgmConfig) -> Result<Self> {
        if config.steps == 0 {
            return Err(invalid("steps", 0, "at least 1 batch per epoch".into()));
        }
        if config.expected_batch_size == 0 {
            return Err(invalid("expected_batch_size", 0, "at least 1".into()));
        }
        if config.epochs == 0 {
            return Err(invalid("epochs", 0, "at least 1".into()));
        }
        check_positive("noise_multiplier", config.noise_multiplier)?;
        let records = config
            .steps
            .checked_mul(config.expected_batch_size)
            .filter(|&n| n < (1usize << 40))
            .ok_or_else(|| {
                invalid(
                    "steps",
                    config.steps,
                    format!(
                        "steps × expected_batch_size ({}) below 2^40 records",
                        config.expected_batch_size
                    ),
                )
            })?;
        let sampler = config
            .sampler
            .build(config.steps, config.expected_batch_size)
            .map_err(|e| {
                let context = format!(
                    "sampler {} over steps × expected_batch_size = {records} records",
                    config.sampler
                );
                match e {
                    DataError::InvalidArgument {
                        parameter,
                        value,
                        expected,
                    } => AttacksError::InvalidParameter {
                        parameter,
                        value,
                        expected: format!("{expected} ({context})"),
                    },
                    other => invalid("sampler", &config.sampler, format!("{context}: {other}")),
                }
            })?;
        let layout = BgmLayout::of(&sampler)?;
        if config.score_columns == 0 || config.score_columns > config.steps {
            return Err(invalid(
                "score_columns",
                config.score_columns,
                format!("1 ..= steps = {}", config.steps),
            ));
        }
        let scorer = LogRatioCoefficients::new(config.score, config.noise_multiplier)?;
        let (specials, filler) = match config.dataset {
            BgmDataset::ShuffleWorstCase => (1, -1.0),
            BgmDataset::PoissonWorstCase => (1, 0.0),
            BgmDataset::FirstBatchPositive => (config.expected_batch_size, -1.0),
        };
        Ok(Self {
            config,
            layout,
            records,
            specials,
            filler,
            scorer,
        })
    }

    /// The validated configuration.
    pub fn config(&self) -> &BgmConfig {
        &self.config
    }

    /// Where the sampler puts the records of an epoch.
    pub fn layout(&self) -> BgmLayout {
        self.layout
    }

    /// Simulates `runs_per_hypothesis` runs on D and as many on D′, using
    /// chunks 0, 1, … of the seed, on `threads` threads (0 = all cores).
    pub fn simulate(&self, runs_per_hypothesis: usize, threads: usize) -> PairedScores {
        self.simulate_from_chunk(0, runs_per_hypothesis, threads)
    }

    /// Like [`BgmSimulator::simulate`] but starting at chunk `first_chunk`, so
    /// that a caller can stream 10⁹ runs in slices of whole chunks without
    /// holding all scores: slice `s` of `c` chunks is
    /// `simulate_from_chunk(s·c, c·CHUNK_SIZE, threads)`.
    pub fn simulate_from_chunk(
        &self,
        first_chunk: u64,
        runs_per_hypothesis: usize,
        threads: usize,
    ) -> PairedScores {
        let mut out = PairedScores {
            with_target: vec![0.0; runs_per_hypothesis],
            without_target: vec![0.0; runs_per_hypothesis],
        };
        let threads = if threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            threads
        };
        let jobs: Vec<Job<'_>> = out
            .with_target
            .chunks_mut(CHUNK_SIZE)
            .zip(out.without_target.chunks_mut(CHUNK_SIZE))
            .enumerate()
            .map(|(i, (a, b))| (first_chunk + i as u64, a, b))
            .collect();
        let threads = threads.min(jobs.len()).max(1);
        let mut per_thread: Vec<Vec<Job<'_>>> = (0..threads).map(|_| Vec::new()).collect();
        for (i, job) in jobs.into_iter().enumerate() {
            per_thread[i % threads].push(job);
        }
        std::thread::scope(|scope| {
            for jobs in per_thread {
                scope.spawn(move || {
                    let mut worker = Worker::new(self);
                    for (chunk, with, without) in jobs {
                        worker.fill_scores(chunk, Hypothesis::WithTarget, with);
                        worker.fill_scores(chunk, Hypothesis::WithoutTarget, without);
                    }
                });
            }
        });
        out
    }

    /// Draws one raw E×T observation matrix (noisy batch sums) under
    /// `hypothesis` from `rng`; for inspection and tests.
    pub fn sample_observation<R: Rng>(
        &self,
        hypothesis: Hypothesis,
        rng: &mut R,
    ) -> Result<ObservationMatrix> {
        let mut worker = Worker::new(self);
        let t = self.config.steps;
        let mut values = Vec::with_capacity(t * self.config.epochs);
        for _ in 0..self.config.epochs {
            worker.fill_row(hypothesis, rng);
            values.extend_from_slice(&worker.row);
        }
        ObservationMatrix::new(self.config.epochs, t, values)
    }

    /// The score `log Λ` of one raw observation matrix, with this simulator's
    /// likelihood ratio and column count.
    pub fn score(&self, observation: &ObservationMatrix) -> Result<f64> {
        crate::likelihood::log_likelihood_ratio(
            self.config.score,
            observation,
            self.config.noise_multiplier,
            self.config.score_columns,
        )
    }
}

/// One chunk of work: its index and its output slices (with, without target).
type Job<'s> = (u64, &'s mut [f64], &'s mut [f64]);

/// Per-thread scratch space.
struct Worker<'a> {
    sim: &'a BgmSimulator,
    row: Vec<f64>,
    /// Bitset of occupied positions for placing several special records.
    occupied: Vec<u64>,
    placed: Vec<usize>,
    poisson_specials: Option<Binomial>,
    poisson_fillers: Option<Binomial>,
}

impl<'a> Worker<'a> {
    fn new(sim: &'a BgmSimulator) -> Self {
        let t = sim.config.steps;
        let q = 1.0 / t as f64;
        let is_poisson = sim.layout == BgmLayout::Poisson;
        let range = match sim.layout {
            BgmLayout::Uniform { range } => range,
            BgmLayout::Poisson | BgmLayout::BatchOrder => sim.records,
        };
        let needs_bitset = sim.specials > 1 && matches!(sim.layout, BgmLayout::Uniform { .. });
        Self {
            sim,
            row: vec![0.0; t],
            occupied: if needs_bitset {
                vec![0; range.div_ceil(64)]
            } else {
                Vec::new()
            },
            placed: Vec::with_capacity(sim.specials),
            poisson_specials: (is_poisson && sim.specials > 1)
                .then(|| Binomial::new((sim.specials - 1) as u64, q).expect("q in (0, 1]")),
            poisson_fillers: (is_poisson && sim.filler != 0.0).then(|| {
                Binomial::new((sim.records - sim.specials) as u64, q).expect("q in (0, 1]")
            }),
        }
    }

    fn fill_scores(&mut self, chunk: u64, hypothesis: Hypothesis, out: &mut [f64]) {
        let mut rng = ChaCha8Rng::seed_from_u64(self.sim.config.seed);
        let h = match hypothesis {
            Hypothesis::WithTarget => 0,
            Hypothesis::WithoutTarget => 1,
        };
        rng.set_stream(2 * chunk + h);
        let k = self.sim.config.score_columns;
        for score in out.iter_mut() {
            let mut total = 0.0;
            for _ in 0..self.sim.config.epochs {
                self.fill_row(hypothesis, &mut rng);
                total += self.sim.scorer.log_row(&self.row[..k]);
            }
            *score = total;
        }
    }

    /// One epoch of noisy batch sums (Annamalai et al. 2024 Algorithm 4, lines 3–5).
    fn fill_row<R: Rng>(&mut self, hypothesis: Hypothesis, rng: &mut R) {
        let sim = self.sim;
        let c = &sim.config;
        let b = c.expected_batch_size;
        let t = c.steps;
        let f = sim.filler;
        let target = match hypothesis {
            Hypothesis::WithTarget => 1.0,
            Hypothesis::WithoutTarget => 0.0,
        };
        let sigma = c.noise_multiplier;
        if sim.layout == BgmLayout::Poisson {
            let q = 1.0 / t as f64;
            for v in self.row.iter_mut() {
                let z: f64 = rng.sample(StandardNormal);
                let mut s = sigma * z;
                if rng.gen_bool(q) {
                    s += target;
                }
                if let Some(d) = &self.poisson_specials {
                    s += d.sample(rng) as f64;
                }
                if let Some(d) = &self.poisson_fillers {
                    s += f * d.sample(rng) as f64;
                }
                *v = s;
            }
            return;
        }
        // Fixed-size batches: B fillers' worth of f per batch, corrected by
        // (value − f) for every special record in the batch.
        for v in self.row.iter_mut() {
            let z: f64 = rng.sample(StandardNormal);
            *v = b as f64 * f + sigma * z;
        }
        let target_shift = target - f;
        let other_shift = 1.0 - f;
        match sim.layout {
            BgmLayout::BatchOrder => {
                // The stored first batch holds every special record; only its
                // position among the T batches is random.
                let batch = rng.gen_range(0..t);
                self.row[batch] += target_shift + (sim.specials - 1) as f64 * other_shift;
            }
            BgmLayout::Uniform { range } => {
                if sim.specials == 1 {
                    let pos = rng.gen_range(0..range);
                    self.row[pos / b] += target_shift;
                } else {
                    // A uniform `specials`-subset of the first `range` positions
                    // (Floyd's algorithm), the target a uniform member of it.
                    self.placed.clear();
                    for j in (range - sim.specials)..range {
                        let r = rng.gen_range(0..=j);
                        let pos = if self.occupied[r / 64] >> (r % 64) & 1 == 1 {
                            j
                        } else {
                            r
                        };
                        self.occupied[pos / 64] |= 1 << (pos % 64);
                        self.placed.push(pos);
                    }
                    let target_index = rng.gen_range(0..self.placed.len());
                    for (i, &pos) in self.placed.iter().enumerate() {
                        self.occupied[pos / 64] = 0;
                        self.row[pos / b] += if i == target_index {
                            target_shift
                        } else {
                            other_shift
                        };
                    }
                }
            }
            BgmLayout::Poisson => unreachable!("handled above"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(sampler: GameSampler) -> BgmConfig {
        BgmConfig {
            steps: 10,
            expected_batch_size: 4,
            epochs: 1,
            noise_multiplier: 1.0,
            sampler,
            dataset: BgmDataset::ShuffleWorstCase,
            score: LikelihoodRatio::WorstCase { batch_size: 4 },
            score_columns: 10,
            seed: 7,
        }
    }

    fn parameter_of(r: Result<BgmSimulator>) -> &'static str {
        match r {
            Err(AttacksError::InvalidParameter { parameter, .. }) => parameter,
            other => panic!("expected InvalidParameter, got {other:?}"),
        }
    }

    #[test]
    fn samplers_the_game_does_not_simulate_are_refused_by_name() {
        let err = BgmSimulator::new(config(GameSampler::new("fixed_sequence")))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`sampler` = fixed_sequence") && err.contains(BGM_SAMPLERS),
            "{err}"
        );
        let err = BgmSimulator::new(config(GameSampler::new("shufle")))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("shufle") && err.contains("batch_then_shuffle"),
            "{err}"
        );
    }

    /// The spelling of a sampler in `audit.json` and `config.json` is the one
    /// the former `BgmSampler` enum wrote (externally tagged, snake case).
    #[test]
    fn sampler_json_is_unchanged() {
        let partial = GameSampler::new("partial_shuffle").with("buffer_size", 40);
        assert_eq!(
            serde_json::to_string(&partial).unwrap(),
            r#"{"partial_shuffle":{"buffer_size":40}}"#
        );
        assert_eq!(
            serde_json::to_string(&GameSampler::new("batch_then_shuffle")).unwrap(),
            r#""batch_then_shuffle""#
        );
        let back: GameSampler =
            serde_json::from_str(r#"{"partial_shuffle":{"buffer_size":40}}"#).unwrap();
        assert_eq!(back, partial);
    }

    #[test]
    fn invalid_parameters_are_refused_by_name() {
        // Issue 7 "Bad input": K not a multiple of B, K > n; plus σ ≤ 0 and T = 0.
        let bad_k = config(GameSampler::new("partial_shuffle").with("buffer_size", 6));
        assert_eq!(parameter_of(BgmSimulator::new(bad_k)), "buffer_size");
        let big_k = config(GameSampler::new("partial_shuffle").with("buffer_size", 44));
        assert_eq!(parameter_of(BgmSimulator::new(big_k)), "buffer_size");
        let zero_k = config(GameSampler::new("partial_shuffle").with("buffer_size", 0));
        assert_eq!(parameter_of(BgmSimulator::new(zero_k)), "buffer_size");
        let mut c = config(GameSampler::new("shuffle"));
        c.noise_multiplier = 0.0;
        assert_eq!(
            parameter_of(BgmSimulator::new(c.clone())),
            "noise_multiplier"
        );
        c.noise_multiplier = -1.0;
        assert_eq!(
            parameter_of(BgmSimulator::new(c.clone())),
            "noise_multiplier"
        );
        c.noise_multiplier = 1e-200; // 1/σ² overflows
        assert_eq!(
            parameter_of(BgmSimulator::new(c.clone())),
            "noise_multiplier"
        );
        c.noise_multiplier = 1e200; // 1/σ² underflows to 0
        assert_eq!(
            parameter_of(BgmSimulator::new(c.clone())),
            "noise_multiplier"
        );
        c.noise_multiplier = f64::NAN;
        assert_eq!(parameter_of(BgmSimulator::new(c)), "noise_multiplier");
        let mut c = config(GameSampler::new("shuffle"));
        c.steps = 0;
        assert_eq!(parameter_of(BgmSimulator::new(c)), "steps");
        let mut c = config(GameSampler::new("shuffle"));
        c.epochs = 0;
        assert_eq!(parameter_of(BgmSimulator::new(c)), "epochs");
        let mut c = config(GameSampler::new("shuffle"));
        c.expected_batch_size = 0;
        assert_eq!(parameter_of(BgmSimulator::new(c)), "expected_batch_size");
        let mut c = config(GameSampler::new("shuffle"));
        c.score_columns = 11;
        assert_eq!(parameter_of(BgmSimulator::new(c)), "score_columns");
        let mut c = config(GameSampler::new("shuffle"));
        c.score = LikelihoodRatio::Poisson { sample_rate: 1.5 };
        assert_eq!(parameter_of(BgmSimulator::new(c)), "sample_rate");
        // Valid edge cases: K = B (no shuffling) and K = n (full shuffle).
        assert!(BgmSimulator::new(config(
            GameSampler::new("partial_shuffle").with("buffer_size", 4)
        ))
        .is_ok());
        assert!(BgmSimulator::new(config(
            GameSampler::new("partial_shuffle").with("buffer_size", 40)
        ))
        .is_ok());
    }

    #[test]
    fn config_refuses_unknown_fields() {
        let json = r#"{"steps":10,"expected_batch_size":1,"epochs":1,"noise_multiplier":1.0,
            "sampler":"shuffle","dataset":"shuffle_worst_case",
            "score":{"worst_case":{"batch_size":1}},"score_columns":10,"seed":1,"typo":3}"#;
        let err = serde_json::from_str::<BgmConfig>(json)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `typo`"), "{err}");
        let ok = json.replace(",\"typo\":3", "");
        let c: BgmConfig = serde_json::from_str(&ok).unwrap();
        assert_eq!(c.score, LikelihoodRatio::WorstCase { batch_size: 1 });
    }
}
