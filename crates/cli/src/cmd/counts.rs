//! `dpaudit counts FILE.toml`: the ε lower bound of an audit given only its
//! error counts at a threshold fixed in advance (Karimireddy 2025, lecture notes on privacy auditing: a
//! threshold chosen on separate validation runs, then counted on fresh runs).
//!
//! ```toml
//! claimed_epsilon = 0.21   # optional: the claim under test
//! delta = 1e-5
//! confidence = 0.9999999999
//! [members]                # runs with the canary (D′)
//! runs = 100000
//! detected = 4922          # predicted "member": true positives
//! [nonmembers]             # runs without it (D)
//! runs = 100000
//! detected = 174           # predicted "member": false positives
//! ```
//!
//! Both error rates get a one-sided Clopper–Pearson upper bound at tail
//! `(1 − confidence)/2` (a union bound over the two, which equals the
//! lecture's two-sided intervals); then ε from Eq. (1) of Annamalai et al.
//! 2024 and μ⁻ from Lemma 1 of Cebere et al. 2024 (ε at δ of μ⁻-GDP via
//! their Corollary 1, reported only for δ > 0: at δ = 0 a μ-GDP mechanism
//! with μ > 0 has no finite ε).

use std::path::PathBuf;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use dpaudit_audit::clopper_pearson::upper_limit;
use dpaudit_audit::gaussian::gdp_epsilon;
use dpaudit_audit::region::{epsilon_from_error_bounds, mu_from_error_bounds};

/// Arguments of `dpaudit counts`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The counts file (see `experiments/lecture/backprop-clipping-counts.toml`).
    pub file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// One class of runs.
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Class {
    /// Runs of this class.
    pub runs: u64,
    /// Runs the test predicted "member".
    pub detected: u64,
}

/// The file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CountsFile {
    /// The claim under test, if any.
    #[serde(default)]
    pub claimed_epsilon: Option<f64>,
    /// δ.
    pub delta: f64,
    /// Confidence of the bound.
    pub confidence: f64,
    /// Runs with the canary.
    pub members: Class,
    /// Runs without it.
    pub nonmembers: Class,
}

/// The result.
#[derive(Debug, Clone, Serialize)]
pub struct CountsBound {
    /// Upper bound on the false-negative rate (the lecture's α⁺).
    pub fnr_upper: f64,
    /// Upper bound on the false-positive rate (the lecture's β⁺).
    pub fpr_upper: f64,
    /// Tail of each one-sided bound.
    pub tail_per_rate: f64,
    /// ε lower bound at δ.
    pub epsilon: f64,
    /// μ lower bound (GDP).
    pub mu_lower: f64,
    /// ε at δ of μ⁻-GDP (a lower bound when the mechanism is Gaussian-shaped);
    /// absent for δ = 0, where μ⁻ > 0 gives no finite ε.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gdp_epsilon: Option<f64>,
    /// Whether the claim (if any) is refuted.
    pub claim_refuted: Option<bool>,
}

/// Compute the bound; errors name the field.
pub fn bound(f: &CountsFile) -> anyhow::Result<CountsBound> {
    if !(f.delta >= 0.0 && f.delta < 1.0) {
        bail!("delta = {}: expected a number in [0, 1)", f.delta);
    }
    if !(f.confidence > 0.0 && f.confidence < 1.0) {
        bail!("confidence = {}: expected a number in (0, 1)", f.confidence);
    }
    for (name, c) in [("members", f.members), ("nonmembers", f.nonmembers)] {
        if c.runs == 0 || c.detected > c.runs {
            bail!(
                "[{name}] runs = {}, detected = {}: expected 0 ≤ detected ≤ runs and runs ≥ 1",
                c.runs,
                c.detected
            );
        }
    }
    let tail = (1.0 - f.confidence) / 2.0;
    let fnr_upper = upper_limit(f.members.runs - f.members.detected, f.members.runs, tail)
        .context("Clopper–Pearson bound of the false-negative rate")?;
    let fpr_upper = upper_limit(f.nonmembers.detected, f.nonmembers.runs, tail)
        .context("Clopper–Pearson bound of the false-positive rate")?;
    let epsilon = epsilon_from_error_bounds(fpr_upper, fnr_upper, f.delta);
    let mu_lower = mu_from_error_bounds(fpr_upper, fnr_upper);
    Ok(CountsBound {
        fnr_upper,
        fpr_upper,
        tail_per_rate: tail,
        epsilon,
        mu_lower,
        gdp_epsilon: if mu_lower <= 0.0 {
            Some(0.0)
        } else if f.delta > 0.0 {
            Some(gdp_epsilon(mu_lower, f.delta))
        } else {
            None
        },
        claim_refuted: f.claimed_epsilon.map(|c| epsilon > c),
    })
}

