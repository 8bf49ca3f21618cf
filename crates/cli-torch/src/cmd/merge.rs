//! `dpaudit merge` of BGM out-dirs: `dpaudit` merges the other kinds itself
//! (`dpaudit_cli::cmd::merge`) and hands these over.

use dpaudit_cli::args::merge::Args;

/// `dpaudit merge` of the BGM shards that `dpaudit` hands over.
pub fn run(args: Args) -> anyhow::Result<()> {
    super::bgm::run_merge(&args.out_dir, &args.shards, false)
}
