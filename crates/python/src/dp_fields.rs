//! The one validation of the DP fields ([`dpaudit_accounting::dp_fields`])
//! for the Python package, so that Python states no rule of its own.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use dpaudit_accounting::dp_fields::{check, DpContext, DpField};

/// Add this module's function to the extension module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(check_dp_field, m)?)?;
    Ok(())
}

/// `value` of the DP field `field` (`noise_multiplier`, `max_grad_norm`,
/// `sample_rate`, `expected_batch_size`, `steps`, `delta`, `target_epsilon`)
/// read in `context` (`training`, `claimed`, `calibrated`), returned when
/// admitted; otherwise a `ValueError` naming it `name` (the keyword the
/// caller was given; default `field`) and saying what was expected.
#[pyfunction]
#[pyo3(signature = (value, *, field, context, name=None))]
fn check_dp_field(value: f64, field: &str, context: &str, name: Option<&str>) -> PyResult<f64> {
    let dp_field = DpField::from_name(field).ok_or_else(|| {
        let names: Vec<_> = DpField::ALL.iter().map(|f| f.name()).collect();
        PyValueError::new_err(format!(
            "field must be one of {}, got {field:?}",
            names.join(", ")
        ))
    })?;
    let context = DpContext::ALL
        .into_iter()
        .find(|c| c.name() == context)
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "context must be one of training, claimed, calibrated, got {context:?}"
            ))
        })?;
    check(context, dp_field, value).map_err(|e| {
        PyValueError::new_err(format!(
            "{} must be {}, got {}",
            name.unwrap_or(field),
            e.expected,
            e.value
        ))
    })
}
