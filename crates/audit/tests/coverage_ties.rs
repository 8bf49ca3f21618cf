//! Coverage of every method's default on tied and binary scores, where the
//! threshold methods' `bonferroni` tests one event per distinct value
//! (`dpaudit_audit::region::FEW_VALUES_MAX`) instead of the rank grid:
//! randomized response at several ε₀, randomized response with a rare extra
//! value (a support value often missing from the data) or a rare continuous
//! tail (atoms plus a continuous part, so the switch between the two
//! families is data-dependent), integer-rounded Gaussian scores, untied
//! Gaussian scores, and null data (binary and rounded) at member fractions
//! 0.45 to 0.55 and sorted by membership. Each case asserts that the bound
//! exceeds the truth at most β = 5 % of the time, within 3 binomial
//! standard errors. 200 trials per case (2000 with `DPAUDIT_SLOW_TESTS=1`).
//! At confidence ½, where a bound comes closest to the truth, randomized
//! response with and without a rare third value (missing from the data
//! about a third of the time) checks the support family sharply. The
//! one-run methods are checked under both tie-break rules
//! (`dpaudit_audit::tie_break`): the order-free quantile rule (the default)
//! and the seeded random order at the full level, the latter also on null
//! scores at member counts fixed away from ½.

mod common;

use common::{assert_covers, rng, settings, trials, unless_refused};
use dpaudit_audit::bound::{EpsilonLowerBound, Evidence};
use dpaudit_audit::estimate::{lower_bound, BoundSettings};
use dpaudit_audit::gaussian::{gdp_epsilon, inverse_cdf};
use dpaudit_audit::observations::{Method, Observations, Selection};
use dpaudit_audit::one_run::TieBreak;
use dpaudit_audit::policy::default_selection;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

const DELTA: f64 = 1e-5;
const BETA: f64 = 0.05;

/// A mechanism on one bit whose output is a score, higher for "member".
#[derive(Debug, Clone, Copy)]
enum Tied {
    /// Randomized response at ε₀: 1 with probability e^ε₀/(1 + e^ε₀) for
    /// a member, 1/(1 + e^ε₀) for a non-member, else 0. Pure ε₀-DP; μ-GDP
    /// with μ = −2Φ⁻¹(1/(1 + e^ε₀)) (Dong, Roth & Su 2022, the corner of
    /// its trade-off curve).
    Rr(f64),
    /// With probability `q` the value 2 whatever the bit, else `Rr(ε₀)`: a
    /// post-processing of (randomized response, an independent coin), so no
    /// less private than `Rr(ε₀)`.
    RrRareValue(f64, f64),
    /// With probability `q` a uniform value in (2, 3) whatever the bit,
    /// else `Rr(ε₀)`: no less private than `Rr(ε₀)`, as above.
    RrRareTail(f64, f64),
    /// N(μ, 1) against N(0, 1), rounded to the nearest integer: a
    /// post-processing of the μ-GDP Gaussian mechanism.
    Rounded(f64),
    /// N(μ, 1) against N(0, 1), untied.
    Gaussian(f64),
    /// A fair coin whatever the bit: ε = 0.
    NullBinary,
    /// N(0, 1) rounded to the nearest integer whatever the bit: ε = 0.
    NullRounded,
}

impl Tied {
    fn score(self, rng: &mut ChaCha8Rng, member: bool) -> f64 {
        let rr = |rng: &mut ChaCha8Rng, eps: f64| {
            let truthful = rng.gen::<f64>() < 1.0 / (1.0 + (-eps).exp());
            f64::from(member == truthful)
        };
        let normal = |rng: &mut ChaCha8Rng| -> f64 { rng.sample(StandardNormal) };
        match self {
            Tied::Rr(eps) => rr(rng, eps),
            Tied::RrRareValue(eps, q) => {
                if rng.gen::<f64>() < q {
                    2.0
                } else {
                    rr(rng, eps)
                }
            }
            Tied::RrRareTail(eps, q) => {
                if rng.gen::<f64>() < q {
                    2.0 + rng.gen::<f64>()
                } else {
                    rr(rng, eps)
                }
            }
            Tied::Rounded(mu) => (normal(rng) + if member { mu } else { 0.0 }).round(),
            Tied::Gaussian(mu) => normal(rng) + if member { mu } else { 0.0 },
            Tied::NullBinary => f64::from(rng.gen::<bool>()),
            Tied::NullRounded => normal(rng).round(),
        }
    }

