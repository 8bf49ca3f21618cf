//! Canary audit experiments: the training half of `dpaudit run` (issue 6
//! point 3). An experiment trains `runs` models, `train.replicas` of them at a
//! time (a *chunk*), inserts the canaries of [`crate::canary`] by their
//! inclusion bits, and returns every canary's scores. Files, resumption and the
//! statistics live in the CLI; everything here is a pure function of the
//! config and the chunk index, so chunks can be trained in any order, on any
//! machine, and give the same scores (on the same device kind).

use std::path::Path;

use serde::{Deserialize, Serialize};
use tch::{Device, Kind};

use dpaudit_accounting::EpsilonUpperBound;
use dpaudit_data::dataset::Dataset;
use dpaudit_data::sampler::{BatchSampler, Sampler};
use dpaudit_data::seed::{Randomness, RunSeed, Stream};

use crate::canary::{
    copy_replica_zero, flat_parameters, gather_with_canaries, inclusion_bits, insertion_steps,
    Canaries, CanaryConfig, CanaryKind, CoordinateChoice, Extra, InitChoice, Insertion,
    ObservationSetup, ScoreBook, ScoreKind,
};
use crate::claim::Participation;
use crate::config::TrainConfig;
use crate::engine::{DpSgd, Fault, Override, SlotOverride};
use crate::error::{invalid, Result, TrainError};
use crate::init::Init;
use crate::models::Model;
use crate::noise::NoiseStreams;
use crate::trainer::{
    build_model, dp_config, evaluate, gather, normaliser_of, prepare_data, resolve_device, Observer,
};

/// A statistical method the experiment asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MethodChoice {
    /// Clopper–Pearson (ε, δ) region over runs (one canary per run).
    EpsDelta,
    /// GDP audit over runs (one canary per run; Cebere et al. 2025, App. A).
    Gdp,
    /// One-run audit over the canaries of each run (Steinke, Nasr &
    /// Jagielski 2023).
    OneRun,
    /// f-DP one-run audit over the canaries of each run, Gaussian trade-off
    /// family (Mahloujifar, Melis & Chaudhuri 2024).
    OneRunFdp,
}

/// Threshold / guess selection policy, as in `dpaudit estimate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SelectionChoice {
    /// The default for each method and number of observations (valid; the
    /// default): `dpaudit_audit::policy::default_selection`.
    #[default]
    Auto,
    /// Choose on a random half, bound on the other (valid).
    Split,
    /// Several random halvings at half the level; the median-rank bound (valid).
    MultiSplit,
    /// Choose and bound on the same scores, as the papers do (NOT valid).
    SameData,
    /// All scores, a union bound over a family fixed in advance (valid).
    Bonferroni,
}

fn default_confidence() -> f64 {
    0.95
}

/// The `[audit]` table of an experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditSettings {
    /// Scores (threat models) to compute; several = a comparison.
    pub scores: Vec<ScoreKind>,
    /// Lower-bound methods.
    pub methods: Vec<MethodChoice>,
    /// Confidence of every bound.
    #[serde(default = "default_confidence")]
    pub confidence: f64,
    /// Selection policy.
    #[serde(default)]
    pub selection: SelectionChoice,
}

/// A whole experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentConfig {
    /// Free text, shown in the summary.
    #[serde(default)]
    pub name: String,
    /// `R`, the number of trained models.
    pub runs: u64,
    /// The training config; `replicas` = models trained at once (a chunk).
    pub train: TrainConfig,
    /// The canaries.
    pub canary: CanaryConfig,
    /// The statistics.
    pub audit: AuditSettings,
}

impl ExperimentConfig {
    /// Parse and check a TOML document (no data is read).
    pub fn from_toml(text: &str, origin: &str) -> Result<Self> {
        let config: ExperimentConfig = crate::config::parse_toml(text, origin)?;
        config.validate_static()?;
        Ok(config)
    }

