//! Privacy loss distribution (PLD) accounting for compositions of Poisson-subsampled
//! Gaussian mechanisms under add/remove (equivalently zero-out) adjacency.
//!
//! Method (Koskela et al. 2020; Meiser & Mohammadi 2018; Doroshenko et al. 2022 "Connect the
//! dots"; the construction used by Google's `dp_accounting`), derived here from first principles:
//!
//! * For one step the pair is P = (1−q)·N(0,σ²) + q·N(1,σ²) and Q = N(0,σ²). Both orders
//!   (P‖Q, "remove", and Q‖P, "add") are accounted and the worse is reported.
//! * **Upper bound (pessimistic by construction).** The privacy loss L = ln(dP/dQ) is put on
//!   the grid iΔ by a *mean-preserving spread* of the likelihood ratio ("connect the dots"):
//!   the mass of a loss bin (iΔ, (i+1)Δ) is split between its two end points so that E_Q[dP/dQ]
//!   is preserved. The discrete pair dominates the true one (its hockey-stick divergence is the
//!   chord of a convex function), so every composition of it dominates as well. Mass above the
//!   grid goes to +∞, mass below it is rounded up.
//! * **Lower bound.** Losses rounded *down* to the grid (a pointwise smaller loss gives a smaller
//!   δ(ε) = E_P[(1 − e^{ε−L})₊]); the systematic shift Σ U_j of the k rounding remainders
//!   U_j ∈ [0, Δ] is put back as its (Jensen) lower bound minus a Hoeffding deviation, with the
//!   failure probability charged to δ.
//! * **Composition** by FFT: one transform per component, raised to its count, one inverse.
//!   The window is chosen with Chernoff bounds on both tails, and the truncated and aliased mass
//!   (at most the Chernoff tail bound) is charged to δ in the safe direction.
//!
//! The result carries (lower, estimate, upper); `upper` is the number to report.

use rustfft::num_complex::Complex;
use rustfft::FftPlanner;

use crate::error::{AccountingError, Result};
use crate::event::Component;
use crate::normal;

/// Discretisation settings of the PLD accountant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PldOptions {
    /// Δ, the width of the privacy-loss grid (default 1e-4, as `dp_accounting`'s DP-SGD default).
    /// It is an upper limit: the accountant refines it to 0.05·q·√(e^{1/σ²} − 1) (a twentieth of
    /// the spread of one step's loss) when that is smaller, as for tiny sample rates.
    pub discretisation: f64,
    /// Mass allowed outside the FFT window on each side (default 1e-15); charged to δ.
    pub tail_mass: f64,
}

impl Default for PldOptions {
    fn default() -> Self {
        Self {
            discretisation: 1e-4,
            tail_mass: 1e-15,
        }
    }
}

/// Finest grid the accountant chooses on its own (see `PldOptions::discretisation`).
const MIN_DISCRETISATION: f64 = 1e-8;
/// Largest privacy-loss grid the accountant builds (per step and after composition).
const MAX_GRID: usize = 1 << 24;
/// Per-step tail quantile of the noise: the grid covers ±Z standard deviations (Φ̄(10) ≈ 7.6e-24).
const Z: f64 = 10.0;

/// Which order of the pair is accounted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// P = mixture (record present), Q = N(0,σ²).
    Remove,
    /// P = N(0,σ²), Q = mixture.
    Add,
}

/// One subsampled-Gaussian pair in one order.
#[derive(Debug, Clone, Copy)]
struct Pair {
    q: f64,
    sigma: f64,
    dir: Direction,
}

fn log_add_exp(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let m = a.max(b);
    m + ((a - m).exp() + (b - m).exp()).ln()
}

impl Pair {
    /// ln((1−q) + q·e^{(2x−1)/(2σ²)}): the loss of the mixture against N(0,σ²) at x.
    fn mixture_log_ratio(&self, x: f64) -> f64 {
        let e = (2.0 * x - 1.0) / (2.0 * self.sigma * self.sigma);
        let log_one_minus_q = if self.q < 1.0 {
            (-self.q).ln_1p()
        } else {
            f64::NEG_INFINITY
        };
        log_add_exp(log_one_minus_q, self.q.ln() + e)
    }

    fn loss(&self, x: f64) -> f64 {
        match self.dir {
            Direction::Remove => self.mixture_log_ratio(x),
            Direction::Add => -self.mixture_log_ratio(x),
        }
    }

