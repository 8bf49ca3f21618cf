//! The PANORAMIA measurement (Kazmi et al. 2024, "PANORAMIA: Privacy
//! Auditing of Machine Learning Models without Retraining", §4 and
//! Algorithm 1).
//!
//! A baseline classifier `b` (never sees the target model) and a
//! membership-inference classifier score the same audit set, in which each
//! point is a real member (`member = true`) or a generated non-member. For a
//! score set and a threshold τ, guessing "member" iff `score ≥ τ` gives `r`
//! predictions with `tp` true positives. Under the hypothesis "the
//! generator is c-close" (Proposition 1) the true positives are dominated by
//! `Binomial(r, e^c/(1+e^c))`, so the largest `c` the observation rejects at
//! level `a` is `c_τ = logit(p̲)`, where `p̲` is the exact-binomial
//! (one-sided Clopper–Pearson) lower bound on the precision `tp/r`: the
//! paper's "tighter bound in practice" than its Hoeffding form (§4.1; the
//! exact tail is what reproduces the paper's Appendix B.2 ceiling of 7.21
//! for 5,000 members). Then `c_lb = max(0, max_τ c_τ)` from the baseline
//! scores, `{c+ε}_lb` likewise from the MIA scores (Proposition 2), and
//! `ε̃ = max(0, {c+ε}_lb − c_lb)` (§4.2).
//!
//! ε̃ is **not** a lower bound on ε (the paper says so, §1 and §4.2); it has
//! its own type, [`EpsilonTilde`], inside [`PanoramiaMeasurement`].
//!
//! Levels: the paper runs each of the two tests at `β/2` (0.025 for overall
//! confidence 0.95, Appendix B.4: a union bound over the two tests,
//! Corollary 1). With `bonferroni` every threshold is further tested at
//! `β/2 / K`, `K` = number of audit points (an upper bound on the number of
//! distinct thresholds, fixed before looking at the scores); the authors'
//! released code does the analogous `0.05/(2·100)` over a 100-point grid.
//! With `split` each threshold is chosen on a random half and the bound
//! computed on the other. `same-data` is the paper's practice (the best
//! threshold on the audit set itself) and is not valid at the stated
//! confidence.

use serde::Serialize;

use crate::clopper_pearson::lower_unchecked;
use crate::error::{check_confidence, AuditError, Result};
use crate::observations::{Observations, Selection};

/// `logit(p̲)` with `p̲` the exact-binomial lower bound on a precision of
/// `true_positives / predictions` at tail `level` (Kazmi et al. 2024,
/// Proposition 1 with the exact binomial tail); `−∞` when there is no true
/// positive.
pub fn logit_precision_lower_bound(
    true_positives: u64,
    predictions: u64,
    level: f64,
) -> Result<f64> {
    // Validates the counts and the level.
    crate::clopper_pearson::lower_limit(true_positives, predictions, level)?;
    Ok(c_of(true_positives, predictions, level.ln()))
}

fn logit(p: f64) -> f64 {
    if p <= 0.0 {
        f64::NEG_INFINITY
    } else {
        p.ln() - (-p).ln_1p()
    }
}

/// `logit(e^x) = x − ln(1 − e^x)` for `x = ln p ≤ 0`, without forming
/// `1 − p` from a rounded `p` (which loses digits as `p → 1`).
fn logit_of_ln(x: f64) -> f64 {
    if x >= 0.0 {
        return f64::INFINITY;
    }
    x - (-x.exp_m1()).ln()
}

/// `c_τ` for `tp` true positives among `r` predictions at `ln_level`: the
/// closed form `logit(level^{1/r})` when every prediction is right (see
/// [`ceiling`]), else the logit of the exact-binomial lower bound.
fn c_of(tp: u64, r: u64, ln_level: f64) -> f64 {
    if tp == 0 {
        f64::NEG_INFINITY
    } else if tp >= r {
        logit_of_ln(ln_level / r as f64)
    } else {
        logit(lower_unchecked(tp, r, ln_level))
    }
}

