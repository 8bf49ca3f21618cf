//! The statistic a threshold audit maximizes, and the two ways of turning
//! upper bounds on the error rates into a privacy parameter: ε at δ
//! (Annamalai et al. 2024 Eq. (1)) and μ (Cebere et al. 2024 Lemma 1).
//! Below the other files of `region`, which all use it.

use crate::gaussian::inverse_cdf;
use crate::rank_test::Curve;

/// Annamalai et al. 2024 Eq. (1): ε from upper bounds on FPR and FNR at δ.
/// Returns `max{ln((1 − FPR̄ − δ)/FNR̄), ln((1 − FNR̄ − δ)/FPR̄), 0}`.
pub fn epsilon_from_error_bounds(fpr_upper: f64, fnr_upper: f64, delta: f64) -> f64 {
    raw_epsilon(fpr_upper, fnr_upper, delta).max(0.0)
}

/// The two branches of Eq. (1) without the floor at 0 (−∞ when a numerator
/// is not positive).
fn raw_epsilon(fpr: f64, fnr: f64, delta: f64) -> f64 {
    let branch = |num: f64, den: f64| {
        if num > 0.0 && den > 0.0 {
            (num / den).ln()
        } else if num > 0.0 {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        }
    };
    branch(1.0 - fpr - delta, fnr).max(branch(1.0 - fnr - delta, fpr))
}

/// Cebere et al. 2024 Lemma 1 (and the GDP slide of Karimireddy 2025):
/// `μ = Φ⁻¹(1 − FPR̄) − Φ⁻¹(FNR̄)` (symmetric in the two rates; may be
/// negative).
pub fn mu_from_error_bounds(fpr_upper: f64, fnr_upper: f64) -> f64 {
    let mu = -inverse_cdf(fpr_upper) - inverse_cdf(fnr_upper);
    if mu.is_nan() {
        f64::NEG_INFINITY
    } else {
        mu
    }
}

/// Which statistic a sweep maximizes.
#[derive(Debug, Clone, Copy)]
pub(super) enum Statistic {
    EpsDelta { delta: f64 },
    Gdp,
}

impl Statistic {
    /// The trade-off curves the rank test checks for this statistic.
    pub(super) fn curve(self) -> Curve {
        match self {
            Statistic::EpsDelta { delta } => Curve::EpsDelta { delta },
            Statistic::Gdp => Curve::Gaussian,
        }
    }

    pub(super) fn eval(self, fpr: f64, fnr: f64) -> f64 {
        match self {
            Statistic::EpsDelta { delta } => raw_epsilon(fpr, fnr, delta),
            Statistic::Gdp => mu_from_error_bounds(fpr, fnr),
        }
    }
}
