//! A whole DP-SGD run from a [`TrainConfig`]: data → sampler → steps → test
//! accuracy → accountant's ε → checkpoint. Progress goes to an [`Observer`]; the
//! CLI owns the progress bar.

use dpaudit_accounting::EpsilonUpperBound;
use dpaudit_data::dataset::{Dataset, DatasetKind, Normalization};
use dpaudit_data::sampler::{BatchSampler, Sampler, StepTable};
use dpaudit_data::seed::{Mode, Randomness, RunSeed, Stream};
use tch::{Device, Kind};

pub use crate::architecture::build_model;
use crate::checkpoint::CheckpointMeta;
use crate::claim::Participation;
use crate::config::{DatasetChoice, DeviceChoice, TrainConfig};
use crate::engine::{Batch, DpSgd, DpSgdConfig, Normaliser, StepReport};
use crate::error::{invalid, torch, Result, TrainError};
use crate::init::Init;
use crate::layers::Tape;
use crate::models::Model;
use crate::noise::NoiseStreams;

/// Receives progress from [`train`].
pub trait Observer {
    /// Before the first step.
    fn on_start(&mut self, _total_steps: u64) {}
    /// After every step.
    fn on_step(&mut self, _report: &StepReport) {}
}

/// An observer that ignores everything.
#[derive(Debug, Default)]
pub struct Silent;
impl Observer for Silent {}

/// What the accountant says about the run, with what it assumed.
#[derive(Debug, Clone)]
pub struct PrivacyReport {
    /// The accountant's bound.
    pub bound: EpsilonUpperBound,
    /// What was accounted, in words (e.g. which sampler assumption).
    pub assumption: String,
    /// False when the accounting does not match the sampler (shuffle-type
    /// samplers accounted as Poisson, the common practice Annamalai et al. 2024 audits).
    pub valid_for_sampler: bool,
}

/// The result of [`train`].
#[derive(Debug)]
pub struct TrainOutcome {
    /// The trained replicas.
    pub model: Box<dyn Model>,
    /// Steps taken.
    pub steps: u64,
    /// Test accuracy of each replica.
    pub test_accuracy: Vec<f64>,
    /// Mean training loss per sample over the last step.
    pub last_loss: f64,
    /// ε from the accountant (None when σ = 0: no privacy).
    pub privacy: Option<PrivacyReport>,
    /// Records in the training split.
    pub train_records: usize,
    /// Records in the test split.
    pub test_records: usize,
    /// Where the data came from (real files, or the synthetic stand-in with
    /// its seed), in words.
    pub data_source: String,
    /// True when the records are a synthetic stand-in, not the real dataset.
    pub synthetic_data: bool,
    /// Secure or replayable randomness.
    pub mode: Mode,
    /// One record's shape.
    pub sample_shape: Vec<usize>,
    /// Number of classes.
    pub classes: i64,
}

impl TrainOutcome {
    /// The checkpoint metadata of this run.
    pub fn checkpoint_meta(&self, config: &TrainConfig) -> CheckpointMeta {
        let mut meta = CheckpointMeta::new(
            self.mode,
            config.clone(),
            self.sample_shape.clone(),
            self.classes,
            self.steps,
            self.data_source.clone(),
        );
        meta.epsilon = self.privacy.as_ref().map(|p| p.bound.epsilon);
        meta.accounting = self.privacy.as_ref().map(|p| p.assumption.clone());
        meta
    }
}

fn data_err(context: &str) -> impl FnOnce(dpaudit_data::DataError) -> TrainError + '_ {
    move |e| TrainError::InvalidConfig {
        field: context.to_string(),
        value: "data".into(),
        expected: e.to_string(),
    }
}