    /// Read and parse a file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| invalid(&path.display().to_string(), "unreadable", e.to_string()))?;
        Self::from_toml(&text, &path.display().to_string())
    }

    /// Checks that need no data.
    pub fn validate_static(&self) -> Result<()> {
        self.train.validate().map_err(|e| match e {
            TrainError::InvalidConfig {
                field,
                value,
                expected,
            } => invalid(&format!("train.{field}"), value, expected),
            other => other,
        })?;
        if self.runs == 0 {
            return Err(invalid("runs", 0, "at least 1"));
        }
        if self.train.steps.is_none() {
            return Err(invalid(
                "train.steps",
                "missing",
                "`steps` (audits fix the number of steps; `epochs` is not accepted here)",
            ));
        }
        if self.train.dp.noise_multiplier <= 0.0 {
            return Err(invalid(
                "train.dp.noise_multiplier",
                self.train.dp.noise_multiplier,
                "> 0: an audit needs a claimed finite ε",
            ));
        }
        let a = &self.audit;
        if !(a.confidence > 0.0 && a.confidence < 1.0) {
            return Err(invalid("audit.confidence", a.confidence, "in (0, 1)"));
        }
        if a.scores.is_empty() {
            return Err(invalid("audit.scores", "[]", "at least one score"));
        }
        if a.methods.is_empty() {
            return Err(invalid("audit.methods", "[]", "at least one method"));
        }
        for s in &a.scores {
            if !s.applies_to(self.canary.kind) {
                return Err(invalid(
                    "audit.scores",
                    s.name(),
                    format!(
                        "a score defined for {:?} canaries ({})",
                        self.canary.kind,
                        applicable_scores(self.canary.kind)
                    ),
                ));
            }
        }
        let m = self.canary.count;
        if m == 0 {
            return Err(invalid("canary.count", 0, "at least 1"));
        }
        for method in &a.methods {
            match method {
                MethodChoice::EpsDelta | MethodChoice::Gdp if m != 1 => {
                    return Err(invalid(
                        "audit.methods",
                        format!("{method:?}"),
                        format!(
                            "`one_run` or `one_run_fdp` for {m} canaries per run: the threshold methods treat runs as independent \
                             observations and need canary.count = 1"
                        ),
                    ))
                }
                MethodChoice::OneRun | MethodChoice::OneRunFdp if m < 2 => {
                    return Err(invalid(
                        "audit.methods",
                        if *method == MethodChoice::OneRun {
                            "one_run"
                        } else {
                            "one_run_fdp"
                        },
                        "canary.count ≥ 2: a one-run audit guesses the bits of many canaries",
                    ))
                }
                _ => {}
            }
        }
        let lr_scores = a
            .scores
            .iter()
            .any(|s| matches!(s, ScoreKind::NaturalLr | ScoreKind::PartiallyInformedLr));
        if lr_scores || self.canary.partially_informed {
            let what = if lr_scores {
                "the likelihood-ratio scores (natural_lr, pi_lr)"
            } else {
                "canary.partially_informed"
            };
            if self.canary.count != 1
                || !self.canary.kind.is_gradient()
                || self.canary.insertion != Insertion::Sampled
            {
                return Err(invalid(
                    "canary",
                    format!("{:?} × {}, insertion {:?}", self.canary.kind, self.canary.count, self.canary.insertion),
                    format!("one gradient canary with insertion = \"sampled\" for {what} (spec 000 §2.4)"),
                ));
            }
            if self.canary.scale != 1.0 {
                return Err(invalid(
                    "canary.scale",
                    self.canary.scale,
                    format!("1 for {what}: the likelihood ratios assume a canary of norm C (spec 000 §6 item 4)"),
                ));
            }
            if self.train.dp.momentum != 0.0 || self.train.dp.weight_decay != 0.0 {
                return Err(invalid(
                    "train.dp.momentum/weight_decay",
                    format!("{}/{}", self.train.dp.momentum, self.train.dp.weight_decay),
                    format!("0 for {what}: observations are read from plain SGD updates"),
                ));
            }
            if matches!(
                self.train.sampler,
                dpaudit_data::sampler::SamplerConfig::Poisson(_)
                    | dpaudit_data::sampler::SamplerConfig::FixedSequence(_)
            ) {
                return Err(invalid(
                    "train.sampler",
                    "poisson/fixed_sequence",
                    format!(
                        "a shuffle-type sampler for {what} (the target is in one batch per epoch)"
                    ),
                ));
            }
        }
        if let Insertion::Every = self.canary.insertion {
            let steps = self.train.steps.unwrap_or(0);
            if self.canary.every > steps {
                return Err(invalid(
                    "canary.every",
                    self.canary.every,
                    format!("at most the number of steps ({steps})"),
                ));
            }
        }
        Ok(())
    }

    /// Steps per run.
    pub fn steps(&self) -> u64 {
        self.train.steps.unwrap_or(0)
    }

    /// Models per chunk.
    pub fn chunk_size(&self) -> u64 {
        self.train.replicas as u64
    }

    /// Number of chunks.
    pub fn chunks(&self) -> u64 {
        self.runs.div_ceil(self.chunk_size())
    }
}

