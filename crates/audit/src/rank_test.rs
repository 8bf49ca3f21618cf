//! The rank test: one exact test of a trade-off curve at a threshold fixed by
//! a rank, using both error counts at once.
//!
//! **The statement.** Let the threshold τ be the `(k+1)`-th largest of the
//! `n₀` non-member scores (the *rank* side), and let `c` of the `n₁` member
//! scores lie at or below it (the *count* side: false negatives of the test
//! "member iff score > τ"). Write `S(t) = P[non-member score > t]` and
//! `F(t) = P[member score ≤ t]` for the test's two error rates at `t`. If the
//! mechanism is `f`-DP (f a trade-off curve), then for every `t`,
//! `F(t) ≥ f(S(t))` (Dong, Roth & Su 2022, Def. 2.1/2.3; for an (ε, δ)
//! claim `f = f_{ε,δ}`, Wasserman & Zhou 2010 Prop. 2.5; for μ-GDP `f = G_μ`).
//! Then:
//! 1. `S(τ)` is stochastically at most `U ~ Beta(k + 1, n₀ − k)`: `S(Y)` of
//!    a non-member score is at most uniform (exactly uniform without ties),
//!    and `S(τ)` is the `(k+1)`-th smallest of `n₀` such values;
//! 2. given τ the members are independent of it, so `c ~ Bin(n₁, F(τ))`;
//! 3. `P[Bin(n₁, p) ≤ c]` falls as `p` grows and `f` falls as its argument
//!    grows, so `P[C ≤ c] ≤ E[ P[Bin(n₁, f(U)) ≤ c] ] =: p_f(c)`, which is
//!    non-decreasing in `c`; hence `P[p_f(C) ≤ a] ≤ a` for every level `a`.
//!
//! So "reject f-DP when `p_f(c) ≤ a`" is a valid test at level `a`, and for a
//! family `f_θ` whose curves fall as θ grows (less privacy), the largest θ
//! rejected is a lower bound on the mechanism's θ with confidence `1 − a`.
//! The mirror image, with the threshold at the `(j+1)`-th smallest member
//! score ("member iff score ≥ it") and the count of non-members at or above
//! it, uses the other half of the DP guarantee (the pair of distributions in
//! the other order, `S ≥ f(F)`).
//!
//! **Why not two Clopper–Pearson limits.** Bounding each error rate
//! separately at tail `a/2` and joining them by a union bound spends the
//! level twice and adds the two margins; the rank test spends it once on
//! the one statement that matters (is the point below the curve?) and its
//! margin combines the two sampling errors as variances do. On Gaussian
//! scores this raises the valid GDP bound by 2–12 % and the (ε, δ) bound by
//! 4–70 % (`docs/audit-statistics.md`, §2).
//!
//! **Computing `p_f(c)`** as an upper Riemann sum over the law of `U`: for
//! points `0 = u₀ < u₁ < … < u_N = 1`, `Σ P[u_{i−1} < U ≤ u_i] g(u_i) ≥
//! E[g(U)]` for the non-decreasing `g(u) = P[Bin(n₁, f(u)) ≤ c]`, whatever
//! the points; each mass is a difference of two incomplete beta values,
//! each taken from its smaller tail so that it keeps its precision far out.
//! The points start from a normal approximation of `U` and are refined
//! where the gap to the lower sum is largest, until that gap is below 2 %
//! of the sum (or, for a decision at a level, until the level is outside
//! the two sums): the p-value is an upper bound, tight to that margin,
//! never an approximation from below.

use std::collections::BTreeMap;

use crate::gaussian::{inverse_cdf, sf};
use crate::special::{
    beta_bin_mass, ln_beta_inc_tails, ln_binomial_cdf, narrow_rejection_bracket, seed_beta_grid,
    split_bin,
};

/// The curves tested.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Curve {
    /// `f_{ε,δ}(u) = max{0, 1 − δ − e^ε u, e^{−ε}(1 − δ − u)}`; θ = ε.
    EpsDelta {
        /// δ of the claim.
        delta: f64,
    },
    /// `G_μ(u) = Φ(Φ⁻¹(1 − u) − μ)`; θ = μ.
    Gaussian,
}