    /// The true ε at [`DELTA`] (an upper bound on it for the mixtures).
    fn epsilon(self) -> f64 {
        match self {
            Tied::Rr(e) | Tied::RrRareValue(e, _) | Tied::RrRareTail(e, _) => e,
            Tied::Rounded(mu) | Tied::Gaussian(mu) => gdp_epsilon(mu, DELTA),
            Tied::NullBinary | Tied::NullRounded => 0.0,
        }
    }

    /// The smallest μ for which it is μ-GDP (an upper bound on it for the
    /// mixtures and the rounded Gaussian).
    fn mu(self) -> f64 {
        match self {
            Tied::Rr(e) | Tied::RrRareValue(e, _) | Tied::RrRareTail(e, _) => {
                -2.0 * inverse_cdf(1.0 / (1.0 + e.exp()))
            }
            Tied::Rounded(mu) | Tied::Gaussian(mu) => mu,
            Tied::NullBinary | Tied::NullRounded => 0.0,
        }
    }
}

/// The bound of `method` with its default selection (the one-run methods'
/// refusal of an implausible design is `None`).
fn default_bound(method: Method, obs: &Observations, seed: u64) -> Option<EpsilonLowerBound> {
    let settings = settings(
        1.0 - BETA,
        DELTA,
        default_selection(method, obs.len(), seed),
    );
    unless_refused(lower_bound(method, obs, &settings))
}

/// Whether a default bound exceeds the truth: ε for eps-delta and the
/// one-run methods, μ⁻ for gdp (valid for any mechanism).
fn above_truth(method: Method, mech: Tied, b: &EpsilonLowerBound) -> bool {
    match (method, &b.evidence) {
        (Method::Gdp, Evidence::Threshold(ev)) => ev.mu_lower.unwrap_or(0.0) > mech.mu() + 1e-12,
        _ => b.epsilon > mech.epsilon() + 1e-12,
    }
}

/// `n1` member and `n0` non-member scores of independent runs, the
/// members spread evenly through the rows or, with `sorted`, first.
fn runs(
    rng: &mut ChaCha8Rng,
    mech: Tied,
    n1: usize,
    n0: usize,
    sorted: bool,
) -> Observations<'static> {
    let m = n1 + n0;
    let (scores, members): (Vec<f64>, Vec<bool>) = (0..m)
        .map(|i| {
            let member = if sorted {
                i < n1
            } else {
                (i + 1) * n1 / m > i * n1 / m
            };
            (mech.score(rng, member), member)
        })
        .unzip();
    Observations::new(scores, members).unwrap()
}

/// `m` canaries of one run, each included with probability ½; with
/// `sorted`, the included ones first.
fn canaries(rng: &mut ChaCha8Rng, mech: Tied, m: usize, sorted: bool) -> Observations<'static> {
    let mut rows: Vec<(f64, bool)> = (0..m)
        .map(|_| {
            let inc: bool = rng.gen();
            (mech.score(rng, inc), inc)
        })
        .collect();
    if sorted {
        rows.sort_by_key(|r| !r.1);
    }
    let (s, m) = rows.into_iter().unzip();
    Observations::new(s, m).unwrap()
}

const THRESHOLD: [Method; 2] = [Method::EpsDelta, Method::Gdp];
const ONE_RUN: [Method; 2] = [Method::OneRun, Method::OneRunFdp];

