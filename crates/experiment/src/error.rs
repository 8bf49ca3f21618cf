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
    /// The experiment's files, settings, out-dir, statistics or BGM
    /// simulation refused (`dpaudit_plan`, which reads and finalizes them
    /// without libtorch), with their own messages.
    #[error(transparent)]
    Plan(#[from] dpaudit_plan::PlanError),
    /// Training refused its input or failed.
    #[error(transparent)]
    Train(#[from] dpaudit_train::TrainError),
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