    /// The x at which the mixture log-ratio equals `r` (−∞ when r ≤ ln(1−q)).
    fn x_of_mixture_log_ratio(&self, r: f64) -> f64 {
        if r == f64::INFINITY {
            return f64::INFINITY;
        }
        let em = r.exp_m1();
        if em <= -self.q {
            return f64::NEG_INFINITY;
        }
        let s2 = self.sigma * self.sigma;
        // (e^r − (1−q))/q = 1 + expm1(r)/q; for large r use r − ln q + ln1p(−(1−q)e^{−r}).
        let log_term = if r > 30.0 {
            r - self.q.ln() + (-(1.0 - self.q) * (-r).exp()).ln_1p()
        } else {
            (em / self.q).ln_1p()
        };
        s2 * log_term + 0.5
    }

    /// P- and Q-mass of the event {l1 < L < l2} (l1 < l2, either may be infinite).
    fn masses(&self, l1: f64, l2: f64) -> (f64, f64) {
        let s = self.sigma;
        let mixture = |u: f64, v: f64| {
            (1.0 - self.q) * normal::interval(u / s, v / s)
                + self.q * normal::interval((u - 1.0) / s, (v - 1.0) / s)
        };
        let base = |u: f64, v: f64| normal::interval(u / s, v / s);
        match self.dir {
            Direction::Remove => {
                let (u, v) = (
                    self.x_of_mixture_log_ratio(l1),
                    self.x_of_mixture_log_ratio(l2),
                );
                (mixture(u, v), base(u, v))
            }
            Direction::Add => {
                let (u, v) = (
                    self.x_of_mixture_log_ratio(-l2),
                    self.x_of_mixture_log_ratio(-l1),
                );
                (base(u, v), mixture(u, v))
            }
        }
    }

    /// Grid index range [a, b] covering all but a Φ̄(Z) tail of the P-mass.
    fn grid_range(&self, delta: f64) -> (i64, i64) {
        let s = self.sigma;
        let (lo_loss, hi_loss) = match self.dir {
            Direction::Remove => {
                let lo = if self.q < 1.0 {
                    (-self.q).ln_1p()
                } else {
                    self.loss(-Z * s)
                };
                (lo, self.loss(1.0 + Z * s))
            }
            Direction::Add => {
                let hi = if self.q < 1.0 {
                    -(-self.q).ln_1p()
                } else {
                    self.loss(-Z * s)
                };
                (self.loss(Z * s), hi)
            }
        };
        (
            (lo_loss / delta).floor() as i64,
            (hi_loss / delta).ceil() as i64,
        )
    }
}

/// A standard-normal tail probability at u: Φ(u) for u < 0, 1 − Φ(u) otherwise.
#[derive(Debug, Clone, Copy)]
struct Tail {
    u: f64,
    t: f64,
}

impl Tail {
    fn new(u: f64) -> Self {
        let t = if u < 0.0 {
            normal::cdf(u)
        } else {
            normal::sf(u)
        };
        Self { u, t }
    }

    /// P(a < Z < b) from the stored tails.
    fn between(a: &Tail, b: &Tail) -> f64 {
        if b.u <= a.u {
            return 0.0;
        }
        let p = if a.u >= 0.0 {
            a.t - b.t
        } else if b.u < 0.0 {
            b.t - a.t
        } else {
            1.0 - a.t - b.t
        };
        p.max(0.0)
    }
}

/// A discretised single-step PLD on the grid iΔ, i = offset .. offset + masses.len().
#[derive(Debug, Clone)]
pub(crate) struct Discrete {
    pub(crate) offset: i64,
    pub(crate) masses: Vec<f64>,
    pub(crate) infinity: f64,
}

/// Both discretisations of one component in one order.
#[derive(Debug)]
struct Discretised {
    /// Connect-the-dots, dominating.
    upper: Discrete,
    /// Rounded down.
    lower: Discrete,
    /// Lower bound on E_P[U], the rounding remainder of one step.
    mean_remainder: f64,
    /// P-mass below the grid (moved up to the grid in `lower`, charged to δ).
    low_tail: f64,
}

