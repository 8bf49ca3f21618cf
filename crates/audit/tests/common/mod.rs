//! Mechanisms of known privacy for the coverage tests, and the coverage
//! assertion.
//!
//! - Randomized response at ε₀: pure ε₀-DP. As a GDP mechanism it is μ-GDP
//!   with μ = −2Φ⁻¹(1/(1 + e^{ε₀})), the Gaussian curve through the corner
//!   of its trade-off curve (Dong, Roth & Su 2019, the ε-DP/GDP relation).
//! - Laplace with shift ε₀ and scale 1: pure ε₀-DP; its smallest μ is
//!   `sup_t Φ⁻¹(1 − α(t)) − Φ⁻¹(β(t))` over thresholds t (likelihood-ratio
//!   tests are thresholds; Cebere et al. 2024 Lemma 1 at every t).
//! - Gaussian with shift μ and unit noise: μ-GDP, ε at δ from the exact
//!   conversion (Cebere et al. 2024 Corollary 1).

#![allow(dead_code)]

use dpaudit_audit::bound::{EpsilonLowerBound, Evidence};
use dpaudit_audit::estimate::BoundSettings;
use dpaudit_audit::gaussian::{gdp_epsilon, inverse_cdf};
use dpaudit_audit::observations::{Observations, Selection};
use dpaudit_audit::one_run::{GuessFamily, TieBreak};
use dpaudit_audit::one_run_fdp::TradeoffFamily;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

include!("assert_coverage.rs");

/// Simulated audits per case: `fast` by default, ten times more with
/// `DPAUDIT_SLOW_TESTS=1`.
pub fn trials(fast: usize) -> usize {
    if std::env::var("DPAUDIT_SLOW_TESTS").is_ok_and(|v| v == "1") {
        10 * fast
    } else {
        fast
    }
}

/// A mechanism on one bit: its output is a score, higher for "member".
#[derive(Debug, Clone, Copy)]
pub enum Mechanism {
    /// Randomized response at ε₀: score 1 or 0.
    Rr(f64),
    /// Laplace(scale 1) shifted by ε₀ for members.
    Laplace(f64),
    /// N(0, 1) shifted by μ for members.
    Gaussian(f64),
}

/// Laplace(0, 1) by inversion; u = −½ (probability 2⁻⁵³) is redrawn.
fn laplace(rng: &mut ChaCha8Rng) -> f64 {
    loop {
        let u: f64 = rng.gen::<f64>() - 0.5;
        if u > -0.5 {
            return -u.signum() * (1.0 - 2.0 * u.abs()).ln();
        }
    }
}

fn laplace_cdf(x: f64) -> f64 {
    if x < 0.0 {
        0.5 * x.exp()
    } else {
        1.0 - 0.5 * (-x).exp()
    }
}

impl Mechanism {
    /// One score of a member (`member`) or a non-member.
    pub fn score(self, rng: &mut ChaCha8Rng, member: bool) -> f64 {
        match self {
            Mechanism::Rr(eps) => {
                let truthful = rng.gen::<f64>() < 1.0 / (1.0 + (-eps).exp());
                if member == truthful {
                    1.0
                } else {
                    0.0
                }
            }
            Mechanism::Laplace(eps) => laplace(rng) + if member { eps } else { 0.0 },
            Mechanism::Gaussian(mu) => {
                let z: f64 = rng.sample(StandardNormal);
                z + if member { mu } else { 0.0 }
            }
        }
    }

    /// The smallest μ for which the mechanism is μ-GDP.
    pub fn mu(self) -> f64 {
        match self {
            Mechanism::Rr(eps) => -2.0 * inverse_cdf(1.0 / (1.0 + eps.exp())),
            Mechanism::Gaussian(mu) => mu,
            Mechanism::Laplace(eps) => {
                // Thresholds on a fine grid: the sup over the grid is ≤ the
                // true sup, which only makes the test stricter.
                (0..=40_000)
                    .map(|i| -20.0 + i as f64 * 1e-3)
                    .map(|t| {
                        let alpha = 1.0 - laplace_cdf(t);
                        let beta = laplace_cdf(t - eps);
                        inverse_cdf(1.0 - alpha) - inverse_cdf(beta)
                    })
                    .filter(|v| v.is_finite())
                    .fold(0.0, f64::max)
            }
        }
    }

