//! Throughput of the real training loop: a chunk's step (sampler, batch on
//! the device, canaries, DP-SGD, per-step scores) against the engine's step
//! alone on a pre-built batch of the same model, and the loop's fixed cost
//! per step as the number of replicas grows. `dpaudit bench --end-to-end`
//! and `dpaudit bench --overhead` print these.

use std::time::Instant;

use serde::Serialize;
use tch::Device;

use dpaudit_data::dataset::Dataset;
use dpaudit_data::sampler::{BatchSampler, StepTable};
use dpaudit_data::seed::Stream;
use dpaudit_train::engine::DpSgd;
use dpaudit_train::error::{invalid, Result, TrainError};
use dpaudit_train::noise::{NoiseGenerator, NoiseStreams};
use dpaudit_train::op_count::{NamedCount, OpCounter, OpCounts};
use dpaudit_train::trainer::{dp_config, prepare_data};

use crate::canary::chunk::Prepared;
use crate::canary::settings::ExperimentConfig;

/// Features per record of the tiny model's data.
pub const TINY_FEATURES: usize = 8;

/// The tiny model's data: the first [`TINY_FEATURES`] features of every
/// record of `data`, labels mod 2. With Purchase-100's 600 features and 100
/// classes the "tiny" MLP 600 → 1 → 100 had 801 parameters per replica: at
/// 4,096 replicas its gathered batch (28 MiB) and its noise (3.3 M draws)
/// cost more than the rest of the step, and on the CPU they evicted the
/// caches the host code runs from, so the row measured compute, not host
/// work.
pub fn tiny_data(data: &Dataset) -> Result<Dataset> {
    let width = data.record_len();
    if width < TINY_FEATURES || data.num_classes() < 2 {
        return Err(invalid(
            "train.data",
            format!("{width} features, {} classes", data.num_classes()),
            format!("at least {TINY_FEATURES} features and 2 classes"),
        ));
    }
    let features = data
        .features()
        .chunks_exact(width)
        .flat_map(|record| &record[..TINY_FEATURES])
        .copied()
        .collect();
    let labels = data.labels().iter().map(|&l| l % 2).collect();
    Dataset::new(
        data.kind(),
        features,
        labels,
        vec![TINY_FEATURES],
        vec!["even".into(), "odd".into()],
        data.source().clone(),
    )
    .map_err(|e| invalid("train.data", "the tiny model's data", e.to_string()))
}

/// The model of a throughput row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoopModel {
    /// LeNet-5 on Fashion-MNIST (the real files when installed, else the
    /// synthetic stand-in).
    LeNet5,
    /// MLP 600 → 256 → 100 on the synthetic Purchase-100 stand-in.
    Mlp,
    /// MLP 8 → 1 → 2 (13 parameters per replica) on the first
    /// [`TINY_FEATURES`] features of the Purchase-100 stand-in, labels taken
    /// mod 2 ([`tiny_data`]): compute is negligible even at 4,096 replicas,
    /// what is left is the loop's own cost per step.
    Tiny,
}

impl LoopModel {
    /// Name in the output.
    pub fn name(self) -> &'static str {
        match self {
            LoopModel::LeNet5 => "lenet5",
            LoopModel::Mlp => "mlp",
            LoopModel::Tiny => "tiny",
        }
    }
}

/// One row: a model, a batch size per replica and a number of replicas.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct LoopSpec {
    /// The model.
    pub model: LoopModel,
    /// Records per replica and step.
    pub batch: usize,
    /// Replicas trained at once.
    pub replicas: usize,
}

/// The rows of `dpaudit bench --end-to-end`.
pub const END_TO_END_ROWS: [LoopSpec; 3] = [
    LoopSpec {
        model: LoopModel::LeNet5,
        batch: 256,
        replicas: 1,
    },
    LoopSpec {
        model: LoopModel::Mlp,
        batch: 4096,
        replicas: 1,
    },
    LoopSpec {
        model: LoopModel::LeNet5,
        batch: 100,
        replicas: 64,
    },
];

/// The replica counts of `dpaudit bench --overhead`.
pub const OVERHEAD_REPLICAS: [usize; 4] = [1, 64, 512, 4096];

