//! Long calls without the GIL that stop on Ctrl-C: the library crates ask
//! an [`Interrupt`] hook, which runs Python's signal handlers.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;

use dpaudit_audit::interrupt::Interrupt;
use dpaudit_audit::AuditError;

use crate::errors::audit_error;

/// How often a long computation checks for Python signals (each check
/// takes the GIL).
const SIGNAL_CHECK_EVERY: Duration = Duration::from_millis(50);

/// A library error that may be an [`Interrupt`]'s stop.
pub(crate) trait Stoppable {
    /// What was interrupted, when the error is a stop.
    fn interrupted(&self) -> Option<&'static str>;
    /// Any other error as a Python exception.
    fn into_py(self) -> PyErr;
}

impl Stoppable for AuditError {
    fn interrupted(&self) -> Option<&'static str> {
        match self {
            AuditError::Interrupted { what } => Some(what),
            _ => None,
        }
    }

    fn into_py(self) -> PyErr {
        audit_error(self)
    }
}

/// Runs `f` without the GIL, handing it an [`Interrupt`] that runs Python's
/// signal handlers (`Python::check_signals`) at most every
/// [`SIGNAL_CHECK_EVERY`]. When a handler raises (Ctrl-C:
/// `KeyboardInterrupt`), the computation stops and that exception is
/// raised; other errors map as [`Stoppable::into_py`] says (`ValueError`
/// for the audit crate's). Off the main thread, where Python runs no signal
/// handler, it never asks.
pub(crate) fn interruptible<T: Send, E: Stoppable + Send>(
    py: Python<'_>,
    f: impl FnOnce(Interrupt) -> Result<T, E> + Send,
) -> PyResult<T> {
    // Python runs signal handlers on its main thread only: a bound computed
    // on another thread never takes the GIL to ask.
    let threading = py.import("threading")?;
    let on_main = threading
        .call_method0("current_thread")?
        .is(&threading.call_method0("main_thread")?);
    let raised: Mutex<Option<PyErr>> = Mutex::new(None);
    let last = Mutex::new(Instant::now());
    let hook = || {
        if !on_main {
            return false;
        }
        let Ok(mut last) = last.lock() else {
            return false;
        };
        if last.elapsed() < SIGNAL_CHECK_EVERY {
            return false;
        }
        *last = Instant::now();
        Python::attach(|py| match py.check_signals() {
            Ok(()) => false,
            Err(e) => {
                if let Ok(mut slot) = raised.lock() {
                    *slot = Some(e);
                }
                true
            }
        })
    };
    match py.detach(|| f(Interrupt::new(&hook))) {
        Ok(v) => Ok(v),
        Err(e) => {
            match e.interrupted() {
                Some(what) => Err(raised.into_inner().ok().flatten().unwrap_or_else(|| {
                    PyKeyboardInterrupt::new_err(format!("{what} interrupted"))
                })),
                None => Err(e.into_py()),
            }
        }
    }
}
