//! The one error type of the plan crate.

/// Everything that can go wrong reading an experiment's files, checking its
/// settings and finalizing or merging its out-dir. Each variant names the
/// file or field and says what was expected. The training crate and the
/// experiment crate convert it into their own errors with the same messages.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A configuration value is out of its valid range.
    #[error("invalid value for `{field}`: {value} ({expected})")]
    InvalidConfig {
        /// The field name, as in the TOML config.
        field: String,
        /// The offending value, printed.
        value: String,
        /// What was expected instead.
        expected: String,
    },
    /// The configuration asks for something DP training refuses.
    #[error("`{layer}` is not supported: {reason}")]
    Unsupported {
        /// The layer or option.
        layer: String,
        /// Why it is refused.
        reason: String,
    },
    /// A run that cannot fit in memory, refused before it allocates.
    #[error("{what} needs {needs}, but only {available} of memory are available; reduce {fields}")]
    InsufficientMemory {
        /// The run.
        what: String,
        /// The estimate, with its parts.
        needs: String,
        /// What the system has.
        available: String,
        /// The settings that drive the estimate.
        fields: String,
    },
    /// The out-dir store's errors (files, lock, an inconsistent out-dir),
    /// with their own messages.
    #[error(transparent)]
    Store(#[from] dpaudit_store::StoreError),
    /// The statistics refused their input.
    #[error("{context}: {source}")]
    Audit {
        /// What was being computed.
        context: String,
        /// The audit crate's error.
        #[source]
        source: dpaudit_audit::AuditError,
    },
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
    /// A simulation engine that lives outside this crate failed (the
    /// libtorch BGM engine of `dpaudit_experiment`), with its own message.
    #[error(transparent)]
    Engine(Box<dyn std::error::Error + Send + Sync>),
}

/// A [`PlanError::InvalidConfig`] for `field`, its `value` and what was expected.
pub fn invalid(
    field: &str,
    value: impl std::fmt::Display,
    expected: impl Into<String>,
) -> PlanError {
    PlanError::InvalidConfig {
        field: field.into(),
        value: value.to_string(),
        expected: expected.into(),
    }
}

/// An invalid value of a BGM setting or flag, as the out-dir store words it
/// ([`dpaudit_store::StoreError::Invalid`]).
pub(crate) fn invalid_value(
    name: impl Into<String>,
    value: impl Into<String>,
    expected: impl Into<String>,
) -> PlanError {
    dpaudit_store::error::invalid(name, value, expected).into()
}

/// Result alias of this crate.
pub type Result<T, E = PlanError> = std::result::Result<T, E>;

/// A refusal of the one DP-field validation
/// ([`dpaudit_accounting::dp_fields::check`]) as the config error naming the
/// field in the project vocabulary (callers prefix their section).
impl From<dpaudit_accounting::dp_fields::DpFieldError> for PlanError {
    fn from(e: dpaudit_accounting::dp_fields::DpFieldError) -> Self {
        invalid(e.field.name(), e.value, e.expected)
    }
}
