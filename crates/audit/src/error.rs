//! The one error type of this crate.

use std::path::PathBuf;

/// Everything that can go wrong when turning scores into bounds.
/// Messages say what was wrong, where, and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// A score is NaN or infinite.
    #[error("{location}: score {value} is not finite; expected a finite number")]
    NonFiniteScore {
        /// Where the score came from (file and line, or vector index).
        location: String,
        /// The offending value.
        value: f64,
    },
    /// A membership label is not 0 or 1.
    #[error("{location}: member value `{found}` is invalid; expected 0 or 1")]
    InvalidMember {
        /// File and line, or vector index.
        location: String,
        /// What was found.
        found: String,
    },
    /// One of the two classes has no scores.
    #[error("no {class} scores{context}; both classes need at least one score")]
    EmptyClass {
        /// `member` or `non-member`.
        class: &'static str,
        /// Extra context, e.g. " in the evaluation half of the split".
        context: String,
    },
    /// A parameter is out of range.
    #[error("parameter `{name}` = {value} is invalid; expected {expected}")]
    InvalidParameter {
        /// The parameter name (`delta`, `confidence`, ...).
        name: &'static str,
        /// Its value, formatted.
        value: String,
        /// What would have been accepted.
        expected: &'static str,
    },
    /// An option of a bound is missing, unknown, or not one its method takes
    /// ([`crate::estimate::options::BoundOptions`]).
    #[error("{option} {problem}")]
    InvalidOption {
        /// The option as the front end spells it (`--k-plus`, `k_plus`,
        /// ``family `laplace` ``).
        option: String,
        /// What is wrong with it and what was expected.
        problem: String,
    },
    /// The one-run audits' design check failed: the number of included
    /// canaries is implausible under independent inclusion with probability ½
    /// ([`crate::design`]).
    #[error(
        "{included} of {canaries} canaries are included (member = 1); under independent inclusion with \
         probability 1/2 a count this uneven has two-sided p = {p_value:.3e}, below the level {level} at \
         which one-run audits refuse. The one-run theorems (Steinke, Nasr & Jagielski 2023, Thm 3.1; \
         Mahloujifar, Melis & Chaudhuri 2024) need each canary included independently with probability \
         1/2: with another design, guessing the larger class is right more often than half the time on \
         scores that carry no information. Expected: the canaries of one run with inclusion coins of \
         probability 1/2; for other designs use eps-delta or gdp over independent runs, which bound each \
         class's error rate separately"
    )]
    InclusionDesign {
        /// Canaries.
        canaries: u64,
        /// Canaries included.
        included: u64,
        /// Exact two-sided binomial p-value under Bin(canaries, ½).
        p_value: f64,
        /// The level below which one-run audits refuse.
        level: f64,
    },
    /// The caller asked for more work than [`crate::policy`] accepts (e.g.
    /// `splits` × rows of a multi-split): refused before any of it is done,
    /// with the estimate.
    #[error("parameter `{name}` = {value} is refused: {estimate}; expected {maximum}")]
    TooMuchWork {
        /// The parameter that sets the amount of work (`splits`).
        name: &'static str,
        /// Its value, formatted.
        value: String,
        /// What the work would be: operations and an estimated time.
        estimate: String,
        /// The largest value accepted for this input.
        maximum: String,
    },
    /// The caller's [`crate::interrupt::Interrupt`] asked a long computation
    /// to stop (e.g. Ctrl-C in Python); nothing was computed.
    #[error("interrupted before the {what} was finished")]
    Interrupted {
        /// What was being computed.
        what: &'static str,
    },
    /// A CSV line could not be parsed.
    #[error("{path}:{line}: {message}")]
    Csv {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What was wrong and what was expected.
        message: String,
    },
    /// An NPY file is malformed or has an unsupported layout.
    #[error("{path}: byte {offset}: {message}")]
    Npy {
        /// The file.
        path: PathBuf,
        /// Byte offset of the problem.
        offset: usize,
        /// What was wrong and what was expected.
        message: String,
    },
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The output could not be written.
    #[error("cannot write {what}: {source}")]
    Write {
        /// What was being written.
        what: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, AuditError>;

/// Checks a confidence level `c ∈ (0, 1)`.
pub(crate) fn check_confidence(confidence: f64) -> Result<()> {
    if confidence.is_finite() && confidence > 0.0 && confidence < 1.0 {
        Ok(())
    } else {
        Err(AuditError::InvalidParameter {
            name: "confidence",
            value: confidence.to_string(),
            expected: "a number strictly between 0 and 1 (e.g. 0.95)",
        })
    }
}

/// Checks `δ ∈ [0, 1)`.
pub(crate) fn check_delta(delta: f64) -> Result<()> {
    if delta.is_finite() && (0.0..1.0).contains(&delta) {
        Ok(())
    } else {
        Err(AuditError::InvalidParameter {
            name: "delta",
            value: delta.to_string(),
            expected: "a number in [0, 1) (e.g. 1e-5)",
        })
    }
}
