//! The one error type of the attacks crate.

use thiserror::Error;

/// Everything that can go wrong when computing membership scores or simulating
/// a mechanism from user-supplied parameters and host data.
///
/// Each variant names the offending parameter or input and what was expected,
/// so a caller can report it without extra context.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum AttacksError {
    /// A scalar parameter is outside its valid range.
    #[error("invalid parameter `{parameter}` = {value}: expected {expected}")]
    InvalidParameter {
        /// Name of the parameter (`noise_multiplier`, `buffer_size`, `steps`, ...).
        parameter: &'static str,
        /// The value that was given, formatted.
        value: String,
        /// What a valid value looks like.
        expected: String,
    },
    /// Two inputs that must have the same length do not.
    #[error("length mismatch for `{what}`: expected {expected} values, found {found}")]
    LengthMismatch {
        /// Which input has the wrong length.
        what: &'static str,
        /// The length it should have.
        expected: usize,
        /// The length it has.
        found: usize,
    },
    /// An input that must not be empty is empty.
    #[error("`{what}` is empty: expected at least one value")]
    Empty {
        /// Which input is empty.
        what: &'static str,
    },
    /// An input contains NaN or an infinity.
    #[error("`{what}` has a non-finite value ({value}) at index {index}")]
    NonFinite {
        /// Which input holds the value.
        what: &'static str,
        /// Flat index of the first non-finite value.
        index: usize,
        /// The value itself, formatted.
        value: String,
    },
    /// A coordinate index is outside the parameter vector.
    #[error("`{what}` = {index} is out of range: the vector has {len} coordinates")]
    IndexOutOfRange {
        /// Which index is out of range.
        what: &'static str,
        /// The index that was given.
        index: usize,
        /// The length of the vector it indexes.
        len: usize,
    },
}

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, AttacksError>;

/// Fails with [`AttacksError::NonFinite`] at the first NaN or infinity in `values`.
pub(crate) fn check_finite<T: Copy + Into<f64>>(what: &'static str, values: &[T]) -> Result<()> {
    match values.iter().position(|v| !(*v).into().is_finite()) {
        None => Ok(()),
        Some(index) => Err(AttacksError::NonFinite {
            what,
            index,
            value: format!("{}", values[index].into()),
        }),
    }
}

/// Fails with [`AttacksError::LengthMismatch`] unless `found == expected`.
pub(crate) fn check_len(what: &'static str, expected: usize, found: usize) -> Result<()> {
    if expected == found {
        Ok(())
    } else {
        Err(AttacksError::LengthMismatch {
            what,
            expected,
            found,
        })
    }
}

/// Fails with [`AttacksError::InvalidParameter`] unless `value` is finite and > 0.
pub(crate) fn check_positive(parameter: &'static str, value: f64) -> Result<()> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(AttacksError::InvalidParameter {
            parameter,
            value: format!("{value}"),
            expected: "a finite number > 0".to_owned(),
        })
    }
}
