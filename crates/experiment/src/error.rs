//! The error type of the experiment crate.

use std::path::PathBuf;

/// Everything that can go wrong with an experiment's out-dir, shards and
/// cluster jobs. Each variant names the file, variable or field and says what
/// was expected.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
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
    /// The statistics refused their input.
    #[error("{context}: {source}")]
    Audit {
        /// What was being computed.
        context: String,
        /// The audit crate's error.
        #[source]
        source: dpaudit_audit::AuditError,
    },
    /// Training refused its input or failed.
    #[error(transparent)]
    Train(#[from] dpaudit_train::TrainError),
    /// The attacks crate refused a parameter (a BGM setting).
    #[error(transparent)]
    Attacks(#[from] dpaudit_attacks::AttacksError),
    /// The accountant refused its input.
    #[error("{context}: {source}")]
    Accounting {
        /// What was being computed.
        context: String,
        /// The accounting crate's error.
        #[source]
        source: dpaudit_accounting::AccountingError,
    },
    /// One setting of an experiment file is invalid (named by its position
    /// and name); nothing was computed.
    #[error("{file}: settings[{index}] ({name:?}): {reason}")]
    Setting {
        /// The experiment file, as given.
        file: String,
        /// The setting's position in `[[settings]]`.
        index: usize,
        /// Its name.
        name: String,
        /// What is wrong (the inner error, in words).
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

/// The store's errors keep their messages (and their variants' names), so
/// that `?` works on the store's functions.
impl From<dpaudit_store::StoreError> for ExperimentError {
    fn from(e: dpaudit_store::StoreError) -> Self {
        use dpaudit_store::StoreError as S;
        match e {
            S::Io {
                path,
                action,
                source,
            } => Self::Io {
                path,
                action,
                source,
            },
            S::NotWritable { path, source } => Self::NotWritable { path, source },
            S::Locked { path, holder } => Self::Locked { path, holder },
            S::Invalid {
                name,
                value,
                expected,
            } => Self::Invalid {
                name,
                value,
                expected,
            },
            S::Inconsistent { path, reason } => Self::Inconsistent { path, reason },
            S::Cluster { command, reason } => Self::Cluster { command, reason },
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = ExperimentError> = std::result::Result<T, E>;

/// An [`ExperimentError::Invalid`].
pub(crate) fn invalid(
    name: impl Into<String>,
    value: impl Into<String>,
    expected: impl Into<String>,
) -> ExperimentError {
    ExperimentError::Invalid {
        name: name.into(),
        value: value.into(),
        expected: expected.into(),
    }
}

/// The text of `path`; an error names it.
pub(crate) fn read_text(path: &std::path::Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| ExperimentError::Io {
        path: path.to_path_buf(),
        action: "reading",
        source,
    })
}
