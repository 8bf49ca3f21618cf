//! Library errors as Python exceptions: `ValueError` with the library's
//! message.

use pyo3::exceptions::PyValueError;
use pyo3::PyErr;

use dpaudit_audit::AuditError;

pub(crate) fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

pub(crate) fn audit_error(e: AuditError) -> PyErr {
    value_error(e)
}
