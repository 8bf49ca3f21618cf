//! Gaussian differential privacy (Dong, Roth & Su 2019/2022, "Gaussian Differential Privacy").
//!
//! * Exact for non-subsampled Gaussian compositions: k Gaussian mechanisms with noise
//!   multipliers σ_i compose to μ-GDP with μ = √(Σ 1/σ_i²) (DRS Cor. 3.3), and μ-GDP is
//!   exactly (ε, δ(ε))-DP for δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (DRS Cor. 2.13),
//!   defined once in `dpaudit_gaussian::gdp_delta` and shared with the audit statistics.
//! * Subsampled: only the central-limit approximation exists. It is **approximate** (it can
//!   under-estimate ε; Gopi et al. 2021) and is never used unless asked for by name.

use crate::error::{check_delta, check_epsilon, AccountingError, Result};
use crate::event::Component;
use dpaudit_gaussian as normal;

/// δ(ε) of μ-GDP (exact, DRS Cor. 2.13): [`dpaudit_gaussian::gdp_delta`].
pub fn delta_for_epsilon(mu: f64, epsilon: f64) -> f64 {
    dpaudit_gaussian::gdp_delta(mu, epsilon)
}

/// ε(δ) of μ-GDP by bisection on the exact δ(ε) (decreasing in ε), to 1e-12 relative,
/// returned from the **high** end of the final bracket so that an upper bound never
/// understates ε (`dpaudit_gaussian::gdp_epsilon`, for lower bounds, returns the low end).
pub fn epsilon_for_delta(mu: f64, delta: f64) -> Result<f64> {
    check_delta(delta)?;
    check_epsilon("mu", mu)?;
    if delta_for_epsilon(mu, 0.0) <= delta {
        return Ok(0.0);
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while delta_for_epsilon(mu, hi) > delta {
        hi *= 2.0;
        if hi > 1e6 {
            return Err(AccountingError::NumericalLimit {
                method: "GDP ε(δ)",
                what: format!("epsilon exceeds 1e6 for mu = {mu}"),
            });
        }
    }
    while hi - lo > 1e-12 * hi.max(1.0) {
        let mid = 0.5 * (lo + hi);
        if delta_for_epsilon(mu, mid) > delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(hi)
}

/// μ of a non-subsampled composition (exact); an error for subsampled components.
pub fn exact_mu(components: &[Component]) -> Result<f64> {
    let mut mu2 = 0.0;
    for c in components {
        if c.is_subsampled() {
            return Err(AccountingError::Unsupported {
                accountant: "gdp",
                what: format!("Poisson subsampling (sample_rate = {})", c.sample_rate),
                hint: "GDP is exact only without subsampling; use `pld` (or the approximate `gdp-clt`)",
            });
        }
        mu2 += c.count as f64 / (c.noise_multiplier * c.noise_multiplier);
    }
    Ok(mu2.sqrt())
}

/// μ of the Poisson-subsampled composition by the CLT of Bu, Dong, Long & Su 2020
/// ("Deep learning with Gaussian differential privacy", Poisson sampling):
/// μ ≈ q·√(k·(e^{1/σ²} − 1)). **Approximate**, asymptotic in k.
pub fn clt_mu_poisson(sample_rate: f64, noise_multiplier: f64, steps: u64) -> f64 {
    let s2 = noise_multiplier * noise_multiplier;
    sample_rate * (steps as f64 * (1.0 / s2).exp_m1()).sqrt()
}

/// μ of DRS Cor. 5.4 (subsampled composition, asymptotic):
/// μ ≈ q·√k·√(e^{μ₀²}Φ(3μ₀/2) + 3Φ(−μ₀/2) − 2), μ₀ = 1/σ. **Approximate.**
pub fn clt_mu_dong_roth_su(sample_rate: f64, noise_multiplier: f64, steps: u64) -> f64 {
    let mu0 = 1.0 / noise_multiplier;
    let inner = (mu0 * mu0).exp() * normal::cdf(1.5 * mu0) + 3.0 * normal::cdf(-0.5 * mu0) - 2.0;
    sample_rate * (steps as f64).sqrt() * inner.max(0.0).sqrt()
}

/// μ of a composition under the CLT approximation (Bu et al. for subsampled components, exact
/// for the others; the μ² add).
pub fn clt_mu(components: &[Component]) -> f64 {
    components
        .iter()
        .map(|c| {
            let mu = if c.is_subsampled() {
                clt_mu_poisson(c.sample_rate, c.noise_multiplier, c.count)
            } else {
                (c.count as f64).sqrt() / c.noise_multiplier
            };
            mu * mu
        })
        .sum::<f64>()
        .sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_of_mu_gdp_closed_form() {
        // Dong, Roth & Su 2022, Cor. 2.13, in closed form: (μ, ε) = (1, 1), (0.5, 0.5), (2, 3) → δ = 0.126937, 0.052440, 0.183813.
        for (mu, eps, expected) in [
            (1.0, 1.0, 0.126937),
            (0.5, 0.5, 0.052440),
            (2.0, 3.0, 0.183813),
        ] {
            assert!(
                (delta_for_epsilon(mu, eps) - expected).abs() < 5e-7,
                "{mu} {eps}"
            );
        }
    }
}