/// `dpaudit counts`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("reading {}", args.file.display()))?;
    let f: CountsFile =
        toml::from_str(&text).with_context(|| format!("parsing {}", args.file.display()))?;
    let b = bound(&f).with_context(|| format!("in {}", args.file.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&b)?);
        return Ok(());
    }
    println!(
        "FNR ≤ {:.6}, FPR ≤ {:.7} (Clopper–Pearson, tail {:.1e} each; confidence {})",
        b.fnr_upper, b.fpr_upper, b.tail_per_rate, f.confidence
    );
    println!("ε ≥ {:.4} at δ = {:e}", b.epsilon, f.delta);
    match b.gdp_epsilon {
        Some(e) => println!(
            "μ ≥ {:.4} (GDP), i.e. ε ≥ {e:.4} at δ if the mechanism is Gaussian-shaped",
            b.mu_lower
        ),
        None => println!(
            "μ ≥ {:.4} (GDP); at δ = 0 a μ-GDP mechanism with μ > 0 has no finite ε",
            b.mu_lower
        ),
    }
    if let (Some(c), Some(r)) = (f.claimed_epsilon, b.claim_refuted) {
        println!(
            "claimed ε = {c}: {}",
            if r {
                "REFUTED (the audit's lower bound is above it)"
            } else {
                "not refuted"
            }
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproduces_the_lecture_audit_from_its_counts() {
        // Karimireddy 2025 (lecture notes, privacy auditing): TP 4922 and FP
        // 174 of 100,000 runs each, Clopper–Pearson at p = 1e-10 gives
        // α⁺ ≤ 0.95509, β⁺ = 0.00274 (rounded). Unrounded (two-sided, 5e-11
        // per tail): 0.9550818 and 0.0027445, from which Eq. (1) gives
        // ε = ln((1 − 1e-5 − 0.9550818)/0.0027445) = 2.7950 and Lemma 1
        // μ⁻ = 1.0806; the lecture's rounded rates give 2.7965 and 1.0810.
        let f: CountsFile = toml::from_str(include_str!(
            "../../../../experiments/lecture/backprop-clipping-counts.toml"
        ))
        .unwrap();
        let b = bound(&f).unwrap();
        assert!((b.fnr_upper - 0.955082).abs() < 1e-6, "{}", b.fnr_upper);
        assert!((b.fpr_upper - 0.0027445).abs() < 1e-7, "{}", b.fpr_upper);
        let expected = ((1.0 - 1e-5 - b.fnr_upper) / b.fpr_upper).ln();
        assert!((b.epsilon - expected).abs() < 1e-12);
        assert!((b.epsilon - 2.7950).abs() < 5e-5, "{}", b.epsilon);
        assert!((b.mu_lower - 1.0806).abs() < 5e-5, "{}", b.mu_lower);
        assert_eq!(b.claim_refuted, Some(true));
    }

    #[test]
    fn delta_zero_has_no_finite_gdp_epsilon() {
        let f = CountsFile {
            claimed_epsilon: None,
            delta: 0.0,
            confidence: 0.95,
            members: Class {
                runs: 1000,
                detected: 600,
            },
            nonmembers: Class {
                runs: 1000,
                detected: 10,
            },
        };
        let b = bound(&f).unwrap();
        assert!(b.mu_lower > 0.0 && b.epsilon.is_finite());
        assert_eq!(b.gdp_epsilon, None);
        let json = serde_json::to_string(&b).unwrap();
        assert!(!json.contains("gdp_epsilon"), "{json}");
    }

    #[test]
    fn impossible_counts_are_refused_with_the_field() {
        let f = CountsFile {
            claimed_epsilon: None,
            delta: 1e-5,
            confidence: 0.95,
            members: Class {
                runs: 10,
                detected: 11,
            },
            nonmembers: Class {
                runs: 10,
                detected: 0,
            },
        };
        let e = bound(&f).unwrap_err().to_string();
        assert!(e.contains("[members]"), "{e}");
    }
}
