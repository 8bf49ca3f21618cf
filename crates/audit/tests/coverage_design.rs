//! Null data a file's layout or design could pass off as a leak: every
//! method's default must give 0 (or, for the one-run methods, refuse the
//! design) as often as a valid test allows, whatever the row order and the
//! member fraction.
//!
//! - All-equal scores (no information at all), members listed first, last
//!   or interleaved: exactly 0 from every default.
//! - N(0, 1) scores sorted by membership, or by score: positive bounds at
//!   most β of the time.
//! - Null scores at member fractions from 0.01 to 0.49: the one-run methods
//!   refuse an implausible count (`dpaudit_audit::design`) and are 0 at least
//!   1 − β of the time otherwise; the threshold methods compare each class
//!   with itself and need no check.
//! - Randomized response (ε₀ = 2, m = 2000 canaries): the f-DP one-run
//!   default (the (ε, δ) family, valid for any mechanism) exceeds ε₀ at most
//!   β of the time; the Gaussian family, which assumes a Gaussian trade-off
//!   curve, is the control that does not.

mod common;

use common::{assert_coverage, rng, settings, trials, unless_refused, Mechanism};
use dpaudit_audit::bound::EpsilonLowerBound;
use dpaudit_audit::estimate::lower_bound;
use dpaudit_audit::observations::{Method, Observations};
use dpaudit_audit::one_run::OneRunConfig;
use dpaudit_audit::one_run_fdp::{one_run_fdp_lower_bound, TradeoffFamily};
use dpaudit_audit::policy::default_selection;
use dpaudit_audit::Result;
use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

const DELTA: f64 = 1e-5;
const BETA: f64 = 0.05;

/// The methods with their CLI defaults (`one-run-fdp`: the (ε, δ) family).
const METHODS: [Method; 4] = [
    Method::EpsDelta,
    Method::Gdp,
    Method::OneRun,
    Method::OneRunFdp,
];

/// The bound of `method` with its default selection, or the refusal.
fn default_bound(method: Method, obs: &Observations, seed: u64) -> Result<EpsilonLowerBound> {
    let settings = settings(
        1.0 - BETA,
        DELTA,
        default_selection(method, obs.len(), seed),
    );
    lower_bound(method, obs, &settings)
}

/// Whether the default of `method` reports a positive bound (a refusal of
/// the design is not one).
fn positive(method: Method, obs: &Observations, seed: u64) -> bool {
    unless_refused(default_bound(method, obs, seed)).is_some_and(|b| b.epsilon > 0.0)
}

fn ordered(scores: Vec<f64>, members: Vec<bool>, order: &str) -> Observations<'static> {
    let mut rows: Vec<(f64, bool)> = scores.into_iter().zip(members).collect();
    match order {
        "members first" => rows.sort_by_key(|r| !r.1),
        "members last" => rows.sort_by_key(|r| r.1),
        "by score" => rows.sort_by(|a, b| a.0.total_cmp(&b.0)),
        _ => {}
    }
    let (s, m) = rows.into_iter().unzip();
    Observations::new(s, m).unwrap()
}

#[test]
fn all_equal_scores_give_zero_in_every_order() {
    // Independent checks found one-run ε ≥ 4.88 and f-DP one-run ε ≥ 10.33
    // on this input with the members listed first, when ties followed the
    // row order.
    for m in [100_usize, 1000] {
        for order in ["members first", "members last", "interleaved"] {
            let members: Vec<bool> = (0..m).map(|i| i % 2 == 0).collect();
            let obs = ordered(vec![0.5; m], members, order);
            for method in METHODS {
                let b = default_bound(method, &obs, 0).unwrap();
                assert_eq!(
                    b.epsilon,
                    0.0,
                    "{} on {m} equal scores, {order}",
                    method.name()
                );
            }
        }
    }
}

#[test]
fn null_scores_sorted_by_membership_or_score() {
    let mut rng = rng(71);
    let n = trials(60);
    for order in ["members first", "by score"] {
        for method in METHODS {
            let bad = (0..n)
                .filter(|&t| {
                    let m = 1000;
                    let scores: Vec<f64> = (0..m).map(|_| rng.sample(StandardNormal)).collect();
                    let members: Vec<bool> = (0..m).map(|_| rng.gen()).collect();
                    positive(method, &ordered(scores, members, order), t as u64)
                })
                .count();
            assert_coverage(
                bad,
                n,
                BETA,
                &format!("{} on null scores, {order}", method.name()),
            );
        }
    }
}

