//! Special functions in log space: ln Γ, ln B, the regularized incomplete
//! beta function and binomial tails.
//!
//! Everything an audit bound needs (Clopper–Pearson limits, the one-run
//! p-value of Steinke et al. 2023 Thm 3.1, PANORAMIA's precision bounds) is a
//! binomial tail, and a binomial tail is a regularized incomplete beta value:
//! `P[Bin(n, p) ≥ k] = I_p(k, n − k + 1)`.
//!
//! Accuracy strategy:
//! - The continued fraction of `I_x(a, b)` is evaluated only on the side
//!   where it converges fast *and* the value is the smaller tail, so tiny
//!   tails (1e-12 and far below) keep full relative precision; the other tail
//!   is `ln(1 − e^t)` of it.
//! - The prefactor `x^a (1−x)^b / B(a, b)` is computed in log space. When both
//!   `a` and `b` are large it is written as `−(a+b)·KL(x₀‖x)` plus Stirling
//!   corrections, so the huge `ln Γ` terms never cancel numerically
//!   (relative error stays near 1e-15 even for `a, b ~ 1e8`).

/// `½·ln(2π)`.
const HALF_LN_2PI: f64 = 0.918_938_533_204_672_8;

/// Below this, `ln Γ` shifts its argument up before using Stirling's series.
const STIRLING_MIN: f64 = 10.0;

/// Stirling's series remainder `ln Γ(z) − [(z−½)ln z − z + ½ln 2π]` for `z ≥ 10`.
///
/// Terms are `B₂ₖ / (2k(2k−1) z^{2k−1})` with the Bernoulli numbers
/// B₂ = 1/6, B₄ = −1/30, B₆ = 1/42, B₈ = −1/30, B₁₀ = 5/66, B₁₂ = −691/2730,
/// B₁₄ = 7/6 (Abramowitz & Stegun 6.1.40). At `z = 10` the last term is
/// below 1e-15.
fn stirling_correction(z: f64) -> f64 {
    let r = 1.0 / z;
    let r2 = r * r;
    r * (1.0 / 12.0
        + r2 * (-1.0 / 360.0
            + r2 * (1.0 / 1260.0
                + r2 * (-1.0 / 1680.0
                    + r2 * (1.0 / 1188.0 + r2 * (-691.0 / 360_360.0 + r2 * (1.0 / 156.0)))))))
}

/// `ln Γ(z)` for `z > 0` (absolute error about 1e-15 for `z < 10`, relative
/// error about 1e-16 above). Returns `+∞` for `z ≤ 0` or NaN input.
pub fn ln_gamma(z: f64) -> f64 {
    if z.is_nan() || z <= 0.0 {
        return f64::INFINITY;
    }
    if z.is_infinite() {
        return f64::INFINITY;
    }
    let mut shift = 0.0;
    let mut zz = z;
    let mut prod = 1.0;
    while zz < STIRLING_MIN {
        prod *= zz;
        zz += 1.0;
        // Keep the product in range; the loop runs at most 10 times.
        if prod < 1e-280 {
            shift += prod.ln();
            prod = 1.0;
        }
    }
    let stirling = (zz - 0.5) * zz.ln() - zz + HALF_LN_2PI + stirling_correction(zz);
    stirling - prod.ln() - shift
}

/// `ln Γ(a + b) − ln Γ(b)` without cancellation when `b ≥ 10`.
fn ln_gamma_ratio(a: f64, b: f64) -> f64 {
    if b < STIRLING_MIN {
        return ln_gamma(a + b) - ln_gamma(b);
    }
    let s = a + b;
    (b - 0.5) * (a / b).ln_1p() + a * s.ln() - a + stirling_correction(s) - stirling_correction(b)
}

/// `ln B(a, b) = ln Γ(a) + ln Γ(b) − ln Γ(a + b)` for `a, b > 0`.
pub fn ln_beta(a: f64, b: f64) -> f64 {
    let (a, b) = if a <= b { (a, b) } else { (b, a) };
    if b < STIRLING_MIN {
        ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b)
    } else if a < STIRLING_MIN {
        ln_gamma(a) - ln_gamma_ratio(a, b)
    } else {
        let s = a + b;
        (a - 0.5) * a.ln() + (b - 0.5) * b.ln() - (s - 0.5) * s.ln()
            + HALF_LN_2PI
            + stirling_correction(a)
            + stirling_correction(b)
            - stirling_correction(s)
    }
}

