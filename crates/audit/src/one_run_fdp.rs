//! The f-DP one-run audit of Mahloujifar, Melis & Chaudhuri 2024 ("Auditing
//! f-Differential Privacy in One Run", ICML 2025): from the number of correct
//! guesses about randomly included canaries, reject "the mechanism is f-DP"
//! for a whole trade-off curve f, and report the most private member of a
//! family that is rejected.
//!
//! **The game** is that of Steinke et al. 2023 ([`crate::one_run`]): `m`
//! canaries, each included independently with probability ½; from the output
//! alone the auditor makes `r` guesses (the `k+` highest scores "in", the
//! `k−` lowest "out") and abstains on the rest; `v` guesses are correct.
//!
//! **The test** (our own account of their argument; the paper states it as
//! a recursion over the number of correct guesses). Let `I` be a canary drawn
//! uniformly at random, `C` the number of correct guesses, and
//! `A_i = P[I guessed correctly and C ≥ i]`, `B_i = P[I guessed wrongly and
//! C ≥ i]`. Then:
//! 1. `A_0 + B_0 = r/m` exactly (every run makes `r` guesses);
//! 2. flipping canary I's inclusion turns "I correct, C ≥ i" into "I wrong,
//!    C ≥ i − 1", so if the mechanism is f-DP with respect to each canary,
//!    `A_i ≤ f̄(B_{i−1})`, where `f̄(x) = 1 − f(x)`; that is,
//!    `B_{i−1} ≥ f̄⁻¹(A_i)`;
//! 3. `A_{i−1} − A_i = (i−1)/m · P[C = i−1]` and `B_{i−1} − B_i = (r−i+1)/m ·
//!    P[C = i−1]`, so the two increments are in the ratio `(i−1)/(r−i+1)`;
//! 4. if `P[C ≥ v] ≥ τ`, then `A_v ≥ τv/m` and (in the worst case the paper
//!    derives) `B_v ≥ τ(r−v)/m`.
//!
//! Starting from the values of 4 and applying 2 and 3 for `i = v, v−1, …, 1`
//! gives lower bounds on `A_0` and `B_0`; if their sum exceeds `r/m`, 1 is
//! contradicted, so `P[C ≥ v] < τ` under f-DP: the observation rejects f-DP
//! at level τ. Both sequences only grow, so the recursion stops as soon as
//! the sum exceeds `r/m` or a step changes nothing (a fixed point).
//!
//! **Families** ([`TradeoffFamily`]): the Gaussian trade-off `G_μ`
//! (`f̄⁻¹(y) = Φ(Φ⁻¹(y) − μ)`), which gives the largest μ rejected (a valid
//! lower bound on the μ of any μ-GDP claim) and the ε at δ of that μ-GDP
//! curve (a valid ε lower bound only if the mechanism's trade-off curve is
//! Gaussian-shaped, as for the GDP threshold audit); and the (ε, δ) curve
//! `f_{ε,δ}` (`f̄⁻¹(y) = max{0, (y − δ)e^{−ε}, 1 − δ − e^{ε}(1 − y)}`), which
//! gives an ε lower bound valid for any mechanism.
//!
//! **Validity conditions**: inclusion bits independent and uniform; the
//! guesses a function of the scores only (never of the bits), the number of
//! guesses fixed or chosen by a valid policy (`one_run::select_guesses`);
//! the claim f-DP for each canary (add/remove), with f symmetric (both
//! families are).

use serde::Serialize;

use crate::bound::{EpsilonLowerBound, MechanismAssumption};
use crate::error::{check_confidence, check_delta, AuditError, Result};
use crate::gaussian::{cdf, gdp_epsilon, pdf};
use crate::interrupt::Interrupt;
use crate::observations::{Method, Observations};
use crate::one_run::{select_guesses, GuessBound, Guesses, OneRunConfig};
use crate::region::check_gdp_delta;

/// The family of trade-off curves whose members are tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum TradeoffFamily {
    /// μ-GDP curves `G_μ`: the bound is on μ, and ε at δ assumes a
    /// Gaussian-shaped trade-off curve.
    #[cfg_attr(
        feature = "clap",
        value(
            help = "μ-GDP curves: a μ lower bound, and ε at δ assuming a Gaussian-shaped trade-off"
        )
    )]
    Gaussian,
    /// (ε, δ)-DP curves `f_{ε,δ}` at the configured δ: the bound is on ε.
    #[cfg_attr(
        feature = "clap",
        value(help = "(ε, δ)-DP curves: an ε lower bound for any mechanism")
    )]
    EpsDelta,
}

