//! The standard normal distribution, accurate in the tails, and the μ-GDP
//! ↔ (ε, δ) curve: the one definition of these facts, shared by the
//! accountant (`dpaudit-accounting`, upper bounds) and the audit statistics
//! (`dpaudit-audit`, lower bounds), which do not depend on each other.
//!
//! `Φ`, its upper tail `Q = 1 − Φ` and their inverses keep full relative
//! precision for tail probabilities down to the smallest normal f64
//! (`Q(37) ≈ 5.7e-300`). A μ-GDP mechanism is (ε, δ(ε))-DP for every ε ≥ 0
//! with `δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)` (Dong, Roth & Su 2022,
//! Corollary 2.13; restated as Corollary 1 of Cebere, Bellet & Papernot
//! 2024). `docs/accounting.md` writes out how the two crates use it.
//!
//! It also holds the workspace's log-space arithmetic ([`log_add_exp`],
//! module [`log_space`]), so that the pure crates share one definition.
//!
//! This crate has no dependencies: the pure crates above it build anywhere.

pub mod log_space;

pub use log_space::log_add_exp;

#[cfg(test)]
use std::f64::consts::PI;

/// `1/√(2π)`.
const INV_SQRT_2PI: f64 = 0.398_942_280_401_432_7;

/// Standard normal density `φ(x)`.
pub fn pdf(x: f64) -> f64 {
    INV_SQRT_2PI * (-0.5 * x * x).exp()
}

/// `Σ_{n≥0} t^{2n+1}/(1·3·5···(2n+1))`, so that `Φ(t) = ½ + φ(t)·S(t)`
/// (all terms positive: no cancellation in the sum itself).
fn odd_series(t: f64) -> f64 {
    let t2 = t * t;
    let mut term = t;
    let mut sum = t;
    let mut k = 1.0;
    loop {
        k += 2.0;
        term *= t2 / k;
        sum += term;
        if term <= 1e-17 * sum {
            return sum;
        }
    }
}

/// Upper tail `Q(t) = 1 − Φ(t) = P[N(0,1) > t]`, relative error ~1e-15.
pub fn sf(t: f64) -> f64 {
    if t.is_nan() {
        return f64::NAN;
    }
    if t < 0.0 {
        return 1.0 - sf(-t);
    }
    if t <= 2.0 {
        // Q(t) = ½ − φ(t)·S(t); at t = 2 this loses about one digit.
        return 0.5 - pdf(t) * odd_series(t);
    }
    if t > 40.0 {
        return 0.0;
    }
    // Continued fraction Q(t) = φ(t) / (t + 1/(t + 2/(t + 3/(t + …)))),
    // evaluated with the modified Lentz method.
    const TINY: f64 = 1e-300;
    let mut f = t;
    let mut c = t;
    let mut d = 0.0;
    for k in 1..500 {
        let a = k as f64;
        d = t + a * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = t + a / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    pdf(t) / f
}

/// `Φ(x) = P[N(0,1) ≤ x]`, relative error ~1e-15 including the lower tail.
pub fn cdf(x: f64) -> f64 {
    sf(-x)
}

/// `Φ⁻¹(p)` for `p ∈ (0, 1)`; `−∞` at 0, `+∞` at 1, NaN outside.
///
/// Relative accuracy is kept for small `p`. For `p` near 1 use
/// [`inverse_sf`] with `1 − p` computed exactly by the caller.
pub fn inverse_cdf(p: f64) -> f64 {
    if p.is_nan() || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    if p > 0.5 {
        return -inverse_cdf_lower(1.0 - p);
    }
    inverse_cdf_lower(p)
}

/// `Φ⁻¹(1 − q)`: the upper-tail quantile, accurate for small `q`.
pub fn inverse_sf(q: f64) -> f64 {
    -inverse_cdf(q)
}

/// `Φ⁻¹(p)` for `p ∈ (0, ½]`: Abramowitz & Stegun 26.2.23 as a start
/// (|error| < 4.5e-4), then Halley steps on `ln Φ(x) = ln p`.
fn inverse_cdf_lower(p: f64) -> f64 {
    let t = (-2.0 * p.ln()).sqrt();
    let mut x = -(t
        - (2.515_517 + 0.802_853 * t + 0.010_328 * t * t)
            / (1.0 + 1.432_788 * t + 0.189_269 * t * t + 0.001_308 * t * t * t));
    let ln_p = p.ln();
    for _ in 0..50 {
        let phi_cdf = cdf(x);
        if phi_cdf <= 0.0 {
            x += 1.0;
            continue;
        }
        // Newton on g(x) = ln Φ(x) − ln p: g' = φ/Φ, g'' = −g'(x + g').
        let g = phi_cdf.ln() - ln_p;
        let g1 = pdf(x) / phi_cdf;
        let g2 = -g1 * (x + g1);
        let step = g / g1;
        let step = step / (1.0 - 0.5 * step * g2 / g1);
        x -= step;
        if step.abs() <= 1e-15 * x.abs().max(1.0) {
            break;
        }
    }
    x
}

/// δ(ε) of a μ-GDP mechanism (Dong, Roth & Su 2022, Corollary 2.13):
/// `Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)`, the second term as
/// `exp(ε + ln Φ(…))` so that e^ε never overflows against a tiny Φ.
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
    let b = (epsilon + cdf(-epsilon / mu - mu / 2.0).ln()).exp();
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
fn sqrt_2pi() -> f64 {
    (2.0 * PI).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(a: f64, b: f64) -> f64 {
        ((a - b) / b).abs()
    }

    #[test]
    fn tail_matches_mpmath() {
        // Reference: mpmath 1.3.0 ncdf(-x) at 40 digits.
        let cases = [
            (1.0, 0.158_655_253_931_457_05),
            (3.0, 0.001_349_898_031_630_094_5),
            (5.0, 2.866_515_718_791_939e-7),
            (6.0, 9.865_876_450_376_98e-10),
            (10.0, 7.619_853_024_160_526e-24),
            (20.0, 2.753_624_118_606_233_7e-89),
            (37.0, 5.725_571_222_524_577e-300),
        ];
        for (x, expected) in cases {
            assert!(rel(cdf(-x), expected) < 2e-14, "Φ(−{x}) = {}", cdf(-x));
            assert!(rel(sf(x), expected) < 2e-14);
        }
        assert!((cdf(0.0) - 0.5).abs() < 1e-16);
        assert!((pdf(0.0) * sqrt_2pi() - 1.0).abs() < 1e-15);
    }

    #[test]
    fn inverse_matches_mpmath() {
        // Reference: mpmath 1.3.0, root of ncdf(t) = p at 40 digits.
        let cases = [
            (1e-10, -6.361_340_902_404_056),
            (0.025, -1.959_963_984_540_054_2),
            (1e-300, -37.047_096_299_361_2),
            (0.3, -0.524_400_512_708_040_8),
        ];
        for (p, expected) in cases {
            assert!(
                rel(inverse_cdf(p), expected) < 1e-14,
                "Φ⁻¹({p}) = {}",
                inverse_cdf(p)
            );
            assert!(rel(inverse_sf(p), -expected) < 1e-14);
        }
        assert!(rel(inverse_cdf(0.975), 1.959_963_984_540_054_2) < 1e-14);
        for p in [1e-12, 1e-6, 0.01, 0.2, 0.5, 0.7, 0.99] {
            assert!(rel(cdf(inverse_cdf(p)), p) < 1e-13);
        }
    }

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
