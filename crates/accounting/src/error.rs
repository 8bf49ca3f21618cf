//! The error type of the accounting crate.

use crate::dp_fields::{self, DpContext, DpField, DpFieldError};

/// Everything that can go wrong in accounting. Each variant names the parameter or
/// the event at fault and says what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AccountingError {
    /// A real-valued parameter is outside its domain (or NaN).
    #[error("invalid parameter `{name}` = {value}: expected {expected}")]
    InvalidParameter {
        /// The parameter name, in the project vocabulary (`sample_rate`, `noise_multiplier`, `delta`, ...).
        name: &'static str,
        /// The value that was given.
        value: f64,
        /// What the value must satisfy.
        expected: &'static str,
    },
    /// A count (steps, epochs, compositions) is zero.
    #[error("invalid parameter `{name}` = 0: expected at least 1")]
    ZeroCount {
        /// The parameter name (`steps`, `count`, `epochs`, ...).
        name: &'static str,
    },
    /// The accountant cannot interpret this event.
    #[error("accountant `{accountant}` does not support {what}; {hint}")]
    Unsupported {
        /// The accountant's name.
        accountant: &'static str,
        /// The event or setting that is not supported.
        what: String,
        /// What to do instead.
        hint: &'static str,
    },
    /// The computation would exceed a numerical limit (grid size, overflow).
    #[error("numerical limit reached in {method}: {what}")]
    NumericalLimit {
        /// The method that gave up.
        method: &'static str,
        /// What exceeded which limit.
        what: String,
    },
    /// The accountant cannot represent an ε as large as the target.
    #[error(
        "cannot calibrate to target_epsilon = {target_epsilon} with the {accountant} accountant: {reason}; use --accountant rdp (the `Rdp` accountant in the library) for targets this large"
    )]
    CalibrationOutOfRange {
        /// The requested ε.
        target_epsilon: f64,
        /// The accountant's name.
        accountant: &'static str,
        /// Why.
        reason: &'static str,
    },
    /// Calibration cannot reach the target ε within the allowed noise range.
    #[error(
        "cannot reach target_epsilon = {target_epsilon}: even noise_multiplier = {noise_multiplier} gives epsilon = {epsilon}"
    )]
    CalibrationUnreachable {
        /// The requested ε.
        target_epsilon: f64,
        /// The largest noise multiplier tried.
        noise_multiplier: f64,
        /// The ε it gave.
        epsilon: f64,
    },
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, AccountingError>;

impl From<DpFieldError> for AccountingError {
    fn from(e: DpFieldError) -> Self {
        match e.field {
            DpField::Steps => AccountingError::ZeroCount { name: "steps" },
            field => AccountingError::InvalidParameter {
                name: field.name(),
                value: e.value,
                expected: e.expected,
            },
        }
    }
}

/// `sample_rate` must lie in (0, 1] ([`dp_fields::check`]).
pub(crate) fn check_sample_rate(sample_rate: f64) -> Result<()> {
    dp_fields::check(DpContext::Claimed, DpField::SampleRate, sample_rate)?;
    Ok(())
}

/// `noise_multiplier` must be finite and positive: the accountant claims an ε
/// for it ([`dp_fields::check`] in [`DpContext::Claimed`]).
pub(crate) fn check_noise_multiplier(noise_multiplier: f64) -> Result<()> {
    dp_fields::check(
        DpContext::Claimed,
        DpField::NoiseMultiplier,
        noise_multiplier,
    )?;
    Ok(())
}

/// `delta` must lie in (0, 1) ([`dp_fields::check`]).
pub(crate) fn check_delta(delta: f64) -> Result<()> {
    dp_fields::check(DpContext::Claimed, DpField::Delta, delta)?;
    Ok(())
}

/// A target ε must be finite and positive ([`dp_fields::check`] in
/// [`DpContext::Calibrated`]).
pub(crate) fn check_target_epsilon(target_epsilon: f64) -> Result<()> {
    dp_fields::check(
        DpContext::Calibrated,
        DpField::TargetEpsilon,
        target_epsilon,
    )?;
    Ok(())
}

/// `epsilon` must be finite and non-negative.
pub(crate) fn check_epsilon(name: &'static str, epsilon: f64) -> Result<()> {
    if epsilon.is_finite() && epsilon >= 0.0 {
        Ok(())
    } else {
        Err(AccountingError::InvalidParameter {
            name,
            value: epsilon,
            expected: "a finite number >= 0",
        })
    }
}

/// A count must be at least 1.
pub(crate) fn check_count(name: &'static str, count: u64) -> Result<()> {
    if count == 0 {
        Err(AccountingError::ZeroCount { name })
    } else {
        Ok(())
    }
}