/// PANORAMIA's privacy measurement `ε̃ = max(0, {c+ε}_lb − c_lb)` (Kazmi et
/// al. 2024, §4.2). It is **not** a lower bound on ε: it has its own type,
/// and every output that shows it says what it means ([`EpsilonTilde::MEANING`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EpsilonTilde {
    /// The value, ≥ 0.
    pub value: f64,
}

impl EpsilonTilde {
    /// What ε̃ means, in one sentence (after Kazmi et al. 2024, §4.2).
    pub const MEANING: &'static str = "epsilon_tilde is a privacy measurement, not a lower bound on epsilon: \
        the audit could not reject that the generator is c_lb-close to the data, and if that closeness is tight, \
        the target cannot be the output of an epsilon_tilde-DP mechanism (Kazmi et al. 2024, section 4.2)";

    /// `max(0, c_plus_epsilon_lb − c_lb)`.
    pub fn from_bounds(c_lb: f64, c_plus_epsilon_lb: f64) -> Self {
        Self {
            value: (c_plus_epsilon_lb - c_lb).max(0.0),
        }
    }
}

impl Serialize for EpsilonTilde {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("EpsilonTilde", 3)?;
        st.serialize_field("value", &self.value)?;
        st.serialize_field("is_lower_bound", &false)?;
        st.serialize_field("meaning", Self::MEANING)?;
        st.end()
    }
}

/// The largest measurable `c_lb` with `members` members in the audit set
/// (all predictions correct): with `tp = r = k`, `P[Bin(k, p) ≥ k] = p^k`,
/// so the lower bound is `p̲ = level^{1/k}` in closed form and the ceiling
/// is `logit(level^{1/k})` (7.21 for 5,000 members at 0.025, Kazmi et al.
/// 2024, Appendix B.2).
pub fn ceiling(members: u64, level: f64) -> f64 {
    if members == 0 {
        return 0.0;
    }
    logit_of_ln(level.ln() / members as f64)
}

/// Settings of a PANORAMIA measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PanoramiaConfig {
    /// Overall confidence `1 − β` (0.95 in the paper); each of the two tests
    /// runs at `β/2`.
    pub confidence: f64,
    /// Threshold selection: `same-data` (the paper), `bonferroni` or `split`.
    pub selection: Selection,
}

/// One side (baseline or MIA) of the measurement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrecisionEvidence {
    /// The lower bound (`c_lb` or `{c+ε}_lb`), floored at 0.
    pub lower_bound: f64,
    /// Guess "member" iff `score ≥ threshold` (NaN when no threshold had a
    /// true positive).
    pub threshold: f64,
    /// Predictions `r` at the threshold.
    pub predictions: u64,
    /// True positives `tp` at the threshold.
    pub true_positives: u64,
    /// Level each threshold was tested at.
    pub level: f64,
    /// Largest value this audit set could show: `logit(level^{1/members})`.
    pub ceiling: f64,
    /// Members in the bounded audit set.
    pub members: u64,
}

/// PANORAMIA's ε̃ and its parts. Not a lower bound on ε.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PanoramiaMeasurement {
    /// `ε̃ = max(0, {c+ε}_lb − c_lb)`: a measurement, not a lower bound.
    pub epsilon_tilde: EpsilonTilde,
    /// Lower bound on the generator closeness `c` (baseline).
    pub c_lb: f64,
    /// Lower bound on `c + ε` (MIA).
    pub c_plus_epsilon_lb: f64,
    /// Overall confidence of the two bounds jointly (union bound).
    pub confidence: f64,
    /// Threshold selection policy.
    pub selection: Selection,
    /// Baseline side.
    pub baseline: PrecisionEvidence,
    /// MIA side.
    pub mia: PrecisionEvidence,
}