impl TradeoffFamily {
    /// What a bound of `method` in this family assumes of the mechanism:
    /// nothing for (ε, δ); a Gaussian trade-off curve for the f-DP one-run
    /// audit's Gaussian family, and besides canaries that do not interact
    /// for the order-statistics one ([`crate::one_run_order`]).
    pub(crate) fn assumption(self, method: Method) -> MechanismAssumption {
        match (self, method) {
            (TradeoffFamily::EpsDelta, _) => MechanismAssumption::Nothing,
            (TradeoffFamily::Gaussian, Method::OneRunOrder | Method::OneRunOrderGaussian) => {
                MechanismAssumption::IndependentGaussianChannels
            }
            (TradeoffFamily::Gaussian, _) => MechanismAssumption::GaussianTradeoff,
        }
    }

    /// `gaussian` or `eps-delta`.
    pub fn name(&self) -> &'static str {
        match self {
            TradeoffFamily::Gaussian => "gaussian",
            TradeoffFamily::EpsDelta => "eps-delta",
        }
    }

    /// `f̄⁻¹(y)` of the member with parameter `theta` (μ or ε).
    fn blow_up_inverse(self, theta: f64, delta: f64, y: f64) -> f64 {
        if y <= 0.0 {
            return 0.0;
        }
        if y >= 1.0 {
            return match self {
                TradeoffFamily::Gaussian => 1.0,
                TradeoffFamily::EpsDelta => 1.0 - delta,
            };
        }
        match self {
            TradeoffFamily::Gaussian => cdf(quantile(y) - theta),
            TradeoffFamily::EpsDelta => {
                let e = theta.exp();
                ((y - delta) / e).max(1.0 - delta - e * (1.0 - y)).max(0.0)
            }
        }
    }
}

/// `Φ⁻¹(p)` for `p ∈ (0, 1)`, by Acklam's rational approximation (relative
/// error below 1.2e-9) refined by one Halley step, which brings it to
/// rounding error; a few times cheaper than `normal::inverse_cdf`, which the
/// recursion calls once per step. The test below checks the two agree.
fn quantile(p: f64) -> f64 {
    if p > 0.5 {
        return -quantile_lower(1.0 - p);
    }
    quantile_lower(p)
}

fn quantile_lower(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    let x = if p < 0.024_25 {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    };
    // Halley on Φ(x) = p.
    let density = pdf(x);
    if density <= 0.0 {
        return x;
    }
    let u = (cdf(x) - p) / density;
    x - u / (1.0 + 0.5 * x * u)
}

/// Refuses a test level outside (0, 1).
pub(crate) fn check_level(level: f64) -> Result<()> {
    if level.is_finite() && level > 0.0 && level < 1.0 {
        Ok(())
    } else {
        Err(AuditError::InvalidParameter {
            name: "level",
            value: level.to_string(),
            expected: "a level strictly between 0 and 1 (1 − confidence)",
        })
    }
}

impl TradeoffFamily {
    /// Whether `v` correct of `r` guesses on `m` canaries reject "f-DP" at
    /// `level`, for the member `theta` of the family (validated inputs): the
    /// recursion of the module docs, `A_0 + B_0` minus `r/m` (times
    /// `1 + 1e-12`, so that rounding never rejects), positive when rejected.
    /// It returns as soon as the sign is known to be positive (both
    /// sequences only grow).
    pub(crate) fn rejects_unchecked(self, theta: f64, delta: f64, g: Guesses, level: f64) -> bool {
        let Guesses { m, r, v } = g;
        let (mf, rf) = (m as f64, r as f64);
        let limit = rf / mf * (1.0 + 1e-12);
        if v == 0 {
            // `A_0 + B_0 − limit = −limit ≤ 0`: no correct guess rejects nothing.
            return false;
        }
        let mut a = level * v as f64 / mf;
        let mut b = level * (r - v) as f64 / mf;
        for i in (0..v).rev() {
            if a + b > limit {
                break;
            }
            let b_new = b.max(self.blow_up_inverse(theta, delta, a));
            if b_new <= b {
                break;
            }
            a = (a + i as f64 / (rf - i as f64) * (b_new - b)).min(1.0);
            b = b_new;
        }
        a + b - limit > 0.0
    }

