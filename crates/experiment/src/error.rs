//! The error type of the experiment crate.

/// Everything that can go wrong with an experiment's out-dir, shards and
/// cluster jobs. Each variant names the file, variable or field and says what
/// was expected.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// The out-dir store's errors (files, lock, values of the environment or
    /// the command line, an inconsistent out-dir, cluster commands), with
    /// their own messages.
    #[error(transparent)]
    Store(#[from] dpaudit_store::StoreError),
    /// The experiment's files, settings, out-dir or statistics refused
    /// (`dpaudit_plan`, which reads and finalizes them without libtorch),
    /// with their own messages.
    #[error(transparent)]
    Plan(#[from] dpaudit_plan::PlanError),
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
}

/// Result alias of this crate.
pub type Result<T, E = ExperimentError> = std::result::Result<T, E>;

/// An invalid value ([`dpaudit_store::StoreError::Invalid`]).
pub(crate) fn invalid(
    name: impl Into<String>,
    value: impl Into<String>,
    expected: impl Into<String>,
) -> ExperimentError {
    dpaudit_store::error::invalid(name, value, expected).into()
}

/// The text of `path`; an error names it.
pub(crate) fn read_text(path: &std::path::Path) -> Result<String> {
    Ok(dpaudit_store::error::read_text(path)?)
}