fn applicable_scores(kind: CanaryKind) -> String {
    [
        ScoreKind::Dirac,
        ScoreKind::InnerProduct,
        ScoreKind::Cosine,
        ScoreKind::Iterates,
        ScoreKind::Loss,
        ScoreKind::LossDifference,
        ScoreKind::UpdateNorm,
    ]
    .iter()
    .filter(|s| s.applies_to(kind))
    .map(|s| s.name())
    .collect::<Vec<_>>()
    .join(", ")
}

/// The claimed guarantee of one canary.
#[derive(Debug, Clone)]
pub struct ClaimedBound {
    /// The accountant's bound.
    pub bound: EpsilonUpperBound,
    /// What was accounted, in words.
    pub assumption: String,
    /// False when the accounting does not match how the canary was sampled.
    pub valid_for_sampler: bool,
}

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

/// The accountant's ε for one canary of the experiment (PLD, add/remove),
/// from [`crate::claim`]: a canary inserted every `k`-th step is in `⌊T/k⌋`
/// known steps; a sampled canary is accounted as its sampler's records are.
pub fn claimed_bound(config: &ExperimentConfig, sampler: &Sampler) -> Result<ClaimedBound> {
    let sigma = config.train.dp.noise_multiplier;
    let participation = match config.canary.insertion {
        Insertion::Every => Participation::EveryKth {
            every: config.canary.every,
        },
        Insertion::Sampled => Participation::Sampled {
            sampler,
            // The fixed sequence does not depend on the run's sampler key.
            key: RunSeed(config.train.seed).stream(Stream::Sampler),
        },
    };
    let claim = crate::claim::mechanism(participation, sigma, config.steps());
    let bound = crate::claim::claimed_epsilon(&claim, config.train.delta).map_err(|e| {
        invalid(
            "train.dp.noise_multiplier",
            sigma,
            format!("a value the accountant accepts: {e}"),
        )
    })?;
    Ok(ClaimedBound {
        bound,
        assumption: match config.canary.insertion {
            Insertion::Every => format!("canary {}", claim.assumption),
            Insertion::Sampled => format!("canary sampled like a record: {}", claim.assumption),
        },
        valid_for_sampler: claim.valid_for_sampler,
    })
}

