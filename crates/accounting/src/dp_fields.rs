//! The one validation of the DP fields: noise multiplier σ, clipping norm C,
//! sample rate q, expected batch size, steps, δ and a target ε.
//!
//! Every front end (the accountant, the training engine's config, the canary,
//! BGM and PANORAMIA experiment files, the CLI and the Python package through
//! the binding) checks a DP field by calling [`check`] with the
//! [`DpContext`] it reads the field in, and names the field as it spells it
//! (TOML key, flag or keyword) around the returned [`DpFieldError`]. The
//! rules differ by context only for σ:
//!
//! | field               | [`Training`]     | [`Claimed`]      | [`Calibrated`]          |
//! |---------------------|------------------|------------------|-------------------------|
//! | `noise_multiplier`  | finite, ≥ 0      | finite, > 0      | 0 (σ is the output)     |
//! | `max_grad_norm`     | finite, > 0      | finite, > 0      | finite, > 0             |
//! | `sample_rate`       | in (0, 1]        | in (0, 1]        | in (0, 1]               |
//! | `expected_batch_size` | finite, > 0    | finite, > 0      | finite, > 0             |
//! | `steps`             | integer ≥ 1      | integer ≥ 1      | integer ≥ 1             |
//! | `delta`             | in (0, 1)        | in (0, 1)        | in (0, 1)               |
//! | `epsilon` (target)  | finite, > 0      | finite, > 0      | finite, > 0             |
//!
//! σ = 0 trains without noise and claims no ε (a non-private baseline); an ε
//! claimed by an accountant needs σ > 0 (at σ = 0 the Gaussian mechanism's ε
//! is infinite); when a target ε is the input, σ is calibrated to it, so a σ
//! given beside it is refused rather than silently replaced.
//!
//! [`Training`]: DpContext::Training
//! [`Claimed`]: DpContext::Claimed
//! [`Calibrated`]: DpContext::Calibrated

use std::fmt;

/// Where a DP field is read; it decides the rule for σ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DpContext {
    /// Training with no ε claimed for σ itself: σ = 0 (no noise) is allowed.
    /// The engine's config, `dpaudit train`, PANORAMIA targets without
    /// `epsilon`, a per-step canary observation in Python.
    Training,
    /// An accountant's ε is claimed for this σ: σ > 0. The accountant, canary
    /// audits, a BGM game with `noise_multiplier` given.
    Claimed,
    /// σ is calibrated to a target ε: the σ given must be 0 (absent).
    /// PANORAMIA targets and BGM games with `epsilon` given.
    Calibrated,
}

impl DpContext {
    /// Every context, in declaration order (tables and tests).
    pub const ALL: [DpContext; 3] = [Self::Training, Self::Claimed, Self::Calibrated];

    /// The name used in Python (`"training"`, `"claimed"`, `"calibrated"`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Training => "training",
            Self::Claimed => "claimed",
            Self::Calibrated => "calibrated",
        }
    }
}

/// A DP field, in the project vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DpField {
    /// σ: the noise std on the clipped sum is σ·C.
    NoiseMultiplier,
    /// C: the per-sample clipping norm.
    MaxGradNorm,
    /// q: the Poisson sample rate (1 = no subsampling).
    SampleRate,
    /// The public constant the noisy sum is divided by (q·n, or B).
    ExpectedBatchSize,
    /// The number of steps.
    Steps,
    /// δ of a claimed (ε, δ).
    Delta,
    /// The target ε that σ is calibrated to.
    TargetEpsilon,
}

impl DpField {
    /// Every field, in declaration order (tables and tests).
    pub const ALL: [DpField; 7] = [
        Self::NoiseMultiplier,
        Self::MaxGradNorm,
        Self::SampleRate,
        Self::ExpectedBatchSize,
        Self::Steps,
        Self::Delta,
        Self::TargetEpsilon,
    ];

    /// The project-vocabulary name; front ends may spell it otherwise.
    pub fn name(self) -> &'static str {
        match self {
            Self::NoiseMultiplier => "noise_multiplier",
            Self::MaxGradNorm => "max_grad_norm",
            Self::SampleRate => "sample_rate",
            Self::ExpectedBatchSize => "expected_batch_size",
            Self::Steps => "steps",
            Self::Delta => "delta",
            Self::TargetEpsilon => "target_epsilon",
        }
    }

    /// The field of `name` ([`DpField::name`]), if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// A DP field outside its domain: what was given and what was expected.
/// The front end names the field as it spells it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DpFieldError {
    /// The field at fault.
    pub field: DpField,
    /// The context it was read in.
    pub context: DpContext,
    /// The value that was given.
    pub value: f64,
    /// What the value must satisfy ([`expected`]).
    pub expected: &'static str,
}

impl fmt::Display for DpFieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid `{}` = {}: expected {}",
            self.field.name(),
            self.value,
            self.expected
        )
    }
}

impl std::error::Error for DpFieldError {}

/// What `field` must satisfy in `context`, as error messages say it.
pub fn expected(context: DpContext, field: DpField) -> &'static str {
    match (field, context) {
        (DpField::NoiseMultiplier, DpContext::Training) => {
            "a finite number ≥ 0 (0 trains without noise and claims no ε)"
        }
        (DpField::NoiseMultiplier, DpContext::Claimed) => {
            "a finite number > 0 (a claimed ε needs noise: at σ = 0 it is infinite)"
        }
        (DpField::NoiseMultiplier, DpContext::Calibrated) => {
            "0 when `epsilon` is given (the noise multiplier is calibrated to it)"
        }
        (DpField::MaxGradNorm | DpField::ExpectedBatchSize, _) => "a finite number > 0",
        (DpField::SampleRate, _) => "a number in (0, 1] (1 means no subsampling)",
        (DpField::Steps, _) => "an integer ≥ 1",
        (DpField::Delta, _) => "a number in (0, 1)",
        (DpField::TargetEpsilon, _) => "a finite number > 0",
    }
}

/// Whether `value` satisfies the rule of `field` in `context`.
fn admits(context: DpContext, field: DpField, value: f64) -> bool {
    let finite_positive = value.is_finite() && value > 0.0;
    match (field, context) {
        (DpField::NoiseMultiplier, DpContext::Training) => value.is_finite() && value >= 0.0,
        (DpField::NoiseMultiplier, DpContext::Claimed) => finite_positive,
        (DpField::NoiseMultiplier, DpContext::Calibrated) => value == 0.0,
        (DpField::MaxGradNorm | DpField::ExpectedBatchSize | DpField::TargetEpsilon, _) => {
            finite_positive
        }
        (DpField::SampleRate, _) => finite_positive && value <= 1.0,
        (DpField::Steps, _) => finite_positive && value.fract() == 0.0,
        (DpField::Delta, _) => finite_positive && value < 1.0,
    }
}

/// Checks one DP field read in `context`; returns the value when it is
/// admitted. NaN is refused everywhere.
pub fn check(context: DpContext, field: DpField, value: f64) -> Result<f64, DpFieldError> {
    if admits(context, field, value) {
        Ok(value)
    } else {
        Err(DpFieldError {
            field,
            context,
            value,
            expected: expected(context, field),
        })
    }
}

/// [`check`] for a count of steps.
pub fn check_steps(steps: u64) -> Result<u64, DpFieldError> {
    // Any u64 ≥ 1 is exact enough for the ≥ 1 test.
    check(DpContext::Claimed, DpField::Steps, steps as f64).map(|_| steps)
}
