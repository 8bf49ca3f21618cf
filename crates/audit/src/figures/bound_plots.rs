//! The plots of a bound, drawn from the observations the bound was computed
//! on (the evaluation half for `split` and `multi-split`, all observations
//! otherwise), so the points on a plot are the evidence behind the number.
//! A bound that is not valid as stated carries a red warning on the plot
//! itself.

use crate::bound::{
    bounding_data, describe_bounded_on, EpsilonLowerBound, Evidence, ThresholdTest,
};
use crate::error::{AuditError, Result};
use crate::figures::curves::{eps_delta_curve, gdp_curve, OneRunPlot, TradeoffPlot};
use crate::observations::{Method, Observations, Selection};
use crate::one_run::{p_value_unchecked, Guesses};
use crate::one_run_fdp::TradeoffFamily;
use crate::one_run_order;
use crate::ranked::Ranked;
use crate::region::{error_points, ErrorPoint};
use crate::tie_break::{seeded_ranks, TieBreak};

/// The warning a plot of `bound` must carry, if any: the selection policy's
/// (`same-data`), else `extra` (e.g. "ε assumes a Gaussian trade-off curve,
/// which a sampled canary does not have").
pub fn validity_warning(bound: &EpsilonLowerBound, extra: Option<&str>) -> Option<String> {
    if bound.selection == Selection::SameData {
        Some("NOT VALID at the stated confidence: chosen and bounded on the same data".into())
    } else {
        extra.map(|e| format!("NOT VALID as an ε bound: {e}"))
    }
}

/// The refusal of a plot of `bound` whose evidence is of the wrong kind.
fn wrong_evidence(bound: &EpsilonLowerBound, expected: &'static str) -> AuditError {
    AuditError::InvalidParameter {
        name: "bound",
        value: bound.method.name().into(),
        expected,
    }
}

/// The title line of a plot of `bound`.
fn plot_title(bound: &EpsilonLowerBound) -> String {
    format!(
        "{} audit ({} selection, confidence {})",
        bound.method.name(),
        bound.selection.name(),
        bound.confidence
    )
}

fn invalid_suffix(warning: &Option<String>) -> &'static str {
    if warning.is_some() {
        " — NOT valid"
    } else {
        ""
    }
}

/// The trade-off plot (and ROC view) of a threshold bound (`eps-delta` or
/// `gdp`): error points of the bounding data with upper bounds at the tail
/// the bound used, the bound's threshold, the lower-bound curve and, if
/// given, the claimed (ε, δ) curve.
pub fn tradeoff_plot(
    obs: &Observations,
    bound: &EpsilonLowerBound,
    claimed_epsilon: Option<f64>,
    extra_warning: Option<&str>,
) -> Result<TradeoffPlot> {
    let Evidence::Threshold(ev) = &bound.evidence else {
        return Err(wrong_evidence(
            bound,
            "a threshold bound (eps-delta or gdp) for a trade-off plot",
        ));
    };
    let data = bounding_data(obs, bound);
    let points = error_points(&data, ev.display_tail(), 200)?;
    let warning = validity_warning(bound, extra_warning);
    let delta = bound.delta;
    let mut curves = Vec::new();
    if let Some(c) = claimed_epsilon.filter(|c| c.is_finite() && *c >= 0.0) {
        curves.push(eps_delta_curve(
            c,
            delta,
            200,
            &format!("claimed ({c:.3}, {delta:e})-DP"),
        ));
    }
    let suffix = invalid_suffix(&warning);
    match (bound.method, ev.mu_lower) {
        (Method::Gdp, Some(mu)) => curves.push(gdp_curve(
            mu,
            200,
            &format!(
                "{mu:.3}-GDP: lower bound (ε ≥ {:.3} at δ = {delta:e}){suffix}",
                bound.epsilon
            ),
        )),
        _ => curves.push(eps_delta_curve(
            bound.epsilon,
            delta,
            200,
            &format!("({:.3}, {delta:e})-DP: lower bound{suffix}", bound.epsilon),
        )),
    }
    let (fpr_upper, fnr_upper) = ev.marked_point();
    let chosen = ErrorPoint {
        threshold: ev.threshold,
        fpr: ev.fpr(),
        fnr: ev.fnr(),
        fpr_upper,
        fnr_upper,
    };
    let how = match ev.test {
        ThresholdTest::Rank { level, .. } => format!(
            "the bound is the rank test at its threshold (level {level:.1e}); hollow: pointwise limits at tail {:.1e}, for scale",
            ev.display_tail()
        ),
        ThresholdTest::ClopperPearson { tail_per_rate, .. } => {
            format!("hollow: bounds at tail {tail_per_rate:.1e}")
        }
    };
    Ok(TradeoffPlot {
        title: plot_title(bound),
        subtitle: format!(
            "{}: {} members, {} non-members; {how}",
            describe_bounded_on(bound),
            ev.members,
            ev.nonmembers,
        ),
        warning,
        curves,
        points,
        chosen: Some(chosen),
        members: ev.members,
        nonmembers: ev.nonmembers,
    })
}

