//! Canary audit experiments: the training half of `dpaudit run`. An experiment trains `runs` models, `train.replicas` of them at a
//! time (a *chunk*), inserts the canaries of [`crate::canary::canaries`] by their
//! inclusion bits, and returns every canary's scores. Files, resumption and the
//! statistics live in the CLI; everything here is a pure function of the
//! config and the chunk index, so chunks can be trained in any order, on any
//! machine, and give the same scores (on the same device kind).

use tch::{Device, Kind, Tensor};

use dpaudit_data::dataset::Dataset;
use dpaudit_data::sampler::{BatchSampler, Sampler, StepTable};
use dpaudit_data::seed::{Randomness, RunSeed, Stream};
use dpaudit_train::engine::{Batch, DpSgd, Fault, StepReport};
use dpaudit_train::error::{invalid, Result, TrainError};
use dpaudit_train::gather::{DeviceData, Extra, RowOverride};
use dpaudit_train::init::Init;
use dpaudit_train::models::Model;
use dpaudit_train::noise::{NoiseGenerator, NoiseStreams};
use dpaudit_train::trainer::{
    build_model, dp_config, evaluate, gather, normaliser_of, prepare_data, resolve_device, Observer,
};

use crate::canary::canaries::{
    copy_replica_zero, flat_parameters, inclusion_bits, insertion_steps, Canaries, CanaryKind,
    CoordinateChoice, InitChoice, ObservationSetup, ScoreBook,
};
use crate::canary::settings::{claimed_bound, ClaimedBound, ExperimentConfig};

/// Everything an experiment needs before its first chunk: data, sampler,
/// canaries and the claimed ε.
#[derive(Debug)]
pub struct Prepared {
    /// The config.
    pub config: ExperimentConfig,
    /// Training split.
    pub train: Dataset,
    /// Test split.
    pub test: Dataset,
    /// The first (at most) [`EVAL_RECORDS`] test records, for the per-run
    /// test accuracy.
    pub eval: Dataset,
    /// The sampler of genuine records.
    pub sampler: Sampler,
    /// The canaries (same for all runs).
    pub canaries: Canaries,
    /// The accountant's ε for one canary.
    pub claimed: ClaimedBound,
    /// Parameters per model.
    pub num_parameters: usize,
    /// The device.
    pub device: Device,
    /// A deliberate fault (self-test only).
    pub fault: Option<Fault>,
}

/// Test records the per-run accuracy is measured on: it describes the
/// trained models, it is not part of the audit, and scoring every record for
/// thousands of replicas would cost more than the training.
pub const EVAL_RECORDS: usize = 200;

/// Scores of one chunk.
#[derive(Debug, Clone)]
pub struct ChunkScores {
    /// First run of the chunk.
    pub first_run: u64,
    /// `scores[kind][replica][canary]`.
    pub scores: Vec<Vec<Vec<f64>>>,
    /// `bits[replica][canary]`.
    pub bits: Vec<Vec<bool>>,
    /// Test accuracy per replica, on the first [`EVAL_RECORDS`] test records.
    pub test_accuracy: Vec<f64>,
}

impl Prepared {
    /// Load data, build the sampler, the canaries (running the A_GC-S
    /// simulation if asked) and the claimed ε. Refuses inconsistent configs
    /// before any training.
    pub fn new(config: &ExperimentConfig, fault: Option<Fault>) -> Result<Self> {
        // Checked before the data are loaded, and again by `with_data`.
        config.validate_static()?;
        let (train, test) = prepare_data(&config.train)?;
        Self::with_data(config, fault, train, test)
    }

