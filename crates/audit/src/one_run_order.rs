//! The order-statistics one-run audit of Xiang, Wang, Xiao, Tian & Wang 2025
//! ("Tight Privacy Audit in One Run", arXiv:2509.08704): the guesses released
//! are the `r` most confident of `m`, and the number of them that are wrong
//! is compared with what the most informative channel a trade-off curve
//! allows would give, through the order statistics of its confidences.
//!
//! **The game** is that of Steinke et al. 2023 ([`crate::one_run`]): `m`
//! canaries, each included independently with probability ½; from the output
//! alone the auditor guesses "in" for the `k+` highest scores and "out" for
//! the `k−` lowest, abstaining on the rest; `v` of the `r = k+ + k−` guesses
//! are right, `u = r − v` wrong. In Xiang et al.'s terms (their framework
//! `(n, M, H, D, r)`), a decoder gives every canary a guess and a
//! confidence, and a filter releases the `r` most confident guesses.
//!
//! **The reference channel of a curve.** For μ-GDP it is the Gaussian pair:
//! the output of canary `i` is `Y_i ~ N(μ·S_i, 1)`, `S_i ∈ {0, 1}` uniform.
//! The best decoder guesses by the sign of `Y_i − μ/2` and is confident by
//! `c_i = |Y_i − μ/2|` (the privacy loss is `μ·c_i`). With
//! `s(c) = Q(c + μ/2) + Q(c − μ/2)` the probability of a confidence above
//! `c` and `e(c) = Q(c + μ/2)` that of a confidence above `c` with a wrong
//! guess, a guess of confidence exactly `c` is wrong with probability
//! `w(c) = 1/(1 + e^{μc})`.
//!
//! **The law of the released errors, exactly, for every rank.** Let `T` be
//! the `r`-th largest of the `m` confidences and `U = s(T)`, the mass above
//! it: `U` is the `r`-th smallest of `m` uniforms, `U ~ Beta(r, m − r + 1)`.
//! Given `T`, the `r − 1` more confident canaries are i.i.d. draws above `T`,
//! each wrong with probability `p = e(T)/s(T)`, and the `r`-th is wrong with
//! probability `w(T)`; so the number of wrong released guesses is
//! `Bernoulli(w) + Bin(r − 1, p)` given `U`, and
//! `P[E ≤ u] = E_U[ (1 − w)·F_{r−1,p}(u) + w·F_{r−1,p}(u − 1) ]`,
//! `F` the binomial distribution function. As `U` grows, `w` and `p` grow
//! (less confident guesses are wrong more often), so the integrand falls:
//! an upper Riemann sum over any grid of `U`'s law bounds the p-value from
//! above, and the grid is refined only until the decision at the level is
//! certain. No rank is cut off: the Beta law carries all `m` order
//! statistics at once, for `m` = 10⁶ as for 10³.
//!
//! **When it is valid** (our argument; the paper's full text, with its
//! "transmission dominance" theorem, could not be obtained). If every canary
//! passes through its own channel, independent of the others' given the
//! inclusion bits, and each channel is μ-GDP, each is a post-processing of
//! the Gaussian pair (Dong, Roth & Su 2022, Prop. 2.2 with Blackwell's
//! theorem), so the auditor's guesses are a randomised decoder of
//! independent Gaussian pairs. Given those outputs each guess is right
//! independently with probability at most `σ(μ·c_i)`, and releasing the
//! sign guesses of the `r` largest `c_i` maximises the number right
//! stochastically (a sum of independent Bernoullis grows with each of their
//! probabilities). So the count of right guesses is stochastically at most
//! the reference's, and "reject μ when `P[E ≤ u] ≤ level`" is a valid test.
//! **It is not valid for every mechanism that is μ-GDP for each canary:** a
//! mechanism that, with probability 0.1 (a coin it publishes), answers every
//! canary by randomized response at ε = 2, and otherwise reveals nothing,
//! is 1-GDP for each canary given the others (its trade-off curve, a mixture
//! with a revealed component, lies above `G_1` everywhere), yet with
//! probability 0.1 it makes about 88 % of all `m` guesses right, which
//! rejects μ = 1 whenever `m` is in the hundreds. The Gaussian family of
//! this audit therefore states its assumption: canaries that do not interact
//! (e.g. white-box canaries on separate coordinates), and, for the ε at δ, a
//! Gaussian trade-off curve.
//!
//! **The (ε, δ) family, valid for any mechanism.** In the reference channel
//! of `f_{ε,0}` every guess has the same confidence and is wrong with
//! probability `1/(1 + e^ε)`: the order statistics add nothing and the
//! count is `Bin(r, e^ε/(1 + e^ε))`, the exact test of Steinke et al. 2023
//! Thm 3.1 at δ = 0. For δ > 0 the reference channel would make each canary
//! certain independently with probability δ, but a mechanism may make all of
//! them certain at once with probability δ (and be (ε, δ)-DP for each); the
//! term `2mδ·α` of Steinke et al. is what covers that, so this family keeps
//! their p-value ([`crate::one_run::p_value`]) and gives their bound.