/// The experiment a row trains: one Dirac canary inserted at every step,
/// scored by its coordinate and by the iterates (a per-step score), shuffled
/// batches of fixed size, replayable noise.
pub fn experiment(spec: LoopSpec, steps: u64, device: Device) -> Result<ExperimentConfig> {
    let (model, data, records) = match spec.model {
        LoopModel::LeNet5 => (
            "kind = \"lenet5\"",
            "dataset = \"fmnist\"",
            (spec.batch * 4).max(1024),
        ),
        LoopModel::Mlp => (
            "kind = \"mlp\"\nhidden = [256]",
            "dataset = \"purchase100\"",
            (spec.batch * 2).max(1024),
        ),
        LoopModel::Tiny => (
            "kind = \"mlp\"\nhidden = [1]",
            "dataset = \"purchase100\"",
            (spec.batch * 8).max(256),
        ),
    };
    let device = match device {
        Device::Cpu => "cpu",
        _ => "cuda",
    };
    let text = format!(
        r#"
name = "throughput"
runs = {replicas}
[train]
seed = 1
replicas = {replicas}
steps = {steps}
delta = 1e-5
device = "{device}"
[train.model]
{model}
[train.data]
{data}
train_size = {records}
[train.sampler]
kind = "shuffle"
batch_size = {batch}
last_batch = "drop"
[train.dp]
noise_multiplier = 1.0
max_grad_norm = 1.0
learning_rate = 0.01
[canary]
kind = "dirac"
count = 1
insertion = "every"
[audit]
scores = ["dirac", "iterates"]
methods = ["eps_delta"]
"#,
        replicas = spec.replicas,
        batch = spec.batch,
    );
    Ok(ExperimentConfig::from_toml(
        &text,
        "the throughput benchmark",
    )?)
}

/// One measured row of `--end-to-end` or `--overhead`.
#[derive(Debug, Clone, Serialize)]
pub struct LoopRow {
    /// What was measured.
    pub spec: LoopSpec,
    /// Timed steps per round.
    pub iters: usize,
    /// Rounds (end-to-end and engine-only interleaved).
    pub rounds: usize,
    /// Steps between the loop's read-backs of its reports.
    pub read_back_every: u64,
    /// Seconds per end-to-end step: the best round.
    pub end_to_end: f64,
    /// Seconds per engine-only step on a pre-built batch: the best round.
    pub engine: f64,
    /// `engine / end_to_end` (throughput of the loop relative to the engine).
    pub ratio: f64,
    /// Seconds to draw one step's DP noise for all replicas (part of both
    /// timings): the best of `iters` draws.
    pub noise: f64,
    /// The generator of that noise.
    pub noise_generator: NoiseGenerator,
    /// Seconds per step of drawing the samplers' epochs for all replicas:
    /// one epoch drawn on the caller's thread, divided by the steps of an
    /// epoch. The loop draws each next epoch on a helper thread while the
    /// current one trains ([`StepTable`]), and the timed steps cross no
    /// epoch boundary, so neither timing includes it; on a host with a core
    /// to spare it is hidden, on a busy one it is this much more per step.
    pub draw: f64,
    /// Parameters per replica.
    pub parameters: usize,
    /// libtorch operators and time inside them per loop step
    /// ([`dpaudit_train::op_count`]), counted over `rounds` further stretches
    /// of `iters` steps: the stretch with the least time outside operators,
    /// its waits averaged over all stretches. `None` when this build cannot
    /// count them.
    pub loop_ops: Option<OpCounts>,
    /// The same per engine-only step.
    pub engine_ops: Option<OpCounts>,
    /// With [`Timing::name_operators`]: the top-level operators of `iters`
    /// further loop steps by name (totals over those steps), the most
    /// frequent first; empty otherwise.
    pub loop_names: Vec<NamedCount>,
    /// The same over `iters` engine-only steps.
    pub engine_names: Vec<NamedCount>,
    /// With [`Timing::name_operators`]: the host time between consecutive
    /// top-level operators of the same loop steps by pair `"previous ->
    /// next"`, the longest first ([`OpCounter::gaps`]); empty otherwise.
    pub loop_gaps: Vec<NamedCount>,
    /// The same over the engine-only steps.
    pub engine_gaps: Vec<NamedCount>,
}

fn sync(device: Device) {
    if let Device::Cuda(i) = device {
        tch::Cuda::synchronize(i as i64);
    }
}

/// How [`measure`] times a row.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Timed steps per round.
    pub iters: usize,
    /// Rounds, loop and engine interleaved; each kind's best counts.
    pub rounds: usize,
    /// Untimed loop steps first.
    pub warmup: usize,
    /// The loop reads its step reports back from the device every this many
    /// steps (the engine-only step reads every step).
    pub read_back_every: u64,
    /// After the counted stretches, name the top-level operators of `iters`
    /// more loop steps and engine steps ([`LoopRow::loop_names`]).
    pub name_operators: bool,
}

