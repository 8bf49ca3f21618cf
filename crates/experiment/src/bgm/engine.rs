//! Engines that simulate the Batched Gaussian Mechanism (BGM) game of
//! Annamalai et al. 2024 (§4.1, Algorithm 4; `docs/canary-games.md`): one
//! trait, a pure-Rust CPU implementation ([`CpuBgmEngine`], the simulator of
//! `dpaudit_attacks`) and a libtorch one ([`TensorBgmEngine`], the simulator
//! of [`crate::bgm::tensor`], the only one that runs on a GPU).
//!
//! Both draw the same distribution of scores, not the same draws (ChaCha
//! streams against Philox counters). Each engine seeds its runs in *chunks*
//! of its own size; the scores of runs `[c·R, c·R + r)` are a function of
//! the configuration, the chunk `c` and `r` only, so an experiment cut into
//! slices of whole chunks (resumed, sharded, merged) gives exactly the scores
//! of one uninterrupted simulation on the same engine.

use std::fmt;

use dpaudit_attacks::{BgmConfig, BgmSimulator, PairedScores, CHUNK_SIZE};
use tch::Device;

use crate::bgm::tensor::TensorBgmSimulator;
use crate::error::{invalid, ExperimentError, Result};

/// A simulator of the BGM game.
pub trait BgmEngine: fmt::Debug {
    /// `rust` or `tensor`: the name in reports and on the command line.
    fn name(&self) -> &'static str;
    /// Where it runs: `cpu` or `cuda:N`.
    fn device_label(&self) -> String;
    /// CPU threads doing the simulation (0 on a GPU).
    fn threads(&self) -> usize;
    /// What the scores depend on besides the configuration and the runs
    /// (the engine, and for tensors the device kind): two out-dirs are
    /// merged only when these agree.
    fn identity(&self) -> String;
    /// Runs per seeding chunk of `config` (validated).
    fn chunk_runs(&self, config: &BgmConfig) -> Result<usize>;
    /// The first chunk of runs drawn for choosing a partial-shuffle guess:
    /// far above any chunk of evaluation runs, so that selection and
    /// evaluation never share a draw.
    fn selection_first_chunk(&self) -> u64;
    /// Scores of `runs` runs per hypothesis of `config`, from chunk
    /// `first_chunk`.
    fn simulate(&self, config: &BgmConfig, first_chunk: u64, runs: usize) -> Result<PairedScores>;
}

/// The pure-Rust simulator ([`BgmSimulator`]) on `threads` threads (0: all
/// cores). Its scores do not depend on the thread count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuBgmEngine {
    /// Threads (0: all cores).
    pub threads: usize,
}

/// First chunk of the CPU engine's selection runs.
pub const CPU_SELECTION_FIRST_CHUNK: u64 = 1 << 40;

/// First chunk of the tensor engine's selection runs (2³⁰ chunks of runs are
/// more than any audit draws; every chunk has its own Philox counters).
pub const TENSOR_SELECTION_FIRST_CHUNK: u64 = 1 << 30;

impl BgmEngine for CpuBgmEngine {
    fn name(&self) -> &'static str {
        "rust"
    }

    fn device_label(&self) -> String {
        "cpu".into()
    }

    fn threads(&self) -> usize {
        match self.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
    }

    fn identity(&self) -> String {
        "rust".into()
    }

    fn chunk_runs(&self, config: &BgmConfig) -> Result<usize> {
        BgmSimulator::new(config.clone())?;
        Ok(CHUNK_SIZE)
    }

    fn selection_first_chunk(&self) -> u64 {
        CPU_SELECTION_FIRST_CHUNK
    }

    fn simulate(&self, config: &BgmConfig, first_chunk: u64, runs: usize) -> Result<PairedScores> {
        let sim = BgmSimulator::new(config.clone())?;
        Ok(sim.simulate_from_chunk(first_chunk, runs, self.threads))
    }
}

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

    fn simulator(&self, config: &BgmConfig) -> Result<TensorBgmSimulator> {
        let sim = TensorBgmSimulator::new(config.clone(), self.device)?;
        Ok(match self.chunk_runs {
            Some(c) => sim.with_chunk_runs(c)?,
            None => sim,
        })
    }
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

    fn chunk_runs(&self, config: &BgmConfig) -> Result<usize> {
        Ok(self.simulator(config)?.chunk_runs())
    }

    fn selection_first_chunk(&self) -> u64 {
        TENSOR_SELECTION_FIRST_CHUNK
    }

    fn simulate(&self, config: &BgmConfig, first_chunk: u64, runs: usize) -> Result<PairedScores> {
        self.simulator(config)?
            .simulate_from_chunk(first_chunk, runs)
            .map_err(ExperimentError::from)
    }
}
