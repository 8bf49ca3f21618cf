//! The Chua et al. lower bound on the ε of shuffle-then-batch DP-SGD.
//!
//! Chua, Ghazi, Kamath, Kumar, Manurangsi, Sinha & Zhang, "How Private are DP-SGD
//! Implementations?" (ICML 2024) and "Scalable DP-SGD: Shuffling vs. Poisson Subsampling"
//! (2024), as summarised in Annamalai et al. 2024 §6.1 (§4, the BGM): with the conjectured worst-case
//! datasets D = (+1, −1, …, −1) and D′ = (⊥, −1, …, −1), one epoch of T steps releases
//! (after the shift by +B) P = MoG(2) against Q = MoG(1), where
//! MoG(μ) = (1/T) Σ_t N(μ·e_t, σ² I_T).
//!
//! Any post-processing of the output gives a valid lower bound on its privacy loss. We keep
//! the statistic max_t x_t (the "cube" sets E_C = {max_t x_t > C} of Annamalai et al. 2024 §6.1), whose CDF
//! is Φ((C−μ)/σ)·Φ(C/σ)^{T−1}, bucketed on a grid of C with step 0.01. For one epoch the
//! hockey-stick divergence of the bucketed pair is computed exactly (this dominates the
//! threshold-only maximum of Annamalai et al. 2024 §6.1). For E epochs (reshuffled independently, Annamalai et al. 2024
//! §2.1) the bucketed pair is composed E times with losses rounded *down* to a grid (a valid
//! lower bound), plus the rounding shift's Hoeffding lower bound. Both orders (P‖Q, Q‖P) are
//! evaluated and the larger ε is returned.
//!
//! This is a **lower** bound on what shuffling costs: there is no known upper bound for
//! shuffled DP-SGD (Annamalai et al. 2024 §6.1). Report it beside the Poisson ε.

use serde::Serialize;

use crate::error::{check_count, check_delta, check_noise_multiplier, AccountingError, Result};
use crate::pld::{compose, Discrete};
use dpaudit_gaussian as normal;

/// A lower bound on ε for shuffled batches. Deliberately a different type from every upper bound.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ShuffleEpsilonLowerBound {
    /// ε such that the shuffled mechanism is *not* (ε′, δ)-DP for any ε′ < ε (up to roundoff).
    pub epsilon: f64,
    /// The δ it refers to.
    pub delta: f64,
    /// σ.
    pub noise_multiplier: f64,
    /// T, batches per epoch (the sample rate of the Poisson comparison is 1/T).
    pub steps_per_epoch: u64,
    /// E, the number of epochs.
    pub epochs: u64,
}

/// Bucket width on the max statistic (Annamalai et al. 2024 §6.1: C grid in steps of 0.01).
const BUCKET: f64 = 0.01;
/// Loss grid for multi-epoch composition.
const LOSS_GRID: f64 = 1e-4;

/// ln P(max_t x_t ≤ c) under MoG(μ).
fn log_cdf_max(c: f64, mu: f64, sigma: f64, t: u64) -> f64 {
    normal::log_cdf((c - mu) / sigma) + (t - 1) as f64 * normal::log_cdf(c / sigma)
}

/// Bucket masses of the max statistic under MoG(μ): [below c₀, buckets…, above c_last].
fn bucket_masses(edges: &[f64], mu: f64, sigma: f64, t: u64) -> Vec<f64> {
    let log_f: Vec<f64> = edges
        .iter()
        .map(|&c| log_cdf_max(c, mu, sigma, t))
        .collect();
    let mut out = Vec::with_capacity(edges.len() + 1);
    out.push(log_f[0].exp());
    for w in log_f.windows(2) {
        let (l0, l1) = (w[0], w[1]);
        let m = if l1 < -std::f64::consts::LN_2 {
            // F small: F(c₁) − F(c₀) = F(c₁)(1 − e^{l₀ − l₁}).
            l1.exp() * -(l0 - l1).exp_m1()
        } else {
            // F near 1: S(c₀) − S(c₁) with S = −expm1(l).
            -l0.exp_m1() + l1.exp_m1()
        };
        out.push(m.max(0.0));
    }
    out.push(-log_f[log_f.len() - 1].exp_m1());
    out
}

/// Exact ε(δ) of a discrete pair given as (P-mass, Q-mass) per atom (≥ 0).
fn discrete_epsilon(atoms: &[(f64, f64)], delta: f64) -> f64 {
    let mut v: Vec<(f64, f64, f64)> = atoms
        .iter()
        .filter(|(p, _)| *p > 0.0)
        .map(|&(p, q)| (if q > 0.0 { (p / q).ln() } else { f64::INFINITY }, p, q))
        .collect();
    v.sort_by(|a, b| b.0.total_cmp(&a.0));
    let (mut a, mut b) = (0.0f64, 0.0f64);
    for &(l, p, q) in &v {
        if l.is_finite() && b > 0.0 && a - l.exp() * b > delta {
            return ((a - delta) / b).ln().max(0.0);
        }
        a += p;
        b += q;
    }
    if a > delta && b > 0.0 {
        ((a - delta) / b).ln().max(0.0)
    } else {
        0.0
    }
}

