//! `dpaudit demo`.

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Simulated training runs per hypothesis (with / without the target) in each audit.
    #[arg(long, default_value_t = 200_000)]
    pub runs: usize,
    /// Run seed: all randomness of the demo derives from it.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Skip the LeNet-5 training run (the audit does not depend on it).
    #[arg(long)]
    pub no_train: bool,
    /// Trained models in the canary audit (0 skips it).
    #[arg(long, default_value_t = 1000)]
    pub canary_runs: u64,
}