use crate::bound::EpsilonLowerBound;
use crate::error::{AuditError, Result};
use crate::gaussian::{interval, inverse_sf, log_add_exp, log_sf, pdf};
use crate::interrupt::Interrupt;
use crate::observations::{Method, Observations};
use crate::one_run::{epsilon_lower_bound, p_value_unchecked, Guesses, OneRunConfig};
use crate::one_run_fdp::{check_level, family_bound, TradeoffFamily};
use crate::special::{
    beta_bin_mass, ln_beta_inc_tails, ln_binomial_cdf, narrow_rejection_bracket, seed_beta_grid,
    split_bin,
};

/// Relative gap between the upper and lower Riemann sums at which a
/// p-value is reported (a decision at a level stops as soon as the level is
/// outside the two sums).
const REL_GAP: f64 = 1e-2;
/// Most refinements of the grid per p-value.
const MAX_REFINE: usize = 400;
/// Largest μ or ε searched.
const THETA_MAX: f64 = 64.0;
/// Tolerance of the search, relative to max(1, θ).
const THETA_TOL: f64 = 1e-4;

/// A grid point of `U ~ Beta(r, m − r + 1)`: `s` and both tails of the law
/// at it, each computed directly.
#[derive(Debug, Clone, Copy)]
struct Point {
    s: f64,
    below: f64,
    above: f64,
}

/// The reference channel's guess at the confidence whose upper mass is `s`:
/// `w`, the probability that a guess of that confidence is wrong, and `p`,
/// that a guess of higher confidence is, each with its complement computed
/// directly.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Channel {
    w: f64,
    w_right: f64,
    p: f64,
    p_right: f64,
}

