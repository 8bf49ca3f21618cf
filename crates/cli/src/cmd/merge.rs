//! `dpaudit merge --out-dir D SHARD...`: the out-dirs of `--shard` runs
//! combined into one finished audit, by the kind their manifest says
//! ([`dpaudit_experiment::kind::out_dir_kind`]).

use std::path::PathBuf;

use dpaudit_experiment::kind::{out_dir_kind, ExperimentKind};

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

/// `dpaudit merge`: the merge of the first shard's kind (each runner refuses
/// shards of another experiment).
pub fn run(args: Args) -> anyhow::Result<()> {
    let kind = args
        .shards
        .first()
        .map_or(ExperimentKind::Canary, |d| out_dir_kind(d));
    super::run::merge_kind(kind, &args.out_dir, &args.shards)
}