impl Curve {
    /// What [`Curve::at`] needs of `u` that does not depend on θ: `u`
    /// itself, or for the Gaussian curve `Φ⁻¹(1 − u) = −Φ⁻¹(u)` (exact in
    /// the lower tail).
    fn key(self, u: f64) -> f64 {
        match self {
            Curve::EpsDelta { .. } => u,
            Curve::Gaussian => {
                if u <= 0.0 {
                    f64::INFINITY
                } else if u >= 1.0 {
                    f64::NEG_INFINITY
                } else {
                    -inverse_cdf(u)
                }
            }
        }
    }

    /// `(f_θ(u), 1 − f_θ(u))`, each computed directly, from `u` and its
    /// [`Curve::key`].
    fn at(self, theta: f64, u: f64, key: f64) -> (f64, f64) {
        if u <= 0.0 {
            return match self {
                Curve::EpsDelta { delta } => (1.0 - delta, delta),
                Curve::Gaussian => (1.0, 0.0),
            };
        }
        if u >= 1.0 {
            return (0.0, 1.0);
        }
        match self {
            Curve::EpsDelta { delta } => {
                let e = theta.exp();
                let f = ((1.0 - delta) - e * u).max((1.0 - delta - u) / e).max(0.0);
                let q = (delta + e * u).min(1.0 - (1.0 - delta - u) / e).min(1.0);
                (f, q)
            }
            Curve::Gaussian => {
                // f = Φ(Φ⁻¹(1 − u) − μ); the smaller tail directly.
                let x = key - theta;
                if x > 0.0 {
                    let q = sf(x);
                    (1.0 - q, q)
                } else {
                    let p = sf(-x);
                    (p, 1.0 - p)
                }
            }
        }
    }
}

/// One statement of the rank test: the threshold is the order statistic of
/// rank `rank` (0 = the most extreme) of the `n_rank` scores of one class;
/// `count` of the `n_count` scores of the other class are errors at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RankStatement {
    /// Rank of the threshold in its class.
    pub rank: u64,
    /// Size of the rank class.
    pub n_rank: u64,
    /// Errors of the other class at the threshold.
    pub count: u64,
    /// Size of the count class.
    pub n_count: u64,
}

/// Relative gap between the upper and lower Riemann sums at which the
/// refinement stops. Overstating a p-value by 2 % is testing at 0.98 times
/// the level: at level 10⁻³ the normal quantile moves from 3.090 to 3.096,
/// which no bound notices; the sums converge only as 1/N, so a tighter gap
/// would cost many more evaluations for nothing.
const REL_GAP: f64 = 2e-2;
/// Most refinements per p-value (a safeguard against sums far below any
/// level, which need no precision).
const MAX_REFINE: usize = 200;
/// Largest θ searched.
const THETA_MAX: f64 = 128.0;
/// Tolerance of the θ search, relative to max(1, θ).
const THETA_TOL: f64 = 1e-5;

/// How precisely a search computes: the final one at [`REL_GAP`] and
/// [`THETA_TOL`], a rough one (to rank candidates; its result is a valid,
/// slightly smaller bound) at 10 % and 10⁻³.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Precision {
    rel_gap: f64,
    theta_tol: f64,
}

impl Precision {
    /// The precision of reported bounds.
    pub(crate) const FINE: Precision = Precision {
        rel_gap: REL_GAP,
        theta_tol: THETA_TOL,
    };
    /// A cheap first pass.
    pub(crate) const ROUGH: Precision = Precision {
        rel_gap: 0.1,
        theta_tol: 1e-3,
    };
}
/// Share of the upper sum below which the bins under a point are bounded
/// in one term instead of summed.
const TRUNCATE: f64 = 1e-4;

/// A grid point: `u` and the two tails of U's distribution at it,
/// `P[U ≤ u]` and `P[U > u]`, each computed directly.
#[derive(Debug, Clone, Copy)]
struct Point {
    u: f64,
    below: f64,
    above: f64,
    /// [`Curve::key`] of `u`.
    key: f64,
}

