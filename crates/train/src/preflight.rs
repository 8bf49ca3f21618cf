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
//! error, which the engine reports as [`TrainError::Torch`]. The parameter
//! count `P` comes from building the model with zero replicas, which
//! allocates nothing.
//!
//! Available memory is `MemAvailable` of `/proc/meminfo`, capped by the
//! cgroup (v2) limit when there is one. On other systems nothing is refused.

use std::fmt;

use dpaudit_data::seed::RunSeed;
use dpaudit_data::seed::Stream;
use tch::Device;

use crate::architecture::build_model;
use crate::config::TrainConfig;
use crate::error::{Result, TrainError};
use crate::init::Init;

/// Bytes of one float32.
const F32: u64 = 4;

/// A lower bound on the peak memory of a run, by part.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryEstimate {
    /// `(what, bytes)` for each part, largest first.
    pub parts: Vec<(String, u64)>,
}

impl MemoryEstimate {
    /// The estimate with one more part.
    pub fn with(mut self, what: impl Into<String>, bytes: u64) -> Self {
        self.parts.push((what.into(), bytes));
        self.parts.sort_by_key(|p| std::cmp::Reverse(p.1));
        self
    }

    /// The sum of the parts.
    pub fn total(&self) -> u64 {
        self.parts
            .iter()
            .map(|(_, b)| *b)
            .fold(0, u64::saturating_add)
    }
}

/// Bytes as GiB with two decimals.
pub fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

impl fmt::Display for MemoryEstimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at least {}", gib(self.total()))?;
        let parts: Vec<String> = self
            .parts
            .iter()
            .map(|(what, b)| format!("{what} {}", gib(*b)))
            .collect();
        write!(f, " ({})", parts.join(", "))
    }
}

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

/// Memory available to this process, if the system says.
pub fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    let mut bytes = kib.saturating_mul(1024);
    if let Ok(limit) = std::fs::read_to_string("/sys/fs/cgroup/memory.max") {
        if let Ok(limit) = limit.trim().parse::<u64>() {
            let used = std::fs::read_to_string("/sys/fs/cgroup/memory.current")
                .ok()
                .and_then(|u| u.trim().parse::<u64>().ok())
                .unwrap_or(0);
            bytes = bytes.min(limit.saturating_sub(used));
        }
    }
    Some(bytes)
}

/// Refuse `estimate` for `what` when it exceeds the available memory; `fields`
/// names the settings that drive it, for the message.
pub fn check(what: &str, fields: &str, estimate: &MemoryEstimate) -> Result<()> {
    check_against(what, fields, estimate, available_memory())
}

/// [`check`] against a given amount of available memory (`None`: unknown,
/// nothing is refused).
pub fn check_against(
    what: &str,
    fields: &str,
    estimate: &MemoryEstimate,
    available: Option<u64>,
) -> Result<()> {
    match available {
        Some(avail) if estimate.total() > avail => Err(TrainError::InsufficientMemory {
            what: what.into(),
            needs: estimate.to_string(),
            available: gib(avail),
            fields: fields.into(),
        }),
        _ => Ok(()),
    }
}
