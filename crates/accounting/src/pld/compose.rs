//! Composition of discretised PLDs by FFT over a window chosen with Chernoff bounds, and
//! δ(ε) / ε(δ) of the composed distribution. See the module documentation of [`super`].

use realfft::num_complex::Complex;
use realfft::RealFftPlanner;

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

/// ln Σ_j m_j e^{t·i_j} for the masses of `d`, up to roundoff (where it stops early it adds a
/// bound on the rest, at most 1e-20 relative). Walked from the end where the exponent is
/// largest in blocks: within a block the weights r^0, r^1, … (r = e^{−|t|}) come from one table,
/// so a block is a dot product of independent terms; a running factor r^{len·b} carries the
/// blocks and is rescaled as it shrinks, so that nothing relevant underflows.
fn log_mgf(d: &Discrete, t: f64) -> f64 {
    const MAX_BLOCK: usize = 64;
    let n = d.masses.len();
    let r = (-t.abs()).exp();
    // The table stays above e^{−300}, so neither it nor the factor leaves the normal range.
    let len = ((300.0 / t.abs()) as usize).clamp(1, MAX_BLOCK);
    let mut weights = [0.0f64; MAX_BLOCK];
    let mut w = 1.0f64;
    for x in &mut weights[..len] {
        *x = w;
        w *= r;
    }
    let block_factor = w; // r^len
    let (mut factor, mut sum, mut log_scale) = (1.0f64, 0.0f64, 0.0f64);
    let mut add_block = |block_sum: f64| -> bool {
        sum += factor * block_sum;
        factor *= block_factor;
        if factor < 1e-150 {
            if sum > 1e-130 {
                // The remaining masses total at most 1, times a factor below 1e-150.
                sum += factor;
                return false;
            }
            sum *= 1e150;
            factor *= 1e150;
            log_scale -= 150.0 * std::f64::consts::LN_10;
        }
        true
    };
    if t >= 0.0 {
        // From the end: a block's last mass has weight r^0, so the table is read backwards.
        let mut reversed = [0.0f64; MAX_BLOCK];
        for (x, w) in reversed[..len].iter_mut().zip(weights[..len].iter().rev()) {
            *x = *w;
        }
        for block in d.masses.rchunks(len) {
            if !add_block(dot(block, &reversed[len - block.len()..len])) {
                break;
            }
        }
    } else {
        for block in d.masses.chunks(len) {
            if !add_block(dot(block, &weights[..block.len()])) {
                break;
            }
        }
    }
    let anchor = if t >= 0.0 {
        d.offset + n as i64 - 1
    } else {
        d.offset
    };
    sum.ln() + log_scale + t * anchor as f64
}

