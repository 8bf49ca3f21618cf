//! The score inputs of a bound: NumPy arrays read as the audit needs them.
//! Scores are read where they lie when they are a contiguous float64 array,
//! else converted; member flags are read as bytes, non-zero = member
//! (NumPy's rule), never reinterpreted as Rust `bool`.

use std::borrow::Cow;

use numpy::{
    PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use dpaudit_audit::observations::Observations;

use crate::errors::{audit_error, value_error};

/// A column of an input: NumPy's own buffer when it is contiguous and of
/// the right dtype (read in place), else a converted copy.
pub(crate) enum Column<'py, T: numpy::Element> {
    InPlace(PyReadonlyArrayDyn<'py, T>),
    Copied(Vec<T>),
}

impl<T: numpy::Element + Clone> Column<'_, T> {
    fn cow(&self) -> Cow<'_, [T]> {
        match self {
            // Contiguity was checked when the column was made.
            Column::InPlace(ro) => ro.as_slice().map_or_else(
                |_| Cow::Owned(ro.as_array().iter().cloned().collect()),
                Cow::Borrowed,
            ),
            Column::Copied(v) => Cow::Borrowed(v.as_slice()),
        }
    }
}

fn type_name(array: &Bound<'_, PyAny>) -> String {
    array
        .get_type()
        .name()
        .map_or_else(|_| "?".into(), |n| n.to_string())
}

fn one_dimensional<'py>(
    name: &str,
    array: &Bound<'py, PyAny>,
    what: &str,
) -> PyResult<Bound<'py, PyUntypedArray>> {
    let untyped = array.cast::<PyUntypedArray>().map_err(|_| {
        PyTypeError::new_err(format!(
            "`{name}` must be a NumPy array of {what}, got {}",
            type_name(array)
        ))
    })?;
    if untyped.ndim() != 1 {
        return Err(value_error(format!(
            "`{name}` must be one-dimensional (one value per row), got shape {:?}",
            untyped.shape()
        )));
    }
    Ok(untyped.clone())
}

/// Scores: a 1-D numeric array; a contiguous float64 array is read in
/// place, any other is converted by NumPy (a copy).
pub(crate) fn read_scores<'py>(
    name: &str,
    array: &Bound<'py, PyAny>,
) -> PyResult<Column<'py, f64>> {
    let untyped = one_dimensional(name, array, "numbers")?;
    let dtype = untyped.dtype();
    if !matches!(dtype.kind(), b'f' | b'i' | b'u') {
        return Err(PyTypeError::new_err(format!(
            "`{name}` must hold numbers (float or integer dtype), got dtype {}",
            dtype.str().map_or_else(|_| "?".into(), |s| s.to_string())
        )));
    }
    let f64s = match array.cast::<PyArrayDyn<f64>>() {
        Ok(a) => a.clone(),
        Err(_) => array
            .call_method1("astype", ("float64",))?
            .cast_into::<PyArrayDyn<f64>>()?,
    };
    let ro = f64s.readonly();
    if ro.as_slice().is_ok() {
        Ok(Column::InPlace(ro))
    } else {
        Ok(Column::Copied(ro.as_array().iter().copied().collect()))
    }
}

/// Members: a 1-D boolean array, or numbers that are all 0 or 1, as one
/// flag per row. A boolean array is read as its bytes, non-zero = member:
/// NumPy's rule (`np.count_nonzero`, `if m[i]`), since a NumPy `bool` may
/// hold any byte (`u8_array.view(bool)`, `np.fromfile(path, dtype=bool)` of
/// a 0/255 mask) and reading one as a Rust `bool` would be undefined
/// behaviour. The flags are a copy of one byte per row.
pub(crate) fn read_members(name: &str, array: &Bound<'_, PyAny>) -> PyResult<Vec<bool>> {
    let untyped = one_dimensional(name, array, "booleans or 0/1")?;
    let dtype = untyped.dtype();
    if dtype.kind() == b'b' {
        // The same buffer and strides as `uint8` (one byte per element).
        let bytes = array
            .call_method1("view", ("uint8",))?
            .cast_into::<PyArrayDyn<u8>>()?;
        let ro = bytes.readonly();
        return Ok(match ro.as_slice() {
            Ok(b) => b.iter().map(|&b| b != 0).collect(),
            Err(_) => ro.as_array().iter().map(|&b| b != 0).collect(),
        });
    }
    if !matches!(dtype.kind(), b'f' | b'i' | b'u') {
        return Err(PyTypeError::new_err(format!(
            "`{name}` must hold booleans or the numbers 0 and 1, got dtype {}",
            dtype.str().map_or_else(|_| "?".into(), |s| s.to_string())
        )));
    }
    let values = read_scores(name, array)?;
    let flags = values
        .cow()
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            if v == 1.0 {
                Ok(true)
            } else if v == 0.0 {
                Ok(false)
            } else {
                Err(value_error(format!(
                    "`{name}`[{i}] = {v} is invalid; expected 0 or 1 (1 = the canary/target was included)"
                )))
            }
        })
        .collect::<PyResult<Vec<bool>>>()?;
    Ok(flags)
}

/// The two columns of a score input.
pub(crate) struct Inputs<'py> {
    pub(crate) scores: Column<'py, f64>,
    pub(crate) members: Vec<bool>,
}

impl<'py> Inputs<'py> {
    pub(crate) fn read(scores: &Bound<'py, PyAny>, members: &Bound<'py, PyAny>) -> PyResult<Self> {
        Ok(Self {
            scores: read_scores("scores", scores)?,
            members: read_members("members", members)?,
        })
    }

    /// Validated observations over the columns (no copy of an in-place column).
    pub(crate) fn observations(&self) -> PyResult<Observations<'_>> {
        Observations::from_cows(self.scores.cow(), Cow::Borrowed(&self.members))
            .map_err(audit_error)
    }
}
