//! Where a dataset's records came from: real files (with their SHA-256) or
//! the seed of a synthetic stand-in.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

/// One source file of a real dataset, as read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceFile {
    /// The path the bytes were read from.
    pub path: PathBuf,
    /// Lowercase hex SHA-256 of the file's bytes as stored (compressed, if it is).
    pub sha256: String,
    /// Size of the file in bytes.
    pub bytes: u64,
}

/// Where a dataset's records come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Source {
    /// Real files on disk.
    Real {
        /// The directory the files were found in.
        dir: PathBuf,
        /// Every file read, with its checksum.
        files: Vec<SourceFile>,
    },
    /// A deterministic synthetic stand-in ([`crate::synthetic`]), not real data.
    Synthetic {
        /// The seed it was generated from.
        seed: u64,
    },
}

impl Source {
    /// Whether the records are synthetic.
    pub fn is_synthetic(&self) -> bool {
        matches!(self, Source::Synthetic { .. })
    }

    /// The directory of real files, or `"synthetic"`.
    pub fn label(&self) -> String {
        match self {
            Source::Real { dir, .. } => dir.display().to_string(),
            Source::Synthetic { .. } => "synthetic".to_string(),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Real { dir, files } => {
                write!(f, "real files in {} ({} files)", dir.display(), files.len())
            }
            Source::Synthetic { seed } => {
                write!(f, "SYNTHETIC stand-in (seed {seed}), not the real dataset")
            }
        }
    }
}
