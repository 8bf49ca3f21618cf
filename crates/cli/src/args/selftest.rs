//! `dpaudit selftest`.

/// Arguments of `dpaudit selftest`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Trained models per variant (more runs: tighter bounds, longer).
    #[arg(long, default_value_t = 1000)]
    pub runs: u64,
    /// Seed of every variant.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Simulated runs per hypothesis for the shuffling variant (Worst-Case threat model).
    #[arg(long, default_value_t = 200_000)]
    pub bgm_runs: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}
