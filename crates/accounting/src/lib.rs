//! Privacy accounting for DP-SGD: ε upper bounds (PLD, RDP, GDP), noise calibration, and the
//! Chua et al. lower bound for shuffled batches.
//!
//! This crate never depends on tch.
//!
//! * Mechanisms are values ([`MechanismEvent`]); the neighbouring relation is explicit
//!   ([`NeighbouringRelation`]).
//! * [`epsilon`] / [`delta`] interpret an event with one [`Accountant`]; [`dpsgd_epsilon`] is the
//!   shortcut for Poisson-sampled DP-SGD. Results with numerical error carry
//!   (lower, estimate, upper); `epsilon` is always the upper bound.
//! * [`calibrate_noise_multiplier`]: the smallest noise multiplier that reaches a target (ε, δ);
//!   [`calibrate_event`] the same for any mechanism event (a sampler's own claim).
//! * [`shuffle_lower_bound`]: what shuffling costs at least (a *lower* bound, its own type).
//! * [`dp_fields`]: the one validation of the DP fields (σ, C, q, steps, δ, target ε), by context,
//!   that every front end calls.

pub mod chua_shuffle;
pub mod dp_fields;
pub mod error;
pub mod event;
pub mod gdp;
pub mod pld;
pub mod rdp;
pub mod report;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use chua_shuffle::{shuffle_lower_bound, ShuffleEpsilonLowerBound};
pub use error::{AccountingError, Result};
pub use event::{Component, MechanismEvent, NeighbouringRelation};
pub use pld::PldOptions;

use error::{
    check_delta, check_epsilon, check_noise_multiplier, check_sample_rate, check_target_epsilon,
};

/// Which accountant interprets the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Accountant {
    /// Privacy loss distribution (tight; the default). See [`pld`].
    #[default]
    Pld,
    /// Rényi DP with the Canonne–Kamath–Steinke conversion. See [`rdp`].
    Rdp,
    /// Gaussian DP, exact; refuses subsampled events. See [`gdp`].
    Gdp,
    /// Gaussian DP with the central-limit approximation for subsampling (Bu et al. 2020).
    /// **Approximate: not a guaranteed upper bound.** Never the default.
    GdpClt,
}

impl Accountant {
    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pld => "pld",
            Self::Rdp => "rdp",
            Self::Gdp => "gdp",
            Self::GdpClt => "gdp-clt",
        }
    }
}

impl fmt::Display for Accountant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Accountant {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "pld" => Ok(Self::Pld),
            "rdp" => Ok(Self::Rdp),
            "gdp" => Ok(Self::Gdp),
            "gdp-clt" => Ok(Self::GdpClt),
            other => Err(format!(
                "unknown accountant `{other}`: expected pld, rdp, gdp or gdp-clt"
            )),
        }
    }
}

/// (lower, estimate, upper) of a quantity computed with numerical error.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NumericalBounds {
    /// The true value is at least this.
    pub lower: f64,
    /// Best estimate.
    pub estimate: f64,
    /// The true value is at most this (up to floating-point roundoff).
    pub upper: f64,
}

/// An ε upper bound from an accountant. Deliberately not the type of any lower bound.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EpsilonUpperBound {
    /// The ε to report: the upper end of the numerical bounds where there are any.
    pub epsilon: f64,
    /// The δ it holds at.
    pub delta: f64,
    /// Which accountant produced it.
    pub accountant: Accountant,
    /// The neighbouring relation it refers to.
    pub relation: NeighbouringRelation,
    /// Numerical error of the computation (PLD only; the other accountants are closed forms).
    pub numerical: Option<NumericalBounds>,
    /// True when the number is an approximation, not a guaranteed bound (GDP CLT).
    pub approximate: bool,
    /// The Rényi order that gave the bound (RDP only).
    pub rdp_order: Option<f64>,
    /// μ of the Gaussian-DP guarantee (GDP only).
    pub mu: Option<f64>,
}

