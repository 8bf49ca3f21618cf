//! `dpaudit run FILE.toml --out-dir DIR`.

use std::path::PathBuf;

use super::experiment::SimArgs;

/// Arguments of `dpaudit run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The experiment file; its `kind` line says what it is: `canary` (e.g.
    /// `experiments/hidden-state/`), `bgm` (`experiments/shuffling/`) or
    /// `panoramia` (`experiments/panoramia/`); see `experiments/README.md`.
    pub config: PathBuf,
    /// Where results go; an existing out-dir of the same experiment is resumed.
    #[arg(long)]
    pub out_dir: PathBuf,
    /// Train only chunks `c ≡ i (mod n)`: `i/n` (e.g. `0/4`), or `auto` inside
    /// a Slurm job array (`auto/n` in a Kubernetes Indexed Job with n
    /// completions); combine the out-dirs with `dpaudit merge`.
    #[arg(long)]
    pub shard: Option<String>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// `kind = "bgm"` and `"panoramia"` only.
    #[command(flatten, next_help_heading = "BGM and PANORAMIA")]
    pub sim: SimArgs,
}
