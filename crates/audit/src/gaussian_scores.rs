//! The continuous-score one-run audit after Agrawal, Wei, Singh,
//! Magdon-Ismail & Zikas 2026 ("Let's Ask Gauss: Improved One-Run Privacy
//! Auditing", arXiv 2606.12733): instead of thresholding the canaries'
//! scores into guesses (Steinke et al. 2023; Mahloujifar et al. 2024), it
//! treats them as two Gaussian samples. **It assumes what its name says**
//! and is never a default.
//!
//! # The model it assumes
//! In white-box DP-SGD a canary's canary-aligned score (the sum over steps
//! of the noisy update projected on the canary's direction, e.g. the
//! inner-product or Dirac score of `dpaudit-attacks`) is a sum of `T`
//! independent steps: Gaussian noise plus the canary's contribution when
//! it was included and sampled. Normalised, such a sum is asymptotically
//! Gaussian (Agrawal et al. 2026, abstract: "canary-aligned signals …
//! whose normalized sum is asymptotically Gaussian"; the central limit
//! theorem for independent steps). The audit takes that limit as given:
//! member scores are i.i.d. `N(m₁, σ²)`, non-member scores are i.i.d.
//! `N(m₀, σ²)`, one common variance, independent given the inclusion bits.
//! The score pair is then exactly `μ`-GDP with `μ = (m₁ − m₀)/σ`, and by
//! post-processing any mechanism the scores came from has
//! `ε(δ) ≥ ε_μ(δ)` (Dong, Roth & Su 2022, Cor. 2.13), with no assumption
//! on the mechanism's trade-off curve, unlike `gdp`. Without the model
//! neither number is a bound: scores with lighter tails than a Gaussian
//! of their spread (randomized response, Laplace at small δ) give an ε
//! above the truth (`docs/audit-statistics.md`, §10, measures how often).
//!
//! # The statistic
//! With `n₁` member and `n₀` non-member scores, class means `x̄₁, x̄₀`,
//! pooled standard deviation `s` on `ν = n₁ + n₀ − 2` degrees of freedom and
//! `t = 1 − √confidence`, two statements each hold with probability
//! `1 − t`, and they are independent because a Gaussian sample's mean and
//! variance are (Cochran's theorem):
//! - `m₁ − m₀ ≥ x̄₁ − x̄₀ − z σ √(1/n₁ + 1/n₀)`, `z = Φ⁻¹(1 − t)`;
//! - `σ ≤ s_U = s √(ν / χ²_ν(t))`, `χ²_ν(t)` the lower `t`-quantile.
//!
//! Both hold with probability exactly `confidence`, and then
//! `μ ≥ μ⁻ = (x̄₁ − x̄₀)/s_U − z √(1/n₁ + 1/n₀)` (floored at 0). The reported
//! ε is `ε_{μ⁻}(δ)`. No threshold or guess count is chosen, so the only
//! policy is `bonferroni` (all canaries, a family of one statistic).

use dpaudit_gaussian::{gdp_epsilon, inverse_sf};
use statrs::function::gamma::checked_gamma_lr;

use crate::bound::{
    BoundedOn, EpsilonLowerBound, Evidence, GaussianScoresEvidence, MechanismAssumption,
};
use crate::design::inclusion_test;
use crate::error::{check_confidence, AuditError, Result};
use crate::method::{Method, Selection};
use crate::metrics::metrics;
use crate::observations::Observations;
use crate::region::check_gdp_delta;

/// What the Gaussian-scores audit needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GaussianScoresConfig {
    /// Confidence of the bound, e.g. 0.95.
    pub confidence: f64,
    /// δ of the (ε, δ) statement (> 0: a μ-GDP pair is not (ε, 0)-DP).
    pub delta: f64,
    /// Must be [`Selection::Bonferroni`]: nothing is chosen from the data.
    pub selection: Selection,
}