fn mechanisms() -> [Tied; 9] {
    [
        Tied::Rr(0.5),
        Tied::Rr(1.0),
        Tied::Rr(2.0),
        Tied::RrRareValue(1.0, 1e-3),
        Tied::RrRareTail(1.0, 2e-3),
        Tied::Rounded(1.0),
        Tied::Gaussian(1.0),
        Tied::NullBinary,
        Tied::NullRounded,
    ]
}

#[test]
fn threshold_defaults_cover_tied_scores() {
    let n = trials(200);
    let mut rng = rng(61);
    for (k, mech) in mechanisms().into_iter().enumerate() {
        let data: Vec<_> = (0..n)
            .map(|_| runs(&mut rng, mech, 500, 500, false))
            .collect();
        for method in THRESHOLD {
            let what = format!("{method} default, {mech:?}, 2×500 runs");
            assert_covers(n, BETA, &what, |t| {
                let b = default_bound(method, &data[t], (k * 1000 + t) as u64).unwrap();
                above_truth(method, mech, &b)
            });
        }
    }
}

#[test]
fn threshold_defaults_cover_null_ties_at_skewed_class_sizes_and_sorted() {
    let n = trials(200);
    let mut rng = rng(62);
    for mech in [Tied::NullBinary, Tied::NullRounded] {
        for (fraction, sorted) in [(0.45, false), (0.5, true), (0.55, false), (0.55, true)] {
            let n1 = (1000.0 * fraction) as usize;
            for method in THRESHOLD {
                let what =
                    format!("{method} default, {mech:?}, {n1} members of 1000, sorted: {sorted}");
                assert_covers(n, BETA, &what, |t| {
                    let obs = runs(&mut rng, mech, n1, 1000 - n1, sorted);
                    above_truth(
                        method,
                        mech,
                        &default_bound(method, &obs, t as u64).unwrap(),
                    )
                });
            }
        }
    }
}

#[test]
fn one_run_defaults_cover_tied_scores() {
    let n = trials(200);
    let mut rng = rng(63);
    for (k, mech) in mechanisms().into_iter().enumerate() {
        for sorted in [false, true] {
            let data: Vec<_> = (0..n)
                .map(|_| canaries(&mut rng, mech, 1000, sorted))
                .collect();
            for method in ONE_RUN {
                let what = format!("{method} default, {mech:?}, 1000 canaries, sorted: {sorted}");
                assert_covers(n, BETA, &what, |t| {
                    default_bound(method, &data[t], (k * 1000 + t) as u64)
                        .is_some_and(|b| above_truth(method, mech, &b))
                });
            }
        }
    }
}

#[test]
fn support_family_covers_at_confidence_one_half() {
    // β = ½: each event's two Clopper–Pearson limits are at tail ¼, so the
    // eps-delta bound is close to ε₀ and exceeds it at most half the time
    // if the argument holds. With q = 2.5·10⁻⁴ and 4000 scores the value 2
    // is missing from about e⁻¹ of the data sets, and the number of events
    // (1 or 2), so the level of each, changes with the data.
    let n = trials(200);
    let mut rng = rng(64);
    let beta = 0.5;
    for mech in [Tied::Rr(1.0), Tied::RrRareValue(1.0, 2.5e-4)] {
        let settings = settings(1.0 - beta, 0.0, Selection::Bonferroni);
        let what = format!("eps-delta bonferroni at ½, {mech:?}, 2×2000 runs");
        assert_covers(n, beta, &what, |_| {
            let obs = runs(&mut rng, mech, 2000, 2000, false);
            lower_bound(Method::EpsDelta, &obs, &settings)
                .unwrap()
                .epsilon
                > mech.epsilon()
        });
    }
}