/// The row's experiment ([`experiment`]) prepared on its data: the tiny
/// model's is [`tiny_data`].
pub fn prepare(spec: LoopSpec, steps: u64, device: Device) -> Result<Prepared> {
    let config = experiment(spec, steps, device)?;
    match spec.model {
        LoopModel::Tiny => {
            let (train, test) = prepare_data(&config.train)?;
            Prepared::with_data(&config, None, tiny_data(&train)?, tiny_data(&test)?)
        }
        _ => Prepared::new(&config, None),
    }
}

/// Time `iters` steps of the real loop against `iters` engine steps on a
/// pre-built batch, `rounds` times interleaved after `warmup` loop steps, and
/// the noise draw alone. `noise` forces a noise generator on both (default:
/// the replayable default of `device`).
pub fn measure(
    spec: LoopSpec,
    device: Device,
    timing: Timing,
    noise: Option<NoiseGenerator>,
) -> Result<LoopRow> {
    let Timing {
        iters,
        rounds,
        warmup,
        read_back_every,
        name_operators,
    } = timing;
    let iters = iters.max(1);
    let rounds = rounds.max(1);
    // Timed and counted rounds, the named stretch, and the engine's batch.
    let named = if name_operators { iters } else { 0 };
    let steps = (warmup + 2 * rounds * iters + named + 1) as u64;
    let prepared = prepare(spec, steps, device)?;
    let config = &prepared.config;
    let mut run = prepared.start_chunk(0)?;
    let streams = |seed| {
        let s = NoiseStreams::replayable(seed, spec.replicas);
        match noise {
            Some(g) => s.with_generator(g),
            None => Ok(s),
        }
    };
    if let Some(g) = noise {
        run.set_noise_generator(g)?;
    }
    run.set_read_back_every(read_back_every);
    for _ in 0..warmup {
        run.step()?;
    }
    let batch = run.next_batch()?;
    let mut engine = DpSgd::new(dp_config(&config.train, &prepared.sampler), streams(2)?)?;
    let generator = engine.noise_generator(device);
    let (mut best_loop, mut best_engine) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..rounds {
        sync(device);
        let start = Instant::now();
        for _ in 0..iters {
            run.step()?;
        }
        sync(device);
        best_loop = best_loop.min(start.elapsed().as_secs_f64() / iters as f64);
        let start = Instant::now();
        for _ in 0..iters {
            engine.step(run.model(), &batch)?;
        }
        sync(device);
        best_engine = best_engine.min(start.elapsed().as_secs_f64() / iters as f64);
    }
    // Counted apart from the timed rounds: the observer adds about a
    // microsecond per operator. As many counted stretches as timed rounds,
    // the loop's and the engine's interleaved; each keeps its stretch with
    // the least time outside operators (on a shared machine the noise only
    // adds), as the timings keep their best round.
    let (loop_ops, engine_ops) = match OpCounter::start() {
        // Each counted stretch ends before the device is synchronised: on a
        // GPU the wait for queued kernels is neither an operator nor host
        // work (the step's own read-back is an operator and holds its wait).
        Ok(first) => {
            let (mut loops, mut engines) = (Vec::new(), Vec::new());
            let mut counter = Some(first);
            for _ in 0..rounds {
                let c = match counter.take() {
                    Some(c) => c,
                    None => OpCounter::start()?,
                };
                for _ in 0..iters {
                    run.step()?;
                }
                loops.push(c.finish().per(iters));
                sync(device);
                let c = OpCounter::start()?;
                for _ in 0..iters {
                    engine.step(run.model(), &batch)?;
                }
                engines.push(c.finish().per(iters));
                sync(device);
            }
            (best_counted(&loops), best_counted(&engines))
        }
        Err(_) => (None, None),
    };
    // Named apart from the counted stretches: naming takes a lock per
    // operator.
    let (mut loop_names, mut engine_names) = (Vec::new(), Vec::new());
    let (mut loop_gaps, mut engine_gaps) = (Vec::new(), Vec::new());
    if name_operators {
        let c = OpCounter::start()?;
        c.name_operators();
        for _ in 0..iters {
            run.step()?;
        }
        loop_names = c.names();
        loop_gaps = c.gaps();
        drop(c);
        sync(device);
        let c = OpCounter::start()?;
        c.name_operators();
        for _ in 0..iters {
            engine.step(run.model(), &batch)?;
        }
        engine_names = c.names();
        engine_gaps = c.gaps();
        drop(c);
        sync(device);
    }
    let params: Vec<_> = run
        .model()
        .named_parameters()
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    let runs: Vec<u64> = (0..spec.replicas as u64).collect();
    let start = Instant::now();
    // Told one step, the table draws no epoch ahead: its first step draws
    // epoch 0 on this thread.
    let mut table = StepTable::new(
        &prepared.sampler,
        prepared.randomness().stream(Stream::Sampler),
        &runs,
        1,
    )
    .map_err(|e| invalid("train.sampler", "data", e.to_string()))?;
    let _ = table.advance();
    let draw = start.elapsed().as_secs_f64() / prepared.sampler.steps_per_epoch().max(1) as f64;
    let mut noise = streams(3)?;
    let mut best_noise = f64::INFINITY;
    for _ in 0..iters {
        let start = Instant::now();
        let draws = noise.next_step(1.0, &params, device)?;
        sync(device);
        best_noise = best_noise.min(start.elapsed().as_secs_f64());
        drop(draws);
    }
    if !(best_loop.is_finite() && best_engine.is_finite()) {
        return Err(TrainError::InvalidConfig {
            field: "iters".into(),
            value: iters.to_string(),
            expected: "at least one timed step".into(),
        });
    }
    Ok(LoopRow {
        spec,
        iters,
        rounds,
        read_back_every,
        end_to_end: best_loop,
        engine: best_engine,
        ratio: best_engine / best_loop,
        noise: best_noise,
        noise_generator: generator,
        draw,
        parameters: prepared.num_parameters,
        loop_ops,
        engine_ops,
        loop_names,
        engine_names,
        loop_gaps,
        engine_gaps,
    })
}

