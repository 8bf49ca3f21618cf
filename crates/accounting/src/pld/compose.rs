//! Composition of discretised PLDs by FFT over a window chosen with Chernoff bounds, and
//! δ(ε) / ε(δ) of the composed distribution. See the module documentation of [`super`].

use rustfft::num_complex::Complex;
use rustfft::FftPlanner;

use super::discretise::{Discrete, MAX_GRID};
use crate::error::{AccountingError, Result};

/// The composed distribution on the window [lo, lo + masses.len()).
#[derive(Debug, Clone)]
pub(crate) struct Composed {
    pub(crate) lo: i64,
    pub(crate) masses: Vec<f64>,
    pub(crate) infinity: f64,
    /// Bound on mass truncated, aliased, or lost to roundoff.
    pub(crate) slack: f64,
}

/// ln Σ_j m_j e^{t·i_j} for the masses of `d` (an upper bound within 1e-20 relative), by a
/// multiplicative recurrence from the end where the exponent is largest, rescaling when the
/// factor gets small so that nothing relevant underflows.
fn log_mgf(d: &Discrete, t: f64) -> f64 {
    let n = d.masses.len();
    let step = (-t.abs()).exp();
    let mut state = (1.0f64, 0.0f64, 0.0f64); // factor, sum, log_scale
    let mut visit = |m: f64| -> bool {
        let (factor, sum, log_scale) = &mut state;
        *sum += m * *factor;
        *factor *= step;
        if *factor < 1e-150 {
            if *sum > 1e-130 {
                // The remaining masses total at most 1, times a factor below 1e-150.
                *sum += *factor;
                return false;
            }
            *sum *= 1e150;
            *factor *= 1e150;
            *log_scale -= 150.0 * std::f64::consts::LN_10;
        }
        true
    };
    if t >= 0.0 {
        for &m in d.masses.iter().rev() {
            if !visit(m) {
                break;
            }
        }
    } else {
        for &m in d.masses.iter() {
            if !visit(m) {
                break;
            }
        }
    }
    let (_, sum, log_scale) = state;
    let anchor = if t >= 0.0 {
        d.offset + n as i64 - 1
    } else {
        d.offset
    };
    sum.ln() + log_scale + t * anchor as f64
}

fn cpow(mut z: Complex<f64>, mut k: u64) -> Complex<f64> {
    let mut acc = Complex::new(1.0, 0.0);
    while k > 0 {
        if k & 1 == 1 {
            acc *= z;
        }
        z = z * z;
        k >>= 1;
    }
    acc
}

pub(crate) fn compose(
    planner: &mut FftPlanner<f64>,
    parts: &[(&Discrete, u64)],
    delta: f64,
    tail_mass: f64,
) -> Result<Composed> {
    let infinity = 1.0
        - parts
            .iter()
            .map(|(d, k)| (1.0 - d.infinity).powf(*k as f64))
            .product::<f64>();
    let base: i128 = parts
        .iter()
        .map(|(d, k)| d.offset as i128 * *k as i128)
        .sum();
    let top: i128 = parts
        .iter()
        .map(|(d, k)| (d.offset as i128 + d.masses.len() as i128 - 1) * *k as i128)
        .sum();
    // Chernoff bounds on the window.
    let log_tail = -tail_mass.ln();
    let (mut hi, mut lo) = (top as f64, base as f64);
    for step in -8..=4 {
        let lambda = 10f64.powf(step as f64 / 2.0);
        let t = lambda * delta;
        let k_pos: f64 = parts.iter().map(|(d, k)| *k as f64 * log_mgf(d, t)).sum();
        let k_neg: f64 = parts.iter().map(|(d, k)| *k as f64 * log_mgf(d, -t)).sum();
        if k_pos.is_finite() {
            hi = hi.min(((k_pos + log_tail) / t).ceil());
        }
        if k_neg.is_finite() {
            lo = lo.max((-(k_neg + log_tail) / t).floor());
        }
    }
    let (lo, hi) = (lo.max(base as f64) as i128, hi.min(top as f64) as i128);
    let (lo, hi) = if lo > hi { (hi, hi) } else { (lo, hi) };
    let width = (hi - lo + 1) as usize;
    if width > MAX_GRID {
        return Err(AccountingError::NumericalLimit {
            method: "PLD composition",
            what: format!(
                "window of {width} grid points exceeds the limit of {MAX_GRID}; use a larger noise_multiplier, a coarser \
                 discretisation (`PldOptions::discretisation` in the library) or the RDP accountant (`--accountant rdp`)"
            ),
        });
    }
    let size = width.next_power_of_two().max(2);
    let fwd = planner.plan_fft_forward(size);
    let inv = planner.plan_fft_inverse(size);
    let mut acc = vec![Complex::new(1.0, 0.0); size];
    for (d, k) in parts {
        let mut buf = vec![Complex::new(0.0, 0.0); size];
        for (j, m) in d.masses.iter().enumerate() {
            buf[j % size].re += m;
        }
        fwd.process(&mut buf);
        for (a, z) in acc.iter_mut().zip(&buf) {
            *a *= cpow(*z, *k);
        }
    }
    inv.process(&mut acc);
    let scale = 1.0 / size as f64;
    let mut most_negative = 0.0f64;
    let mut largest = 0.0f64;
    let masses: Vec<f64> = (0..width)
        .map(|j| {
            let rel = (lo + j as i128 - base).rem_euclid(size as i128) as usize;
            let v = acc[rel].re * scale;
            most_negative = most_negative.min(v);
            largest = largest.max(v);
            v.max(0.0)
        })
        .collect();
    let roundoff = size as f64 * (-most_negative).max(4.0 * f64::EPSILON * largest);
    Ok(Composed {
        lo: lo as i64,
        masses,
        infinity,
        slack: 2.0 * tail_mass + roundoff,
    })
}

impl Composed {
    /// Σ_s m_s (1 − e^{ε − sΔ})₊ + P(L = ∞).
    pub(crate) fn delta_at(&self, epsilon: f64, delta: f64) -> f64 {
        let mut d = self.infinity;
        for (j, m) in self.masses.iter().enumerate().rev() {
            let l = (self.lo + j as i64) as f64 * delta;
            if l <= epsilon {
                break;
            }
            d += m * -(epsilon - l).exp_m1();
        }
        d
    }

    /// The smallest ε with Σ_s m_s (1 − e^{ε − sΔ})₊ + P(L = ∞) ≤ target (may be negative;
    /// +∞ when the infinite mass alone exceeds the target).
    pub(crate) fn epsilon_at(&self, target: f64, delta: f64) -> f64 {
        if self.infinity >= target {
            return f64::INFINITY;
        }
        let (mut a, mut b) = (self.infinity, 0.0f64);
        for (j, m) in self.masses.iter().enumerate().rev() {
            let l = (self.lo + j as i64) as f64 * delta;
            if l < -600.0 {
                return -600.0;
            }
            if b > 0.0 && a - l.exp() * b > target {
                return ((a - target) / b).ln();
            }
            a += m;
            b += m * (-l).exp();
        }
        if a > target && b > 0.0 {
            ((a - target) / b).ln()
        } else {
            f64::NEG_INFINITY
        }
    }
}

/// The composition of nothing: all mass at loss 0.
pub(super) fn nothing_composed() -> Composed {
    Composed {
        lo: 0,
        masses: vec![1.0],
        infinity: 0.0,
        slack: 0.0,
    }
}
