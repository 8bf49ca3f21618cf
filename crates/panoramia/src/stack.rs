//! Logistic regression by Newton's method (iteratively reweighted least
//! squares), for the stacked MIA: Kazmi et al. (2024, Appendix B.1) stack
//! the scores of their image and loss modules with a logistic regression;
//! dpaudit's `mia_losses = "stacked"` stacks the baseline's score with the
//! target's loss features the same way.
//!
//! A few features and a few thousand records: features are standardised,
//! a small ridge penalty `λ‖w‖²/2` (not on the intercept) keeps Newton's
//! steps finite on separable data, and the `(d+1) × (d+1)` system is solved
//! by Gaussian elimination with partial pivoting. Kept here rather than
//! taken from a crate (linfa-logistic pulls ndarray-linalg and a solver
//! stack for a 4 × 4 system); the tests check it against the closed form
//! and a simulated model.

use crate::error::{PanoramiaError, Result};

/// A fitted logistic regression `P(y = 1 | x) = σ(b + w·z(x))`, `z` the
/// standardised features.
#[derive(Debug, Clone, PartialEq)]
pub struct Logistic {
    /// Mean and standard deviation of each feature on the fitting set.
    scale: Vec<(f64, f64)>,
    /// Intercept, then one weight per feature (on standardised features).
    coef: Vec<f64>,
}

fn sigmoid(t: f64) -> f64 {
    if t >= 0.0 {
        1.0 / (1.0 + (-t).exp())
    } else {
        let e = t.exp();
        e / (1.0 + e)
    }
}

