//! One step's privacy loss distribution on the grid iΔ: the subsampled-Gaussian pair in
//! either order, discretised twice (connect-the-dots, dominating; rounded down, dominated).
//! See the module documentation of [`super`] for the method.

use crate::error::{AccountingError, Result};
use dpaudit_gaussian as normal;
use dpaudit_gaussian::log_add_exp;

/// Largest privacy-loss grid the accountant builds (per step and after composition).
pub(super) const MAX_GRID: usize = 1 << 24;
/// How many noise standard deviations each step's grid covers: z with Q(z) = `tail_mass`/`steps`,
/// so that the P-mass beyond the grids of all `steps` steps is at most `tail_mass` (for the
/// upper bound it is sent to +∞, for the lower bound moved onto the grid and charged to δ:
/// accounted either way, so z trades tightness, about `tail_mass` of δ, for grid size).
pub(super) fn grid_quantile(tail_mass: f64, steps: f64) -> f64 {
    normal::inverse_sf(tail_mass / steps.max(1.0))
}

/// Which order of the pair is accounted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    /// P = mixture (record present), Q = N(0,σ²).
    Remove,
    /// P = N(0,σ²), Q = mixture.
    Add,
}

/// One subsampled-Gaussian pair in one order.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pair {
    pub(super) q: f64,
    pub(super) sigma: f64,
    pub(super) dir: Direction,
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

    /// Grid index range [a, b] covering all but a Q(z) tail of the P-mass.
    fn grid_range(&self, delta: f64, z: f64) -> (i64, i64) {
        let s = self.sigma;
        let (lo_loss, hi_loss) = match self.dir {
            Direction::Remove => {
                let lo = if self.q < 1.0 {
                    (-self.q).ln_1p()
                } else {
                    self.loss(-z * s)
                };
                (lo, self.loss(1.0 + z * s))
            }
            Direction::Add => {
                let hi = if self.q < 1.0 {
                    -(-self.q).ln_1p()
                } else {
                    self.loss(-z * s)
                };
                (self.loss(z * s), hi)
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
pub(super) struct Discretised {
    /// Connect-the-dots, dominating.
    pub(super) upper: Discrete,
    /// Rounded down.
    pub(super) lower: Discrete,
    /// Lower bound on E_P[U], the rounding remainder of one step.
    pub(super) mean_remainder: f64,
    /// P-mass below the grid (moved up to the grid in `lower`, charged to δ).
    pub(super) low_tail: f64,
}

/// A grid of loss indices [a, b] (the losses aΔ, …, bΔ).
pub(super) type Grid = (i64, i64);

/// The grid [a, b] (at least two points) of `pair` over ±`z` noise standard deviations
/// ([`grid_quantile`]), or an error when it exceeds [`MAX_GRID`].
pub(super) fn grid(pair: &Pair, delta: f64, z: f64) -> Result<Grid> {
    let (a, b) = pair.grid_range(delta, z);
    let n = (b - a + 1).max(2);
    if n > MAX_GRID as i64 {
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
    Ok((a, a + n - 1))
}

/// The cells [lo, hi) that the bins of the grid [a, b] of order `dir` read (see [`Cells`]).
pub(super) fn cells_read(dir: Direction, (a, b): Grid) -> (i64, i64) {
    match dir {
        Direction::Remove => (a, b),
        Direction::Add => (-b, -a),
    }
}

/// The base N(0,σ²) and mixture (1−q)·N(0,σ²) + q·N(1,σ²) probabilities of the cells
/// {iΔ < ln(mixture/base) < (i+1)Δ}, i = lo, lo + 1, …: a bin of the remove order (loss =
/// the log-ratio) is one cell, and so is a bin of the add order (loss = minus it), so the
/// expensive part, one erfc per boundary and normal, is computed once for both orders.
#[derive(Debug)]
pub(super) struct Cells {
    lo: i64,
    base: Vec<f64>,
    mixture: Vec<f64>,
}

impl Cells {
    /// The cells [lo, hi) of the pair (q, σ), on two threads (each half of the range).
    pub(super) fn new(q: f64, sigma: f64, delta: f64, (lo, hi): (i64, i64)) -> Self {
        let n = (hi - lo).max(0) as usize;
        let mut base = vec![0.0; n];
        let mut mixture = vec![0.0; n];
        let half = n / 2;
        let pair = Pair {
            q,
            sigma,
            dir: Direction::Remove,
        };
        let (b0, b1) = base.split_at_mut(half);
        let (m0, m1) = mixture.split_at_mut(half);
        std::thread::scope(|scope| {
            scope.spawn(|| fill_cells(&pair, delta, lo + half as i64, b1, m1));
            fill_cells(&pair, delta, lo, b0, m0);
        });
        Self { lo, base, mixture }
    }

    /// (base, mixture) probability of cell i (zero outside the computed range).
    fn get(&self, i: i64) -> (f64, f64) {
        usize::try_from(i - self.lo)
            .ok()
            .filter(|&k| k < self.base.len())
            .map_or((0.0, 0.0), |k| (self.base[k], self.mixture[k]))
    }
}

/// Fills the cells from `lo` on: `pair` in the remove order, whose loss is the log-ratio.
fn fill_cells(pair: &Pair, delta: f64, lo: i64, base: &mut [f64], mixture: &mut [f64]) {
    let sigma = pair.sigma;
    // The normal tail probabilities at a cell boundary, for the base N(0,σ²) and the shifted
    // N(1,σ²): one erfc each, computed once as the cells are walked (cell probabilities are
    // differences of these, without cancellation: see `Tail::between`).
    let boundary = |i: i64| {
        let x = pair.x_of_mixture_log_ratio(i as f64 * delta);
        (Tail::new(x / sigma), Tail::new((x - 1.0) / sigma))
    };
    let mut left = boundary(lo);
    for (k, (b, m)) in base.iter_mut().zip(mixture.iter_mut()).enumerate() {
        let right = boundary(lo + k as i64 + 1);
        *b = Tail::between(&left.0, &right.0);
        *m = (1.0 - pair.q) * *b + pair.q * Tail::between(&left.1, &right.1);
        left = right;
    }
}

/// Discretises `pair` on its grid (`grid`, from [`grid`]) with Δ = `delta`, reading the bin
/// probabilities from `cells` (which must cover [`cells_read`] of the grid).
pub(super) fn discretise(pair: &Pair, delta: f64, (a, b): Grid, cells: &Cells) -> Discretised {
    let n = (b - a + 1) as usize;
    let mut upper = vec![0.0; n];
    let mut lower = vec![0.0; n];
    let (low_tail, _) = pair.masses(f64::NEG_INFINITY, a as f64 * delta);
    let (high_tail, _) = pair.masses(b as f64 * delta, f64::INFINITY);
    upper[0] += low_tail;
    lower[0] += low_tail;
    lower[n - 1] += high_tail;
    let spread = -(-delta).exp_m1(); // 1 − e^{−Δ}
    let mut mean_remainder = 0.0;
    for j in 0..n - 1 {
        let i = a + j as i64;
        let l1 = i as f64 * delta;
        let (base, mixture) = match pair.dir {
            Direction::Remove => cells.get(i),
            Direction::Add => cells.get(-i - 1),
        };
        let (p, q) = match pair.dir {
            Direction::Remove => (mixture, base),
            Direction::Add => (base, mixture),
        };
        if p <= 0.0 {
            continue;
        }
        if q > 0.0 {
            // The bin's loss ln(P/Q) ∈ [iΔ, (i+1)Δ] (up to roundoff).
            let loss = (p / q).ln();
            // Mean-preserving split of the ratio between e^{iΔ} and e^{(i+1)Δ}.
            let ratio = (l1 - loss).exp(); // e^{iΔ}·Q/P ∈ [e^{−Δ}, 1]
            let to_upper = (p * (1.0 - ratio) / spread).clamp(0.0, p);
            upper[j] += p - to_upper;
            upper[j + 1] += to_upper;
            mean_remainder += p * (loss - l1).clamp(0.0, delta);
        } else {
            upper[j + 1] += p;
        }
        lower[j] += p;
    }
    Discretised {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One pair discretised on its own (cells for its order only), over ±10 σ.
    fn alone(pair: &Pair, delta: f64) -> Discretised {
        let g = grid(pair, delta, 10.0).unwrap();
        let cells = Cells::new(pair.q, pair.sigma, delta, cells_read(pair.dir, g));
        discretise(pair, delta, g, &cells)
    }

    #[test]
    fn single_step_masses_sum_to_one() {
        for dir in [Direction::Remove, Direction::Add] {
            for (q, s) in [(0.01, 1.0), (1.0, 2.0), (0.3, 0.7)] {
                let d = alone(&Pair { q, sigma: s, dir }, 1e-3);
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
        let d = alone(
            &Pair {
                q: 0.05,
                sigma: 0.8,
                dir: Direction::Remove,
            },
            1e-3,
        );
        let e: f64 = d
            .upper
            .masses
            .iter()
            .enumerate()
            .map(|(j, m)| m * (-((d.upper.offset + j as i64) as f64) * 1e-3).exp())
            .sum();
        assert!((e - 1.0).abs() < 1e-9, "{e}");
    }
}
