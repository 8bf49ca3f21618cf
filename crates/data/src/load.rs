//! Loading a dataset by kind: real files when present, else the synthetic stand-in.

use std::path::{Path, PathBuf};

use crate::dataset::{DatasetKind, Splits};
use crate::error::Result;
use crate::purchase::LabelBase;
use crate::synthetic::{self, SyntheticSpec};
use crate::{cifar10, fmnist, purchase};

/// Loads the real files of `kind` from `dir`; every file must be there.
/// A CIFAR-10 directory may hold the batches directly or in
/// `cifar-10-batches-bin/`; Purchase-100 labels are detected
/// ([`LabelBase::Detect`]).
pub fn load_dir(kind: DatasetKind, dir: &Path) -> Result<Splits> {
    match kind {
        DatasetKind::Fmnist => fmnist::load_dir(dir),
        DatasetKind::Cifar10 => cifar10::load_dir(dir),
        DatasetKind::Purchase100 => purchase::load_dir(dir, LabelBase::Detect),
    }
}

/// Where [`load`] looks for real files.
pub fn search_dir(kind: DatasetKind, data_dir: Option<&Path>) -> Option<PathBuf> {
    data_dir
        .map(Path::to_path_buf)
        .or_else(|| kind.default_dir())
}

/// The embedded default.
///
/// - With `data_dir`, the real files must be there ([`load_dir`]): asking
///   for a directory never silently yields synthetic data.
/// - Without, the default directory ([`DatasetKind::default_dir`]) is used
///   when it holds any of the dataset's files (and then all must be valid).
/// - Otherwise the synthetic stand-in of [`SyntheticSpec::default_for`] with
///   `synthetic_seed`; its [`crate::Source`] says it is synthetic.
pub fn load(kind: DatasetKind, data_dir: Option<&Path>, synthetic_seed: u64) -> Result<Splits> {
    if let Some(dir) = data_dir {
        return load_dir(kind, dir);
    }
    if let Some(dir) = kind.default_dir() {
        if has_any_file(kind, &dir) {
            return load_dir(kind, &dir);
        }
    }
    synthetic::generate(kind, &SyntheticSpec::default_for(kind, synthetic_seed))
}

fn has_any_file(kind: DatasetKind, dir: &Path) -> bool {
    match kind {
        DatasetKind::Fmnist => fmnist::any_file_in(dir),
        DatasetKind::Cifar10 => {
            let d = cifar10::batches_dir(dir);
            cifar10::TRAIN_FILES
                .iter()
                .chain([&cifar10::TEST_FILE])
                .any(|f| d.join(f).is_file())
        }
        DatasetKind::Purchase100 => dir.join(purchase::FILE).is_file(),
    }
}
