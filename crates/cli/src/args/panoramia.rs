//! `dpaudit panoramia --config FILE.toml`.

use super::experiment::KindFileArgs;

/// `dpaudit panoramia`: `dpaudit run` for `kind = "panoramia"` files, which
/// may leave out the `kind` line.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The audit's TOML config (see `experiments/panoramia/`) and where its
    /// state and results go.
    #[command(flatten)]
    pub file: KindFileArgs,
    /// Print `audit.json` instead of the summary.
    #[arg(long)]
    pub json: bool,
}