/// `m` null canaries with exactly `round(fraction·m)` members, rows in
/// random order.
fn skewed(rng: &mut ChaCha8Rng, m: usize, fraction: f64) -> Observations<'static> {
    let k = ((fraction * m as f64).round() as usize).clamp(1, m - 1);
    let mut members: Vec<bool> = (0..m).map(|i| i < k).collect();
    members.shuffle(rng);
    let scores: Vec<f64> = (0..m).map(|_| rng.sample(StandardNormal)).collect();
    Observations::new(scores, members).unwrap()
}

#[test]
fn null_scores_at_skewed_member_fractions() {
    // Independent checks found one-run ε = 3.52, 2.01, 0.72 at 1 %, 10 %
    // and 30 % members (f-DP one-run 6.34, 3.50, 1.21) before the design
    // check. Now: refused, or 0 as often as a valid test allows — also just
    // inside the check's acceptance region (0.45 of 1000 has p = 0.0017).
    let mut rng = rng(72);
    let n = trials(40);
    for m in [100_usize, 1000, 10_000] {
        for fraction in [0.01, 0.1, 0.3, 0.4, 0.45, 0.47, 0.49] {
            for method in [Method::OneRun, Method::OneRunFdp] {
                let mut refused = 0;
                let bad = (0..n)
                    .filter(|&t| {
                        let obs = skewed(&mut rng, m, fraction);
                        match unless_refused(default_bound(method, &obs, t as u64)) {
                            None => {
                                refused += 1;
                                false
                            }
                            Some(b) => b.epsilon > 0.0,
                        }
                    })
                    .count();
                if fraction <= 0.1 && m >= 1000 || fraction <= 0.3 && m >= 10_000 {
                    assert_eq!(refused, n, "{} m = {m}, {fraction}", method.name());
                }
                assert_coverage(
                    bad,
                    n,
                    BETA,
                    &format!(
                        "{} null, m = {m}, member fraction {fraction} ({refused} refused)",
                        method.name()
                    ),
                );
            }
        }
    }
    // The threshold methods bound each class's error rate on its own: an
    // unbalanced null design gives 0 as often as a balanced one.
    for fraction in [0.01, 0.1, 0.3] {
        for method in [Method::EpsDelta, Method::Gdp] {
            let bad = (0..n)
                .filter(|&t| positive(method, &skewed(&mut rng, 2000, fraction), t as u64))
                .count();
            assert_coverage(
                bad,
                n,
                BETA,
                &format!("{} null, member fraction {fraction}", method.name()),
            );
        }
    }
}

#[test]
fn one_run_fdp_default_covers_randomized_response() {
    // Randomized response at ε₀ = 2, m = 2000 canaries: an independent check
    // found the Gaussian family above ε₀ in 197 of 200 trials (its ε assumes
    // a Gaussian trade-off curve, which randomized response does not have)
    // and the (ε, δ) family in 10 of 200. The default must be the latter.
    let mut rng = rng(73);
    let n = trials(200);
    let mech = Mechanism::Rr(2.0);
    let mut over = |family| {
        (0..n)
            .filter(|&t| {
                let obs = common::canaries(&mut rng, mech, 2000);
                let selection = default_selection(Method::OneRunFdp, obs.len(), t as u64);
                let cfg = OneRunConfig::new(1.0 - BETA, DELTA, selection);
                unless_refused(one_run_fdp_lower_bound(&obs, &cfg, family))
                    .is_some_and(|b| b.epsilon > 2.0)
            })
            .count()
    };
    let bad = over(TradeoffFamily::EpsDelta);
    println!("f-DP one-run default (eps-delta), RR ε₀ = 2: {bad} of {n} above ε₀");
    assert!(
        bad as f64 <= BETA * n as f64,
        "the default exceeded ε₀ in {bad} of {n} trials"
    );
    // The control: with the Gaussian family the ε is not valid here.
    let control = over(TradeoffFamily::Gaussian);
    println!("control (gaussian family): {control} of {n} above ε₀");
    assert!(control as f64 > 0.5 * n as f64, "control: {control} of {n}");
}