/// Σ a_j b_j over slices of equal length, in four interleaved partial sums.
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0f64; 4];
    let (a4, b4) = (a.chunks_exact(4), b.chunks_exact(4));
    let tail: f64 = a4
        .remainder()
        .iter()
        .zip(b4.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a4.zip(b4) {
        for l in 0..4 {
            acc[l] += x[l] * y[l];
        }
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// `acc[f] *= z[f]^k` for every f, by repeated squaring of `z` (which is overwritten): the
/// squarings run over the whole spectrum at once, so they vectorise.
fn multiply_by_power(acc: &mut [Complex<f64>], z: &mut [Complex<f64>], mut k: u64) {
    while k > 0 {
        if k & 1 == 1 {
            for (a, x) in acc.iter_mut().zip(z.iter()) {
                *a *= *x;
            }
        }
        k >>= 1;
        if k > 0 {
            for x in z.iter_mut() {
                *x = *x * *x;
            }
        }
    }
}

/// The most a sum of `parts` exceeds `ln(1/tail_mass)`-quantile of its upper (`sign` = 1) or
/// lower (`sign` = −1) tail, by the Chernoff bound P(±S ≥ h) ≤ exp(K(±t) − t·h) with the
/// cumulant K of the sum: the smallest h (in grid indices, signed like the tail) over the
/// exponents t = λΔ, λ ∈ [10⁻⁴, 10²]. Every λ gives a valid bound; (K(t) + ln(1/tail))/t is
/// unimodal in t (its derivative changes sign once, as t·K′(t) − K(t) grows with t for a
/// convex K), so a golden-section search on log λ finds the tightest (to the search's
/// resolution; the smallest h seen is used).
fn chernoff_edge(parts: &[(&Discrete, u64)], delta: f64, log_tail: f64, sign: f64) -> f64 {
    let h = |log_lambda: f64| {
        let t = 10f64.powf(log_lambda) * delta;
        let k: f64 = parts
            .iter()
            .map(|(d, k)| *k as f64 * log_mgf(d, sign * t))
            .sum();
        if k.is_finite() {
            (k + log_tail) / t
        } else {
            f64::INFINITY
        }
    };
    const GOLDEN: f64 = 0.618_033_988_749_894_9; // (√5 − 1)/2
    let (mut a, mut b) = (-4.0f64, 2.0f64);
    let mut c = b - GOLDEN * (b - a);
    let mut d = a + GOLDEN * (b - a);
    let (mut hc, mut hd) = (h(c), h(d));
    // The ends too: a tail bounded by the support (as the remove order's lower tail) is tightest
    // at the largest λ.
    let mut best = hc.min(hd).min(h(a)).min(h(b));
    // 12 steps narrow the six decades of λ to 0.02 of a decade.
    for _ in 0..12 {
        if hc <= hd {
            (b, d, hd) = (d, c, hc);
            c = b - GOLDEN * (b - a);
            hc = h(c);
            best = best.min(hc);
        } else {
            (a, c, hc) = (c, d, hd);
            d = a + GOLDEN * (b - a);
            hd = h(d);
            best = best.min(hd);
        }
    }
    sign * best
}

pub(crate) fn compose(
    planner: &mut RealFftPlanner<f64>,
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
    let hi = chernoff_edge(parts, delta, log_tail, 1.0).ceil();
    let lo = chernoff_edge(parts, delta, log_tail, -1.0).floor();
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
    // Real input, so a real-to-complex transform: half the spectrum (the rest is its conjugate).
    let size = width.next_power_of_two().max(2);
    let fwd = planner.plan_fft_forward(size);
    let inv = planner.plan_fft_inverse(size);
    let mut input = fwd.make_input_vec();
    let mut spectrum = fwd.make_output_vec();
    let mut acc = vec![Complex::new(1.0, 0.0); spectrum.len()];
    for (d, k) in parts {
        input.fill(0.0);
        // The grid wraps around the transform (index j lands at j mod size).
        for chunk in d.masses.chunks(size) {
            for (x, m) in input.iter_mut().zip(chunk) {
                *x += m;
            }
        }
        fwd.process(&mut input, &mut spectrum)
            .map_err(|e| fft_error(&e))?;
        multiply_by_power(&mut acc, &mut spectrum, *k);
    }
    // The spectrum of a real sequence is real at frequency 0 and size/2; products keep that
    // exactly, and the inverse transform requires it.
    let nyquist = acc.len() - 1;
    acc[0].im = 0.0;
    acc[nyquist].im = 0.0;
    let mut out = inv.make_output_vec();
    inv.process(&mut acc, &mut out).map_err(|e| fft_error(&e))?;
    drop(acc);
    let scale = 1.0 / size as f64;
    let mut most_negative = 0.0f64;
    let mut largest = 0.0f64;
    // Index lo of the composed grid sits at (lo − base) mod size of the transform.
    let start = (lo - base).rem_euclid(size as i128) as usize;
    let masses: Vec<f64> = (0..width)
        .map(|j| {
            let v = out[(start + j) % size] * scale;
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

/// An FFT that refuses its buffers (their lengths come from its own plan, so this is a bug).
fn fft_error(e: &realfft::FftError) -> AccountingError {
    AccountingError::NumericalLimit {
        method: "PLD composition",
        what: format!("the real FFT refused its input: {e}"),
    }
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