/// The p-value machinery of one statement: the points of the grid over the
/// law of `U ~ Beta(rank + 1, n_rank − rank)`, with their exact masses.
pub(crate) struct RankTest {
    statement: RankStatement,
    curve: Curve,
    /// Grid points by `u` (positive floats order as their bits), from
    /// u = 0 (all mass above) to u = 1 (all mass below).
    points: BTreeMap<u64, Point>,
}

impl RankTest {
    pub(crate) fn new(statement: RankStatement, curve: Curve) -> Self {
        let mut test = Self {
            statement,
            curve,
            points: BTreeMap::new(),
        };
        test.points.insert(
            0.0_f64.to_bits(),
            Point {
                u: 0.0,
                below: 0.0,
                above: 1.0,
                key: curve.key(0.0),
            },
        );
        test.points.insert(
            1.0_f64.to_bits(),
            Point {
                u: 1.0,
                below: 1.0,
                above: 0.0,
                key: curve.key(1.0),
            },
        );
        // Seed points from the normal approximation of U (special::seed_beta_grid).
        let (a, b) = (
            (statement.rank + 1) as f64,
            (statement.n_rank - statement.rank) as f64,
        );
        let steps = [
            0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0, 7.0, 8.0, 10.0, 12.0,
            15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 70.0, 100.0,
        ];
        seed_beta_grid(a, b, &steps, |u| {
            let p = test.point(u);
            (p.below, p.above)
        });
        test
    }

    /// The grid point at `u` (computed once).
    fn point(&mut self, u: f64) -> Point {
        let (s, curve) = (self.statement, self.curve);
        *self.points.entry(u.to_bits()).or_insert_with(|| {
            // P[U ≤ u] = P[Bin(n_rank, u) ≥ rank + 1].
            let (ln_below, ln_above) =
                ln_beta_inc_tails((s.rank + 1) as f64, (s.n_rank - s.rank) as f64, u, 1.0 - u);
            Point {
                u,
                below: ln_below.exp(),
                above: ln_above.exp(),
                key: curve.key(u),
            }
        })
    }

    /// `g(u) = P[Bin(n_count, f_θ(u)) ≤ count]` at a grid point.
    fn g(&self, theta: f64, point: &Point) -> f64 {
        let s = self.statement;
        if s.count >= s.n_count {
            return 1.0;
        }
        let (p, q) = self.curve.at(theta, point.u, point.key);
        if p <= 0.0 {
            return 1.0;
        }
        ln_binomial_cdf(s.count, s.n_count, p, q).exp()
    }

    /// An upper bound on `p_f(count)` for the member θ of the curve family
    /// (see the module docs), within a relative [`REL_GAP`] of the truth.
    #[cfg(test)]
    pub(crate) fn p_value(&mut self, theta: f64) -> f64 {
        self.riemann(theta, None, REL_GAP).0
    }

    /// Whether the statement rejects the member θ at `level`
    /// (`p_f(count) ≤ level`, decided on the upper sum, refined only while
    /// the two sums straddle the level).
    #[cfg(test)]
    pub(crate) fn rejects(&mut self, theta: f64, level: f64) -> bool {
        self.riemann(theta, Some(level), REL_GAP).0 <= level
    }