/// Best threshold on `obs` at `level`: (c_τ, τ, r, tp).
fn best_threshold(obs: &Observations, level: f64) -> (f64, f64, u64, u64) {
    let mut rows: Vec<(f64, bool)> = obs.rows().collect();
    rows.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
    let ln_level = level.ln();
    let mut best = (f64::NEG_INFINITY, f64::NAN, 0_u64, 0_u64);
    let (mut r, mut tp) = (0_u64, 0_u64);
    let mut i = 0;
    while i < rows.len() {
        let t = rows[i].0;
        while i < rows.len() && rows[i].0 == t {
            r += 1;
            tp += u64::from(rows[i].1);
            i += 1;
        }
        if tp == 0 {
            continue;
        }
        // c_τ ≤ logit(tp/r): skip thresholds that cannot beat the best.
        if logit(tp as f64 / r as f64) <= best.0 {
            continue;
        }
        let c = c_of(tp, r, ln_level);
        if c > best.0 {
            best = (c, t, r, tp);
        }
    }
    best
}

fn count_at(obs: &Observations, threshold: f64) -> (u64, u64) {
    let (mut r, mut tp) = (0, 0);
    for (&s, &m) in obs.scores().iter().zip(obs.members()) {
        if s >= threshold {
            r += 1;
            tp += u64::from(m);
        }
    }
    (r, tp)
}

fn one_side(obs: &Observations, cfg: &PanoramiaConfig, per_test: f64) -> Result<PrecisionEvidence> {
    let members = |o: &Observations| o.members().iter().filter(|&&m| m).count() as u64;
    match cfg.selection {
        Selection::SameData | Selection::Bonferroni => {
            let level = if cfg.selection == Selection::Bonferroni {
                per_test / obs.len() as f64
            } else {
                per_test
            };
            let (c, t, r, tp) = best_threshold(obs, level);
            let n_members = members(obs);
            Ok(PrecisionEvidence {
                lower_bound: c.max(0.0),
                threshold: t,
                predictions: r,
                true_positives: tp,
                level,
                ceiling: ceiling(n_members, level),
                members: n_members,
            })
        }
        Selection::Split { seed } => {
            let (select, evaluate) = obs.split(seed);
            let (_, t, _, _) = best_threshold(&select, per_test);
            let (r, tp) = if t.is_nan() {
                (0, 0)
            } else {
                count_at(&evaluate, t)
            };
            let c = if tp == 0 {
                f64::NEG_INFINITY
            } else {
                c_of(tp, r, per_test.ln())
            };
            let n_members = members(&evaluate);
            Ok(PrecisionEvidence {
                lower_bound: c.max(0.0),
                threshold: t,
                predictions: r,
                true_positives: tp,
                level: per_test,
                ceiling: ceiling(n_members, per_test),
                members: n_members,
            })
        }
        Selection::Fixed | Selection::MultiSplit { .. } => Err(AuditError::InvalidParameter {
            name: "selection",
            value: cfg.selection.name().into(),
            expected: "`same-data`, `bonferroni` or `split` for PANORAMIA",
        }),
    }
}

/// PANORAMIA's measurement from baseline and MIA scores on the audit set
/// (Kazmi et al. 2024, Algorithm 1, "Measure privacy leakage", with the
/// `max{0, ·}` of §4.2).
pub fn panoramia(
    baseline: &Observations,
    mia: &Observations,
    cfg: &PanoramiaConfig,
) -> Result<PanoramiaMeasurement> {
    check_confidence(cfg.confidence)?;
    let per_test = (1.0 - cfg.confidence) / 2.0;
    let b = one_side(baseline, cfg, per_test)?;
    let a = one_side(mia, cfg, per_test)?;
    Ok(PanoramiaMeasurement {
        epsilon_tilde: EpsilonTilde::from_bounds(b.lower_bound, a.lower_bound),
        c_lb: b.lower_bound,
        c_plus_epsilon_lb: a.lower_bound,
        confidence: cfg.confidence,
        selection: cfg.selection,
        baseline: b,
        mia: a,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_threshold_prefers_confident_guesses() {
        // Scores: three members on top, then mixed. Threshold at 3.0 gives
        // r = tp = 3: c = logit(0.025^{1/3}).
        let obs = Observations::new(
            vec![5.0, 4.0, 3.0, 1.0, 1.0, 0.0],
            vec![true, true, true, false, true, false],
        )
        .unwrap();
        let (c, t, r, tp) = best_threshold(&obs, 0.025);
        assert_eq!((t, r, tp), (3.0, 3, 3));
        assert!((c - ceiling(3, 0.025)).abs() < 1e-12);
    }
}