fn discretise(pair: &Pair, delta: f64) -> Result<Discretised> {
    let (a, b) = pair.grid_range(delta);
    let n = (b - a + 1).max(2) as usize;
    let b = a + n as i64 - 1;
    if n > MAX_GRID {
        return Err(AccountingError::NumericalLimit {
            method: "PLD discretisation",
            what: format!(
                "{n} grid points for sample_rate = {}, noise_multiplier = {} at discretisation {delta} (limit {MAX_GRID}); use a \
                 larger noise_multiplier, a coarser discretisation (`PldOptions::discretisation` in the library) or the RDP \
                 accountant (`--accountant rdp`)",
                pair.q, pair.sigma
            ),
        });
    }
    let mut upper = vec![0.0; n];
    let mut lower = vec![0.0; n];
    let (low_tail, _) = pair.masses(f64::NEG_INFINITY, a as f64 * delta);
    let (high_tail, _) = pair.masses(b as f64 * delta, f64::INFINITY);
    upper[0] += low_tail;
    lower[0] += low_tail;
    lower[n - 1] += high_tail;
    let spread = -(-delta).exp_m1(); // 1 − e^{−Δ}
                                     // Normal tail probabilities at every grid boundary, one erfc per boundary and component;
                                     // bin masses are differences of these (no cancellation: see `Tail::between`).
    let sigma = pair.sigma;
    let xs: Vec<f64> = (0..n)
        .map(|j| {
            let l = (a + j as i64) as f64 * delta;
            match pair.dir {
                Direction::Remove => pair.x_of_mixture_log_ratio(l),
                Direction::Add => pair.x_of_mixture_log_ratio(-l),
            }
        })
        .collect();
    let t0: Vec<Tail> = xs.iter().map(|&x| Tail::new(x / sigma)).collect();
    let t1: Vec<Tail> = xs.iter().map(|&x| Tail::new((x - 1.0) / sigma)).collect();
    let mut mean_remainder = 0.0;
    for j in 0..n - 1 {
        let i = a + j as i64;
        let l1 = i as f64 * delta;
        let (lo, hi) = match pair.dir {
            Direction::Remove => (j, j + 1),
            Direction::Add => (j + 1, j),
        };
        let base = Tail::between(&t0[lo], &t0[hi]);
        let mixture = (1.0 - pair.q) * base + pair.q * Tail::between(&t1[lo], &t1[hi]);
        let (p, q) = match pair.dir {
            Direction::Remove => (mixture, base),
            Direction::Add => (base, mixture),
        };
        if p <= 0.0 {
            continue;
        }
        // Mean-preserving split of the ratio between e^{iΔ} and e^{(i+1)Δ}.
        let to_upper = if q > 0.0 {
            let ratio = (l1 + q.ln() - p.ln()).exp(); // e^{iΔ}·Q/P ∈ [e^{−Δ}, 1]
            (p * (1.0 - ratio) / spread).clamp(0.0, p)
        } else {
            p
        };
        upper[j] += p - to_upper;
        upper[j + 1] += to_upper;
        lower[j] += p;
        if q > 0.0 {
            mean_remainder += p * ((p / q).ln() - l1).clamp(0.0, delta);
        }
    }
    Ok(Discretised {
        upper: Discrete {
            offset: a,
            masses: upper,
            infinity: high_tail,
        },
        lower: Discrete {
            offset: a,
            masses: lower,
            infinity: 0.0,
        },
        mean_remainder,
        low_tail,
    })
}

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
fn nothing_composed() -> Composed {
    Composed {
        lo: 0,
        masses: vec![1.0],
        infinity: 0.0,
        slack: 0.0,
    }
}

/// PLD result for one order of the pair.
#[derive(Debug)]
struct Accounted {
    upper_only: bool,
    upper: Composed,
    lower: Composed,
    /// Shift put back on the rounded-down losses: (Jensen mean of Σ U) − Hoeffding deviation.
    shift: f64,
    /// The Jensen mean of Σ U, used for the estimate.
    mean_shift: f64,
    /// δ charged to the lower bound: lower-tail events and the Hoeffding failure probability.
    lower_charge: f64,
}

/// ε with numerical error bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PldEpsilon {
    /// A valid lower bound on the true ε(δ) of the composition.
    pub lower: f64,
    /// Best estimate (mean-corrected rounding), within [lower, upper].
    pub estimate: f64,
    /// A valid upper bound (pessimistic up to floating-point roundoff): the number to report.
    pub upper: f64,
}

/// δ with numerical error bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PldDelta {
    /// Lower bound on the true δ(ε).
    pub lower: f64,
    /// Upper bound on the true δ(ε): the number to report.
    pub upper: f64,
}