/// The Gaussian reference channel at upper mass `s` (see the module docs):
/// the confidence `c` is found by bisection on the side where its mass is
/// at most `s` (more confident), which can only raise the integrand, so the
/// Riemann sum stays an upper bound.
fn gaussian_channel(mu: f64, s: f64) -> Channel {
    let certain = Channel {
        w: 0.0,
        w_right: 1.0,
        p: 0.0,
        p_right: 1.0,
    };
    if s <= 0.0 {
        return certain;
    }
    let half = 0.5 * mu;
    let ln_s = s.ln();
    // `s(c) ≤ s`, on the side where the smaller of s(c) and 1 − s(c) is
    // compared.
    let above_mass_at_most = |c: f64| {
        if s < 0.5 {
            log_add_exp(log_sf(c + half), log_sf(c - half)) <= ln_s
        } else {
            interval(half - c, half + c) >= 1.0 - s
        }
    };
    let c = if s >= 1.0 || above_mass_at_most(0.0) {
        0.0
    } else {
        // Q(c − μ/2) ≤ s(c) ≤ 2Q(c − μ/2) brackets the root: c lies in
        // [μ/2 + Q⁻¹(s), μ/2 + Q⁻¹(s/2)] (and c ≥ 0). Newton on ln s(c) =
        // ln s inside the bracket (bisection when a step leaves it), then
        // a nudge to the side where s(c) ≤ s.
        let mut lo = (half + inverse_sf(s)).max(0.0);
        let mut hi = (half + inverse_sf(0.5 * s)).max(lo) * (1.0 + 1e-12) + 1e-300;
        if !hi.is_finite() {
            return certain;
        }
        let mut c = 0.5 * (lo + hi);
        for _ in 0..100 {
            let ln_mass = log_add_exp(log_sf(c + half), log_sf(c - half));
            if ln_mass <= ln_s {
                hi = c;
            } else {
                lo = c;
            }
            let slope = -(pdf(c + half) + pdf(c - half)) / ln_mass.exp();
            let step = (ln_mass - ln_s) / slope;
            if step.abs() <= 1e-11 * c.max(1e-3) || hi - lo <= 1e-11 * hi {
                break;
            }
            let next = c - step;
            c = if next.is_finite() && next > lo && next < hi {
                next
            } else {
                0.5 * (lo + hi)
            };
        }
        let mut step = 1e-12 * c.max(1e-3);
        while !above_mass_at_most(c) {
            c += step;
            step *= 2.0;
        }
        c
    };
    // w = 1/(1 + e^{μc}); p = e/s = 1/(1 + R), R = Q(c − μ/2)/Q(c + μ/2).
    let l = mu * c;
    let (w, w_right) = (logistic(-l), logistic(l));
    let ln_r = log_sf(c - half) - log_sf(c + half);
    let (p, p_right) = (logistic(-ln_r), logistic(ln_r));
    Channel {
        w,
        w_right,
        p,
        p_right,
    }
}