    /// `(upper, lower)` Riemann sums of `E[g(U)]` over the grid: refined
    /// until their gap is below `rel_gap` of the upper one, or, given a
    /// level, until the level is outside them. The sums run from u = 1
    /// down and stop where everything below can add at most [`TRUNCATE`]
    /// of the sum: `g` is non-decreasing, so the bins below `u_i` add at most
    /// `P[U ≤ u_i] g(u_i)`, which is added to the upper sum in their place.
    fn riemann(&mut self, theta: f64, level: Option<f64>, rel_gap: f64) -> (f64, f64) {
        let mut pts: Vec<Point> = self.points.values().copied().collect();
        let mut gs: Vec<Option<f64>> = vec![None; pts.len()];
        let mut refinements = 0;
        loop {
            let (mut upper, mut lower, mut rest) = (0.0, 0.0, 0.0);
            let mut worst = (0.0, 0_usize);
            let top = pts.len() - 1;
            let mut g_hi = *gs[top].get_or_insert_with(|| self.g(theta, &pts[top]));
            for i in (1..=top).rev() {
                let g_lo = *gs[i - 1].get_or_insert_with(|| self.g(theta, &pts[i - 1]));
                let mass = bin_mass(&pts[i - 1], &pts[i]);
                upper += mass * g_hi;
                lower += mass * g_lo;
                let bin_gap = mass * (g_hi - g_lo);
                if bin_gap > worst.0 {
                    worst = (bin_gap, i);
                }
                g_hi = g_lo;
                let below = pts[i - 1].below * g_lo;
                if below <= TRUNCATE * upper {
                    rest = below;
                    break;
                }
            }
            // Rounding of g and of the masses is far below this slack.
            let upper = ((upper + rest) * (1.0 + 1e-9)).min(1.0);
            let decided = level.is_some_and(|a| upper <= a || lower > a * (1.0 + 1e-6));
            if decided
                || upper - lower <= rel_gap * upper
                || worst.0 <= 0.0
                || refinements >= MAX_REFINE
            {
                return (upper, lower);
            }
            let i = worst.1;
            let u = split_bin(pts[i - 1].u, pts[i].u);
            if u <= pts[i - 1].u || u >= pts[i].u {
                return (upper, lower);
            }
            let p = self.point(u);
            pts.insert(i, p);
            gs.insert(i, None);
            refinements += 1;
        }
    }

    /// The largest θ in `[floor, THETA_MAX]` that the statement rejects at
    /// `level` (the low end of the final bracket), or `None` when `floor`
    /// itself is not rejected (the bound is then at most `floor`). The first
    /// upper end tried is `floor + first_step` (the step doubles while it is
    /// rejected), by default `max(2·floor, 1)`.
    ///
    /// The bracket is then narrowed on `ln p − ln level` by
    /// [`narrow_rejection_bracket`], so a bound takes about ten p-values
    /// instead of thirty.
    pub(crate) fn largest_rejected(
        &mut self,
        level: f64,
        floor: f64,
        precision: Precision,
        first_step: Option<f64>,
    ) -> Option<f64> {
        let h = |test: &mut Self, theta: f64| {
            let (upper, _) = test.riemann(theta, Some(level), precision.rel_gap);
            (upper <= level, upper.max(1e-300).ln() - level.ln())
        };
        let (rejected, mut h_lo) = h(self, floor);
        if !rejected {
            return None;
        }
        let mut lo = floor;
        let mut hi = match first_step {
            Some(step) if step > 0.0 && step.is_finite() => (floor + step).min(THETA_MAX),
            _ => (2.0 * floor).max(1.0),
        };
        if hi <= floor {
            return Some(floor);
        }
        let h_hi = loop {
            let (rejected, value) = h(self, hi);
            if !rejected {
                break value;
            }
            let step = hi - lo;
            (lo, h_lo) = (hi, value);
            if lo >= THETA_MAX {
                return Some(lo);
            }
            hi = (lo + 2.0 * step).min(THETA_MAX);
        };
        Some(narrow_rejection_bracket(
            (lo, h_lo),
            (hi, h_hi),
            precision.theta_tol,
            |theta| h(self, theta),
        ))
    }
}