    /// Whether the observation `g` rejects "f-DP" for the member `theta` (μ
    /// or ε) of the family at `level` (Mahloujifar et al. 2024; see the
    /// module docs).
    pub fn rejects(self, theta: f64, delta: f64, g: Guesses, level: f64) -> Result<bool> {
        g.check_nonempty()?;
        check_delta(delta)?;
        check_level(level)?;
        if !(theta.is_finite() && theta >= 0.0) {
            return Err(AuditError::InvalidParameter {
                name: "theta",
                value: theta.to_string(),
                expected: "a finite μ or ε ≥ 0",
            });
        }
        Ok(self.rejects_unchecked(theta, delta, g, level))
    }

    /// The largest member parameter rejected (the low end of the final
    /// bracket, by bisection: rejection is monotone in the parameter), or 0
    /// when `floor` itself is not rejected (the bound is then at most
    /// `floor`). Asks `stop` before each test (one test is O(v) at most).
    fn largest_rejected(
        self,
        delta: f64,
        g: Guesses,
        level: f64,
        floor: f64,
        stop: Interrupt,
    ) -> Result<f64> {
        let rej = |t: f64| -> Result<bool> {
            stop.check("f-DP one-run bound")?;
            Ok(self.rejects_unchecked(t, delta, g, level))
        };
        if !rej(floor)? {
            return Ok(0.0);
        }
        let mut lo = floor;
        let mut hi = (2.0 * floor).max(1.0);
        while rej(hi)? {
            lo = hi;
            hi *= 2.0;
            if hi > THETA_MAX {
                return Ok(lo);
            }
        }
        while hi - lo > THETA_TOL {
            let mid = 0.5 * (lo + hi);
            if rej(mid)? {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }
}

/// Largest parameter searched; a larger one is never rejected in practice.
const THETA_MAX: f64 = 128.0;
/// Absolute tolerance of the bisection.
const THETA_TOL: f64 = 1e-7;

/// The μ lower bound: the largest μ such that `v` correct of `r` guesses on
/// `m` canaries reject μ-GDP at `level` (0 when even μ = 0 is not rejected).
pub fn mu_lower_bound(m: u64, r: u64, v: u64, level: f64) -> Result<f64> {
    let g = Guesses { m, r, v };
    g.check_nonempty()?;
    check_level(level)?;
    TradeoffFamily::Gaussian.largest_rejected(0.0, g, level, 0.0, Interrupt::NEVER)
}

/// The ε lower bound of the (ε, δ) family: the largest ε such that the
/// observation rejects (ε, δ)-DP at `level`.
pub fn epsilon_lower_bound(m: u64, r: u64, v: u64, delta: f64, level: f64) -> Result<f64> {
    let g = Guesses { m, r, v };
    g.check_nonempty()?;
    check_delta(delta)?;
    check_level(level)?;
    TradeoffFamily::EpsDelta.largest_rejected(delta, g, level, 0.0, Interrupt::NEVER)
}

/// The f-DP one-run bound from canary scores (one row per canary, `member` =
/// included): the design `cfg` (guesses chosen per `cfg.selection`), the
/// curves of `family`. `cfg.delta` is the δ of the (ε, δ) curves, or, for the
/// Gaussian family, the δ at which μ⁻ is stated as ε (then > 0).
pub fn one_run_fdp_lower_bound(
    obs: &Observations,
    cfg: &OneRunConfig,
    family: TradeoffFamily,
) -> Result<EpsilonLowerBound> {
    one_run_fdp_interruptible(obs, cfg, family, Interrupt::NEVER)
}

/// [`one_run_fdp_lower_bound`], asking `stop` between units of work.
pub fn one_run_fdp_interruptible(
    obs: &Observations,
    cfg: &OneRunConfig,
    family: TradeoffFamily,
    stop: Interrupt,
) -> Result<EpsilonLowerBound> {
    let delta = cfg.delta;
    let bound =
        |g: Guesses, level: f64, floor: f64| family.largest_rejected(delta, g, level, floor, stop);
    family_bound(obs, cfg, family, Method::OneRunFdp, &bound, stop)
}

/// The bound of a one-run method that tests the trade-off curves of
/// `family` (this module's and [`crate::one_run_order`]'s): checks δ for
/// the family, chooses the guesses with `bound` by `cfg.selection`, records
/// μ⁻ for the Gaussian family and states ε (at δ of μ⁻-GDP, or the ε bound
/// itself) with what it assumes ([`TradeoffFamily::assumption`]).
pub(crate) fn family_bound(
    obs: &Observations,
    cfg: &OneRunConfig,
    family: TradeoffFamily,
    method: Method,
    bound: &GuessBound<'_>,
    stop: Interrupt,
) -> Result<EpsilonLowerBound> {
    check_confidence(cfg.confidence)?;
    match family {
        TradeoffFamily::Gaussian => check_gdp_delta(cfg.delta)?,
        TradeoffFamily::EpsDelta => check_delta(cfg.delta)?,
    }
    let delta = cfg.delta;
    let mut out = select_guesses(obs, cfg, bound, stop)?;
    out.evidence.family = Some(family.name());
    if family == TradeoffFamily::Gaussian {
        out.evidence.mu_lower = Some(out.value);
    }
    let assumes = family.assumption(method);
    Ok(out.into_bound(cfg, method, assumes, |value| match family {
        TradeoffFamily::Gaussian => gdp_epsilon(value, delta),
        TradeoffFamily::EpsDelta => value,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gaussian::inverse_cdf;
    use crate::observations::Selection;
    use TradeoffFamily::{EpsDelta, Gaussian};

    /// `v` correct of `r` guesses on `m` canaries.
    fn g(m: u64, r: u64, v: u64) -> Guesses {
        Guesses { m, r, v }
    }

    #[test]
    fn blow_up_inverses() {
        // μ = 0 and ε = 0, δ = 0: perfect privacy, f̄⁻¹ is the identity.
        for y in [0.01, 0.3, 0.9] {
            let g = TradeoffFamily::Gaussian.blow_up_inverse(0.0, 0.0, y);
            let e = TradeoffFamily::EpsDelta.blow_up_inverse(0.0, 0.0, y);
            assert!(
                (g - y).abs() < 1e-12 && (e - y).abs() < 1e-15,
                "{y}: {g} {e}"
            );
        }
        // f̄⁻¹ inverts f̄(x) = 1 − f(x): Gaussian f̄(x) = Φ(Φ⁻¹(x) + μ).
        let x = 0.02;
        let y = cdf(inverse_cdf(x) + 1.5);
        let back = TradeoffFamily::Gaussian.blow_up_inverse(1.5, 0.0, y);
        assert!((back - x).abs() < 1e-12, "{back}");
        // (ε, δ): f̄(x) = min{1, δ + e^ε x, 1 − e^{−ε}(1 − δ − x)}.
        let (eps, delta) = (1.0_f64, 1e-3);
        for x in [0.001, 0.1, 0.25, 0.9] {
            let y = (delta + eps.exp() * x)
                .min(1.0 - (1.0 - delta - x) / eps.exp())
                .min(1.0);
            let back = TradeoffFamily::EpsDelta.blow_up_inverse(eps, delta, y);
            assert!((back - x).abs() < 1e-12, "{x}: {back}");
        }
    }

    #[test]
    fn fast_quantile_matches_the_accurate_one() {
        for k in 0..=3000 {
            let p = 10f64.powf(-300.0 + 0.1 * k as f64).min(0.5);
            for p in [p, 1.0 - p].into_iter().filter(|&p| p < 1.0) {
                let (a, b) = (quantile(p), inverse_cdf(p));
                assert!(
                    (a - b).abs() <= 1e-12 * b.abs().max(1.0),
                    "p = {p:e}: {a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn rejection_is_monotone_in_the_parameter() {
        // Larger μ (less privacy) is never easier to reject.
        for (m, r, v) in [(1000, 100, 80), (1000, 1000, 700), (5000, 200, 190)] {
            let mut last = true;
            for i in 0..400 {
                let mu = i as f64 * 0.02;
                let now = Gaussian.rejects(mu, 0.0, g(m, r, v), 0.05).unwrap();
                assert!(last || !now, "({m},{r},{v}) μ = {mu}");
                last = now;
            }
        }
    }

    #[test]
    fn perfect_privacy_is_rejected_only_by_enough_correct_guesses() {
        // Under μ = 0 each guess is a fair coin whatever the mechanism does:
        // 10 of 10 correct (p = 2⁻¹⁰) rejects at 5 %, 5 of 10 does not.
        assert!(Gaussian.rejects(0.0, 0.0, g(10, 10, 10), 0.05).unwrap());
        assert!(!Gaussian.rejects(0.0, 0.0, g(10, 10, 5), 0.05).unwrap());
        assert_eq!(mu_lower_bound(100, 100, 50, 0.05).unwrap(), 0.0);
        assert_eq!(mu_lower_bound(100, 100, 0, 0.05).unwrap(), 0.0);
    }

    #[test]
    fn exact_at_perfect_privacy_when_every_canary_is_guessed() {
        // μ = 0 (f̄⁻¹ = identity), m = r = v = n: by hand the recursion ends
        // at A_0 + B_0 = 2ⁿτ (n = 2: τ, then τ + τ and τ, then 4τ; n = 3:
        // 8τ), so it rejects iff τ > 2⁻ⁿ = P[n fair coins all correct]: the
        // test is exact here.
        for n in [2_u64, 3, 6] {
            let p = 0.5_f64.powi(n as i32);
            assert!(Gaussian.rejects(0.0, 0.0, g(n, n, n), p * 1.01).unwrap());
            assert!(!Gaussian.rejects(0.0, 0.0, g(n, n, n), p * 0.99).unwrap());
            assert!(EpsDelta.rejects(0.0, 0.0, g(n, n, n), p * 1.01).unwrap());
            assert!(!EpsDelta.rejects(0.0, 0.0, g(n, n, n), p * 0.99).unwrap());
        }
        // One guess never rejects at a level below ½.
        assert!(!Gaussian.rejects(0.0, 0.0, g(1, 1, 1), 0.49).unwrap());
    }

    #[test]
    fn matches_the_reference_implementation() {
        // JAX-Privacy 2.0.0 (`jax_privacy.auditing._epsilon_one_run_fdp(0, m,
        // r, v, 0.05, 1e-5)`, an independent implementation of the same
        // recursion for the Gaussian family, reporting ε at δ = 1e-5 by
        // Brent's method to 1e-6): our μ⁻, converted, agrees to its tolerance
        // and is never above it by more than that (we return the low end).
        let cases = [
            ((1000, 100, 95), 3.323_300_490_032_365_5),
            ((1000, 200, 180), 2.901_242_923_309_430_6),
            ((10_000, 1000, 990), 5.919_625_115_427_092),
            ((100, 100, 90), 3.587_927_019_612_734_6),
            ((5000, 100, 100), 4.624_165_310_934_422),
        ];
        for ((m, r, v), reference) in cases {
            let eps = gdp_epsilon(mu_lower_bound(m, r, v, 0.05).unwrap(), 1e-5);
            assert!(
                (eps - reference).abs() < 2e-6 && eps <= reference + 1e-6,
                "({m},{r},{v}): {eps} vs {reference}"
            );
        }
    }

    #[test]
    fn rejects_bad_input() {
        assert!(Gaussian.rejects(1.0, 0.0, g(10, 11, 3), 0.05).is_err());
        assert!(Gaussian.rejects(1.0, 0.0, g(10, 5, 6), 0.05).is_err());
        assert!(Gaussian.rejects(-1.0, 0.0, g(10, 5, 3), 0.05).is_err());
        assert!(Gaussian.rejects(1.0, 0.0, g(10, 5, 3), 0.0).is_err());
        assert!(mu_lower_bound(0, 0, 0, 0.05).is_err());
        let obs = Observations::new(vec![1.0, 0.0], vec![true, false]).unwrap();
        let cfg = OneRunConfig::new(0.95, 0.0, Selection::Bonferroni);
        assert!(matches!(
            one_run_fdp_lower_bound(&obs, &cfg, Gaussian),
            Err(AuditError::InvalidParameter { name: "delta", .. })
        ));
    }
}
