//! The crate's one error type. Every variant says what was wrong, where
//! (file, field, path) and what was expected.

use dpaudit_audit::AuditError;
use dpaudit_data::DataError;
use dpaudit_train::TrainError;

/// Errors of the PANORAMIA pipeline.
#[derive(Debug, thiserror::Error)]
pub enum PanoramiaError {
    /// A configuration value is out of range or inconsistent.
    #[error("{file}: `{field}` = {value}: expected {expected}")]
    Config {
        /// The config file (or `<inline>`).
        file: String,
        /// The field, as written in the file (`split.audit`, `target[2].epsilon`).
        field: String,
        /// The offending value.
        value: String,
        /// What was expected.
        expected: String,
    },
    /// A checkpoint (target, generator, helper) that cannot be used.
    #[error("checkpoint {path}: {reason}")]
    Checkpoint {
        /// The file.
        path: String,
        /// Why, and what was expected.
        reason: String,
    },
    /// Audit members that are not in a target's training set.
    #[error(
        "target `{target}`: {missing} of {members} audit members are not in its training set ({detail}); \
         expected every member to be a training record of the target"
    )]
    NotMembers {
        /// The target's name.
        target: String,
        /// Members not found.
        missing: usize,
        /// Members checked.
        members: usize,
        /// Where the target's training set came from.
        detail: String,
    },
    /// The out-dir holds the state of another run or an unreadable artifact.
    #[error("{path}: {reason}")]
    OutDir {
        /// The file or directory.
        path: String,
        /// Why, and what to do.
        reason: String,
    },
    /// A libtorch operation failed (shape mismatch, out of memory).
    #[error("libtorch failed while {context}: {source}")]
    Torch {
        /// What was being done.
        context: String,
        /// libtorch's error.
        #[source]
        source: tch::TchError,
    },
    /// Training diverged.
    #[error("{model}: loss is {value} at epoch {epoch}: expected a finite loss (lower the learning rate)")]
    NonFinite {
        /// Which model.
        model: String,
        /// The epoch.
        epoch: u64,
        /// The loss.
        value: f64,
    },
    /// From the training engine (targets, checkpoints, data preparation).
    #[error(transparent)]
    Train(#[from] TrainError),
    /// The out-dir is locked by another process, unwritable, or a write failed.
    #[error(transparent)]
    Store(#[from] dpaudit_store::StoreError),
    /// From the audit statistics.
    #[error(transparent)]
    Audit(#[from] AuditError),
    /// From the data crate.
    #[error(transparent)]
    Data(#[from] DataError),
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, PanoramiaError>;

impl PanoramiaError {
    /// A closure turning a libtorch error into [`PanoramiaError::Torch`].
    pub fn torch(context: impl Into<String>) -> impl FnOnce(tch::TchError) -> Self {
        let context = context.into();
        move |source| PanoramiaError::Torch { context, source }
    }
}

/// A [`PanoramiaError::Config`].
pub(crate) fn config_err(
    file: &str,
    field: impl Into<String>,
    value: impl ToString,
    expected: impl Into<String>,
) -> PanoramiaError {
    PanoramiaError::Config {
        file: file.to_string(),
        field: field.into(),
        value: value.to_string(),
        expected: expected.into(),
    }
}

/// A [`PanoramiaError::OutDir`].
pub(crate) fn out_err(path: &std::path::Path, reason: impl ToString) -> PanoramiaError {
    PanoramiaError::OutDir {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}
