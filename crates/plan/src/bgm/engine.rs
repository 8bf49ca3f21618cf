//! Engines that simulate the Batched Gaussian Mechanism (BGM) game of
//! Annamalai et al. 2024 (§4.1, Algorithm 4; `docs/canary-games.md`): one
//! trait, a pure-Rust CPU implementation ([`CpuBgmEngine`], the simulator of
//! `dpaudit_attacks`) and a libtorch one (`dpaudit_experiment::bgm::engine::TensorBgmEngine`,
//! the only one that runs on a GPU, which implements this trait beside libtorch).
//!
//! Both draw the same distribution of scores, not the same draws (ChaCha
//! streams against Philox counters). Each engine seeds its runs in *chunks*
//! of its own size; the scores of runs `[c·R, c·R + r)` are a function of
//! the configuration, the chunk `c` and `r` only, so an experiment cut into
//! slices of whole chunks (resumed, sharded, merged) gives exactly the scores
//! of one uninterrupted simulation on the same engine.

use std::fmt;

use dpaudit_attacks::{BgmConfig, BgmSimulator, PairedScores, CHUNK_SIZE};

use crate::error::Result;

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
