//! Rényi DP accounting of the Poisson-subsampled Gaussian mechanism.
//!
//! * RDP of one step: Mironov, Talwar & Zhang 2019, "Rényi Differential Privacy of the Sampled
//!   Gaussian Mechanism", §3.3: for integer orders α the finite binomial sum
//!   A_α = Σ_k C(α,k)(1−q)^{α−k} q^k e^{(k²−k)/(2σ²)}, and for fractional orders the two
//!   convergent series A_α = A₀ + A₁ split at z₀ = σ² ln(1/q − 1) + 1/2. Everything is summed
//!   in log space with explicit signs; ε_RDP(α) = ln(A_α)/(α−1).
//! * RDP → (ε, δ): the improved conversion of Canonne, Kamath & Steinke 2020 (Prop. 12),
//!   equivalently Balle, Barthe, Gaboardi, Hsu & Sato 2020 (Thm. 21):
//!   ε = ε_RDP(α) + ln((α−1)/α) − (ln δ + ln α)/(α−1), minimised over the orders.

use crate::event::Component;
use dpaudit_gaussian::log_add_exp;
use dpaudit_gaussian::log_half_erfc;

/// The orders used by default: fractional 1.1 … 10.9, integers 11 … 64, then a sparse tail.
pub fn default_orders() -> Vec<f64> {
    let mut orders: Vec<f64> = (11..=109).map(|i| i as f64 / 10.0).collect();
    orders.extend((11..=64).map(f64::from));
    orders.extend([
        80.0, 96.0, 128.0, 160.0, 192.0, 256.0, 384.0, 512.0, 768.0, 1024.0,
    ]);
    orders
}

/// Signed accumulator of terms given as (sign, ln|term|).
#[derive(Debug, Default)]
struct LogSum {
    pos: f64,
    neg: f64,
    init: bool,
}

impl LogSum {
    fn add(&mut self, positive: bool, log_abs: f64) {
        if !self.init {
            self.pos = f64::NEG_INFINITY;
            self.neg = f64::NEG_INFINITY;
            self.init = true;
        }
        let slot = if positive {
            &mut self.pos
        } else {
            &mut self.neg
        };
        *slot = log_add_exp(*slot, log_abs);
    }
    /// ln(pos − neg); the series here are positive in total.
    fn value(&self) -> f64 {
        if self.neg == f64::NEG_INFINITY {
            return self.pos;
        }
        self.pos + (-(self.neg - self.pos).exp()).ln_1p()
    }
}

fn ln_gamma(x: f64) -> f64 {
    libm::lgamma(x)
}

/// ln A_α for integer α (q < 1).
fn log_a_int(q: f64, sigma: f64, alpha: u64) -> f64 {
    let a = alpha as f64;
    let mut s = LogSum::default();
    for k in 0..=alpha {
        let kf = k as f64;
        let log_binom = ln_gamma(a + 1.0) - ln_gamma(kf + 1.0) - ln_gamma(a - kf + 1.0);
        let term = log_binom
            + (a - kf) * (-q).ln_1p()
            + kf * q.ln()
            + (kf * kf - kf) / (2.0 * sigma * sigma);
        s.add(true, term);
    }
    s.value()
}

/// ln A_α for fractional α (Mironov et al. 2019, §3.3), q < 1.
fn log_a_frac(q: f64, sigma: f64, alpha: f64) -> f64 {
    let s2 = sigma * sigma;
    let z0 = s2 * (1.0 / q - 1.0).ln() + 0.5;
    let (lq, l1q) = (q.ln(), (-q).ln_1p());
    let mut a0 = LogSum::default();
    let mut a1 = LogSum::default();
    // Generalised binomial coefficient C(α, i), tracked as (sign, ln|·|).
    let (mut sign, mut log_c) = (true, 0.0f64);
    let sqrt2s = std::f64::consts::SQRT_2 * sigma;
    let mut i = 0u64;
    loop {
        let fi = i as f64;
        let j = alpha - fi;
        let t0 = log_c
            + fi * lq
            + j * l1q
            + (fi * fi - fi) / (2.0 * s2)
            + log_half_erfc((fi - z0) / sqrt2s);
        let t1 =
            log_c + j * lq + fi * l1q + (j * j - j) / (2.0 * s2) + log_half_erfc((z0 - j) / sqrt2s);
        a0.add(sign, t0);
        a1.add(sign, t1);
        let total = log_add_exp(a0.pos, a1.pos);
        if fi > alpha && t0.max(t1) < total - 36.0 {
            break;
        }
        if i > 100_000 {
            // Alternating tail: the remainder is at most the last term; add it (pessimistic).
            a0.add(true, t0);
            a1.add(true, t1);
            break;
        }
        // C(α, i+1) = C(α, i)·(α − i)/(i + 1).
        let factor = alpha - fi;
        if factor == 0.0 {
            break;
        }
        if factor < 0.0 {
            sign = !sign;
        }
        log_c += factor.abs().ln() - (fi + 1.0).ln();
        i += 1;
    }
    log_add_exp(a0.value(), a1.value()).max(0.0)
}