/// Guesses `r` at which the one-run plot is evaluated: about `n` of them,
/// spread logarithmically from 1 to `m`, and the chosen `r`.
fn guess_grid(m: u64, n: usize, chosen: u64) -> Vec<u64> {
    let top = (m.max(1) as f64).ln();
    let mut rs: Vec<u64> = (0..n)
        .map(|i| (top * i as f64 / (n - 1) as f64).exp().round() as u64)
        .chain([chosen])
        .filter(|&r| r >= 1 && r <= m)
        .collect();
    rs.sort_unstable();
    rs.dedup();
    rs
}

/// The one-run plot of a one-run bound (Steinke et al. or f-DP): on the
/// bounding canaries, the fraction of correct guesses along the ranking in
/// the chosen k+ : k− proportion, and the fewest correct guesses that
/// certify the reported bound at each number of guesses.
pub fn one_run_plot(
    obs: &Observations,
    bound: &EpsilonLowerBound,
    extra_warning: Option<&str>,
) -> Result<OneRunPlot> {
    let Evidence::OneRun(ev) = &bound.evidence else {
        return Err(wrong_evidence(bound, "a one-run bound for a one-run plot"));
    };
    // The counts are read off the order the bound used: under the seeded
    // tie-break the scores' ranks in the seeded (score, key) order.
    let data = match ev.tie_break {
        TieBreak::Quantile => bounding_data(obs, bound),
        TieBreak::Seeded { seed } => {
            let ranks = seeded_ranks(obs.scores(), seed).0;
            bounding_data(&Observations::borrowed(&ranks, obs.members())?, bound)
        }
    };
    let ranked = Ranked::new(&data);
    let m = ranked.m();
    let share = if ev.guesses == 0 {
        0.5
    } else {
        ev.k_plus as f64 / ev.guesses as f64
    };
    let at = |r: u64| {
        let kp = ((r as f64 * share).round() as u64).min(m);
        let km = (r - kp.min(r)).min(m - kp);
        (kp + km, ranked.correct_share(kp, km))
    };
    let observed: Vec<(u64, u64)> = guess_grid(m, 120, ev.guesses).into_iter().map(at).collect();
    let family = match ev.family {
        Some("eps-delta") => Some(TradeoffFamily::EpsDelta),
        Some(_) => Some(TradeoffFamily::Gaussian),
        None => None,
    };
    // What was certified, as the parameter the test rejects.
    let (theta, what) = match (bound.method, family, ev.mu_lower) {
        (Method::OneRunFdp | Method::OneRunOrder, Some(TradeoffFamily::Gaussian), Some(mu)) => {
            (mu, format!("μ ≥ {mu:.3}"))
        }
        _ => (bound.epsilon, format!("ε ≥ {:.3}", bound.epsilon)),
    };
    let (delta, level) = (bound.delta, ev.level);
    let certifies = |r: u64, v: u64| {
        let g = Guesses { m, r, v };
        match family {
            Some(f) if bound.method == Method::OneRunOrder => {
                one_run_order::rejects_unchecked(f, theta, delta, g, level)
            }
            Some(f) => f.rejects_unchecked(theta, delta, g, level),
            None => p_value_unchecked(g, theta, delta) < level,
        }
    };
    let needed: Vec<(u64, u64)> = if theta > 0.0 {
        guess_grid(m, 40, ev.guesses)
            .into_iter()
            .filter(|&r| certifies(r, r))
            .map(|r| {
                // Fewest correct guesses that certify: binary search on v.
                let (mut lo, mut hi) = (0_u64, r);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    if certifies(r, mid) {
                        hi = mid;
                    } else {
                        lo = mid + 1;
                    }
                }
                (r, hi)
            })
            .collect()
    } else {
        Vec::new()
    };
    let warning = validity_warning(bound, extra_warning);
    Ok(OneRunPlot {
        title: plot_title(bound),
        subtitle: format!(
            "{}: m = {m} canaries; guesses k+ : k− = {} : {}",
            describe_bounded_on(bound),
            ev.k_plus,
            ev.k_minus
        ),
        needed_label: format!(
            "needed to certify {what} (level {:.1e}){}",
            level,
            invalid_suffix(&warning)
        ),
        warning,
        canaries: m,
        observed,
        needed,
        chosen: (ev.guesses, ev.correct),
    })
}