    /// The ε at `delta` of the mechanism: ε₀ for the pure ones, the exact
    /// conversion of μ-GDP for the Gaussian (Cebere et al. 2024 Corollary 1).
    pub fn epsilon(self, delta: f64) -> f64 {
        match self {
            Mechanism::Rr(e) | Mechanism::Laplace(e) => e,
            Mechanism::Gaussian(mu) => gdp_epsilon(mu, delta),
        }
    }

    /// Name for messages.
    pub fn name(self) -> String {
        match self {
            Mechanism::Rr(e) => format!("randomized response ε₀ = {e}"),
            Mechanism::Laplace(e) => format!("Laplace ε₀ = {e}"),
            Mechanism::Gaussian(m) => format!("Gaussian μ = {m}"),
        }
    }
}

/// `n` member and `n` non-member scores, interleaved.
pub fn runs(rng: &mut ChaCha8Rng, mech: Mechanism, n: usize) -> Observations<'static> {
    let mut scores = Vec::with_capacity(2 * n);
    let mut members = Vec::with_capacity(2 * n);
    for i in 0..2 * n {
        let m = i % 2 == 0;
        scores.push(mech.score(rng, m));
        members.push(m);
    }
    Observations::new(scores, members).unwrap()
}

/// `m` canaries of one run, each included with probability ½; the score of
/// canary i is the mechanism applied to its inclusion bit.
pub fn canaries(rng: &mut ChaCha8Rng, mech: Mechanism, m: usize) -> Observations<'static> {
    loop {
        let mut scores = Vec::with_capacity(m);
        let mut members = Vec::with_capacity(m);
        for _ in 0..m {
            let inc: bool = rng.gen();
            scores.push(mech.score(rng, inc));
            members.push(inc);
        }
        // Both classes empty has probability 2^{1−m}; redraw if it happens.
        if let Ok(obs) = Observations::new(scores, members) {
            return obs;
        }
    }
}

/// Asserts that the bound of at most β of `n` simulated data sets is above
/// the truth: `exceeds(t)` says whether data set `t`'s is.
pub fn assert_covers(n: usize, beta: f64, what: &str, mut exceeds: impl FnMut(usize) -> bool) {
    let bad = (0..n).filter(|&t| exceeds(t)).count();
    assert_coverage(bad, n, beta, what);
}

/// Bound settings at `confidence`, `delta` and `selection`; what the tests
/// vary one at a time is at its default (the eps-delta family, symmetric
/// guesses, none fixed, the quantile tie-break): change it with
/// `BoundSettings { field: …, ..settings(…) }`.
pub fn settings(confidence: f64, delta: f64, selection: Selection) -> BoundSettings {
    BoundSettings {
        confidence,
        delta,
        selection,
        family: TradeoffFamily::EpsDelta,
        guesses: GuessFamily::Symmetric,
        fixed_guesses: None,
        tie_break: TieBreak::Quantile,
    }
}

/// The μ⁻ of a one-run bound of the Gaussian family.
pub fn one_run_mu(b: &EpsilonLowerBound) -> f64 {
    let Evidence::OneRun(ev) = &b.evidence else {
        panic!("one-run evidence")
    };
    ev.mu_lower.unwrap()
}

/// A fresh generator.
pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// A one-run audit's bound, or `None` when it refused the canaries'
/// inclusion count (the design check: probability ≤ 10⁻³ under the design).
/// A refusal is not a bound above the truth; any other error fails the test.
pub fn unless_refused(
    result: dpaudit_audit::Result<dpaudit_audit::bound::EpsilonLowerBound>,
) -> Option<dpaudit_audit::bound::EpsilonLowerBound> {
    match result {
        Ok(b) => Some(b),
        Err(dpaudit_audit::AuditError::InclusionDesign { .. }) => None,
        Err(e) => panic!("{e}"),
    }
}