/// ε_RDP(α) of one Poisson-subsampled Gaussian step (q = 1: the Gaussian, α/(2σ²)).
pub fn rdp_subsampled_gaussian(q: f64, sigma: f64, alpha: f64) -> f64 {
    if q >= 1.0 {
        return alpha / (2.0 * sigma * sigma);
    }
    let log_a = if alpha.fract() == 0.0 && alpha <= 1.0e4 {
        log_a_int(q, sigma, alpha as u64)
    } else {
        log_a_frac(q, sigma, alpha)
    };
    (log_a / (alpha - 1.0)).max(0.0)
}

/// The RDP curve of a composition at `orders` (RDP adds under composition).
pub fn rdp_curve(components: &[Component], orders: &[f64]) -> Vec<f64> {
    orders
        .iter()
        .map(|&a| {
            components
                .iter()
                .map(|c| {
                    c.count as f64 * rdp_subsampled_gaussian(c.sample_rate, c.noise_multiplier, a)
                })
                .sum()
        })
        .collect()
}

/// ε(δ) from an RDP curve, Canonne–Kamath–Steinke 2020 Prop. 12 (≥ 0), with the best order.
pub fn epsilon_from_rdp(orders: &[f64], rdp: &[f64], delta: f64) -> (f64, f64) {
    let mut best = (f64::INFINITY, f64::NAN);
    for (&a, &r) in orders.iter().zip(rdp) {
        if a <= 1.0 || !r.is_finite() {
            continue;
        }
        let eps = r + ((a - 1.0) / a).ln() - (delta.ln() + a.ln()) / (a - 1.0);
        if eps < best.0 {
            best = (eps, a);
        }
    }
    (best.0.max(0.0), best.1)
}

/// δ(ε) from an RDP curve, the same conversion solved for δ (capped at 1).
pub fn delta_from_rdp(orders: &[f64], rdp: &[f64], epsilon: f64) -> f64 {
    let mut best = 1.0f64;
    for (&a, &r) in orders.iter().zip(rdp) {
        if a <= 1.0 || !r.is_finite() {
            continue;
        }
        let log_delta = (a - 1.0) * (r - epsilon + (1.0 - 1.0 / a).ln()) - a.ln();
        best = best.min(log_delta.exp());
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_and_fractional_formulas_agree_at_integers() {
        // The fractional series must reproduce the finite integer sum (Mironov et al. 2019 §3.3).
        for (q, s) in [(0.01, 1.0), (0.1, 0.8), (0.5, 2.0)] {
            for a in [2u64, 3, 7, 20] {
                let int = log_a_int(q, s, a);
                let frac = log_a_frac(q, s, a as f64);
                assert!(
                    (int - frac).abs() < 1e-9 * int.abs().max(1.0),
                    "q={q} s={s} a={a}: {int} vs {frac}"
                );
            }
        }
    }

    #[test]
    fn order_two_closed_form() {
        // α = 2: A₂ = (1−q)² + 2q(1−q) + q² e^{1/σ²} = 1 + q²(e^{1/σ²} − 1).
        let (q, s) = (0.02, 1.3f64);
        let expected = (q * q * ((1.0 / (s * s)).exp() - 1.0)).ln_1p();
        assert!((rdp_subsampled_gaussian(q, s, 2.0) - expected).abs() < 1e-14);
    }

    #[test]
    fn rdp_is_monotone_in_order_including_fractional() {
        let orders = default_orders();
        let v: Vec<f64> = orders
            .iter()
            .map(|&a| rdp_subsampled_gaussian(0.01, 1.0, a))
            .collect();
        for w in v.windows(2) {
            assert!(w[1] >= w[0] * (1.0 - 1e-9), "{w:?}");
        }
    }
}