/// The counted stretch with the least time outside operators, with the
/// waits per step averaged over all stretches (where a read-back falls
/// depends on the stretch); `None` without any.
fn best_counted(counts: &[OpCounts]) -> Option<OpCounts> {
    let mut best = *counts
        .iter()
        .min_by(|a, b| a.outside().total_cmp(&b.outside()))?;
    best.waits = counts.iter().map(|c| c.waits).sum::<f64>() / counts.len() as f64;
    Some(best)
}

#[cfg(test)]
mod tests {
    use dpaudit_data::dataset::{DatasetKind, Source};

    use super::*;

    /// Each record keeps its first `TINY_FEATURES` values in order, labels
    /// become their parity; data narrower than that is refused, naming it.
    #[test]
    fn tiny_data_keeps_the_leading_features_and_label_parity() {
        let width = TINY_FEATURES + 3;
        let features: Vec<f32> = (0..3 * width).map(|v| v as f32).collect();
        let data = Dataset::new(
            DatasetKind::Purchase100,
            features,
            vec![0, 7, 42],
            vec![width],
            (0..100).map(|c| c.to_string()).collect(),
            Source::Synthetic { seed: 1 },
        )
        .unwrap();
        let tiny = tiny_data(&data).unwrap();
        assert_eq!(tiny.shape(), &[TINY_FEATURES]);
        assert_eq!(tiny.labels(), &[0, 1, 0]);
        assert_eq!(tiny.num_classes(), 2);
        for r in 0..3 {
            let start = (r * width) as f32;
            let want: Vec<f32> = (0..TINY_FEATURES).map(|j| start + j as f32).collect();
            assert_eq!(tiny.record(r).unwrap(), want.as_slice(), "record {r}");
        }
        let narrow = Dataset::new(
            DatasetKind::Purchase100,
            vec![0.0; TINY_FEATURES - 1],
            vec![0],
            vec![TINY_FEATURES - 1],
            vec!["a".into(), "b".into()],
            Source::Synthetic { seed: 1 },
        )
        .unwrap();
        let message = tiny_data(&narrow).unwrap_err().to_string();
        assert!(message.contains("train.data"), "{message}");
        assert!(message.contains("at least 8 features"), "{message}");
    }

    /// The stretch with the least time outside operators is kept, its waits
    /// replaced by the mean over all stretches.
    #[test]
    fn the_best_counted_stretch_keeps_the_least_host_time_and_the_mean_waits() {
        let at = |wall: f64, inside: f64, waits: f64| OpCounts {
            top_level: 10,
            all: 20,
            inside,
            wall,
            waits,
        };
        let best =
            best_counted(&[at(3.0, 1.0, 0.0), at(2.5, 1.0, 0.25), at(4.0, 1.0, 0.5)]).unwrap();
        assert_eq!(best.wall, 2.5);
        assert_eq!(best.outside(), 1.5);
        assert_eq!(best.waits, 0.25);
        assert_eq!(best_counted(&[]), None);
    }
}
