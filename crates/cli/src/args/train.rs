//! `dpaudit train --config FILE.toml`.

use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run's TOML config (see `experiments/training/*.toml`).
    #[arg(long)]
    pub config: PathBuf,
    /// Override `seed`.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Override `steps` (and drop `epochs`).
    #[arg(long)]
    pub steps: Option<u64>,
    /// Override `replicas`.
    #[arg(long)]
    pub replicas: Option<usize>,
    /// Override `device` (`cpu` or `cuda`).
    #[arg(long, value_parser = parse_device)]
    pub device: Option<TrainDevice>,
    /// Override `dp.noise_multiplier`.
    #[arg(long)]
    pub noise_multiplier: Option<f64>,
    /// Override `dp.max_grad_norm`.
    #[arg(long)]
    pub max_grad_norm: Option<f64>,
    /// Override `dp.learning_rate`.
    #[arg(long)]
    pub learning_rate: Option<f64>,
    /// Where the checkpoint and `result.json` go (default `runs/<config stem>`).
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
    /// Derive the batch sampling and the DP noise from `seed` (exact replay)
    /// instead of from OS entropy. The model is then NOT private against
    /// anyone who has the config.
    #[arg(long)]
    pub replayable: bool,
    /// Print the result as JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `--device` of `dpaudit train` (the companion maps it to
/// `dpaudit_train::config::DeviceChoice`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrainDevice {
    /// The CPU.
    Cpu,
    /// CUDA device 0.
    Cuda,
}

fn parse_device(s: &str) -> Result<TrainDevice, String> {
    match s {
        "cpu" => Ok(TrainDevice::Cpu),
        "cuda" => Ok(TrainDevice::Cuda),
        _ => Err(format!("`{s}`: expected `cpu` or `cuda`")),
    }
}
