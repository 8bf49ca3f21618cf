//! The BGM engines (`dpaudit_plan::bgm::engine`: the [`BgmEngine`] trait and
//! the pure-Rust [`CpuBgmEngine`], re-exported here) and the libtorch one,
//! [`TensorBgmEngine`], the simulator of [`crate::bgm::tensor`] and the only
//! one that runs on a GPU.

use dpaudit_attacks::{BgmConfig, PairedScores};
use dpaudit_plan::PlanError;
use tch::Device;

use crate::bgm::tensor::TensorBgmSimulator;
use crate::error::{invalid, Result};

pub use dpaudit_plan::bgm::engine::*;

/// First chunk of the tensor engine's selection runs (2³⁰ chunks of runs are
/// more than any audit draws; every chunk has its own Philox counters).
pub const TENSOR_SELECTION_FIRST_CHUNK: u64 = 1 << 30;

/// The libtorch simulator ([`TensorBgmSimulator`]) on `device`, with
/// `chunk_runs` runs per chunk (`None`: from the device's memory budget).
/// Its scores depend on the chunk size and, in the last bits, on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TensorBgmEngine {
    /// Where the tensors live.
    pub device: Device,
    /// Runs per chunk and hypothesis (`None`: the default budget).
    pub chunk_runs: Option<usize>,
}

impl TensorBgmEngine {
    /// Refuses `chunk_runs = Some(0)`.
    pub fn new(device: Device, chunk_runs: Option<usize>) -> Result<Self> {
        if chunk_runs == Some(0) {
            return Err(invalid("--chunk-runs", "0", "at least 1 run per chunk"));
        }
        Ok(Self { device, chunk_runs })
    }

    fn simulator(&self, config: &BgmConfig) -> dpaudit_train::Result<TensorBgmSimulator> {
        let sim = TensorBgmSimulator::new(config.clone(), self.device)?;
        Ok(match self.chunk_runs {
            Some(c) => sim.with_chunk_runs(c)?,
            None => sim,
        })
    }
}

/// The engine's error in the trait's error type, with its own message.
fn engine_error(e: dpaudit_train::TrainError) -> PlanError {
    PlanError::Engine(Box::new(e))
}

impl BgmEngine for TensorBgmEngine {
    fn name(&self) -> &'static str {
        "tensor"
    }

    fn device_label(&self) -> String {
        match self.device {
            Device::Cpu => "cpu".into(),
            Device::Cuda(i) => format!("cuda:{i}"),
            other => format!("{other:?}"),
        }
    }

    fn threads(&self) -> usize {
        match self.device {
            Device::Cpu => usize::try_from(tch::get_num_threads()).map_or(1, |n| n.max(1)),
            _ => 0,
        }
    }

    fn identity(&self) -> String {
        match self.device {
            Device::Cpu => "tensor on cpu".into(),
            _ => "tensor on cuda".into(),
        }
    }

    fn chunk_runs(&self, config: &BgmConfig) -> dpaudit_plan::Result<usize> {
        Ok(self.simulator(config).map_err(engine_error)?.chunk_runs())
    }

    fn selection_first_chunk(&self) -> u64 {
        TENSOR_SELECTION_FIRST_CHUNK
    }

    fn simulate(
        &self,
        config: &BgmConfig,
        first_chunk: u64,
        runs: usize,
    ) -> dpaudit_plan::Result<PairedScores> {
        self.simulator(config)
            .and_then(|sim| sim.simulate_from_chunk(first_chunk, runs))
            .map_err(engine_error)
    }
}
