//! `dpaudit merge --out-dir D SHARD...`.

use std::path::PathBuf;

/// Arguments of `dpaudit merge`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The out-dir to complete (created if missing).
    #[arg(long)]
    pub out_dir: PathBuf,
    /// Shard out-dirs of the same experiment.
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
}