/// Train and test splits after class selection, downsampling and normalisation.
pub fn prepare_data(config: &TrainConfig) -> Result<(Dataset, Dataset)> {
    let kind = match config.data.dataset {
        DatasetChoice::Fmnist => DatasetKind::Fmnist,
        DatasetChoice::Cifar10 => DatasetKind::Cifar10,
        DatasetChoice::Purchase100 => DatasetKind::Purchase100,
    };
    let seed = RunSeed(config.seed);
    let splits = dpaudit_data::load(
        kind,
        config.data.data_dir.as_deref(),
        seed.stream(Stream::Synthetic).to_u64(),
    )
    .map_err(data_err("data"))?;
    let splits = match &config.data.classes {
        Some(c) => splits.select_classes(c).map_err(data_err("data.classes"))?,
        None => splits,
    };
    let mut split_rng = seed.stream(Stream::Split).rng();
    let (mut train, mut test) = if splits.test.is_empty() {
        // Purchase-100 has no test split: hold out 20% (seeded).
        let held = splits.train.len() / 5;
        splits
            .train
            .split(held, &mut split_rng)
            .map_err(data_err("data"))?
    } else {
        (splits.train, splits.test)
    };
    if let Some(n) = config.data.train_size {
        train = train
            .downsample(n, &mut split_rng)
            .map_err(data_err("data.train_size"))?;
    }
    let mut present: Vec<i64> = train.labels().to_vec();
    present.sort_unstable();
    present.dedup();
    if present.len() < 2 {
        let field = if config.data.train_size.is_some() {
            "data.train_size"
        } else {
            "data.classes"
        };
        return Err(invalid(
            field,
            format!(
                "{} training records of {} class(es)",
                train.len(),
                present.len()
            ),
            "training records of at least two classes",
        ));
    }
    if config.data.normalize {
        let norm = Normalization::fit(&train).map_err(data_err("data.normalize"))?;
        norm.apply(&mut train).map_err(data_err("data.normalize"))?;
        norm.apply(&mut test).map_err(data_err("data.normalize"))?;
    }
    Ok((train, test))
}

/// Gather records into `[B, M, record]` plus targets `[B, M]` and mask `[B, M]`:
/// replica `m` gets `batches[m]`, padded with zeros up to the largest batch.
pub fn gather(data: &Dataset, batches: &[Vec<usize>], device: Device) -> Result<Batch> {
    crate::gather::gather_slots(data, batches, None, None, &[], device)
}

/// Test accuracy of every replica, in chunks of at most 8,192 samples over all
/// replicas (at least one record per chunk).
pub fn evaluate(model: &dyn Model, data: &Dataset, device: Device) -> Result<Vec<f64>> {
    let m = model.replicas() as usize;
    let n = data.len();
    let mut correct = vec![0f64; m];
    let step = (8192 / m.max(1)).max(1);
    tch::no_grad(|| -> Result<()> {
        for start in (0..n).step_by(step) {
            let idx: Vec<usize> = (start..(start + step).min(n)).collect();
            let batch = gather(data, &vec![idx; m], device)?;
            let logits = model.forward(&batch.inputs, &mut Tape::off())?;
            let hits: Vec<f64> = torch("counting correct predictions", || {
                let hits = logits
                    .f_argmax(-1, false)?
                    .f_eq_tensor(&batch.targets)?
                    .f_to_kind(Kind::Double)?
                    .f_sum_dim_intlist(0, false, None)?;
                Vec::<f64>::try_from(hits.f_to_device(Device::Cpu)?)
            })?;
            for (c, h) in correct.iter_mut().zip(hits) {
                *c += h;
            }
        }
        Ok(())
    })?;
    Ok(correct
        .iter()
        .map(|c| if n > 0 { c / n as f64 } else { 0.0 })
        .collect())
}

/// The accountant's ε for the run (PLD, add/remove).
pub fn account(
    sampler: &Sampler,
    config: &TrainConfig,
    steps: u64,
) -> Result<Option<PrivacyReport>> {
    let sigma = config.dp.noise_multiplier;
    if sigma == 0.0 {
        return Ok(None);
    }
    let acc_err = |e: dpaudit_accounting::AccountingError| TrainError::InvalidConfig {
        field: "dp.noise_multiplier".into(),
        value: sigma.to_string(),
        expected: format!("a value the accountant accepts: {e}"),
    };
    // The fixed sequence does not depend on the run's sampler key.
    let key = RunSeed(config.seed).stream(Stream::Sampler);
    let claim = crate::claim::mechanism(Participation::Sampled { sampler, key }, sigma, steps);
    let bound = crate::claim::claimed_epsilon(&claim, config.delta).map_err(acc_err)?;
    Ok(Some(PrivacyReport {
        bound,
        assumption: claim.assumption,
        valid_for_sampler: claim.valid_for_sampler,
    }))
}

/// The device a config asks for; `field` names it in the error when CUDA is
/// asked for and absent.
pub fn resolve_device(choice: DeviceChoice, field: &str) -> Result<Device> {
    match choice {
        DeviceChoice::Cpu => Ok(Device::Cpu),
        DeviceChoice::Cuda if tch::Cuda::is_available() => Ok(Device::Cuda(0)),
        DeviceChoice::Cuda => Err(invalid(
            field,
            "cuda",
            "a CUDA device; none is available (see `dpaudit doctor`)",
        )),
    }
}