    /// [`Prepared::new`] on splits the caller has already loaded (and
    /// possibly reshaped, as the overhead benchmark does) instead of those
    /// `config.train.data` names. The config's other sections apply as in
    /// `new`.
    pub fn with_data(
        config: &ExperimentConfig,
        fault: Option<Fault>,
        train: Dataset,
        test: Dataset,
    ) -> Result<Self> {
        config.validate_static()?;
        let device = resolve_device(config.train.device, "train.device")?;
        let sampler = config
            .train
            .sampler
            .build(train.len())
            .map_err(|e| invalid("train.sampler", "data", e.to_string()))?;
        config.canary.validate(config.steps(), &sampler)?;
        let seed = RunSeed(config.train.seed);
        let classes = train.num_classes() as i64;
        let num_parameters = dpaudit_train::preflight::parameters_per_replica(
            &config.train,
            train.shape(),
            classes,
        )? as usize;
        let gradient_canaries = if config.canary.kind.is_gradient() {
            config.canary.count as u64
        } else {
            0
        };
        let estimate = dpaudit_train::preflight::training(
            &config.train,
            train.shape(),
            classes,
            train.len(),
            sampler.expected_batch_size(),
            config.chunk_size() as usize,
        )?
        .with(
            format!("{gradient_canaries} gradient canaries"),
            gradient_canaries
                .saturating_mul(num_parameters as u64)
                .saturating_mul(4),
        );
        dpaudit_train::preflight::check(
            "one chunk of the experiment",
            "`train.model` (its widths), `train.replicas` (runs per chunk), the batch size, \
             `train.data.train_size` or `canary.count`",
            &estimate,
        )?;
        let max_grad_norm = config.train.dp.max_grad_norm;
        let canaries = if config.canary.kind.is_gradient() {
            if config.canary.kind == CanaryKind::Dirac && config.canary.count > num_parameters {
                return Err(invalid(
                    "canary.count",
                    config.canary.count,
                    format!(
                        "at most the number of parameters ({num_parameters}): Dirac canaries need distinct \
                         coordinates"
                    ),
                ));
            }
            let coordinates = match (config.canary.kind, config.canary.coordinate) {
                (CanaryKind::Dirac, CoordinateChoice::LeastUpdated) => {
                    Some(least_updated_coordinates(
                        config,
                        &train,
                        &sampler,
                        config.canary.count,
                        device,
                    )?)
                }
                _ => None,
            };
            Canaries::gradient(
                &config.canary,
                num_parameters,
                max_grad_norm,
                coordinates,
                seed,
                device,
            )?
        } else {
            Canaries::input(&config.canary, &test, seed)?
        };
        let claimed = claimed_bound(config, &sampler)?;
        let eval = test
            .subset(&(0..test.len().min(EVAL_RECORDS)).collect::<Vec<_>>())
            .map_err(|e| invalid("train.data", "test split", e.to_string()))?;
        Ok(Self {
            config: config.clone(),
            train,
            test,
            eval,
            sampler,
            canaries,
            claimed,
            num_parameters,
            device,
            fault,
        })
    }

    /// Experiments are replayable: resume, shards and merge need every draw
    /// to follow from the seed.
    pub fn randomness(&self) -> Randomness {
        Randomness::replayable(self.config.train.seed)
    }

    fn build(&self, runs: &[u64]) -> Result<Box<dyn Model>> {
        let key = self.randomness().stream(Stream::Init);
        let mut init = match self.config.canary.init {
            InitChoice::Fixed => Init::for_runs(key, &vec![0; runs.len()], self.device),
            InitChoice::Random => Init::for_runs(key, runs, self.device),
        };
        let model = build_model(
            &self.config.train.model,
            self.train.shape(),
            self.train.num_classes() as i64,
            &mut init,
        )?;
        if self.config.canary.init == InitChoice::Fixed {
            copy_replica_zero(model.as_ref())?;
        }
        Ok(model)
    }

    /// Train chunk `chunk` (runs `chunk·M ..`, fewer in the last chunk) and
    /// score every canary.
    pub fn run_chunk(&self, chunk: u64, observer: &mut dyn Observer) -> Result<ChunkScores> {
        let mut run = self.start_chunk(chunk)?;
        observer.on_start(self.config.steps());
        while let Some(report) = run.step()? {
            observer.on_step(&report);
        }
        run.finish()
    }