/// `P[a.u < U ≤ b.u]`.
fn bin_mass(a: &Point, b: &Point) -> f64 {
    beta_bin_mass((a.below, a.above), (b.below, b.above))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p_value_is_a_tight_upper_bound() {
        // References: the integral of the Beta(rank+1, n_rank−rank) density
        // times scipy.stats.binom.cdf(count, n_count, f_θ(u)) by
        // scipy.integrate.quad (SciPy 1.17, epsrel 1e-10).
        let cases = [
            (
                10,
                200,
                80,
                200,
                Curve::Gaussian,
                1.3,
                0.000_296_690_421_651_483,
            ),
            (
                0,
                100,
                40,
                120,
                Curve::EpsDelta { delta: 1e-5 },
                2.5,
                0.004_044_217_201_940_628,
            ),
            (
                30,
                100,
                5,
                100,
                Curve::EpsDelta { delta: 0.0 },
                1.5,
                0.001_489_349_929_770_961_9,
            ),
            (
                30,
                100,
                5,
                100,
                Curve::EpsDelta { delta: 0.0 },
                2.0,
                0.088_672_262_384_098_03,
            ),
        ];
        for (rank, n_rank, count, n_count, curve, theta, exact) in cases {
            let s = RankStatement {
                rank,
                n_rank,
                count,
                n_count,
            };
            let p = RankTest::new(s, curve).p_value(theta);
            assert!(
                p >= exact * (1.0 - 1e-9) && p <= exact * (1.0 + 2.5e-2),
                "{s:?} {curve:?} θ = {theta}: {p} vs {exact}"
            );
            // The decision at a level just above and just below the p-value.
            let mut t = RankTest::new(s, curve);
            assert!(t.rejects(theta, exact * 1.03));
            assert!(!t.rejects(theta, exact * 0.99));
        }
    }

    #[test]
    fn perfect_privacy_gives_the_exact_rank_sum_test() {
        // θ = 0 and δ = 0: f(u) = 1 − u, so the statement is about two
        // samples from one distribution; with n₀ = n₁ = 1, rank 0 and count 0
        // (the member below the non-member) the p-value is exactly ½.
        let s = RankStatement {
            rank: 0,
            n_rank: 1,
            count: 0,
            n_count: 1,
        };
        for curve in [Curve::Gaussian, Curve::EpsDelta { delta: 0.0 }] {
            let p = RankTest::new(s, curve).p_value(0.0);
            assert!((0.5..0.5 * 1.025).contains(&p), "{curve:?}: {p}");
        }
    }

    #[test]
    fn p_value_grows_with_theta_and_the_count() {
        // Over p-values from 1e-26 to 1 (rank 64 of 1000, 200 of 1000
        // counted: scipy.integrate.quad gives 1.57e-26 at μ = 1.6).
        let s = RankStatement {
            rank: 64,
            n_rank: 1000,
            count: 200,
            n_count: 1000,
        };
        let mut t = RankTest::new(s, Curve::Gaussian);
        // Far below any level the sum is an upper bound, not a tight one.
        let p16 = t.p_value(1.6);
        assert!((1.571_932e-26..1e-20).contains(&p16), "{p16}");
        let mut last = 0.0;
        for i in 0..60 {
            let mu = 1.4 + i as f64 * 0.02;
            let p = t.p_value(mu);
            if p > 1e-6 {
                assert!(p >= last * (1.0 - 2.5e-2), "μ = {mu}: {p} < {last}");
            }
            last = p;
        }
        assert!(last > 0.5, "{last}");
        let more = RankTest::new(RankStatement { count: 220, ..s }, Curve::Gaussian).p_value(2.2);
        assert!(more > t.p_value(2.2));
    }

    #[test]
    fn largest_rejected_inverts_the_test() {
        let s = RankStatement {
            rank: 30,
            n_rank: 100,
            count: 5,
            n_count: 100,
        };
        let curve = Curve::EpsDelta { delta: 0.0 };
        // p(1.8) = 0.02508 (scipy, above): the bound at level 0.02508 is 1.8.
        let eps = RankTest::new(s, curve)
            .largest_rejected(0.025_081_857_186_330_28, 0.0, Precision::FINE, None)
            .unwrap();
        assert!((eps - 1.8).abs() < 1e-2 && eps <= 1.8 + 1e-6, "{eps}");
        // A floor above the bound: not rejected.
        assert_eq!(
            RankTest::new(s, curve).largest_rejected(0.025, 1.9, Precision::FINE, None),
            None
        );
    }
}
