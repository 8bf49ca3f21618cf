//! `dpaudit merge --out-dir D SHARD...`: the out-dirs of `--shard` runs
//! combined into one finished audit, by the kind their manifest says
//! ([`dpaudit_store::kind::out_dir_kind`]).

use dpaudit_cli::args::merge::Args;
use dpaudit_store::kind::{out_dir_kind, ExperimentKind};

/// `dpaudit merge`: the merge of the first shard's kind (each runner refuses
/// shards of another experiment).
pub fn run(args: Args) -> anyhow::Result<()> {
    let kind = args
        .shards
        .first()
        .map_or(ExperimentKind::Canary, |d| out_dir_kind(d));
    super::run::merge_kind(kind, &args.out_dir, &args.shards)
}
