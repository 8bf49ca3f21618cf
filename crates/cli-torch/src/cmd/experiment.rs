//! What `dpaudit run`, `bgm` and `panoramia` share: the experiment file of
//! `--config` read as one kind with its out-dir, and the command line that
//! an out-dir's lock records.

use std::path::PathBuf;

use dpaudit_cli::args::experiment::KindFileArgs;
use dpaudit_store::kind::{ExperimentFile, ExperimentKind};

/// The file, read as `kind`, and its out-dir: `--out-dir`, or
/// `root/<config file stem>`.
pub fn open(
    args: &KindFileArgs,
    kind: ExperimentKind,
    root: &str,
) -> anyhow::Result<(ExperimentFile, PathBuf)> {
    let file = ExperimentFile::read_as(&args.config, kind)?;
    let out_dir = args.out_dir.clone().unwrap_or_else(|| {
        let stem = args
            .config
            .file_stem()
            .map_or_else(|| kind.name().into(), |s| s.to_string_lossy().into_owned());
        PathBuf::from(root).join(stem)
    });
    Ok((file, out_dir))
}

pub use dpaudit_cli::cmd::merge::command_line;