/// `ln[x^a y^b / B(a, b)]` with `y = 1 − x` passed separately (so callers that
/// know `1 − x` exactly, e.g. `e^{−ε}/(1+e^{−ε})`, keep its precision).
fn ln_beta_prefactor(a: f64, b: f64, x: f64, y: f64) -> f64 {
    if a >= STIRLING_MIN && b >= STIRLING_MIN {
        let s = a + b;
        let x0 = a / s;
        let y0 = b / s;
        // a·ln(x/x0) + b·ln(y/y0) = −(a+b)·KL(x0 ‖ x); both logs near zero
        // are taken through ln_1p of a small difference.
        let dx = x - x0;
        let t1 = a * (dx / x0).ln_1p();
        let t2 = b * (-dx / y0).ln_1p();
        // Use y directly when x is close to 1 (dx/y0 loses precision there).
        let t2 = if y < 0.5 * y0 { b * (y / y0).ln() } else { t2 };
        let t1 = if x < 0.5 * x0 { a * (x / x0).ln() } else { t1 };
        t1 + t2 + 0.5 * (a * b / s).ln()
            - HALF_LN_2PI
            - (stirling_correction(a) + stirling_correction(b) - stirling_correction(s))
    } else {
        a * x.ln() + b * y.ln() - ln_beta(a, b)
    }
}

/// Smallest magnitude the modified Lentz method lets `c` and `d` take.
const LENTZ_TINY: f64 = 1e-300;

/// One step of the modified Lentz method (Numerical Recipes §5.2) with the
/// partial numerator `aa`: the new `c` and the new `1/d`, each kept away
/// from 0.
fn lentz_step(aa: f64, c: f64, d: f64) -> (f64, f64) {
    let mut d = 1.0 + aa * d;
    if d.abs() < LENTZ_TINY {
        d = LENTZ_TINY;
    }
    let mut c = 1.0 + aa / c;
    if c.abs() < LENTZ_TINY {
        c = LENTZ_TINY;
    }
    (c, 1.0 / d)
}