/// A δ upper bound from an accountant at a given ε.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DeltaUpperBound {
    /// The δ to report (upper bound).
    pub delta: f64,
    /// A lower bound on the true δ (PLD only).
    pub delta_lower: Option<f64>,
    /// The ε it holds at.
    pub epsilon: f64,
    /// Which accountant produced it.
    pub accountant: Accountant,
    /// The neighbouring relation it refers to.
    pub relation: NeighbouringRelation,
    /// True when the number is an approximation (GDP CLT).
    pub approximate: bool,
}

/// ε(δ) of `event` under `accountant` (PLD with default options).
pub fn epsilon(
    event: &MechanismEvent,
    delta: f64,
    accountant: Accountant,
    relation: NeighbouringRelation,
) -> Result<EpsilonUpperBound> {
    epsilon_with_options(event, delta, accountant, relation, PldOptions::default())
}

/// ε(δ) with explicit PLD options.
pub fn epsilon_with_options(
    event: &MechanismEvent,
    delta: f64,
    accountant: Accountant,
    relation: NeighbouringRelation,
    options: PldOptions,
) -> Result<EpsilonUpperBound> {
    check_delta(delta)?;
    let components = event.components()?;
    let mut out = EpsilonUpperBound {
        epsilon: 0.0,
        delta,
        accountant,
        relation,
        numerical: None,
        approximate: false,
        rdp_order: None,
        mu: None,
    };
    match accountant {
        Accountant::Pld => {
            let pld = pld::Pld::new(&components, options, pld::hoeffding_delta_for(delta))?;
            let e = pld.epsilon(delta);
            out.epsilon = e.upper;
            out.numerical = Some(NumericalBounds {
                lower: e.lower,
                estimate: e.estimate,
                upper: e.upper,
            });
        }
        Accountant::Rdp => {
            let orders = rdp::default_orders();
            let curve = rdp::rdp_curve(&components, &orders);
            let (eps, order) = rdp::epsilon_from_rdp(&orders, &curve, delta);
            // The conversion is loose at zero RDP; with no events nothing is revealed: ε = 0.
            out.epsilon = if components.is_empty() { 0.0 } else { eps };
            out.rdp_order = (!components.is_empty()).then_some(order);
        }
        Accountant::Gdp | Accountant::GdpClt => {
            let (mu, approximate) = gdp_mu(accountant, &components)?;
            out.approximate = approximate;
            out.epsilon = gdp::epsilon_for_delta(mu, delta)?;
            out.mu = Some(mu);
        }
    }
    Ok(out)
}

/// μ of a GDP accountant's bound, and whether it is approximate: `GdpClt` on subsampled
/// components is the central-limit approximation, `Gdp` the exact μ (or an error).
fn gdp_mu(accountant: Accountant, components: &[Component]) -> Result<(f64, bool)> {
    if accountant == Accountant::Gdp {
        Ok((gdp::exact_mu(components)?, false))
    } else {
        let approximate = components.iter().any(Component::is_subsampled);
        Ok((gdp::clt_mu(components), approximate))
    }
}

/// δ(ε) of `event` under `accountant` (PLD with default options).
pub fn delta(
    event: &MechanismEvent,
    epsilon: f64,
    accountant: Accountant,
    relation: NeighbouringRelation,
) -> Result<DeltaUpperBound> {
    check_epsilon("epsilon", epsilon)?;
    let components = event.components()?;
    let mut out = DeltaUpperBound {
        delta: 0.0,
        delta_lower: None,
        epsilon,
        accountant,
        relation,
        approximate: false,
    };
    match accountant {
        Accountant::Pld => {
            let pld = pld::Pld::new(&components, PldOptions::default(), 1e-15)?;
            let d = pld.delta(epsilon);
            out.delta = d.upper;
            out.delta_lower = Some(d.lower);
        }
        Accountant::Rdp => {
            let orders = rdp::default_orders();
            let curve = rdp::rdp_curve(&components, &orders);
            out.delta = if components.is_empty() {
                0.0
            } else {
                rdp::delta_from_rdp(&orders, &curve, epsilon)
            };
        }
        Accountant::Gdp | Accountant::GdpClt => {
            let (mu, approximate) = gdp_mu(accountant, &components)?;
            out.approximate = approximate;
            out.delta = gdp::delta_for_epsilon(mu, epsilon);
        }
    }
    Ok(out)
}