impl Prepared {
    /// Load data, build the sampler, the canaries (running the A_GC-S
    /// simulation if asked) and the claimed ε. Refuses inconsistent configs
    /// before any training.
    pub fn new(config: &ExperimentConfig, fault: Option<Fault>) -> Result<Self> {
        config.validate_static()?;
        let device = resolve_device(config.train.device, "train.device")?;
        let (train, test) = prepare_data(&config.train)?;
        let sampler = config
            .train
            .sampler
            .build(train.len())
            .map_err(|e| invalid("train.sampler", "data", e.to_string()))?;
        config.canary.validate(config.steps(), &sampler)?;
        let seed = RunSeed(config.train.seed);
        let classes = train.num_classes() as i64;
        let num_parameters =
            crate::preflight::parameters_per_replica(&config.train, train.shape(), classes)?
                as usize;
        let gradient_canaries = if config.canary.kind.is_gradient() {
            config.canary.count as u64
        } else {
            0
        };
        let estimate = crate::preflight::training(
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
        crate::preflight::check(
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
        let cfg = &self.config;
        let seed = RunSeed(cfg.train.seed);
        let first_run = chunk * cfg.chunk_size();
        let replicas = (cfg.runs - first_run).min(cfg.chunk_size()) as usize;
        let steps = cfg.steps();
        let m = self.canaries.count();
        let bits: Vec<Vec<bool>> = (0..replicas as u64)
            .map(|r| inclusion_bits(seed, first_run + r, m))
            .collect();
        // schedule[replica][step] = canaries inserted at that step; `special`
        // marks the steps of canary 0's slot whether or not it is included
        // (in runs without it, that is where the zero-out record sits).
        let mut schedule: Vec<Vec<Vec<usize>>> = vec![vec![Vec::new(); steps as usize]; replicas];
        let mut special: Vec<Vec<bool>> = vec![vec![false; steps as usize]; replicas];
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
                        schedule[r][s as usize].push(j);
                    }
                    if j == 0 {
                        special[r][s as usize] = true;
                    }
                }
            }
        }
        let negative = match (&self.canaries.gradients, cfg.canary.partially_informed) {
            (Some(g), true) => Some(
                g.f_get(0)
                    .and_then(|t| t.f_neg())
                    .map_err(TrainError::torch("negating the canary gradient"))?,
            ),
            _ => None,
        };
        let runs: Vec<u64> = (first_run..first_run + replicas as u64).collect();
        let randomness = self.randomness();
        let model = self.build(&runs)?;
        let noise = NoiseStreams::new(&randomness, &runs);
        let mut dp = DpSgd::new(dp_config(&cfg.train, &self.sampler), noise)?;
        if let Some(f) = self.fault {
            dp = dp.with_fault(f);
        }
        let mut book = ScoreBook::start(
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
        let sampler_key = randomness.stream(Stream::Sampler);
        let mut streams: Vec<_> = runs
            .iter()
            .map(|&r| self.sampler.steps(sampler_key, r))
            .collect();
        observer.on_start(steps);
        let gradient = self.canaries.config.kind.is_gradient();
        for s in 0..steps as usize {
            let batches: Vec<Vec<usize>> = streams
                .iter_mut()
                .map(|st| st.next().map(|x| x.batch).unwrap_or_default())
                .collect();
            let extras: Vec<Vec<Extra>> = schedule
                .iter()
                .map(|sched| {
                    sched[s]
                        .iter()
                        .map(|&j| {
                            if gradient {
                                Extra::Gradient(j)
                            } else {
                                Extra::Record(j)
                            }
                        })
                        .collect()
                })
                .collect();
            let mut batch = gather_with_canaries(
                &self.train,
                &batches,
                Some(&self.canaries),
                &extras,
                self.device,
            )?;
            if let Some(neg) = &negative {
                // Spec 000 §2.4, PI: the last record of every batch that holds
                // neither the target nor the zero-out record carries −ĝ.
                for (r, genuine) in batches.iter().enumerate() {
                    if !special[r][s] && !genuine.is_empty() {
                        batch.overrides.push(SlotOverride {
                            slot: genuine.len() - 1,
                            replica: r,
                            kind: Override::Gradient(neg.shallow_clone()),
                        });
                    }
                }
            }
            book.before_step(model.as_ref(), &self.canaries)?;
            let report = dp.step(model.as_ref(), &batch)?;
            book.after_step(model.as_ref())?;
            observer.on_step(&report);
        }
        let scores = book.finish(model.as_ref(), &self.canaries)?;
        let test_accuracy = evaluate(model.as_ref(), &self.eval, self.device)?;
        Ok(ChunkScores {
            first_run,
            scores,
            bits,
            test_accuracy,
        })
    }
}

/// A_GC-S (spec 001 Alg. 3, Noiseless-PS): train one model from the fixed θ₀
/// on the (seed's) batches of run 0 without canaries and without noise, sum
/// the squared per-step update of every coordinate, and return the `m`
/// coordinates with the smallest sums (ties by lower index). Noiseless
/// simulation is deterministic, so one simulation suffices (spec 001 §3.3
/// \[inferred\]).
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