/// `1/(1 + e^{−x})`, without overflow.
fn logistic(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// `P[Bin(n, p) ≤ k]`, `k` possibly negative.
fn binomial_cdf(k: i64, n: u64, p: f64, q: f64) -> f64 {
    if k < 0 {
        return 0.0;
    }
    if k as u64 >= n || p <= 0.0 {
        return 1.0;
    }
    ln_binomial_cdf(k as u64, n, p, q).exp()
}

/// The order-statistics p-value of one guess set for the Gaussian family:
/// the grid over `U`'s law is kept between the members μ of a search (the
/// masses do not depend on μ).
struct GaussianTest {
    g: Guesses,
    /// Grid points by increasing `s`, from 0 to 1.
    points: Vec<Point>,
}

impl GaussianTest {
    /// The test of `g` (validated: `1 ≤ r ≤ m`).
    fn new(g: Guesses) -> Self {
        let (a, b) = (g.r as f64, (g.m - g.r + 1) as f64);
        let mut test = Self {
            g,
            points: vec![
                Point {
                    s: 0.0,
                    below: 0.0,
                    above: 1.0,
                },
                Point {
                    s: 1.0,
                    below: 1.0,
                    above: 0.0,
                },
            ],
        };
        // Seed points from the normal approximation of U (special::seed_beta_grid).
        let steps = [0.0, 1.0, 2.0, 3.0, 4.5, 6.0, 8.0, 12.0, 20.0, 40.0, 100.0];
        seed_beta_grid(a, b, &steps, |u| {
            let p = test.insert(u);
            (p.below, p.above)
        });
        test
    }

    /// Inserts the grid point at `s` (kept sorted) and returns it.
    fn insert(&mut self, s: f64) -> Point {
        let i = self.points.partition_point(|p| p.s < s);
        if let Some(p) = self.points.get(i).filter(|p| p.s == s) {
            return *p;
        }
        // P[U ≤ s] for U ~ Beta(r, m − r + 1).
        let (ln_below, ln_above) = ln_beta_inc_tails(
            self.g.r as f64,
            (self.g.m - self.g.r + 1) as f64,
            s,
            1.0 - s,
        );
        let p = Point {
            s,
            below: ln_below.exp(),
            above: ln_above.exp(),
        };
        self.points.insert(i, p);
        p
    }

    /// `P[u or fewer wrong | U = s]` for the member μ.
    fn integrand(&self, mu: f64, s: f64) -> f64 {
        let Guesses { r, v, .. } = self.g;
        let wrong = (r - v) as i64;
        let ch = gaussian_channel(mu, s);
        let n = r - 1;
        ch.w_right * binomial_cdf(wrong, n, ch.p, ch.p_right)
            + ch.w * binomial_cdf(wrong - 1, n, ch.p, ch.p_right)
    }

    /// `(upper, lower)` Riemann sums of `P[E ≤ u]` under μ, refined where
    /// their gap is largest until it is below `REL_GAP` of the upper one
    /// or, given a level, until the level is outside them.
    fn riemann(&mut self, mu: f64, level: Option<f64>) -> (f64, f64) {
        let mut gs: Vec<f64> = self
            .points
            .iter()
            .map(|p| self.integrand(mu, p.s))
            .collect();
        let mut refinements = 0;
        loop {
            let (mut upper, mut lower) = (0.0, 0.0);
            let mut worst = (0.0, 0_usize);
            for i in 1..self.points.len() {
                let mass = bin_mass(&self.points[i - 1], &self.points[i]);
                // The integrand falls as s grows: its left value bounds the bin.
                upper += mass * gs[i - 1];
                lower += mass * gs[i];
                let gap = mass * (gs[i - 1] - gs[i]);
                if gap > worst.0 {
                    worst = (gap, i);
                }
            }
            // Rounding of the terms is far below this slack.
            let upper = (upper * (1.0 + 1e-9)).min(1.0);
            let decided = level.is_some_and(|a| upper <= a || lower > a);
            if decided
                || upper - lower <= REL_GAP * upper
                || worst.0 <= 0.0
                || refinements >= MAX_REFINE
            {
                return (upper, lower);
            }
            let i = worst.1;
            let s = split_bin(self.points[i - 1].s, self.points[i].s);
            if s <= self.points[i - 1].s || s >= self.points[i].s {
                return (upper, lower);
            }
            self.insert(s);
            gs.insert(i, self.integrand(mu, s));
            refinements += 1;
        }
    }
}

/// Mass of `U`'s law between two grid points.
fn bin_mass(a: &Point, b: &Point) -> f64 {
    beta_bin_mass((a.below, a.above), (b.below, b.above))
}

/// The largest θ in `[floor, THETA_MAX]` rejected, or 0 when `floor` itself
/// is not rejected (the bound is then at most `floor`). `test(θ)` says
/// whether θ is rejected and gives `ln p − ln level`: the upper end doubles
/// while it is rejected, then [`narrow_rejection_bracket`] narrows the
/// bracket (rejection is monotone in θ).
fn largest_rejected(mut test: impl FnMut(f64) -> (bool, f64), floor: f64) -> f64 {
    let (rejected, mut h_lo) = test(floor);
    if !rejected {
        return 0.0;
    }
    let mut lo = floor;
    let mut hi = (2.0 * floor).max(1.0);
    let h_hi = loop {
        let (rejected, h) = test(hi);
        if !rejected {
            break h.max(f64::MIN_POSITIVE);
        }
        (lo, h_lo) = (hi, h.min(0.0));
        hi *= 2.0;
        if hi > THETA_MAX {
            return lo;
        }
    };
    narrow_rejection_bracket((lo, h_lo), (hi, h_hi), THETA_TOL, test)
}

/// The bound of one guess set (validated inputs): the largest μ (Gaussian
/// family) or ε ((ε, δ) family) rejected at `level`, or at most `floor`.
fn bound_unchecked(family: TradeoffFamily, delta: f64, g: Guesses, level: f64, floor: f64) -> f64 {
    if g.v == 0 || g.r == 0 {
        return 0.0;
    }
    match family {
        TradeoffFamily::Gaussian => {
            let mut test = GaussianTest::new(g);
            largest_rejected(
                |mu| {
                    let p = test.riemann(mu, Some(level)).0;
                    (p <= level, log_ratio(p, level))
                },
                floor,
            )
        }
        // Steinke et al.'s procedure itself (inputs validated: it cannot
        // fail; 0 would be a valid answer if it did).
        TradeoffFamily::EpsDelta => epsilon_lower_bound(g.m, g.r, g.v, delta, level).unwrap_or(0.0),
    }
}

/// `ln p − ln level`, finite.
fn log_ratio(p: f64, level: f64) -> f64 {
    p.max(1e-300).ln() - level.ln()
}

/// Whether `v` right of `r` guesses on `m` canaries reject the member
/// `theta` of `family` at `level` (validated inputs; the one-run plot's
/// certification).
pub(crate) fn rejects_unchecked(
    family: TradeoffFamily,
    theta: f64,
    delta: f64,
    g: Guesses,
    level: f64,
) -> bool {
    if g.v == 0 || g.r == 0 {
        return false;
    }
    match family {
        TradeoffFamily::Gaussian => GaussianTest::new(g).riemann(theta, Some(level)).0 <= level,
        TradeoffFamily::EpsDelta => p_value_unchecked(g, theta, delta) < level,
    }
}

/// An upper bound, within 1 % of the truth, on the probability that the
/// Gaussian reference channel at `mu` makes at most `r − v` wrong guesses
/// among its `r` most confident of `m` (the p-value of `v` right guesses;
/// see the module docs).
pub fn gaussian_p_value(m: u64, r: u64, v: u64, mu: f64) -> Result<f64> {
    let g = Guesses { m, r, v };
    g.check_nonempty()?;
    if !(mu.is_finite() && mu >= 0.0) {
        return Err(AuditError::InvalidParameter {
            name: "mu",
            value: mu.to_string(),
            expected: "a finite μ ≥ 0",
        });
    }
    if r == 0 || v == 0 {
        return Ok(1.0);
    }
    Ok(GaussianTest::new(g).riemann(mu, None).0)
}

/// The μ lower bound: the largest μ that `v` right of the `r` guesses on
/// `m` canaries reject at `level` (0 when μ = 0 is not rejected).
pub fn mu_lower_bound(m: u64, r: u64, v: u64, level: f64) -> Result<f64> {
    let g = Guesses { m, r, v };
    g.check_nonempty()?;
    check_level(level)?;
    Ok(bound_unchecked(
        TradeoffFamily::Gaussian,
        0.0,
        g,
        level,
        0.0,
    ))
}

/// The order-statistics one-run bound from canary scores (one row per
/// canary, `member` = included), with the design `cfg` (guesses chosen per
/// `cfg.selection`) and the curves of `family`. `cfg.delta` is the δ of the
/// (ε, δ) statement, or, for the Gaussian family, the δ at which μ⁻ is
/// stated as ε (then > 0).
pub fn one_run_order_lower_bound(
    obs: &Observations,
    cfg: &OneRunConfig,
    family: TradeoffFamily,
) -> Result<EpsilonLowerBound> {
    one_run_order_interruptible(obs, cfg, family, Interrupt::NEVER)
}

/// [`one_run_order_lower_bound`], asking `stop` between units of work.
pub fn one_run_order_interruptible(
    obs: &Observations,
    cfg: &OneRunConfig,
    family: TradeoffFamily,
    stop: Interrupt,
) -> Result<EpsilonLowerBound> {
    let delta = cfg.delta;
    let bound = |g: Guesses, level: f64, floor: f64| {
        stop.check("one-run-order bound")?;
        Ok(bound_unchecked(family, delta, g, level, floor))
    };
    family_bound(obs, cfg, family, Method::OneRunOrder, &bound, stop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gaussian::sf;
    use crate::special::ln_binomial_cdf;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn g(m: u64, r: u64, v: u64) -> Guesses {
        Guesses { m, r, v }
    }

    #[test]
    fn the_reference_channel_at_the_extremes() {
        // All guesses (s = 1, c = 0): a guess at the centre is a coin, and
        // the average error is the Bayes error Φ(−μ/2).
        for mu in [0.0, 0.5, 2.0, 6.0] {
            let ch = gaussian_channel(mu, 1.0);
            assert!((ch.w - 0.5).abs() < 1e-15, "{mu}: {ch:?}");
            let bayes = sf(0.5 * mu);
            assert!(
                (ch.p - bayes).abs() < 1e-12 * bayes.max(1e-300),
                "{mu}: {ch:?}"
            );
            assert!((ch.p + ch.p_right - 1.0).abs() < 1e-15);
        }
        // No guess (s = 0): certain.
        assert_eq!(gaussian_channel(1.0, 0.0).p, 0.0);
        // The confidence found is on the conservative side of s, and close.
        for (mu, s) in [(1.0, 1e-6), (1.0, 0.3), (3.0, 0.9), (3.0, 1e-200)] {
            let ch = gaussian_channel(mu, s);
            // w = 1/(1 + e^{μc}) gives c back.
            let c = (ch.w_right / ch.w).ln() / mu;
            let mass = sf(c + 0.5 * mu) + sf(c - 0.5 * mu);
            assert!(mass <= s * (1.0 + 1e-12), "{mu} {s}: {mass}");
            assert!(mass >= s * (1.0 - 1e-6), "{mu} {s}: {mass}");
        }
    }

    #[test]
    fn every_guess_released_is_the_binomial_of_the_bayes_error() {
        // r = m: the errors are Bin(m, Φ(−μ/2)) exactly (closed form), and
        // at μ = 0 they are Bin(r, ½) for every r. The sum is an upper
        // bound within its 1 % gap.
        let cases = [
            (1000, 1000, 700, 1.0, sf(0.5)),
            (1000, 1000, 900, 2.0, sf(1.0)),
            (200, 200, 199, 5.0, sf(2.5)),
            (10_000, 10_000, 6800, 1.0, sf(0.5)),
            (1000, 100, 60, 0.0, 0.5),
            (1000, 10, 9, 0.0, 0.5),
        ];
        for (m, r, v, mu, err) in cases {
            let exact = ln_binomial_cdf(r - v, r, err, 1.0 - err).exp();
            let p = gaussian_p_value(m, r, v, mu).unwrap();
            assert!(
                p >= exact * (1.0 - 1e-9) && p <= exact * 1.011,
                "({m},{r},{v}) μ = {mu}: {p:e} vs {exact:e}"
            );
        }
    }

    #[test]
    fn matches_a_simulation_of_the_reference_channel_at_every_rank() {
        // The p-value is P[at most u wrong among the r most confident of m]
        // for m independent Gaussian pairs; a seeded simulation of that
        // game (40 000 draws) agrees within 4 standard errors + the 1 % gap.
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let (m, mu) = (60_u64, 1.0_f64);
        for (r, u) in [(1_u64, 0_u64), (6, 0), (20, 2), (60, 18)] {
            let draws = 40_000;
            let hits = (0..draws)
                .filter(|_| {
                    let mut ranked: Vec<(f64, bool)> = (0..m)
                        .map(|_| {
                            let bit: bool = rng.gen();
                            let y = rng.sample::<f64, _>(rand_distr::StandardNormal)
                                + if bit { mu } else { 0.0 };
                            ((y - 0.5 * mu).abs(), (y > 0.5 * mu) != bit)
                        })
                        .collect();
                    ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
                    ranked[..r as usize].iter().filter(|x| x.1).count() as u64 <= u
                })
                .count();
            let freq = hits as f64 / draws as f64;
            let se = (freq * (1.0 - freq) / draws as f64).sqrt();
            let p = gaussian_p_value(m, r, r - u, mu).unwrap();
            assert!(
                (p - freq).abs() <= 4.0 * se + 0.01 * p,
                "r = {r}, u = {u}: {p} vs {freq} ± {se}"
            );
        }
    }

    #[test]
    fn rejection_is_monotone_and_the_bound_grows_with_the_evidence() {
        for (m, r, v) in [(1000, 100, 80), (1000, 1000, 700), (100_000, 2000, 1900)] {
            let mut last = true;
            for i in 0..60 {
                let mu = i as f64 * 0.1;
                let now = rejects_unchecked(TradeoffFamily::Gaussian, mu, 0.0, g(m, r, v), 0.05);
                assert!(last || !now, "({m},{r},{v}) μ = {mu}");
                last = now;
            }
        }
        let a = mu_lower_bound(1000, 1000, 700, 0.05).unwrap();
        let b = mu_lower_bound(1000, 1000, 750, 0.05).unwrap();
        assert!(0.0 < a && a < b, "{a} {b}");
        // Chance-level guesses certify nothing.
        assert_eq!(mu_lower_bound(1000, 1000, 500, 0.05).unwrap(), 0.0);
        assert_eq!(mu_lower_bound(1000, 100, 0, 0.05).unwrap(), 0.0);
    }

    #[test]
    fn every_rank_counts_at_a_million_canaries() {
        // r = 10⁶ guesses of which 69.3 % right (the Bayes accuracy Φ(½) of
        // μ = 1 is 0.6915): μ⁻ is just below 1; a computation that cut the
        // ranks would fall far below. The closed form of the r = m case
        // (Clopper–Pearson on Φ(−μ/2)) gives the same to the search's
        // tolerance.
        let (m, v) = (1_000_000_u64, 693_000_u64);
        let mu = mu_lower_bound(m, m, v, 0.05).unwrap();
        let upper_err = crate::clopper_pearson::upper_limit(m - v, m, 0.05).unwrap();
        let closed = -2.0 * crate::gaussian::inverse_cdf(upper_err);
        assert!(
            mu <= closed + 1e-5 && mu >= closed - 0.01,
            "{mu} vs {closed}"
        );
    }

    #[test]
    fn the_eps_delta_family_is_steinke_et_al() {
        for (m, r, v, delta) in [
            (1000, 100, 95, 0.0),
            (1000, 200, 180, 1e-5),
            (10_000, 1000, 990, 1e-5),
        ] {
            let ours = bound_unchecked(TradeoffFamily::EpsDelta, delta, g(m, r, v), 0.05, 0.0);
            let theirs = epsilon_lower_bound(m, r, v, delta, 0.05).unwrap();
            assert!(
                (ours - theirs).abs() < 1e-5,
                "({m},{r},{v}): {ours} vs {theirs}"
            );
        }
    }

    #[test]
    fn rejects_bad_input() {
        assert!(gaussian_p_value(10, 11, 3, 1.0).is_err());
        assert!(gaussian_p_value(10, 5, 6, 1.0).is_err());
        assert!(gaussian_p_value(10, 5, 3, -1.0).is_err());
        assert!(gaussian_p_value(10, 5, 3, f64::NAN).is_err());
        assert!(mu_lower_bound(0, 0, 0, 0.05).is_err());
        assert!(mu_lower_bound(10, 5, 3, 1.0).is_err());
        let obs = Observations::new(vec![1.0, 0.0], vec![true, false]).unwrap();
        let cfg = OneRunConfig::new(0.95, 0.0, crate::observations::Selection::Bonferroni);
        assert!(matches!(
            one_run_order_lower_bound(&obs, &cfg, TradeoffFamily::Gaussian),
            Err(AuditError::InvalidParameter { name: "delta", .. })
        ));
    }
}