/// ε(δ) of DP-SGD: `steps` steps, each the Poisson-subsampled Gaussian with `sample_rate`
/// (1 = no subsampling) and `noise_multiplier`, under add/remove adjacency.
pub fn dpsgd_epsilon(
    sample_rate: f64,
    noise_multiplier: f64,
    steps: u64,
    delta: f64,
    accountant: Accountant,
) -> Result<EpsilonUpperBound> {
    check_sample_rate(sample_rate)?;
    check_noise_multiplier(noise_multiplier)?;
    dp_fields::check_steps(steps)?;
    check_delta(delta)?;
    epsilon(
        &MechanismEvent::dpsgd(sample_rate, noise_multiplier, steps),
        delta,
        accountant,
        NeighbouringRelation::AddOrRemove,
    )
}

/// The outcome of [`calibrate_noise_multiplier`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Calibration {
    /// The calibrated noise multiplier: it reaches the target (ε ≤ target_epsilon).
    pub noise_multiplier: f64,
    /// A noise multiplier that does *not* reach the target; the answer lies in between.
    pub noise_multiplier_lower: f64,
    /// `noise_multiplier − noise_multiplier_lower`, the bisection's final bracket width.
    pub tolerance: f64,
    /// The requested ε.
    pub target_epsilon: f64,
    /// The accountant's ε at `noise_multiplier`.
    pub epsilon: EpsilonUpperBound,
    /// Number of accountant evaluations.
    pub evaluations: u32,
}

/// The PLD accountant works with privacy losses whose exponentials are
/// float64 numbers, so its ε never exceeds ln(f64::MAX) ≈ 709.78.
const PLD_EPSILON_LIMIT: f64 = 709.78;

/// The smallest noise multiplier (within `relative_tolerance`) for which DP-SGD with
/// `sample_rate`, `steps` reaches (`target_epsilon`, `delta`) under `accountant`. Bisection on
/// the accountant's reported ε (the upper bound for PLD); the bracket is reported.
/// A σ where the accountant hits a numerical limit counts as too small, so the
/// answer is conservative there; a PLD target the accountant cannot represent
/// at all (ε ≥ ln(f64::MAX)) is an error ([`AccountingError::CalibrationOutOfRange`]),
/// not a σ whose ε is far below it.
pub fn calibrate_noise_multiplier(
    sample_rate: f64,
    steps: u64,
    delta: f64,
    target_epsilon: f64,
    accountant: Accountant,
    relative_tolerance: f64,
) -> Result<Calibration> {
    check_sample_rate(sample_rate)?;
    dp_fields::check_steps(steps)?;
    calibrate_event(
        &MechanismEvent::dpsgd(sample_rate, 1.0, steps),
        delta,
        target_epsilon,
        accountant,
        relative_tolerance,
    )
}

