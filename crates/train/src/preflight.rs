//! Preflight: what a run will need, estimated before anything large is
//! allocated, and refused with the estimate when it cannot fit.
//!
//! The estimate is a *lower bound* on the memory a run holds at its peak, so
//! refusing on it never refuses a run that would fit:
//!
//! * parameters: `M·P` float32 values for the parameters, as many for the
//!   noise, the clipped sum and the update of a step (and one more with
//!   momentum);
//! * the training data on the host (and once more on the device when it is
//!   not the CPU);
//! * one batch of inputs, `B·M` records, where `B` is the expected batch
//!   size.
//!
//! Activations, per-sample gradients and libtorch's workspaces come on top,
//! so a run that passes can still run out of memory; libtorch then returns an
//! error, which the engine reports as [`crate::error::TrainError::Torch`]. The parameter
//! count `P` comes from building the model with zero replicas, which
//! allocates nothing.
//!
//! The estimate's type, the available memory and the refusal are
//! `dpaudit_plan::train::memory`'s (re-exported here).

use dpaudit_data::seed::RunSeed;
use dpaudit_data::seed::Stream;
use tch::Device;

use crate::architecture::build_model;
use crate::config::TrainConfig;
use crate::error::Result;
use crate::init::Init;

pub use dpaudit_plan::train::memory::{
    available_memory, check, check_against, gib, MemoryEstimate,
};

/// Bytes of one float32.
const F32: u64 = 4;

/// Trainable parameters of one replica of `config.model` on data of this
/// shape, without allocating them.
pub fn parameters_per_replica(
    config: &TrainConfig,
    sample_shape: &[usize],
    classes: i64,
) -> Result<u64> {
    let mut init = Init::for_runs(RunSeed(0).stream(Stream::Init), &[], Device::Cpu);
    let model = build_model(&config.model, sample_shape, classes, &mut init)?;
    Ok(model
        .named_parameters()
        .iter()
        .map(|(_, t)| t.size()[1..].iter().product::<i64>().max(0) as u64)
        .fold(0, u64::saturating_add))
}

/// The estimate for training `replicas` models of `config` on `records`
/// records of `sample_shape`, with batches of `batch` records per replica.
pub fn training(
    config: &TrainConfig,
    sample_shape: &[usize],
    classes: i64,
    records: usize,
    batch: f64,
    replicas: usize,
) -> Result<MemoryEstimate> {
    let p = parameters_per_replica(config, sample_shape, classes)?;
    let m = replicas as u64;
    let record = sample_shape.iter().product::<usize>() as u64;
    let copies = if config.dp.momentum != 0.0 { 5 } else { 4 };
    let mut parts = vec![
        (
            format!(
                "{replicas} × {p} parameters × {copies} (parameters, noise, clipped sum, update{})",
                if copies == 5 { ", momentum" } else { "" }
            ),
            m.saturating_mul(p).saturating_mul(F32 * copies),
        ),
        (
            format!("{records} training records of {record} values"),
            (records as u64).saturating_mul(record).saturating_mul(F32),
        ),
        (
            format!("one batch of {batch:.0} × {replicas} records"),
            ((batch.ceil().max(1.0)) as u64)
                .saturating_mul(m)
                .saturating_mul(record)
                .saturating_mul(F32),
        ),
    ];
    parts.sort_by_key(|p| std::cmp::Reverse(p.1));
    Ok(MemoryEstimate { parts })
}
