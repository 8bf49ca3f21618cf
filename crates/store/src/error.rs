//! The error type of the store.

use std::path::PathBuf;

/// Everything that can go wrong with an out-dir, its shards and cluster
/// jobs. Each variant names the file, variable or field and says what was
/// expected.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file could not be read or written.
    #[error("{path}: {action}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// The out-dir cannot be created or written; nothing was computed.
    #[error("the out-dir {path} is not writable ({source}); nothing was computed: choose a writable --out-dir")]
    NotWritable {
        /// The out-dir.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// Another process holds the out-dir.
    #[error("{path}: the out-dir is in use by {holder}; wait for it, or use another --out-dir (if that process is gone and ran on another host, remove the lock file)")]
    Locked {
        /// The lock file.
        path: PathBuf,
        /// Who holds it, in words.
        holder: String,
    },
    /// A value of the environment or the command line is not what was
    /// expected.
    #[error("{name} = {value:?}: expected {expected}")]
    Invalid {
        /// The variable, flag or field.
        name: String,
        /// Its value.
        value: String,
        /// What was expected.
        expected: String,
    },
    /// An out-dir's state contradicts itself or the experiment.
    #[error("{path}: {reason}")]
    Inconsistent {
        /// The file at fault.
        path: PathBuf,
        /// What is wrong and what to do.
        reason: String,
    },
    /// A cluster command failed.
    #[error("`{command}` failed: {reason}")]
    Cluster {
        /// The command line.
        command: String,
        /// Its error output or exit status.
        reason: String,
    },
}

/// Result alias of this crate.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// A [`StoreError::Invalid`].
pub fn invalid(
    name: impl Into<String>,
    value: impl Into<String>,
    expected: impl Into<String>,
) -> StoreError {
    StoreError::Invalid {
        name: name.into(),
        value: value.into(),
        expected: expected.into(),
    }
}

/// The text of `path`; an error names it.
pub fn read_text(path: &std::path::Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| StoreError::Io {
        path: path.to_path_buf(),
        action: "reading",
        source,
    })
}