    /// Everything chunk `chunk` needs before its first step: the model, the
    /// insertion schedule, the data on the device, the score book.
    pub fn start_chunk(&self, chunk: u64) -> Result<ChunkRun<'_>> {
        let cfg = &self.config;
        let seed = RunSeed(cfg.train.seed);
        let first_run = chunk * cfg.chunk_size();
        let replicas = (cfg.runs - first_run).min(cfg.chunk_size()) as usize;
        let steps = cfg.steps();
        let m = self.canaries.count();
        let bits: Vec<Vec<bool>> = (0..replicas as u64)
            .map(|r| inclusion_bits(seed, first_run + r, m))
            .collect();
        // schedule[step] = (replica, canary slot) of the canaries inserted at
        // that step, by replica (the layout `DeviceData::batch_of_step`
        // takes, so a step does not visit the replicas); `special[step][r]`
        // marks the steps of canary 0's slot whether or not it is included
        // (in runs without it, that is where the zero-out record sits).
        let gradient = self.canaries.config.kind.is_gradient();
        let mut schedule: Vec<Vec<(usize, Extra)>> = vec![Vec::new(); steps as usize];
        let mut special: Vec<Vec<bool>> = match cfg.canary.partially_informed {
            true => vec![vec![false; replicas]; steps as usize],
            false => Vec::new(),
        };
        for (r, row) in bits.iter().enumerate() {
            for (j, &included) in row.iter().enumerate() {
                let at = insertion_steps(
                    &cfg.canary,
                    &self.sampler,
                    seed,
                    first_run + r as u64,
                    j,
                    steps,
                );
                for s in at {
                    if included {
                        schedule[s as usize].push((
                            r,
                            match gradient {
                                true => Extra::Gradient(j),
                                false => Extra::Record(j),
                            },
                        ));
                    }
                    if j == 0 {
                        if let Some(at) = special.get_mut(s as usize) {
                            at[r] = true;
                        }
                    }
                }
            }
        }
        // The gradient table: the canaries, then (Partially-Informed) −ĝ₀.
        let gradients = match (&self.canaries.gradients, cfg.canary.partially_informed) {
            (Some(g), true) => Some(
                g.f_get(0)
                    .and_then(|t| t.f_neg()?.f_unsqueeze(0))
                    .and_then(|neg| Tensor::f_cat(&[g, &neg], 0))
                    .map_err(TrainError::torch("negating the canary gradient"))?,
            ),
            (Some(g), false) => Some(g.shallow_clone()),
            (None, _) => None,
        };
        let runs: Vec<u64> = (first_run..first_run + replicas as u64).collect();
        let randomness = self.randomness();
        let model = self.build(&runs)?;
        let noise = NoiseStreams::new(&randomness, &runs);
        let mut dp = DpSgd::new(dp_config(&cfg.train, &self.sampler), noise)?;
        dp.set_read_back_every(dpaudit_train::engine::LOOP_READ_BACK_EVERY);
        if let Some(f) = self.fault {
            dp = dp.with_fault(f);
        }
        let book = ScoreBook::start(
            model.as_ref(),
            &self.canaries,
            &cfg.audit.scores,
            cfg.train.dp.max_grad_norm,
        )?
        .with_observations(ObservationSetup {
            normaliser: normaliser_of(&self.sampler).value(),
            learning_rate: cfg.train.dp.learning_rate,
            noise_multiplier: cfg.train.dp.noise_multiplier,
            steps_per_epoch: self.sampler.steps_per_epoch(),
        });
        let table = StepTable::new(
            &self.sampler,
            randomness.stream(Stream::Sampler),
            &runs,
            steps,
        )
        .map_err(|e| invalid("train.sampler", "data", e.to_string()))?;
        let data = DeviceData::upload(&self.train, self.canaries.records.as_ref(), self.device)?;
        Ok(ChunkRun {
            prepared: self,
            first_run,
            bits,
            schedule,
            special,
            gradients,
            model,
            dp,
            book,
            table,
            data,
            step: 0,
            steps: steps as usize,
        })
    }
}

/// One chunk in training: [`ChunkRun::step`] until it returns `None`, then
/// [`ChunkRun::finish`] for the scores.
///
/// The samplers' batches are drawn an epoch at a time into a slot-major
/// table ([`StepTable`]) and the canary schedule is listed by step, so per
/// step the host copies one slice and walks the step's canaries, without
/// visiting every replica, and uploads them in one integer tensor; the
/// records (uploaded once per chunk), the mask, the canary gradients (one
/// batched override table) and the scores stay on the device. The host also draws the DP noise
/// (`dpaudit_train::noise`: always in secure mode and on the CPU; replayable
/// runs on a GPU draw it on the device); the step reports are read back
/// every [`dpaudit_train::engine::LOOP_READ_BACK_EVERY`] steps.
pub struct ChunkRun<'a> {
    prepared: &'a Prepared,
    first_run: u64,
    bits: Vec<Vec<bool>>,
    /// `schedule[step]`: the `(replica, canary slot)`s of that step, by
    /// replica.
    schedule: Vec<Vec<(usize, Extra)>>,
    /// `special[step][replica]`: canary 0's slot is at that step (only
    /// Partially-Informed runs need it; empty otherwise).
    special: Vec<Vec<bool>>,
    gradients: Option<Tensor>,
    model: Box<dyn Model>,
    dp: DpSgd,
    book: ScoreBook,
    table: StepTable<'a>,
    data: DeviceData,
    step: usize,
    steps: usize,
}

impl std::fmt::Debug for ChunkRun<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkRun")
            .field("first_run", &self.first_run)
            .field("replicas", &self.bits.len())
            .field("step", &self.step)
            .field("steps", &self.steps)
            .finish_non_exhaustive()
    }
}

