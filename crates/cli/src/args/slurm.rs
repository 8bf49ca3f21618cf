//! `dpaudit slurm EXPERIMENT --out-dir D --tasks N [--submit]`.

use std::path::PathBuf;

/// Arguments of `dpaudit slurm`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The experiment file, as for `dpaudit run` (`kind = "canary"` or `"bgm"`).
    pub experiment: PathBuf,
    /// The out-dir of the finished audit; shards go to `<out-dir>/shards/`.
    #[arg(long)]
    pub out_dir: PathBuf,
    /// Array tasks (shards); at most the experiment's number of chunks.
    #[arg(long)]
    pub tasks: u64,
    /// `#SBATCH --partition`.
    #[arg(long)]
    pub partition: Option<String>,
    /// `#SBATCH --gres`, e.g. `gpu:1`.
    #[arg(long)]
    pub gres: Option<String>,
    /// `#SBATCH --time`, e.g. `04:00:00`.
    #[arg(long)]
    pub time: Option<String>,
    /// `#SBATCH --cpus-per-task`.
    #[arg(long)]
    pub cpus_per_task: Option<u32>,
    /// Submit both jobs with `sbatch` (the merge held until the array succeeded).
    #[arg(long)]
    pub submit: bool,
}