#[test]
fn cut_tied_runs_cover_at_confidence_one_half() {
    // Randomized-response canaries (ε₀ = 2, m = 1000, δ = 0) guessed with
    // k+ = k− = 300 fixed: both guess sets end inside a run of about 500
    // tied scores, so both counts come from the share rule of
    // `dpaudit_audit::tie_break`. At β = ½ the bound sits near ε₀, so an
    // invalid count would overshoot often.
    let n = trials(200);
    let mut rng = rng(65);
    let beta = 0.5;
    let mech = Tied::Rr(2.0);
    for method in ONE_RUN {
        let settings = BoundSettings {
            fixed_guesses: Some((300, 300)),
            ..settings(1.0 - beta, 0.0, Selection::Fixed)
        };
        let what = format!("{method} fixed 300/300 at ½, {mech:?}, 1000 canaries");
        assert_covers(n, beta, &what, |_| {
            let obs = canaries(&mut rng, mech, 1000, false);
            unless_refused(lower_bound(method, &obs, &settings))
                .is_some_and(|b| b.epsilon > mech.epsilon())
        });
    }
}

#[test]
fn two_valued_one_run_covers_at_confidence_one_half() {
    // Randomized-response canaries (δ = 0) under the default: two score
    // values, so every canary is guessed (`r = m`) at the full level, on
    // all of them (bonferroni, m = 1000) or on the evaluation half (the
    // one-run split from 5000 canaries, m = 6000). At β = ½ the bound sits
    // near ε₀, so a test that spent more than its level would overshoot
    // often. With a rare third value (q = 10⁻³, missing from about e⁻¹ of
    // the data sets at m = 1000) the switch to the all-canary guess set is
    // data-dependent.
    let n = trials(200);
    let mut rng = rng(66);
    let beta = 0.5;
    let cases = [
        (Tied::Rr(0.5), 1000),
        (Tied::Rr(2.0), 1000),
        (Tied::RrRareValue(1.0, 1e-3), 1000),
        (Tied::Rr(1.0), 6000),
    ];
    for (mech, m) in cases {
        for method in [Method::OneRun, Method::OneRunFdp, Method::OneRunOrder] {
            let settings = settings(1.0 - beta, 0.0, default_selection(method, m, 7));
            let what = format!("{method} default at ½, {mech:?}, {m} canaries");
            assert_covers(n, beta, &what, |_| {
                let obs = canaries(&mut rng, mech, m, false);
                unless_refused(lower_bound(method, &obs, &settings))
                    .is_some_and(|b| b.epsilon > mech.epsilon())
            });
        }
    }
}

/// The one-run bound of `method` under the seeded tie-break with `seed`
/// (the refusal of an implausible design is `None`).
fn seeded_bound(
    method: Method,
    obs: &Observations,
    selection: Selection,
    confidence: f64,
    fixed_guesses: Option<(u64, u64)>,
    seed: u64,
) -> Option<EpsilonLowerBound> {
    let delta = if confidence == 0.5 { 0.0 } else { DELTA };
    let settings = BoundSettings {
        fixed_guesses,
        tie_break: TieBreak::Seeded { seed },
        ..settings(confidence, delta, selection)
    };
    unless_refused(lower_bound(method, obs, &settings))
}

/// Both one-run methods at their default selection under the seeded
/// tie-break, data set `t` keyed by `first_seed + t` (each seed fixed
/// before the data are drawn): above the truth at most β of the time.
fn assert_seeded_coverage(data: &[Observations], mech: Tied, first_seed: usize, what: &str) {
    for method in ONE_RUN {
        let selection = default_selection(method, data[0].len(), 5);
        assert_covers(
            data.len(),
            BETA,
            &format!("{method} seeded ties, {what}"),
            |t| {
                let seed = (first_seed + t) as u64;
                seeded_bound(method, &data[t], selection, 1.0 - BETA, None, seed)
                    .is_some_and(|b| above_truth(method, mech, &b))
            },
        );
    }
}

