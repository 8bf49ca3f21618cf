//! `dpaudit bgm --config FILE.toml`.

use super::experiment::{KindFileArgs, SimArgs};

/// `dpaudit bgm`: `dpaudit run` for `kind = "bgm"` files, which may leave
/// out the `kind` line.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The experiment (a TOML file with a `[[settings]]` list) and where
    /// `audit.json`, `summary.md`, `scores.csv` and the chunks go.
    #[command(flatten)]
    pub file: KindFileArgs,
    /// Simulate only chunks `c ≡ i (mod n)`: `i/n` (e.g. `0/4`), or `auto`
    /// inside a Slurm job array (`auto/n` in a Kubernetes Indexed Job with n
    /// completions); combine the out-dirs with `dpaudit merge`.
    #[arg(long)]
    pub shard: Option<String>,
    /// How and where the runs are simulated.
    #[command(flatten)]
    pub sim: SimArgs,
}