/// The PLD accountant for a set of components (all in both orders).
#[derive(Debug)]
pub struct Pld {
    directions: Vec<Accounted>,
    discretisation: f64,
}

/// Relative failure probability of the Hoeffding step, as a fraction of the target δ.
const HOEFFDING_FRACTION: f64 = 1e-3;

impl Pld {
    /// Builds and composes the PLDs of `components` (empty: the mechanism that reveals nothing).
    /// `hoeffding_delta` is the probability charged to δ for the lower bound's deviation step.
    pub fn new(
        components: &[Component],
        options: PldOptions,
        hoeffding_delta: f64,
    ) -> Result<Self> {
        Self::build(components, options, hoeffding_delta, false)
    }

    /// Only the upper bound (the lower-bound composition is skipped; `lower` is then 0):
    /// half the work, for calibration.
    pub fn new_upper_only(components: &[Component], options: PldOptions) -> Result<Self> {
        Self::build(components, options, 1e-15, true)
    }

    fn build(
        components: &[Component],
        options: PldOptions,
        hoeffding_delta: f64,
        upper_only: bool,
    ) -> Result<Self> {
        let delta = options.discretisation;
        if !(delta.is_finite() && delta > 0.0 && delta <= 0.1) {
            return Err(AccountingError::InvalidParameter {
                name: "discretisation",
                value: delta,
                expected: "a number in (0, 0.1]",
            });
        }
        if !(options.tail_mass.is_finite() && options.tail_mass > 0.0 && options.tail_mass < 1e-6) {
            return Err(AccountingError::InvalidParameter {
                name: "tail_mass",
                value: options.tail_mass,
                expected: "a number in (0, 1e-6)",
            });
        }
        // The grid must be fine compared with the spread of one step's loss, or the mean-preserving
        // spread (variance ≤ Δ²/4 per step) swamps the true variance (≈ q²(e^{1/σ²} − 1)).
        let delta = components
            .iter()
            .map(|c| {
                let s2 = c.noise_multiplier * c.noise_multiplier;
                0.05 * c.sample_rate * (1.0 / s2).exp_m1().sqrt()
            })
            .fold(delta, f64::min)
            .max(MIN_DISCRETISATION);
        let symmetric = components.iter().all(|c| !c.is_subsampled());
        let dirs: &[Direction] = if symmetric {
            &[Direction::Remove]
        } else {
            &[Direction::Remove, Direction::Add]
        };
        let total_steps: f64 = components.iter().map(|c| c.count as f64).sum();
        let mut directions = Vec::new();
        let mut planner = FftPlanner::<f64>::new();
        for &dir in dirs {
            let disc: Vec<Discretised> = components
                .iter()
                .map(|c| {
                    discretise(
                        &Pair {
                            q: c.sample_rate,
                            sigma: c.noise_multiplier,
                            dir,
                        },
                        delta,
                    )
                })
                .collect::<Result<_>>()?;
            let uppers: Vec<(&Discrete, u64)> = disc
                .iter()
                .zip(components)
                .map(|(d, c)| (&d.upper, c.count))
                .collect();
            let lowers: Vec<(&Discrete, u64)> = disc
                .iter()
                .zip(components)
                .map(|(d, c)| (&d.lower, c.count))
                .collect();
            let mean_shift: f64 = disc
                .iter()
                .zip(components)
                .map(|(d, c)| d.mean_remainder * c.count as f64)
                .sum();
            let low_tail: f64 = disc
                .iter()
                .zip(components)
                .map(|(d, c)| d.low_tail * c.count as f64)
                .sum();
            let deviation = delta * (total_steps * (1.0 / hoeffding_delta).ln() / 2.0).sqrt();
            let (upper, lower) = if components.is_empty() {
                (nothing_composed(), nothing_composed())
            } else {
                (
                    compose(&mut planner, &uppers, delta, options.tail_mass)?,
                    if upper_only {
                        nothing_composed()
                    } else {
                        compose(&mut planner, &lowers, delta, options.tail_mass)?
                    },
                )
            };
            directions.push(Accounted {
                upper_only,
                upper,
                lower,
                shift: (mean_shift - deviation).max(0.0),
                mean_shift,
                lower_charge: low_tail + hoeffding_delta,
            });
        }
        Ok(Self {
            directions,
            discretisation: delta,
        })
    }