#[test]
fn seeded_tie_break_covers_tied_scores() {
    // The default selection (bonferroni at m = 1000, split at 6000) with
    // the seeded tie-break, a fresh seed per data set (each fixed before
    // the data are drawn), on integer-rounded Gaussian, randomized-response
    // (binary), untied and null scores, rows in draw order or sorted by
    // inclusion.
    let n = trials(200);
    let mut rng = rng(67);
    let cases = [
        (Tied::Rounded(1.0), 1000),
        (Tied::Rounded(2.0), 1000),
        (Tied::Rr(1.0), 1000),
        (Tied::RrRareTail(1.0, 2e-3), 1000),
        (Tied::Gaussian(1.0), 1000),
        (Tied::NullBinary, 1000),
        (Tied::NullRounded, 1000),
        (Tied::Rounded(1.0), 6000),
    ];
    for (k, (mech, m)) in cases.into_iter().enumerate() {
        for sorted in [false, true] {
            if m > 1000 && sorted {
                continue;
            }
            let data: Vec<_> = (0..n)
                .map(|_| canaries(&mut rng, mech, m, sorted))
                .collect();
            let what = format!("{mech:?}, {m} canaries, sorted: {sorted}");
            assert_seeded_coverage(&data, mech, k * 1000, &what);
        }
    }
}

#[test]
fn seeded_tie_break_covers_at_confidence_one_half() {
    // δ = 0, β = ½: the bound sits near the truth, so a count or a level
    // the seeded rule may not take would overshoot often. Fixed guess sets
    // that end inside runs of tied scores (randomized response ε₀ = 2: runs
    // of about 500 at 300/300), and null scores with the rows sorted by
    // inclusion, where the seeded keys, which go by row, meet the labels'
    // order (binary: runs of 500 at 300/300; rounded: the runs at ±1 and 0
    // at 200/200; bonferroni, whose candidates cut the runs). Null bounds
    // above 0 are rejections of ε = 0 at level ½.
    let n = trials(200);
    let mut rng = rng(68);
    let beta = 0.5;
    let fixed = Selection::Fixed;
    let bonferroni = Selection::Bonferroni;
    let cases = [
        (Tied::Rr(2.0), false, fixed, Some((300, 300))),
        (Tied::NullBinary, true, fixed, Some((300, 300))),
        (Tied::NullRounded, true, fixed, Some((200, 200))),
        (Tied::NullRounded, true, bonferroni, None),
    ];
    for (mech, sorted, selection, guesses) in cases {
        for method in ONE_RUN {
            let what =
                format!("{method} seeded ties at ½, {selection}, {mech:?}, sorted: {sorted}");
            assert_covers(n, beta, &what, |t| {
                let obs = canaries(&mut rng, mech, 1000, sorted);
                seeded_bound(method, &obs, selection, 1.0 - beta, guesses, t as u64)
                    .is_some_and(|b| b.epsilon > mech.epsilon())
            });
        }
    }
}

#[test]
fn seeded_tie_break_covers_null_ties_at_skewed_member_fractions() {
    // Null binary and rounded scores with exactly 450, 470, 490 or 550
    // members of 1000 (the design check's plausible range; the canaries of
    // one run are included with probability ½, so a fixed count far from
    // ½ is the adversarial case), rows spread evenly or sorted by
    // inclusion, where the seeded keys, which go by row, meet the labels'
    // order. Refusals of an implausible design count as not above.
    let n = trials(200);
    let mut rng = rng(69);
    for mech in [Tied::NullBinary, Tied::NullRounded] {
        for (fraction, sorted) in [
            (0.45, false),
            (0.45, true),
            (0.47, true),
            (0.49, true),
            (0.55, false),
        ] {
            let n1 = (1000.0 * fraction) as usize;
            let data: Vec<_> = (0..n)
                .map(|_| runs(&mut rng, mech, n1, 1000 - n1, sorted))
                .collect();
            let what = format!("{mech:?}, {n1} members of 1000, sorted: {sorted}");
            assert_seeded_coverage(&data, mech, 0, &what);
        }
    }
}
