//! Helpers shared by the integration tests.
#![allow(dead_code)]

/// Standard normal CDF via the complementary error function, Chebyshev
/// approximation with fractional error below 1.2e-7 everywhere (Press et al.,
/// Numerical Recipes, 2nd ed., §6.2, `erfcc`). Ample for the 1e-3-level
/// distribution checks below.
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// Gaussian density N(mu, sigma²) at x.
pub fn normal_pdf(x: f64, mu: f64, sigma: f64) -> f64 {
    let z = (x - mu) / sigma;
    (-0.5 * z * z).exp() / (sigma * (2.0 * std::f64::consts::PI).sqrt())
}

/// Mean and standard error of the mean.
pub fn mean_se(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

/// Probability that a score from `pos` exceeds one from `neg` (ties count ½),
/// by sorting: the area under the ROC curve.
pub fn auc(pos: &[f64], neg: &[f64]) -> f64 {
    let mut all: Vec<(f64, bool)> = pos
        .iter()
        .map(|&s| (s, true))
        .chain(neg.iter().map(|&s| (s, false)))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut neg_below = 0.0;
    let mut wins = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        let (mut p, mut n) = (0.0, 0.0);
        while j < all.len() && all[j].0 == all[i].0 {
            if all[j].1 {
                p += 1.0;
            } else {
                n += 1.0;
            }
            j += 1;
        }
        wins += p * (neg_below + 0.5 * n);
        neg_below += n;
        i = j;
    }
    wins / (pos.len() as f64 * neg.len() as f64)
}

#[test]
fn normal_cdf_matches_tabulated_values() {
    // Φ(0) = 0.5, Φ(1) = 0.841344746, Φ(−1.959963985) = 0.025 (standard tables).
    assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
    assert!((normal_cdf(1.0) - 0.841_344_746).abs() < 1e-7);
    assert!((normal_cdf(-1.959_963_985) - 0.025).abs() < 1e-7);
}

#[test]
fn auc_of_separated_and_identical_samples() {
    assert_eq!(auc(&[2.0, 3.0], &[0.0, 1.0]), 1.0);
    assert_eq!(auc(&[1.0], &[1.0]), 0.5);
}