/// The ε lower bound of Gaussian canary scores (module docs): a lower
/// confidence limit `μ⁻` on the standardised mean difference of the member
/// and non-member scores, and `ε_{μ⁻}(δ)` of μ-GDP. Valid only if the
/// scores are Gaussian with one variance, as the bound's
/// [`MechanismAssumption::GaussianScores`] says.
pub fn gaussian_scores_lower_bound(
    obs: &Observations,
    cfg: &GaussianScoresConfig,
) -> Result<EpsilonLowerBound> {
    check_confidence(cfg.confidence)?;
    check_gdp_delta(cfg.delta)?;
    if cfg.selection != Selection::Bonferroni {
        return Err(AuditError::InvalidParameter {
            name: "selection",
            value: cfg.selection.name().into(),
            expected:
                "auto or bonferroni: the Gaussian-scores audit chooses no threshold or guess \
                       count (one statistic on all canaries)",
        });
    }
    let (pos, neg) = obs.classes();
    let (n1, n0) = (pos.len(), neg.len());
    if n1 + n0 < 3 {
        return Err(AuditError::InvalidParameter {
            name: "canaries",
            value: (n1 + n0).to_string(),
            expected: "at least 3 scores, for a pooled variance with at least 1 degree of freedom",
        });
    }
    let (mean1, ss1) = mean_and_squares(&pos);
    let (mean0, ss0) = mean_and_squares(&neg);
    let nu = (n1 + n0 - 2) as f64;
    let pooled_sd = ((ss1 + ss0) / nu).sqrt();
    let difference = mean1 - mean0;
    if pooled_sd == 0.0 && difference > 0.0 {
        return Err(AuditError::InvalidParameter {
            name: "scores",
            value: format!("constant within each class, means {mean1} (members) and {mean0}"),
            expected: "scores with some spread within a class: the Gaussian model cannot hold \
                       (use one-run or one-run-fdp)",
        });
    }
    let tail = 1.0 - cfg.confidence.sqrt();
    let z = inverse_sf(tail);
    let spread = (1.0 / n1 as f64 + 1.0 / n0 as f64).sqrt();
    let sd_upper = pooled_sd * (nu / chi_square_lower_quantile(nu, tail)?).sqrt();
    let mu_lower = if difference > 0.0 {
        (difference / sd_upper - z * spread).max(0.0)
    } else {
        0.0
    };
    let sd = |ss: f64, n: usize| {
        if n > 1 {
            (ss / (n - 1) as f64).sqrt()
        } else {
            0.0
        }
    };
    let included = obs.members().iter().filter(|&&m| m).count() as u64;
    let evidence = GaussianScoresEvidence {
        members: n1 as u64,
        nonmembers: n0 as u64,
        mean_difference: difference,
        pooled_sd,
        member_sd: sd(ss1, n1),
        nonmember_sd: sd(ss0, n0),
        mu_estimate: if pooled_sd > 0.0 {
            difference / pooled_sd
        } else {
            0.0
        },
        sd_upper,
        mu_lower,
        tail_per_statement: tail,
        inclusion: inclusion_test(obs.len() as u64, included),
    };
    Ok(EpsilonLowerBound {
        epsilon: gdp_epsilon(mu_lower, cfg.delta),
        confidence: cfg.confidence,
        delta: cfg.delta,
        method: Method::OneRunGaussianScores,
        selection: cfg.selection,
        valid_at_confidence: true,
        assumes: MechanismAssumption::GaussianScores,
        bounded_on: BoundedOn::All,
        split_bounds: None,
        metrics: metrics(obs, cfg.confidence)?,
        evidence: Evidence::GaussianScores(evidence),
    })
}

/// The mean and the sum of squared deviations from it (two passes).
fn mean_and_squares(xs: &[f64]) -> (f64, f64) {
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    let ss = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
    (mean, ss)
}

