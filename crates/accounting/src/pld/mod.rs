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
//! * **Composition** by FFT: one real-to-complex transform per component, raised to its count
//!   by repeated squaring, one inverse. The window is chosen with Chernoff bounds on both tails
//!   (the exponent found by a golden-section search, the bound being unimodal in it), and the
//!   truncated and aliased mass (at most the Chernoff tail bound) is charged to δ in the safe
//!   direction.
//!
//! The result carries (lower, estimate, upper); `upper` is the number to report.

use realfft::RealFftPlanner;

use crate::error::{AccountingError, Result};
use crate::event::Component;

mod compose;
mod discretise;

pub(crate) use compose::compose;
use compose::{nothing_composed, Composed};
pub(crate) use discretise::Discrete;
use discretise::{
    cells_read, discretise, grid, grid_quantile, Cells, Direction, Discretised, Grid, Pair,
};

/// Discretisation settings of the PLD accountant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PldOptions {
    /// Δ, the width of the privacy-loss grid (default 1e-4, as `dp_accounting`'s DP-SGD default).
    /// It is an upper limit: the accountant refines it to 0.05·q·√(e^{1/σ²} − 1) (a twentieth of
    /// the spread of one step's loss) when that is smaller, as for tiny sample rates.
    pub discretisation: f64,
    /// Mass allowed outside the FFT window on each side (default 1e-15), and outside the
    /// single-step grids summed over the steps; charged to δ.
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
        let z = grid_quantile(options.tail_mass, total_steps);
        // Each component's grids in both orders, and the cell probabilities they share.
        let mut grids = Vec::with_capacity(components.len());
        let mut cells = Vec::with_capacity(components.len());
        for c in components {
            let pair = |dir| Pair {
                q: c.sample_rate,
                sigma: c.noise_multiplier,
                dir,
            };
            let remove = grid(&pair(Direction::Remove), delta, z)?;
            // (Without subsampling only the remove order is accounted.)
            let add = if symmetric {
                remove
            } else {
                grid(&pair(Direction::Add), delta, z)?
            };
            let (mut lo, mut hi) = cells_read(Direction::Remove, remove);
            if !symmetric {
                let (l, h) = cells_read(Direction::Add, add);
                (lo, hi) = (lo.min(l), hi.max(h));
            }
            grids.push((remove, add));
            cells.push(Cells::new(
                c.sample_rate,
                c.noise_multiplier,
                delta,
                (lo, hi),
            ));
        }
        let order = |dir| {
            let setting = Setting {
                components,
                grids: &grids,
                cells: &cells,
                tail_mass: options.tail_mass,
                delta,
                hoeffding_delta,
                upper_only,
                total_steps,
            };
            setting.account(dir)
        };
        // The two orders are independent: on two cores they run at once (half the wall time of
        // `dpaudit account`; the same numbers, each order with its own FFT planner).
        let directions = match dirs {
            [one] => vec![order(*one)?],
            _ => std::thread::scope(|scope| {
                let add = scope.spawn(|| order(Direction::Add));
                let remove = order(Direction::Remove);
                let add = add
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                Ok::<_, AccountingError>(vec![remove?, add?])
            })?,
        };
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

/// What the PLD of one order needs: the components and the settings `Pld::build` checked.
struct Setting<'a> {
    components: &'a [Component],
    /// Each component's grid in the remove and the add order.
    grids: &'a [(Grid, Grid)],
    /// Each component's cell probabilities, covering both grids.
    cells: &'a [Cells],
    tail_mass: f64,
    delta: f64,
    hoeffding_delta: f64,
    upper_only: bool,
    total_steps: f64,
}

impl Setting<'_> {
    /// Discretises every component in order `dir` and composes them (the pessimistic grid, and
    /// unless `upper_only` the optimistic one).
    fn account(&self, dir: Direction) -> Result<Accounted> {
        let (components, delta) = (self.components, self.delta);
        let mut planner = RealFftPlanner::<f64>::new();
        let disc: Vec<Discretised> = components
            .iter()
            .zip(self.grids)
            .zip(self.cells)
            .map(|((c, &(remove, add)), cells)| {
                let pair = Pair {
                    q: c.sample_rate,
                    sigma: c.noise_multiplier,
                    dir,
                };
                let g = match dir {
                    Direction::Remove => remove,
                    Direction::Add => add,
                };
                discretise(&pair, delta, g, cells)
            })
            .collect();
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
        let deviation = delta * (self.total_steps * (1.0 / self.hoeffding_delta).ln() / 2.0).sqrt();
        let (upper, lower) = if components.is_empty() {
            (nothing_composed(), nothing_composed())
        } else {
            (
                compose(&mut planner, &uppers, delta, self.tail_mass)?,
                if self.upper_only {
                    nothing_composed()
                } else {
                    compose(&mut planner, &lowers, delta, self.tail_mass)?
                },
            )
        };
        Ok(Accounted {
            upper_only: self.upper_only,
            upper,
            lower,
            shift: (mean_shift - deviation).max(0.0),
            mean_shift,
            lower_charge: low_tail + self.hoeffding_delta,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpaudit_gaussian as normal;

    fn comp(q: f64, sigma: f64, count: u64) -> Component {
        Component {
            sample_rate: q,
            noise_multiplier: sigma,
            count,
        }
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