impl ChunkRun<'_> {
    /// The model being trained (all replicas of the chunk).
    pub fn model(&self) -> &dyn Model {
        self.model.as_ref()
    }

    /// Read the steps' reports back every `k` steps (benchmarks; chunks use
    /// [`dpaudit_train::engine::LOOP_READ_BACK_EVERY`]). The chunk's last step
    /// is always read back.
    pub fn set_read_back_every(&mut self, k: u64) {
        self.dp.set_read_back_every(k);
    }

    /// Draw the DP noise with `generator` (benchmarks; runs use the default
    /// of their mode and device, [`NoiseGenerator::default_for`]).
    pub fn set_noise_generator(&mut self, generator: NoiseGenerator) -> Result<()> {
        self.dp.set_noise_generator(generator)
    }

    /// The batch of the next step for all replicas, on the device. It
    /// advances the samplers without training: [`ChunkRun::step`] calls it;
    /// benchmarks call it to time the engine on a real batch.
    pub fn next_batch(&mut self) -> Result<Batch> {
        let s = self.step;
        let step = self.table.advance();
        let mut more = Vec::new();
        if let Some(special) = self.special.get(s) {
            // Annamalai et al. 2024 (§5.1), Partially-Informed: the last
            // record of every batch that holds neither the target nor the
            // zero-out record carries −ĝ (the last row of the table).
            let row = self.prepared.canaries.count();
            for (r, &at) in special.iter().enumerate() {
                let size = step.size(r);
                if !at && size > 0 {
                    more.push(RowOverride {
                        slot: size - 1,
                        replica: r,
                        row,
                    });
                }
            }
        }
        let extras = self.schedule.get(s).map_or(&[][..], Vec::as_slice);
        self.data
            .batch_of_step(step, extras, self.gradients.as_ref(), &more)
    }

    /// One DP-SGD step of every replica, with its canaries and scores; `None`
    /// after the last step.
    pub fn step(&mut self) -> Result<Option<StepReport>> {
        if self.step >= self.steps {
            return Ok(None);
        }
        let batch = self.next_batch()?;
        let canaries = &self.prepared.canaries;
        self.book.before_step(self.model.as_ref(), canaries)?;
        let mut report = self.dp.step(self.model.as_ref(), &batch)?;
        self.book.after_step(self.model.as_ref())?;
        self.step += 1;
        if self.step == self.steps {
            // The chunk's last steps are read back (and checked) before
            // anything reads the model.
            if let Some(last) = self.dp.read_back()? {
                report = last;
            }
        }
        Ok(Some(report))
    }

    /// The scores of every canary and the test accuracy of every replica.
    pub fn finish(mut self) -> Result<ChunkScores> {
        // Steps not yet read back are checked first (a chunk stopped early).
        self.dp.read_back()?;
        let p = self.prepared;
        let scores = self.book.finish(self.model.as_ref(), &p.canaries)?;
        let test_accuracy = evaluate(self.model.as_ref(), &p.eval, p.device)?;
        Ok(ChunkScores {
            first_run: self.first_run,
            scores,
            bits: self.bits,
            test_accuracy,
        })
    }
}

/// A_GC-S (Cebere, Bellet & Papernot 2024, Alg. 3, Noiseless-PS): train one model from the fixed θ₀
/// on the (seed's) batches of run 0 without canaries and without noise, sum
/// the squared per-step update of every coordinate, and return the `m`
/// coordinates with the smallest sums (ties by lower index). Noiseless
/// simulation is deterministic, so one simulation suffices (our reading of Cebere, Bellet & Papernot 2024, Alg. 3).
pub fn least_updated_coordinates(
    config: &ExperimentConfig,
    train: &Dataset,
    sampler: &Sampler,
    m: usize,
    device: Device,
) -> Result<Vec<usize>> {
    let randomness = Randomness::replayable(config.train.seed);
    let mut init = Init::for_runs(randomness.stream(Stream::Init), &[0], device);
    let model = build_model(
        &config.train.model,
        train.shape(),
        train.num_classes() as i64,
        &mut init,
    )?;
    let mut dpc = dp_config(&config.train, sampler);
    dpc.noise_multiplier = 0.0;
    let mut dp = DpSgd::new(dpc, NoiseStreams::new(&randomness, &[0]))?;
    let mut stream = sampler.steps(randomness.stream(Stream::Sampler), 0);
    let mut acc = flat_parameters(model.as_ref())?
        .f_zeros_like()
        .and_then(|t| t.f_to_kind(Kind::Double))
        .map_err(TrainError::torch("allocating the simulated updates"))?;
    for _ in 0..config.steps() {
        let batch = stream.next().map(|s| s.batch).unwrap_or_default();
        let before = flat_parameters(model.as_ref())?;
        dp.step(model.as_ref(), &gather(train, &[batch], device)?)?;
        let after = flat_parameters(model.as_ref())?;
        let _ = after
            .f_sub(&before)
            .and_then(|delta| delta.f_to_kind(Kind::Double)?.f_square())
            .and_then(|sq| acc.f_add_(&sq))
            .map_err(TrainError::torch("accumulating the simulated updates"))?;
    }
    let acc: Vec<f64> = acc
        .f_reshape([-1])
        .and_then(|t| t.f_to_device(Device::Cpu))
        .and_then(Vec::<f64>::try_from)
        .map_err(TrainError::torch("copying the simulated updates"))?;
    dpaudit_attacks::gradient_crafting::least_updated_coordinates(&acc, m)
        .map_err(|e| invalid("canary.count", m, e.to_string()))
}