/// Solve `a x = b` in place (`a` row-major `n × n`); `None` when singular.
fn solve(mut a: Vec<f64>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for col in 0..n {
        let piv =
            (col..n).max_by(|&i, &j| a[i * n + col].abs().total_cmp(&a[j * n + col].abs()))?;
        if a[piv * n + col].abs() < 1e-300 {
            return None;
        }
        if piv != col {
            for k in 0..n {
                a.swap(piv * n + k, col * n + k);
            }
            b.swap(piv, col);
        }
        for row in col + 1..n {
            let f = a[row * n + col] / a[col * n + col];
            for k in col..n {
                a[row * n + k] -= f * a[col * n + k];
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for row in (0..n).rev() {
        let s: f64 = (row + 1..n).map(|k| a[row * n + k] * x[k]).sum();
        x[row] = (b[row] - s) / a[row * n + row];
    }
    Some(x)
}

impl Logistic {
    /// Fit on `rows` (one feature vector each, all of the same length) and
    /// their labels, with ridge `lambda` ≥ 0 on the weights; `what` names
    /// the fit in errors.
    pub fn fit(rows: &[Vec<f64>], labels: &[bool], lambda: f64, what: &str) -> Result<Self> {
        let bad = |reason: String| PanoramiaError::Config {
            file: "<stacked MIA>".into(),
            field: what.to_string(),
            value: format!("{} rows", rows.len()),
            expected: reason,
        };
        let d = rows.first().map_or(0, Vec::len);
        if rows.is_empty() || rows.len() != labels.len() || rows.iter().any(|r| r.len() != d) {
            return Err(bad(
                "as many feature rows as labels, all of one length".into()
            ));
        }
        if rows.iter().flatten().any(|v| !v.is_finite()) {
            return Err(bad("finite features".into()));
        }
        let n = rows.len() as f64;
        let scale: Vec<(f64, f64)> = (0..d)
            .map(|k| {
                let m = rows.iter().map(|r| r[k]).sum::<f64>() / n;
                let v = rows.iter().map(|r| (r[k] - m).powi(2)).sum::<f64>() / n;
                (m, if v.sqrt() > 1e-12 { v.sqrt() } else { 1.0 })
            })
            .collect();
        let z: Vec<Vec<f64>> = rows
            .iter()
            .map(|r| {
                std::iter::once(1.0)
                    .chain(r.iter().zip(&scale).map(|(v, (m, s))| (v - m) / s))
                    .collect()
            })
            .collect();
        let p = d + 1;
        let mut coef = vec![0.0; p];
        for _ in 0..100 {
            // Gradient and Hessian of the penalised negative log-likelihood.
            let mut g = vec![0.0; p];
            let mut h = vec![0.0; p * p];
            for (zi, &y) in z.iter().zip(labels) {
                let t: f64 = zi.iter().zip(&coef).map(|(a, b)| a * b).sum();
                let mu = sigmoid(t);
                let w = (mu * (1.0 - mu)).max(1e-12);
                let r = mu - f64::from(u8::from(y));
                for a in 0..p {
                    g[a] += r * zi[a];
                    for b in 0..p {
                        h[a * p + b] += w * zi[a] * zi[b];
                    }
                }
            }
            for a in 1..p {
                g[a] += lambda * coef[a];
                h[a * p + a] += lambda;
            }
            let step = solve(h, g).ok_or_else(|| bad("features that are not collinear".into()))?;
            let mut largest: f64 = 0.0;
            for (c, s) in coef.iter_mut().zip(&step) {
                *c -= s;
                largest = largest.max(s.abs());
            }
            if largest < 1e-10 {
                break;
            }
        }
        Ok(Self { scale, coef })
    }

    /// The log-odds `b + w·z(x)` of one feature vector.
    pub fn logit(&self, row: &[f64]) -> f64 {
        self.coef[0]
            + row
                .iter()
                .zip(&self.scale)
                .zip(&self.coef[1..])
                .map(|((v, (m, s)), w)| w * (v - m) / s)
                .sum::<f64>()
    }

    /// The weights on the raw (unstandardised) features, intercept first.
    pub fn raw_coefficients(&self) -> Vec<f64> {
        let mut out = vec![self.coef[0]];
        for ((m, s), w) in self.scale.iter().zip(&self.coef[1..]) {
            out[0] -= w * m / s;
            out.push(w / s);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// One binary feature: the maximum-likelihood fit is the empirical
    /// log-odds in each group, so `b = logit(3/4)` and `b + w = logit(1/4)`
    /// for groups x = 0 (3 of 4 positive) and x = 1 (1 of 4 positive).
    #[test]
    fn one_binary_feature_gives_the_empirical_log_odds() {
        let rows: Vec<Vec<f64>> = [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
            .iter()
            .map(|&v| vec![v])
            .collect();
        let y = [true, true, true, false, true, false, false, false];
        let fit = Logistic::fit(&rows, &y, 0.0, "t").unwrap();
        let c = fit.raw_coefficients();
        let l3 = (3.0f64).ln();
        assert!((c[0] - l3).abs() < 1e-8, "{c:?}");
        assert!((c[0] + c[1] + l3).abs() < 1e-8, "{c:?}");
        assert!((fit.logit(&[0.0]) - l3).abs() < 1e-8);
    }

    /// Simulated from b = −0.5, w = (2, −1): 20,000 records recover the
    /// weights to within 0.1 (standard errors here are about 0.03).
    #[test]
    fn recovers_simulated_coefficients() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
        let (mut rows, mut y) = (Vec::new(), Vec::new());
        for _ in 0..20_000 {
            let x: Vec<f64> = vec![rng.gen::<f64>() * 2.0 - 1.0, rng.gen::<f64>() * 4.0];
            let t = -0.5 + 2.0 * x[0] - x[1];
            y.push(rng.gen::<f64>() < sigmoid(t));
            rows.push(x);
        }
        let c = Logistic::fit(&rows, &y, 1e-6, "t")
            .unwrap()
            .raw_coefficients();
        for (got, want) in c.iter().zip([-0.5, 2.0, -1.0]) {
            assert!((got - want).abs() < 0.1, "{c:?}");
        }
    }

    #[test]
    fn bad_rows_are_refused() {
        assert!(Logistic::fit(&[vec![1.0], vec![1.0, 2.0]], &[true, false], 0.0, "t").is_err());
        assert!(Logistic::fit(&[vec![f64::NAN]], &[true], 0.0, "t").is_err());
        assert!(Logistic::fit(&[], &[], 0.0, "t").is_err());
    }
}