/// The Chua et al. lower bound on ε(δ) of shuffle-then-batch DP-SGD with `steps_per_epoch`
/// batches per epoch, noise multiplier σ and `epochs` epochs (Annamalai et al. 2024 §6.1, docs/canary-games.md, "Reference values").
pub fn shuffle_lower_bound(
    noise_multiplier: f64,
    steps_per_epoch: u64,
    epochs: u64,
    delta: f64,
) -> Result<ShuffleEpsilonLowerBound> {
    check_noise_multiplier(noise_multiplier)?;
    check_count("steps_per_epoch", steps_per_epoch)?;
    check_count("epochs", epochs)?;
    check_delta(delta)?;
    let (s, t) = (noise_multiplier, steps_per_epoch);
    let z = 10.0 + (2.0 * (t as f64).ln()).sqrt();
    let (c_lo, c_hi) = (-10.0 * s, 2.0 + z * s);
    let n = ((c_hi - c_lo) / BUCKET).ceil() as usize;
    if n > 10_000_000 {
        return Err(AccountingError::NumericalLimit {
            method: "shuffle lower bound",
            what: format!("{n} buckets for noise_multiplier = {s}"),
        });
    }
    let edges: Vec<f64> = (0..=n).map(|i| c_lo + i as f64 * BUCKET).collect();
    let p = bucket_masses(&edges, 2.0, s, t);
    let q = bucket_masses(&edges, 1.0, s, t);
    let forward: Vec<(f64, f64)> = p.iter().copied().zip(q.iter().copied()).collect();
    let backward: Vec<(f64, f64)> = forward.iter().map(|&(a, b)| (b, a)).collect();
    let epsilon = if epochs == 1 {
        discrete_epsilon(&forward, delta).max(discrete_epsilon(&backward, delta))
    } else {
        composed_lower(&forward, epochs, delta)?.max(composed_lower(&backward, epochs, delta)?)
    };
    Ok(ShuffleEpsilonLowerBound {
        epsilon,
        delta,
        noise_multiplier,
        steps_per_epoch,
        epochs,
    })
}

/// Lower bound on ε(δ) of the E-fold composition of a discrete pair.
fn composed_lower(atoms: &[(f64, f64)], epochs: u64, delta: f64) -> Result<f64> {
    let pts: Vec<(f64, f64)> = atoms
        .iter()
        .filter(|(p, q)| *p > 0.0 && *q > 0.0)
        .map(|&(p, q)| ((p / q).ln(), p))
        .collect();
    // Atoms with Q = 0 would have infinite loss; dropping them only lowers δ (valid for a lower bound).
    let lo = pts
        .iter()
        .map(|(l, _)| (l / LOSS_GRID).floor() as i64)
        .min()
        .unwrap_or(0);
    let hi = pts
        .iter()
        .map(|(l, _)| (l / LOSS_GRID).floor() as i64)
        .max()
        .unwrap_or(0);
    let mut masses = vec![0.0; (hi - lo + 1) as usize];
    let mut mean_remainder = 0.0;
    for &(l, p) in &pts {
        let i = (l / LOSS_GRID).floor() as i64;
        masses[(i - lo) as usize] += p;
        mean_remainder += p * (l - i as f64 * LOSS_GRID).clamp(0.0, LOSS_GRID);
    }
    let single = Discrete {
        offset: lo,
        masses,
        infinity: 0.0,
    };
    let mut planner = realfft::RealFftPlanner::new();
    let composed = compose(&mut planner, &[(&single, epochs)], LOSS_GRID, 1e-15)?;
    let eta = delta * 1e-3;
    let deviation = LOSS_GRID * (epochs as f64 * (1.0 / eta).ln() / 2.0).sqrt();
    let shift = (epochs as f64 * mean_remainder - deviation).max(0.0);
    let eps = composed.epsilon_at(delta + eta + composed.slack, LOSS_GRID) + shift;
    Ok(eps.max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_batch_per_epoch_is_the_gaussian_mechanism() {
        // T = 1: MoG(2) vs MoG(1) is N(2,σ²) vs N(1,σ²), i.e. 1/σ-GDP; with σ = 1 the exact
        // ε(1e-5) is 4.3772 (Dong, Roth & Su 2022, Cor. 2.13, in closed form). Bucketing can only lower it, by O(bucket width).
        let lb = shuffle_lower_bound(1.0, 1, 1, 1e-5).unwrap();
        assert!(
            lb.epsilon <= 4.3772 + 1e-4 && lb.epsilon > 4.3772 - 0.02,
            "{}",
            lb.epsilon
        );
    }

    #[test]
    fn bucket_masses_sum_to_one() {
        let edges: Vec<f64> = (0..=2000).map(|i| -10.0 + i as f64 * 0.01).collect();
        let m = bucket_masses(&edges, 2.0, 1.0, 100);
        assert!((m.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }
}