/// The smallest noise multiplier (within `relative_tolerance`) at which
/// `event` — its structure kept, every Gaussian's σ varied
/// ([`MechanismEvent::with_noise_multiplier`]) — reaches (`target_epsilon`,
/// `delta`) under `accountant`, add/remove neighbours. The bisection of
/// [`calibrate_noise_multiplier`], which is this for the DP-SGD event; a
/// sampler's own mechanism (fixed batches, a canary every k-th step)
/// calibrates the same way.
pub fn calibrate_event(
    event: &MechanismEvent,
    delta: f64,
    target_epsilon: f64,
    accountant: Accountant,
    relative_tolerance: f64,
) -> Result<Calibration> {
    check_delta(delta)?;
    // Every parameter but σ is checked once, before any bisection.
    event.with_noise_multiplier(1.0).components()?;
    check_target_epsilon(target_epsilon)?;
    if !(relative_tolerance.is_finite() && relative_tolerance > 0.0 && relative_tolerance < 0.5) {
        return Err(AccountingError::InvalidParameter {
            name: "tolerance",
            value: relative_tolerance,
            expected: "a relative tolerance in (0, 0.5)",
        });
    }
    if accountant == Accountant::Pld && target_epsilon >= PLD_EPSILON_LIMIT {
        return Err(AccountingError::CalibrationOutOfRange {
            target_epsilon,
            accountant: accountant.name(),
            reason: "its epsilon never exceeds ln(largest float64) ≈ 709.78: privacy losses beyond that are not \
                     representable",
        });
    }
    const MAX_NOISE: f64 = 1e4;
    let mut evaluations = 0u32;
    let mut eval = |sigma: f64, acc: Accountant| -> Result<EpsilonUpperBound> {
        evaluations += 1;
        let at = event.with_noise_multiplier(sigma);
        if acc == Accountant::Pld {
            // Only the upper bound matters for the decision; the full result is computed at the end.
            let components = at.components()?;
            let e = pld::Pld::new_upper_only(&components, PldOptions::default())?.epsilon(delta);
            Ok(EpsilonUpperBound {
                epsilon: e.upper,
                delta,
                accountant: acc,
                relation: NeighbouringRelation::AddOrRemove,
                numerical: None,
                approximate: false,
                rdp_order: None,
                mu: None,
            })
        } else {
            epsilon(&at, delta, acc, NeighbouringRelation::AddOrRemove)
        }
    };
    // Bracket. For PLD, the RDP answer is an upper end (PLD ≤ RDP) and cheap to find.
    let mut hi = 1.0f64;
    if accountant == Accountant::Pld {
        let mut h = 1.0f64;
        while eval(h, Accountant::Rdp)?.epsilon > target_epsilon {
            h *= 2.0;
            if h > MAX_NOISE {
                break;
            }
        }
        hi = h;
    }
    let mut at_hi = loop {
        let e = eval(hi, accountant)?;
        if e.epsilon <= target_epsilon {
            break e;
        }
        if hi >= MAX_NOISE {
            return Err(AccountingError::CalibrationUnreachable {
                target_epsilon,
                noise_multiplier: hi,
                epsilon: e.epsilon,
            });
        }
        hi = (hi * 2.0).min(MAX_NOISE);
    };
    let mut lo = hi * 0.9;
    loop {
        match eval(lo, accountant) {
            Ok(e) if e.epsilon <= target_epsilon => {
                hi = lo;
                at_hi = e;
                lo *= 0.9;
            }
            // A grid too fine for this σ means σ is far too small: a valid lower end.
            Ok(_) | Err(AccountingError::NumericalLimit { .. }) => break,
            Err(other) => return Err(other),
        }
        if lo < 1e-3 {
            break;
        }
    }
    while hi - lo > relative_tolerance * hi {
        let mid = 0.5 * (lo + hi);
        match eval(mid, accountant) {
            Ok(e) if e.epsilon <= target_epsilon => {
                hi = mid;
                at_hi = e;
            }
            Ok(_) | Err(AccountingError::NumericalLimit { .. }) => lo = mid,
            Err(other) => return Err(other),
        }
    }
    if accountant == Accountant::Pld {
        evaluations += 1;
        at_hi = epsilon(
            &event.with_noise_multiplier(hi),
            delta,
            accountant,
            NeighbouringRelation::AddOrRemove,
        )?;
    }
    Ok(Calibration {
        noise_multiplier: hi,
        noise_multiplier_lower: lo,
        tolerance: hi - lo,
        target_epsilon,
        epsilon: at_hi,
        evaluations,
    })
}