/// Continued fraction for `I_x(a, b) · a · B(a, b) / (x^a y^b)` (modified
/// Lentz), convergent and fast for `x < (a + 1)/(a + b + 2)`.
fn beta_continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = LENTZ_TINY;
    const EPS: f64 = 1e-16;
    let max_iter = 1000 + (20.0 * (a.max(b)).sqrt()) as usize;
    let qab = a + b;
    let qap = a + 1.0;
    let qam = a - 1.0;
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=max_iter {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        (c, d) = lentz_step(aa, c, d);
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        (c, d) = lentz_step(aa, c, d);
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

/// `ln(1 − e^t)` for `t ≤ 0`, accurate at both ends.
pub fn ln1m_exp(t: f64) -> f64 {
    if t > -std::f64::consts::LN_2 {
        (-t.exp_m1()).ln()
    } else {
        (-t.exp()).ln_1p()
    }
}

/// Both tails of the regularized incomplete beta function in log space:
/// `(ln I_x(a, b), ln[1 − I_x(a, b)])`, for `a, b > 0` and `y = 1 − x`.
///
/// The smaller tail is computed directly, so its relative accuracy does not
/// degrade as it shrinks (1e-12, 1e-100, ...).
pub fn ln_beta_inc_tails(a: f64, b: f64, x: f64, y: f64) -> (f64, f64) {
    if x <= 0.0 {
        return (f64::NEG_INFINITY, 0.0);
    }
    if y <= 0.0 {
        return (0.0, f64::NEG_INFINITY);
    }
    if x * (a + b + 2.0) < a + 1.0 {
        let ln_lower =
            ln_beta_prefactor(a, b, x, y) + beta_continued_fraction(a, b, x).ln() - a.ln();
        let ln_lower = ln_lower.min(0.0);
        (ln_lower, ln1m_exp(ln_lower))
    } else {
        let ln_upper =
            ln_beta_prefactor(b, a, y, x) + beta_continued_fraction(b, a, y).ln() - b.ln();
        let ln_upper = ln_upper.min(0.0);
        (ln1m_exp(ln_upper), ln_upper)
    }
}

/// `ln P[Bin(n, p) ≥ k]` with `q = 1 − p` passed separately.
pub fn ln_binomial_sf(k: u64, n: u64, p: f64, q: f64) -> f64 {
    if k == 0 {
        return 0.0;
    }
    if k > n {
        return f64::NEG_INFINITY;
    }
    ln_beta_inc_tails(k as f64, (n - k + 1) as f64, p, q).0
}

/// `ln P[Bin(n, p) ≤ k]` with `q = 1 − p` passed separately.
pub fn ln_binomial_cdf(k: u64, n: u64, p: f64, q: f64) -> f64 {
    if k >= n {
        return 0.0;
    }
    ln_beta_inc_tails((k + 1) as f64, (n - k) as f64, p, q).1
}

/// `ln P[Bin(n, p) = k]` with `q = 1 − p` passed separately.
pub fn ln_binomial_pmf(k: u64, n: u64, p: f64, q: f64) -> f64 {
    if k > n {
        return f64::NEG_INFINITY;
    }
    let (kf, nf) = (k as f64, n as f64);
    let ln_choose = -(nf + 1.0).ln() - ln_beta(kf + 1.0, nf - kf + 1.0);
    let term_p = if k == 0 { 0.0 } else { kf * p.ln() };
    let term_q = if k == n { 0.0 } else { (nf - kf) * q.ln() };
    ln_choose + term_p + term_q
}

/// Seeds a grid over `U ~ Beta(a, b)` for the rank tests ([`crate::rank_test`],
/// [`crate::one_run_order`]): points at `mean + z·sd` for `z` in `steps`
/// (from the normal approximation of `U`), upwards until the mass above a
/// point is below 10⁻²⁰ or 1 is reached, then downwards until the mass below
/// is (a quarter of the last point once `mean − z·sd` is not positive).
/// `point(u)` inserts the point `u` and returns `(P[U ≤ u], P[U > u])`. The
/// placement only affects the work: the masses are exact at any points.
pub(crate) fn seed_beta_grid(
    a: f64,
    b: f64,
    steps: &[f64],
    mut point: impl FnMut(f64) -> (f64, f64),
) {
    const TAIL_MASS: f64 = 1e-20;
    let mean = a / (a + b);
    let sd = (a * b / ((a + b) * (a + b) * (a + b + 1.0))).sqrt();
    for &z in steps {
        let u = mean + z * sd;
        if u >= 1.0 || point(u).1 < TAIL_MASS {
            break;
        }
    }
    let mut last = mean;
    for &z in steps.iter().skip(1) {
        let mut u = mean - z * sd;
        if u <= 0.0 {
            u = last / 4.0;
        }
        last = u;
        if u <= f64::MIN_POSITIVE || point(u).0 < TAIL_MASS {
            break;
        }
    }
}

/// `P[a < U ≤ b]` for two points `a < b` of a grid over a Beta law (as
/// [`seed_beta_grid`] seeds), from their tails `(P[U ≤ ·], P[U > ·])`: the
/// difference of the smaller tails, so that a bin far in either tail keeps its
/// relative precision.
pub(crate) fn beta_bin_mass(a: (f64, f64), b: (f64, f64)) -> f64 {
    if b.0 <= 0.5 { b.0 - a.0 } else { a.1 - b.1 }.max(0.0)
}

/// Where to refine the bin between two grid points `lo < hi`: the geometric
/// mean when they differ by more than a factor 4 (the bins near u = 0), else
/// the mean.
pub(crate) fn split_bin(lo: f64, hi: f64) -> f64 {
    if lo > 0.0 && hi > 4.0 * lo {
        (lo * hi).sqrt()
    } else if lo <= 0.0 {
        hi / 16.0
    } else {
        0.5 * (lo + hi)
    }
}

/// The low end of a bracket `[lo, hi]` of a test monotone in θ (`lo`
/// rejected, `hi` not) once its width is at most `tol · max(1, lo)`: the
/// largest θ rejected, to that tolerance. `test(θ)` says whether θ is
/// rejected and gives `ln p − ln level` (`h_lo`, `h_hi` at the ends), which
/// places the next θ by the Illinois variant of regula falsi, with a
/// bisection whenever a step fails to halve the bracket.
pub(crate) fn narrow_rejection_bracket(
    (mut lo, mut h_lo): (f64, f64),
    (mut hi, mut h_hi): (f64, f64),
    tol: f64,
    mut test: impl FnMut(f64) -> (bool, f64),
) -> f64 {
    let mut side = 0_i8;
    while hi - lo > tol * lo.max(1.0) {
        let width = hi - lo;
        let secant = (lo * h_hi - hi * h_lo) / (h_hi - h_lo);
        let theta = if secant.is_finite() && secant > lo && secant < hi {
            secant
        } else {
            0.5 * (lo + hi)
        };
        let (rejected, h) = test(theta);
        if rejected {
            (lo, h_lo) = (theta, h.min(0.0));
            if side == -1 {
                h_hi *= 0.5;
            }
            side = -1;
        } else {
            (hi, h_hi) = (theta, h.max(f64::MIN_POSITIVE));
            if side == 1 {
                h_lo *= 0.5;
            }
            side = 1;
        }
        if hi - lo > 0.5 * width {
            // Slow progress: bisect once.
            let mid = 0.5 * (lo + hi);
            let (rejected, h) = test(mid);
            if rejected {
                (lo, h_lo) = (mid, h.min(0.0));
            } else {
                (hi, h_hi) = (mid, h.max(f64::MIN_POSITIVE));
            }
            side = 0;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(a: f64, b: f64) -> f64 {
        ((a - b) / b).abs()
    }

    #[test]
    fn ln_gamma_matches_factorials_and_half() {
        // Γ(n) = (n−1)!, exact integers; Γ(½) = √π (closed forms).
        let mut fact = 1.0_f64;
        for n in 1..30 {
            let expected = fact.ln();
            let got = ln_gamma(n as f64);
            assert!(
                (got - expected).abs() <= 1e-13 * expected.abs().max(1.0),
                "n={n}"
            );
            fact *= n as f64;
        }
        assert!((ln_gamma(0.5) - 0.5 * std::f64::consts::PI.ln()).abs() < 1e-14);
        // ln Γ(1e-8) ≈ −ln(1e-8) − γ·1e-8 (series at 0; γ = Euler's constant).
        let expected = 18.420_680_738_180_21; // mpmath loggamma(1e-8)
        assert!((ln_gamma(1e-8) - expected).abs() < 1e-12);
    }

    #[test]
    fn ln_beta_symmetry_and_closed_form() {
        // B(1, n) = 1/n (closed form).
        for n in [1.0, 7.0, 1e3, 1e8] {
            assert!((ln_beta(1.0, n) + f64::ln(n)).abs() < 1e-13 * f64::ln(n).max(1.0));
        }
        // B(a, b) for integers: (a−1)!(b−1)!/(a+b−1)!; a = 20, b = 30.
        let direct = ln_gamma(20.0) + ln_gamma(30.0) - ln_gamma(50.0);
        assert!(rel(ln_beta(20.0, 30.0), direct) < 1e-14);
        assert_eq!(ln_beta(3.5, 12.0), ln_beta(12.0, 3.5));
    }

    #[test]
    fn binomial_tails_closed_forms() {
        // P[Bin(10, ½) ≥ 9] = 11/1024 (docs/audit-statistics.md, "Reference values", exact).
        let got = ln_binomial_sf(9, 10, 0.5, 0.5).exp();
        assert!(rel(got, 11.0 / 1024.0) < 1e-14);
        // P[Bin(n, p) ≥ n] = p^n and P[Bin(n, p) ≤ 0] = (1−p)^n (closed forms).
        let (n, p) = (1000_u64, 0.97);
        assert!(rel(ln_binomial_sf(n, n, p, 1.0 - p), n as f64 * p.ln()) < 1e-13);
        assert!(
            rel(
                ln_binomial_cdf(0, n, p, 1.0 - p),
                n as f64 * (0.03_f64).ln()
            ) < 1e-13
        );
        // Tiny tail far below 1e-12 keeps relative precision:
        // P[Bin(100, 0.01) ≥ 100] = 1e-200.
        assert!(rel(ln_binomial_sf(100, 100, 0.01, 0.99), -200.0 * 10f64.ln()) < 1e-13);
    }

    #[test]
    fn binomial_tails_match_summation() {
        // Direct summation of the pmf (independent code path) for moderate n.
        for &(n, p) in &[(50_u64, 0.3), (200, 0.9), (1000, 0.002), (333, 0.5)] {
            let q = 1.0 - p;
            let pmf: Vec<f64> = (0..=n).map(|k| ln_binomial_pmf(k, n, p, q).exp()).collect();
            for k in 0..=n {
                let sf: f64 = pmf[k as usize..].iter().sum();
                let cdf: f64 = pmf[..=k as usize].iter().sum();
                if sf > 1e-280 {
                    let got = ln_binomial_sf(k, n, p, q).exp();
                    assert!(rel(got, sf) < 1e-11, "sf n={n} p={p} k={k}: {got} vs {sf}");
                }
                if cdf > 1e-280 {
                    let got = ln_binomial_cdf(k, n, p, q).exp();
                    assert!(
                        rel(got, cdf) < 1e-11,
                        "cdf n={n} p={p} k={k}: {got} vs {cdf}"
                    );
                }
            }
        }
    }

    #[test]
    fn large_parameters_match_mpmath() {
        // Reference: mpmath 1.3.0 at 40 digits, direct pmf summation with
        // loggamma: P[Bin(100000, 0.05) ≥ 4922] = 0.87278543823982378869...
        let got = ln_binomial_sf(4922, 100_000, 0.05, 0.95).exp();
        assert!(rel(got, 0.872_785_438_239_823_8) < 1e-12, "{got}");
        // ln P[Bin(10^8, 0.5) ≤ 49_970_000] = −20.736154184256930999... (same).
        let got = ln_binomial_cdf(49_970_000, 100_000_000, 0.5, 0.5);
        assert!(rel(got, -20.736_154_184_256_93) < 1e-10, "{got}");
    }
}
