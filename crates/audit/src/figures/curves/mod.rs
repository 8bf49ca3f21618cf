//! Trade-off curves (type I error α = FPR on x, type II error β = FNR on y):
//! the (ε, δ) curve `f_{ε,δ}(α) = max{0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)}`
//! (Wasserman & Zhou 2010 Prop. 2.5, as on the f-DP slide of Karimireddy
//! 2025), the μ-GDP curve `G_μ(α) = Φ(Φ⁻¹(1 − α) − μ)` (Cebere et al. 2024
//! Eq. (7)), and empirical error points with their Clopper–Pearson upper
//! bounds; as data and as SVG: the trade-off view on linear axes and the ROC
//! view (TPR = 1 − β against FPR) on log–log axes, the convention of Carlini
//! et al. 2022 ("Membership Inference Attacks From First Principles", §III-C),
//! where strong audits, which live at FPR ≪ 1, are not squashed into a
//! corner.
//!
//! The SVG goes through [`crate::figures::svg`].

mod one_run;
mod tradeoff;

pub use one_run::OneRunPlot;
pub use tradeoff::TradeoffPlot;

use serde::Serialize;

use crate::gaussian::gdp_tradeoff;

/// `f_{ε,δ}(α)`.
pub fn eps_delta_tradeoff(epsilon: f64, delta: f64, alpha: f64) -> f64 {
    let e = epsilon.exp();
    (1.0 - delta - e * alpha)
        .max((1.0 - delta - alpha) / e)
        .max(0.0)
}

/// A named curve sampled at `(α, β)` points.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Curve {
    /// Legend label.
    pub label: String,
    /// Points `(α, β)`, α increasing.
    pub points: Vec<(f64, f64)>,
}

/// α grid: uniform on [0, 1] and logarithmic on [1e-9, 1e-1] (where strong
/// audits live; the ROC view needs it).
fn alpha_grid(n: usize) -> Vec<f64> {
    let n = n.max(4);
    let mut a: Vec<f64> = (0..n).map(|i| i as f64 / (n - 1) as f64).collect();
    a.extend((1..2 * n).map(|i| 10f64.powf(-9.0 + 8.0 * i as f64 / (2 * n) as f64)));
    a.sort_by(f64::total_cmp);
    a.dedup();
    a
}

/// The (ε, δ) trade-off curve sampled on about `3n` points.
pub fn eps_delta_curve(epsilon: f64, delta: f64, n: usize, label: &str) -> Curve {
    let points = alpha_grid(n)
        .into_iter()
        .map(|a| (a, eps_delta_tradeoff(epsilon, delta, a)))
        .collect();
    Curve {
        label: label.to_string(),
        points,
    }
}

/// The μ-GDP trade-off curve sampled on about `3n` points.
pub fn gdp_curve(mu: f64, n: usize, label: &str) -> Curve {
    let points = alpha_grid(n)
        .into_iter()
        .map(|a| (a, gdp_tradeoff(mu, a)))
        .collect();
    Curve {
        label: label.to_string(),
        points,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eps_delta_curve_values() {
        // Karimireddy 2025 (privacy auditing slides): f_{0.21, 1e-5}(0.95078)
        // = 0.03988885074, by hand from Prop. 2.5.
        assert!((eps_delta_tradeoff(0.21, 1e-5, 0.95078) - 0.039_888_850_74).abs() < 1e-10);
        // and f_{0.21,1e-5}(0.95509) = (1 − 1e-5 − 0.95509)/e^0.21 = 0.036395.
        assert!((eps_delta_tradeoff(0.21, 1e-5, 0.95509) - 0.036_395).abs() < 5e-7);
        // f(0) = 1 − δ, f(1) = 0.
        assert!((eps_delta_tradeoff(1.0, 1e-5, 0.0) - (1.0 - 1e-5)).abs() < 1e-15);
        assert_eq!(eps_delta_tradeoff(1.0, 1e-5, 1.0), 0.0);
    }
}
