//! Throughput of the DP step against our own non-private step on the same
//! model, device and random data; and the microbatch oracle of every model on
//! a chosen device (`dpaudit bench --oracle`, for GPU hosts, which have no
//! cargo to run the test suite).

use std::time::Instant;

use serde::Serialize;
use tch::{Device, Tensor};

use crate::engine::{non_private_step, Batch, DpSgd, DpSgdConfig, Normaliser, Sgd};
use crate::error::{Result, TrainError};
use crate::init::Init;
use crate::models::{ConvNet, LeNet5, Mlp, Model, ResNet18, ShallowCnn, WideResNet};
use crate::noise::NoiseStreams;

/// One benchmark row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum BenchModel {
    /// WRN-16-4 with GroupNorm, 3×32×32, 10 classes (the layout of the H100 reference rows in `benches/RESULTS.md`).
    Wrn16x4,
    /// LeNet-5, 1×28×28, 10 classes.
    LeNet5,
    /// MLP 600 → 256 → 100 (the Purchase-100 MLP of the reference rows).
    Mlp,
}

/// What to measure.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct BenchSpec {
    /// The model.
    pub model: BenchModel,
    /// Batch size per replica.
    pub batch: i64,
    /// Replicas.
    pub replicas: usize,
}

/// The standard rows: WRN-16-4, LeNet-5 and the MLP at the batch sizes of the
/// PyTorch/Opacus baselines, and LeNet-5 replica stacks.
pub const STANDARD_ROWS: [BenchSpec; 7] = [
    BenchSpec {
        model: BenchModel::Wrn16x4,
        batch: 256,
        replicas: 1,
    },
    BenchSpec {
        model: BenchModel::Wrn16x4,
        batch: 1024,
        replicas: 1,
    },
    BenchSpec {
        model: BenchModel::LeNet5,
        batch: 256,
        replicas: 1,
    },
    BenchSpec {
        model: BenchModel::LeNet5,
        batch: 4096,
        replicas: 1,
    },
    BenchSpec {
        model: BenchModel::Mlp,
        batch: 4096,
        replicas: 1,
    },
    BenchSpec {
        model: BenchModel::LeNet5,
        batch: 100,
        replicas: 64,
    },
    BenchSpec {
        model: BenchModel::LeNet5,
        batch: 100,
        replicas: 512,
    },
];

/// One measured row: samples per second (all replicas together).
#[derive(Debug, Clone, Serialize)]
pub struct BenchRow {
    /// What was measured.
    pub spec: BenchSpec,
    /// Timed iterations of each step kind per round.
    pub iters: usize,
    /// Rounds, each `iters` non-private then `iters` DP steps; each kind's
    /// best round counts (a busy neighbour slows some rounds, never speeds
    /// one up).
    pub rounds: usize,
    /// Non-private SGD step, samples/s.
    pub non_private: f64,
    /// DP-SGD step (per-sample clipping, noise), samples/s.
    pub dp: f64,
    /// `dp / non_private`.
    pub ratio: f64,
}

fn build(spec: &BenchSpec, device: Device) -> Result<Box<dyn Model>> {
    let mut init = Init::new(0, spec.replicas, device);
    Ok(match spec.model {
        BenchModel::Wrn16x4 => Box::new(WideResNet::new(&mut init, 16, 4, 10, 16, [3, 32, 32])?),
        BenchModel::LeNet5 => Box::new(LeNet5::new(&mut init, 10)?),
        BenchModel::Mlp => Box::new(Mlp::new(&mut init, &[600, 256, 100])?),
    })
}

fn sync(device: Device) {
    if let Device::Cuda(i) = device {
        tch::Cuda::synchronize(i as i64);
    }
}

fn time(
    iters: usize,
    warmup: usize,
    device: Device,
    mut f: impl FnMut() -> Result<()>,
) -> Result<f64> {
    for _ in 0..warmup {
        f()?;
    }
    sync(device);
    let start = Instant::now();
    for _ in 0..iters {
        f()?;
    }
    sync(device);
    Ok(start.elapsed().as_secs_f64())
}

