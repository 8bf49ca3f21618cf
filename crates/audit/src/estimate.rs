//! The one place that turns a [`Method`] into its statistic: every front end
//! (the CLI's `estimate`, the experiment's `audit.json`, the Python binding,
//! the coverage tests) builds its [`BoundSettings`] with the one builder
//! ([`options::BoundOptions::resolve`]) and asks [`lower_bound`] instead of
//! matching on the method itself. A statistic added since the builder is a
//! child module of this one, declared here beside its arm.

use crate::bound::EpsilonLowerBound;
use crate::error::{AuditError, Result};
use crate::gaussian_scores::{gaussian_scores_lower_bound, GaussianScoresConfig};
use crate::interrupt::Interrupt;
use crate::method::{Method, MethodOption, Selection};
use crate::observations::Observations;
use crate::one_run::{one_run_interruptible, GuessFamily, OneRunConfig, TieBreak};
use crate::one_run_fdp::{one_run_fdp_interruptible, TradeoffFamily};
use crate::one_run_order::one_run_order_interruptible;
use crate::region::{eps_delta_interruptible, gdp_interruptible, RegionConfig};

pub mod options;

/// What a bound needs besides the method and the observations. Each method
/// reads the fields it uses. Front ends build it through
/// [`options::BoundOptions::resolve`] (defaults and refusals in one place).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoundSettings {
    /// Confidence of the bound, e.g. 0.95.
    pub confidence: f64,
    /// δ of the (ε, δ) statement.
    pub delta: f64,
    /// The resolved selection policy.
    pub selection: Selection,
    /// The trade-off family of [`Method::OneRunFdp`] and
    /// [`Method::OneRunOrder`] ([`Method::OneRunFdpGaussian`] and
    /// [`Method::OneRunOrderGaussian`] are always Gaussian).
    pub family: TradeoffFamily,
    /// The one-run methods' searched (k+, k−) candidates.
    pub guesses: GuessFamily,
    /// The one-run methods' (k+, k−) for [`Selection::Fixed`].
    pub fixed_guesses: Option<(u64, u64)>,
    /// How the one-run guess methods ([`Method::OneRun`] and the f-DP
    /// one-run methods) order tied scores.
    pub tie_break: TieBreak,
}

/// The ε lower bound of `method` on `obs`. [`Method::Panoramia`] is refused:
/// its ε̃ is a measurement with two score sets ([`crate::panoramia`]).
pub fn lower_bound(
    method: Method,
    obs: &Observations,
    s: &BoundSettings,
) -> Result<EpsilonLowerBound> {
    lower_bound_interruptible(method, obs, s, Interrupt::NEVER)
}

/// [`lower_bound`], asking `stop` between units of work (each halving of a
/// multi-split, each step of a guess search, after each sort); a `true`
/// answer ends it with [`AuditError::Interrupted`].
pub fn lower_bound_interruptible(
    method: Method,
    obs: &Observations,
    s: &BoundSettings,
    stop: Interrupt,
) -> Result<EpsilonLowerBound> {
    let region = RegionConfig {
        confidence: s.confidence,
        delta: s.delta,
        selection: s.selection,
    };
    let one_run = OneRunConfig {
        confidence: s.confidence,
        delta: s.delta,
        selection: s.selection,
        fixed_guesses: s.fixed_guesses,
        guesses: s.guesses,
        tie_break: s.tie_break,
    };
    if s.tie_break != TieBreak::Quantile && !method.takes(MethodOption::TieBreak) {
        return Err(AuditError::InvalidParameter {
            name: "tie_break",
            value: format!("{} for {}", s.tie_break.name(), method.name()),
            expected: "quantile: the seeded tie-break applies to one-run, one-run-fdp and \
                       one-run-fdp-gaussian",
        });
    }
    match method {
        Method::EpsDelta => eps_delta_interruptible(obs, &region, stop),
        Method::Gdp => gdp_interruptible(obs, &region, stop),
        Method::OneRun => one_run_interruptible(obs, &one_run, stop),
        Method::OneRunFdp => one_run_fdp_interruptible(obs, &one_run, s.family, stop),
        Method::OneRunFdpGaussian => {
            one_run_fdp_interruptible(obs, &one_run, TradeoffFamily::Gaussian, stop)
        }
        Method::OneRunGaussianScores => gaussian_scores_lower_bound(
            obs,
            &GaussianScoresConfig {
                confidence: s.confidence,
                delta: s.delta,
                selection: s.selection,
            },
        ),
        Method::OneRunOrder => one_run_order_interruptible(obs, &one_run, s.family, stop),
        Method::OneRunOrderGaussian => {
            one_run_order_interruptible(obs, &one_run, TradeoffFamily::Gaussian, stop)
        }
        Method::Panoramia => Err(AuditError::InvalidParameter {
            name: "method",
            value: method.name().into(),
            expected: "a lower-bound method: PANORAMIA's ε̃ is a measurement against a baseline \
                       (dpaudit_audit::panoramia::panoramia)",
        }),
    }
}
