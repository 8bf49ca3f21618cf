//! The standard normal distribution, accurate in the tails, and the μ-GDP
//! ↔ (ε, δ) curve: the one definition of these facts, shared by the
//! accountant (`dpaudit-accounting`, upper bounds) and the audit statistics
//! (`dpaudit-audit`, lower bounds), which do not depend on each other.
//!
//! `Φ`, its upper tail `Q = 1 − Φ`, their logarithms and inverses, and
//! interval probabilities (`src/normal.rs`, re-exported here) keep full
//! relative precision for tail probabilities down to the smallest normal
//! f64 (`Q(37) ≈ 5.7e-300`; measured error ≤ 4.1e-16 against mpmath), and
//! the logarithms stay finite beyond. A μ-GDP mechanism is (ε, δ(ε))-DP for
//! every ε ≥ 0 with `δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)` (Dong, Roth
//! & Su 2022, Corollary 2.13; restated as Corollary 1 of Cebere, Bellet &
//! Papernot 2024). `docs/accounting.md` writes out how the two crates use it.
//!
//! It also holds the workspace's log-space arithmetic ([`log_add_exp`],
//! module [`log_space`]), so that the pure crates share one definition.
//!
//! Its one dependency is `libm` (pure Rust, FreeBSD msun's `erf`/`erfc`),
//! so the pure crates above it build anywhere.

pub mod log_space;
mod normal;

pub use log_space::log_add_exp;
pub use normal::{cdf, interval, inverse_cdf, inverse_sf, log_cdf, log_half_erfc, log_sf, pdf, sf};

/// δ(ε) of a μ-GDP mechanism (Dong, Roth & Su 2022, Corollary 2.13):
/// `Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)`, the second term as
/// `exp(ε + ln Φ(…))` with [`log_cdf`], so that e^ε never overflows
/// against a tiny Φ and Φ below the f64 range still counts.
/// For `μ = 0` the mechanism is perfectly private and δ(ε) = 0; for `μ = ∞`
/// it is blatantly non-private and δ(ε) = 1.
pub fn gdp_delta(mu: f64, epsilon: f64) -> f64 {
    if mu <= 0.0 {
        return 0.0;
    }
    if mu.is_infinite() {
        return 1.0;
    }
    let a = cdf(-epsilon / mu + mu / 2.0);
    let b = (epsilon + log_cdf(-epsilon / mu - mu / 2.0)).exp();
    (a - b).max(0.0)
}

/// The smallest ε ≥ 0 with `δ(ε) ≤ delta` for a μ-GDP mechanism, by
/// bisection (δ(ε) is decreasing in ε). Returned from the **low** end of the
/// final bracket (width ≤ 1e-12), so it never overstates ε.
///
/// Returns 0 when `δ(0) ≤ delta`, and `+∞` for `delta = 0` with `μ > 0`.
pub fn gdp_epsilon(mu: f64, delta: f64) -> f64 {
    if mu <= 0.0 || gdp_delta(mu, 0.0) <= delta {
        return 0.0;
    }
    if delta <= 0.0 || mu.is_infinite() {
        return f64::INFINITY;
    }
    let mut lo = 0.0;
    let mut hi = 1.0_f64;
    while gdp_delta(mu, hi) > delta {
        lo = hi;
        hi *= 2.0;
        if hi > 1e6 {
            return f64::INFINITY;
        }
    }
    while hi - lo > 1e-12 * hi.max(1.0) {
        let mid = 0.5 * (lo + hi);
        if gdp_delta(mu, mid) > delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// GDP trade-off function `G_μ(α) = Φ(Φ⁻¹(1 − α) − μ)` (Dong, Roth & Su
/// 2022, Definition 2.7).
pub fn gdp_tradeoff(mu: f64, alpha: f64) -> f64 {
    cdf(inverse_sf(alpha) - mu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gdp_delta_matches_the_closed_form() {
        // δ(ε) of Dong, Roth & Su 2022, Cor. 2.13, evaluated in 50-digit
        // arithmetic (mpmath 1.3: ncdf(−ε/μ + μ/2) − exp(ε)·ncdf(−ε/μ − μ/2)).
        for (mu, eps, expected) in [
            (1.0, 1.0, 0.126_936_737_506_643_9),
            (0.5, 0.5, 0.052_440_323_287_669_66),
            (2.0, 3.0, 0.183_813_076_544_472_2),
            (1.0, 2.675_85, 0.003_933_427_630_532_709),
            (1.0, 4.0, 4.712_241_200_793_12e-5),
        ] {
            let got = gdp_delta(mu, eps);
            assert!(
                (got - expected).abs() <= 1e-13 * expected,
                "μ={mu}, ε={eps}: {got} vs {expected}"
            );
        }
    }

    #[test]
    fn gdp_epsilon_matches_the_closed_form() {
        // The root of δ(ε) = δ (Dong, Roth & Su 2022, Cor. 2.13), by
        // bisection in 50-digit arithmetic (mpmath 1.3).
        for (mu, delta, expected) in [
            (0.5, 1e-5, 1.993_091_404_415_12),
            (1.0, 1e-5, 4.377_178_095_681_22),
            (2.0, 1e-5, 9.997_256_146_434_3),
            (1.0, 1e-10, 6.547_924_066_864_95),
            (1.0, 1e-12, 7.238_494_420_178_86),
        ] {
            let got = gdp_epsilon(mu, delta);
            // Bisection to 1e-12 relative, from the low end.
            assert!(
                got <= expected + 1e-13 && expected - got < 2e-11,
                "μ={mu}, δ={delta}: {got} vs {expected}"
            );
        }
        assert_eq!(gdp_epsilon(0.0, 1e-5), 0.0);
        // Karimireddy 2025 (lecture notes "Gaussian DP and privacy auditing"):
        // the claim (0.21, 1e-5) of a CNN corresponds to μ ≈ 0.0641.
        assert!((gdp_epsilon(0.0641, 1e-5) - 0.21).abs() < 2e-3);
    }

    #[test]
    fn tradeoff_endpoints() {
        // G_μ(0) = 1 and G_μ(1) = 0; G_0(α) = 1 − α (closed forms).
        assert!((gdp_tradeoff(1.0, 0.0) - 1.0).abs() < 1e-15);
        assert!(gdp_tradeoff(1.0, 1.0).abs() < 1e-15);
        assert!((gdp_tradeoff(0.0, 0.3) - 0.7).abs() < 1e-14);
    }
}