/// The public constant DP-SGD divides the noisy sum by: the expected batch
/// size `q·n` under Poisson sampling, the batch size otherwise — never the
/// realised batch size.
pub fn normaliser_of(sampler: &Sampler) -> Normaliser {
    match sampler {
        // Every sampler's normaliser is written down here: a new sampler does
        // not compile until it has one (no catch-all arm).
        Sampler::Poisson(_) => Normaliser::ExpectedBatchSize(sampler.expected_batch_size()),
        Sampler::Shuffle(_)
        | Sampler::PartialShuffle(_)
        | Sampler::BatchThenShuffle(_)
        | Sampler::FixedSequence(_) => {
            Normaliser::FixedBatchSize(sampler.expected_batch_size() as u64)
        }
    }
}

/// The DP-SGD hyperparameters of a config with this sampler.
pub fn dp_config(config: &TrainConfig, sampler: &Sampler) -> DpSgdConfig {
    config.dp.engine(normaliser_of(sampler))
}

/// Run the configured training with the given randomness (whose public seed
/// must be the config's): [`Randomness::secure`] for a model that may be
/// released, [`Randomness::replayable`] to replay it exactly.
pub fn train(
    config: &TrainConfig,
    randomness: &Randomness,
    observer: &mut dyn Observer,
) -> Result<TrainOutcome> {
    config.validate()?;
    if randomness.seed() != RunSeed(config.seed) {
        return Err(invalid(
            "seed",
            config.seed,
            format!("the seed of the run's randomness ({})", randomness.seed().0),
        ));
    }
    let device = resolve_device(config.device, "device")?;
    let (train_data, test_data) = prepare_data(config)?;
    let sampler = config
        .sampler
        .build(train_data.len())
        .map_err(data_err("sampler"))?;
    let steps = match (config.steps, config.epochs) {
        (Some(s), _) => s,
        (None, Some(e)) => e * sampler.steps_per_epoch() as u64,
        (None, None) => unreachable!("validated"),
    };
    let classes = train_data.num_classes() as i64;
    let estimate = crate::preflight::training(
        config,
        train_data.shape(),
        classes,
        train_data.len(),
        sampler.expected_batch_size(),
        config.replicas,
    )?;
    crate::preflight::check(
        "training",
        "`model` (its widths), `replicas`, the batch size or `data.train_size`",
        &estimate,
    )?;
    let runs: Vec<u64> = (0..config.replicas as u64).collect();
    let mut init = Init::for_runs(randomness.stream(Stream::Init), &runs, device);
    let model = build_model(&config.model, train_data.shape(), classes, &mut init)?;
    let noise = NoiseStreams::new(randomness, &runs);
    let mut dp = DpSgd::new(dp_config(config, &sampler), noise)?;
    dp.set_read_back_every(crate::engine::LOOP_READ_BACK_EVERY);
    // Every replica's batches, an epoch at a time, in the layout one step
    // uploads.
    let mut table = StepTable::new(&sampler, randomness.stream(Stream::Sampler), &runs, steps)
        .map_err(|e| invalid("sampler", "data", e.to_string()))?;
    // The records go to the device once; each step sends only indices.
    let on_device = crate::gather::DeviceData::upload(&train_data, None, device)?;
    observer.on_start(steps);
    let mut last_loss = f64::NAN;
    for t in 0..steps {
        if t + 1 == steps {
            // The last step is read back on its own: `last_loss` is its loss.
            dp.read_back()?;
            dp.set_read_back_every(1);
        }
        let batch = on_device.batch_of_step(table.advance(), &[], None, &[])?;
        let report = dp.step(model.as_ref(), &batch)?;
        if report.is_read_back() {
            last_loss = report.mean_loss();
        }
        observer.on_step(&report);
    }
    let test_accuracy = evaluate(model.as_ref(), &test_data, device)?;
    let privacy = account(&sampler, config, steps)?;
    Ok(TrainOutcome {
        model,
        steps,
        test_accuracy,
        last_loss,
        privacy,
        train_records: train_data.len(),
        test_records: test_data.len(),
        data_source: train_data.source().to_string(),
        synthetic_data: train_data.source().is_synthetic(),
        mode: randomness.mode(),
        sample_shape: train_data.shape().to_vec(),
        classes,
    })
}