    /// ε(δ), the worse of the two orders, with (lower, estimate, upper).
    pub fn epsilon(&self, target_delta: f64) -> PldEpsilon {
        let dx = self.discretisation;
        let mut out = PldEpsilon {
            lower: 0.0,
            estimate: 0.0,
            upper: 0.0,
        };
        for d in &self.directions {
            let upper_target = target_delta - d.upper.slack;
            let upper = if upper_target <= 0.0 {
                f64::INFINITY
            } else {
                d.upper.epsilon_at(upper_target, dx)
            };
            let (lower, estimate) = if d.upper_only {
                (0.0, upper)
            } else {
                (
                    d.lower
                        .epsilon_at(target_delta + d.lower.slack + d.lower_charge, dx)
                        + d.shift,
                    d.lower.epsilon_at(target_delta, dx) + d.mean_shift,
                )
            };
            let lower = lower.max(0.0);
            let upper = upper.max(0.0);
            out.lower = out.lower.max(lower.min(upper));
            out.upper = out.upper.max(upper);
            out.estimate = out.estimate.max(estimate.clamp(lower.min(upper), upper));
        }
        out
    }

    /// δ(ε), the worse of the two orders, with (lower, upper).
    pub fn delta(&self, epsilon: f64) -> PldDelta {
        let dx = self.discretisation;
        let mut out = PldDelta {
            lower: 0.0,
            upper: 0.0,
        };
        for d in &self.directions {
            let upper = (d.upper.delta_at(epsilon, dx) + d.upper.slack).min(1.0);
            let lower = if d.upper_only {
                0.0
            } else {
                (d.lower.delta_at(epsilon - d.shift, dx) - d.lower.slack - d.lower_charge).max(0.0)
            };
            out.upper = out.upper.max(upper);
            out.lower = out.lower.max(lower.min(upper));
        }
        out
    }
}

/// The Hoeffding failure probability used for a target δ.
pub(crate) fn hoeffding_delta_for(target_delta: f64) -> f64 {
    (target_delta * HOEFFDING_FRACTION).max(1e-300)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comp(q: f64, sigma: f64, count: u64) -> Component {
        Component {
            sample_rate: q,
            noise_multiplier: sigma,
            count,
        }
    }

    #[test]
    fn single_step_masses_sum_to_one() {
        for dir in [Direction::Remove, Direction::Add] {
            for (q, s) in [(0.01, 1.0), (1.0, 2.0), (0.3, 0.7)] {
                let d = discretise(&Pair { q, sigma: s, dir }, 1e-3).unwrap();
                let total: f64 = d.upper.masses.iter().sum::<f64>() + d.upper.infinity;
                assert!((total - 1.0).abs() < 1e-12, "{dir:?} q={q} s={s}: {total}");
                let total: f64 = d.lower.masses.iter().sum::<f64>();
                assert!((total - 1.0).abs() < 1e-12, "{dir:?} q={q} s={s}: {total}");
            }
        }
    }

    #[test]
    fn connect_the_dots_preserves_expected_ratio() {
        // E_P[e^{−L}] = Q(P > 0) = 1 for the true pair; the mean-preserving split keeps it
        // (up to the mass sent to +∞, whose e^{−L} is 0).
        let d = discretise(
            &Pair {
                q: 0.05,
                sigma: 0.8,
                dir: Direction::Remove,
            },
            1e-3,
        )
        .unwrap();
        let e: f64 = d
            .upper
            .masses
            .iter()
            .enumerate()
            .map(|(j, m)| m * (-((d.upper.offset + j as i64) as f64) * 1e-3).exp())
            .sum();
        assert!((e - 1.0).abs() < 1e-9, "{e}");
    }

    #[test]
    fn gaussian_single_step_matches_closed_form() {
        // Non-subsampled Gaussian: δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) with μ = 1/σ
        // (Balle & Wang 2018, Thm 8; Dong, Roth & Su 2022, Cor. 2.13).
        let pld = Pld::new(&[comp(1.0, 1.0, 1)], PldOptions::default(), 1e-12).unwrap();
        for eps in [0.5, 1.0, 2.0] {
            let exact = normal::cdf(-eps + 0.5) - eps.exp() * normal::cdf(-eps - 0.5);
            let d = pld.delta(eps);
            assert!(
                d.lower <= exact + 1e-12 && exact <= d.upper + 1e-12,
                "{eps}: {d:?} vs {exact}"
            );
            assert!(
                (d.upper - exact).abs() < 1e-6 * exact.max(1e-3),
                "{eps}: {d:?} vs {exact}"
            );
        }
    }
}