/// Measure one row on one random batch: `warmup` untimed steps of each kind,
/// then `rounds` rounds of `iters` non-private and `iters` DP steps,
/// interleaved, keeping each kind's best round.
pub fn run_row(
    spec: BenchSpec,
    device: Device,
    iters: usize,
    rounds: usize,
    warmup: usize,
) -> Result<BenchRow> {
    let model = build(&spec, device)?;
    let (inputs, targets) = crate::testing::random_batch(model.as_ref(), spec.batch, 0)?;
    let to = |t: Tensor| {
        t.f_to_device(device)
            .map_err(TrainError::torch("uploading the bench batch"))
    };
    let batch = Batch::new(to(inputs)?, to(targets)?);
    let mut sgd = Sgd::new(0.01, 0.0, 0.0);
    let mut dp = DpSgd::new(
        DpSgdConfig {
            noise_multiplier: 1.0,
            max_grad_norm: 1.0,
            learning_rate: 0.01,
            normaliser: Normaliser::FixedBatchSize(spec.batch as u64),
            momentum: 0.0,
            weight_decay: 0.0,
        },
        NoiseStreams::replayable(0, spec.replicas),
    )?;
    let (mut t_np, mut t_dp) = (f64::INFINITY, f64::INFINITY);
    for round in 0..rounds.max(1) {
        let warm = if round == 0 { warmup } else { 0 };
        t_np = t_np.min(time(iters, warm, device, || {
            non_private_step(model.as_ref(), &mut sgd, &batch).map(|_| ())
        })?);
        t_dp = t_dp.min(time(iters, warm, device, || {
            dp.step(model.as_ref(), &batch).map(|_| ())
        })?);
    }
    let samples = (spec.batch * spec.replicas as i64 * iters as i64) as f64;
    let (non_private, dp_rate) = (samples / t_np, samples / t_dp);
    Ok(BenchRow {
        spec,
        iters,
        rounds: rounds.max(1),
        non_private,
        dp: dp_rate,
        ratio: dp_rate / non_private,
    })
}

/// The relative tolerance of the oracle, as in `tests/model_oracle.rs`.
pub const ORACLE_TOL: f64 = 1e-5;

/// One case of the microbatch oracle.
#[derive(Debug, Clone, Serialize)]
pub struct OracleRow {
    /// The model.
    pub model: &'static str,
    /// Replicas.
    pub replicas: usize,
    /// Batch size.
    pub batch: i64,
    /// `None` when the engine matched one-sample-at-a-time autograd within
    /// [`ORACLE_TOL`]; else what differed.
    pub failure: Option<String>,
}

type Make = fn(&mut Init) -> Result<Box<dyn Model>>;

/// `(replicas, batch sizes)` of oracle cases.
type Sizes = &'static [(usize, &'static [i64])];

/// The cases of `tests/model_oracle.rs` (every model, batches of 0, 1 and
/// several samples, with and without replicas; the large models on tiny
/// images), run on `device`.
pub fn oracle(device: Device) -> Result<Vec<OracleRow>> {
    let small: Sizes = &[(1, &[0, 1, 3]), (2, &[0, 1, 3])];
    let large: Sizes = &[(1, &[0, 2]), (2, &[1])];
    let cases: [(&'static str, Make, Sizes, u64); 6] = [
        (
            "mlp",
            |i| Ok(Box::new(Mlp::new(i, &[12, 8, 5])?)),
            small,
            10,
        ),
        ("lenet5", |i| Ok(Box::new(LeNet5::new(i, 2)?)), small, 11),
        (
            "shallow_cnn",
            |i| Ok(Box::new(ShallowCnn::new(i, 2)?)),
            small,
            12,
        ),
        ("convnet", |i| Ok(Box::new(ConvNet::new(i, 10)?)), small, 13),
        (
            "resnet18",
            |i| Ok(Box::new(ResNet18::new(i, 10, 32, [3, 4, 4])?)),
            large,
            14,
        ),
        (
            "wrn16_4",
            |i| Ok(Box::new(WideResNet::new(i, 16, 4, 10, 16, [3, 4, 4])?)),
            large,
            15,
        ),
    ];
    let mut out = Vec::new();
    for (name, make, sizes, seed) in cases {
        for &(m, batches) in sizes {
            let model = make(&mut Init::new(5, m, device))?;
            for &b in batches {
                let (x, y) = crate::testing::random_batch(model.as_ref(), b, seed + b as u64)?;
                let to = |t: Tensor| {
                    t.f_to_device(device)
                        .map_err(TrainError::torch("uploading the oracle batch"))
                };
                let failure = crate::testing::check_against_oracle(
                    model.as_ref(),
                    &to(x)?,
                    &to(y)?,
                    ORACLE_TOL,
                )
                .err();
                out.push(OracleRow {
                    model: name,
                    replicas: m,
                    batch: b,
                    failure,
                });
            }
        }
    }
    Ok(out)
}
