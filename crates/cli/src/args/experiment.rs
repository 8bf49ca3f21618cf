//! The flags that several experiment commands share (`run`, `bgm`,
//! `panoramia`).

use std::path::PathBuf;

/// The file and out-dir of `dpaudit bgm` and `dpaudit panoramia`: `dpaudit
/// run` for one kind, whose files may leave out the `kind` line.
#[derive(Debug, clap::Args)]
pub struct KindFileArgs {
    /// The experiment's TOML file (see `experiments/README.md`).
    #[arg(long)]
    pub config: PathBuf,
    /// Where the results go (default: `runs/<config file stem>` for `bgm`,
    /// `runs/panoramia/<config file stem>` for `panoramia`); an existing
    /// out-dir of the same experiment is resumed.
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
}

/// The flags of a BGM simulation.
#[derive(Debug, Default, clap::Args)]
pub struct SimArgs {
    /// Print the JSON report instead of the markdown table.
    #[arg(long)]
    pub json: bool,
    /// Simulation threads (0 = all cores): the Rust engine's threads, or
    /// libtorch's intra-op threads for the tensor engine on the CPU.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Where the simulation runs: `cpu` (the default) or `cuda` (CUDA
    /// device 0; implies `--engine tensor`).
    #[arg(long)]
    pub device: Option<String>,
    /// Simulation engine: `rust` (pure-Rust CPU simulator) or `tensor`
    /// (libtorch, vectorised in chunks of runs). Default: `rust` on the CPU,
    /// `tensor` on CUDA.
    #[arg(long, value_enum)]
    pub engine: Option<EngineChoice>,
    /// Tensor engine only: runs per chunk and hypothesis (bounds memory;
    /// default from a per-device element budget). The scores depend on it.
    #[arg(long)]
    pub chunk_runs: Option<usize>,
}

impl SimArgs {
    /// The simulation flags given (besides `--json`), to refuse them where
    /// nothing is simulated.
    pub fn given(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        for (flag, set) in [
            ("--threads", self.threads != 0),
            ("--device", self.device.is_some()),
            ("--engine", self.engine.is_some()),
            ("--chunk-runs", self.chunk_runs.is_some()),
        ] {
            if set {
                given.push(flag);
            }
        }
        given
    }
}

/// The `--engine` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineChoice {
    /// The pure-Rust CPU simulator (`dpaudit_experiment::bgm::engine::CpuBgmEngine`).
    Rust,
    /// The libtorch simulator (`dpaudit_experiment::bgm::engine::TensorBgmEngine`).
    Tensor,
}
