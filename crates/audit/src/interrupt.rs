//! Stopping a long computation from outside: the caller's "should I stop?"
//! question, asked by the long loops between units of work (each halving of
//! a multi-split, each candidate and each bisection step of a guess search,
//! each phase of a bound after its sort). A pure hook, so that this crate
//! knows nothing of Python: the binding passes a closure that checks for
//! Ctrl-C (`Python::check_signals`), the CLI passes [`Interrupt::NEVER`].
//!
//! The question is asked often (every few milliseconds of work at most) and
//! must therefore be cheap; a caller that must do something costly (take a
//! lock, acquire an interpreter) rate-limits itself, as the binding does.
//! Sorting is not interruptible: the longest uninterruptible step is the
//! sort of one class of the input (about 1.5 s for 5·10⁷ scores on the
//! development machine, `crate::sort`).

use crate::error::{AuditError, Result};

/// The caller's stop question: `true` asks the computation to stop, which
/// then returns [`AuditError::Interrupted`].
#[derive(Clone, Copy)]
pub struct Interrupt<'a> {
    stop: Option<&'a (dyn Fn() -> bool + Sync)>,
}

impl<'a> Interrupt<'a> {
    /// Never stop (the CLI, tests, library callers without a hook).
    pub const NEVER: Interrupt<'static> = Interrupt { stop: None };

    /// Stop when `stop()` returns `true`.
    pub fn new(stop: &'a (dyn Fn() -> bool + Sync)) -> Self {
        Self { stop: Some(stop) }
    }

    /// `Err(Interrupted)` when the caller asked to stop; `what` names the
    /// computation in the error.
    pub fn check(&self, what: &'static str) -> Result<()> {
        match self.stop {
            Some(stop) if stop() => Err(AuditError::Interrupted { what }),
            _ => Ok(()),
        }
    }
}

impl std::fmt::Debug for Interrupt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.stop.is_some() {
            "Interrupt(hook)"
        } else {
            "Interrupt::NEVER"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn asks_the_hook() {
        assert!(Interrupt::NEVER.check("bound").is_ok());
        let flag = AtomicBool::new(false);
        let hook = || flag.load(Ordering::Relaxed);
        let i = Interrupt::new(&hook);
        assert!(i.check("bound").is_ok());
        flag.store(true, Ordering::Relaxed);
        assert!(matches!(
            i.check("bound"),
            Err(AuditError::Interrupted { what: "bound" })
        ));
    }
}