/// The lower `p`-quantile of χ² with `nu` degrees of freedom, by bisection
/// on the regularised incomplete gamma `P(ν/2, x/2)` (statrs), returned from
/// the **low** end of the final bracket: `P(χ²_ν ≤ q) ≤ p`, so `s_U` is never
/// understated.
fn chi_square_lower_quantile(nu: f64, p: f64) -> Result<f64> {
    let cdf = |x: f64| {
        checked_gamma_lr(nu / 2.0, x / 2.0).map_err(|e| AuditError::InvalidParameter {
            name: "degrees of freedom",
            value: format!("{nu} (χ² at {x}: {e})"),
            expected: "a χ² distribution the incomplete gamma function can evaluate",
        })
    };
    let (mut lo, mut hi) = (0.0, nu.max(1.0));
    while cdf(hi)? <= p {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi || hi - lo <= 1e-13 * hi {
            break;
        }
        if cdf(mid)? <= p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    if lo > 0.0 {
        Ok(lo)
    } else {
        Err(AuditError::InvalidParameter {
            name: "confidence",
            value: format!(
                "{} (χ² quantile 0 at tail {p} with {nu} degrees of freedom)",
                1.0 - p
            ),
            expected: "a confidence whose χ² quantile is positive",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(confidence: f64) -> GaussianScoresConfig {
        GaussianScoresConfig {
            confidence,
            delta: 1e-5,
            selection: Selection::Bonferroni,
        }
    }

    #[test]
    fn chi_square_quantiles_match_mpmath() {
        // Reference: mpmath 1.3.0, findroot of gammainc(ν/2, 0, x/2,
        // regularized=True) = p at 30 digits.
        for (nu, p, q) in [
            (1.0, 0.05, 0.003_932_140_000_019_5),
            (10.0, 0.025, 3.246_972_780_236_841),
            (998.0, 0.025_320_565_519_103_6, 912.574_431_925_293_4),
            (
                1_999_998.0,
                0.025_320_565_519_103_6,
                1_996_090.865_713_765_7,
            ),
        ] {
            let got = chi_square_lower_quantile(nu, p).unwrap();
            assert!(
                (got - q).abs() <= 1e-9 * q,
                "ν = {nu}, p = {p}: {got} vs {q}"
            );
        }
    }

    #[test]
    fn closed_form_on_a_small_sample() {
        // Members 1, 2, 3 (mean 2, SS 2), non-members −1, 0, 1 (mean 0, SS 2):
        // s = √(4/4) = 1, ν = 4. At confidence 0.95, t = 1 − √0.95 =
        // 0.0253206, z = Φ⁻¹(1 − t) = 1.954508 and χ²_4(t) = 0.487782
        // (mpmath), so μ⁻ = 2/√(4/0.487782) − z √(2/3) = 0.6984 − 1.5958 < 0 → 0.
        let obs = Observations::from_classes(&[1.0, 2.0, 3.0], &[-1.0, 0.0, 1.0]).unwrap();
        let b = gaussian_scores_lower_bound(&obs, &cfg(0.95)).unwrap();
        let Evidence::GaussianScores(ev) = &b.evidence else {
            panic!("gaussian-scores evidence")
        };
        assert_eq!(ev.pooled_sd, 1.0);
        assert_eq!(ev.mu_estimate, 2.0);
        assert_eq!(ev.mu_lower, 0.0);
        assert_eq!(b.epsilon, 0.0);
        // At confidence 0.5: t = 0.292893, z = 0.544952, χ²_4(t) = 2.155921
        // (mpmath), μ⁻ = 2/√(4/2.155921) − 0.544952·√(2/3) = 1.023354.
        let b = gaussian_scores_lower_bound(&obs, &cfg(0.5)).unwrap();
        let Evidence::GaussianScores(ev) = &b.evidence else {
            panic!("gaussian-scores evidence")
        };
        assert!((ev.mu_lower - 1.023_354).abs() < 2e-6, "{}", ev.mu_lower);
        assert!((b.epsilon - gdp_epsilon(ev.mu_lower, 1e-5)).abs() < 1e-12);
        assert_eq!(b.assumes, MechanismAssumption::GaussianScores);
    }

    #[test]
    fn refuses_what_it_cannot_bound() {
        let obs = Observations::from_classes(&[1.0, 2.0], &[0.0, 1.0]).unwrap();
        let mut c = cfg(0.95);
        c.delta = 0.0;
        assert!(gaussian_scores_lower_bound(&obs, &c).is_err());
        c = cfg(0.95);
        c.selection = Selection::SameData;
        assert!(gaussian_scores_lower_bound(&obs, &c).is_err());
        let constant = Observations::from_classes(&[1.0, 1.0], &[0.0, 0.0]).unwrap();
        assert!(gaussian_scores_lower_bound(&constant, &cfg(0.95)).is_err());
        let two = Observations::from_classes(&[1.0], &[0.0]).unwrap();
        assert!(gaussian_scores_lower_bound(&two, &cfg(0.95)).is_err());
        // All scores equal: no spread and no difference, bound 0.
        let flat = Observations::from_classes(&[1.0, 1.0], &[1.0, 1.0]).unwrap();
        assert_eq!(
            gaussian_scores_lower_bound(&flat, &cfg(0.95))
                .unwrap()
                .epsilon,
            0.0
        );
    }
}
