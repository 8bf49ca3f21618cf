//! Coverage: simulate mechanisms of known privacy many times and check that
//! each method's bound exceeds the truth at most β of the time
//! (P̂[bound > truth] ≤ β + 3 standard errors).
//!
//! Mechanisms: randomized response at ε₀ (pure ε₀-DP; as a GDP mechanism it
//! is μ-GDP with μ = −2Φ⁻¹(1/(1+e^{ε₀})), the GDP curve through its corner)
//! and the Gaussian mechanism with shift μ and unit noise (μ-GDP; ε at δ
//! from the exact conversion, Cebere et al. 2024 App. A Corollary 1).

use dpaudit_audit::bound::Evidence;
use dpaudit_audit::gaussian::{gdp_epsilon, inverse_cdf};
use dpaudit_audit::observations::{Observations, Selection};
use dpaudit_audit::one_run::{one_run_lower_bound, GuessFamily, OneRunConfig};
use dpaudit_audit::panoramia::{panoramia, PanoramiaConfig};
use dpaudit_audit::region::{eps_delta_lower_bound, gdp_lower_bound, RegionConfig};
use dpaudit_audit::AuditError;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

const DELTA: f64 = 1e-5;

/// Asserts `violations / trials ≤ beta + 3·sqrt(beta(1−beta)/trials)`.
fn assert_coverage(violations: usize, trials: usize, beta: f64, what: &str) {
    let rate = violations as f64 / trials as f64;
    let limit = beta + 3.0 * (beta * (1.0 - beta) / trials as f64).sqrt();
    assert!(
        rate <= limit,
        "{what}: P[bound > truth] = {rate} > {limit} ({violations}/{trials})"
    );
}

/// Randomized response: a member reports 1 with probability e^ε/(1+e^ε).
fn rr_scores(rng: &mut ChaCha8Rng, eps: f64, n_per_class: usize) -> Observations<'static> {
    let p = 1.0 / (1.0 + (-eps).exp());
    let mut scores = Vec::with_capacity(2 * n_per_class);
    let mut members = Vec::with_capacity(2 * n_per_class);
    for i in 0..2 * n_per_class {
        let member = i % 2 == 0;
        let truthful = rng.gen::<f64>() < p;
        scores.push(if member == truthful { 1.0 } else { 0.0 });
        members.push(member);
    }
    Observations::new(scores, members).unwrap()
}

fn gaussian_scores(rng: &mut ChaCha8Rng, mu: f64, n_per_class: usize) -> Observations<'static> {
    let mut scores = Vec::with_capacity(2 * n_per_class);
    let mut members = Vec::with_capacity(2 * n_per_class);
    for i in 0..2 * n_per_class {
        let member = i % 2 == 0;
        let z: f64 = rng.sample(StandardNormal);
        scores.push(if member { z + mu } else { z });
        members.push(member);
    }
    Observations::new(scores, members).unwrap()
}

fn rr_mu(eps: f64) -> f64 {
    -2.0 * inverse_cdf(1.0 / (1.0 + eps.exp()))
}

/// 2000 simulated audits per case; 20 000 with `DPAUDIT_SLOW_TESTS=1`.
fn trials() -> usize {
    if std::env::var("DPAUDIT_SLOW_TESTS").is_ok_and(|v| v == "1") {
        20_000
    } else {
        2000
    }
}

#[test]
fn eps_delta_coverage() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let cfg = RegionConfig {
        confidence: 0.95,
        delta: DELTA,
        selection: Selection::Split { seed: 5 },
    };
    for eps0 in [0.5, 1.0, 2.0] {
        let bad = (0..trials())
            .filter(|_| {
                eps_delta_lower_bound(&rr_scores(&mut rng, eps0, 200), &cfg)
                    .unwrap()
                    .epsilon
                    > eps0
            })
            .count();
        assert_coverage(bad, trials(), 0.05, &format!("eps-delta, RR ε₀={eps0}"));
    }
    for mu in [1.0, 2.0] {
        let truth = gdp_epsilon(mu, DELTA);
        let bad = (0..trials())
            .filter(|_| {
                eps_delta_lower_bound(&gaussian_scores(&mut rng, mu, 100), &cfg)
                    .unwrap()
                    .epsilon
                    > truth
            })
            .count();
        assert_coverage(bad, trials(), 0.05, &format!("eps-delta, Gaussian μ={mu}"));
    }
}

#[test]
fn gdp_coverage() {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let cfg = RegionConfig {
        confidence: 0.95,
        delta: DELTA,
        selection: Selection::Split { seed: 6 },
    };
    let mu_of = |obs: &Observations| {
        let b = gdp_lower_bound(obs, &cfg).unwrap();
        let Evidence::Threshold(ev) = b.evidence else {
            panic!("threshold evidence")
        };
        (ev.mu_lower.unwrap(), b.epsilon)
    };
    for eps0 in [0.5, 1.0, 2.0] {
        let mu_true = rr_mu(eps0);
        let bad = (0..trials())
            .filter(|_| mu_of(&rr_scores(&mut rng, eps0, 200)).0 > mu_true)
            .count();
        assert_coverage(
            bad,
            trials(),
            0.05,
            &format!("gdp, RR ε₀={eps0} (μ={mu_true})"),
        );
    }
    for mu in [0.5, 1.0, 2.0] {
        let truth = gdp_epsilon(mu, DELTA);
        let bad = (0..trials())
            .filter(|_| {
                let (m, e) = mu_of(&gaussian_scores(&mut rng, mu, 100));
                m > mu || e > truth
            })
            .count();
        assert_coverage(bad, trials(), 0.05, &format!("gdp, Gaussian μ={mu}"));
    }
}

/// One-run canaries: each included with probability ½; score = RR of the
/// inclusion bit (±1) or `2·S/2 + N(0, σ²)` with σ = 2/μ (sensitivity 2).
fn canaries(
    rng: &mut ChaCha8Rng,
    m: usize,
    score: impl Fn(&mut ChaCha8Rng, bool) -> f64,
) -> Observations<'static> {
    loop {
        let mut scores = Vec::with_capacity(m);
        let mut members = Vec::with_capacity(m);
        for _ in 0..m {
            let included: bool = rng.gen();
            scores.push(score(rng, included));
            members.push(included);
        }
        // Both classes empty has probability 2^{1−m}; redraw if it happens.
        if let Ok(obs) = Observations::new(scores, members) {
            return obs;
        }
    }
}

/// How many of `runs` one-run bounds, each on 200 fresh canaries scored by
/// `score`, exceed `truth`; a draw whose inclusion design the check refuses
/// counts as no bound.
fn one_run_exceedances(
    rng: &mut ChaCha8Rng,
    cfg: &OneRunConfig,
    runs: usize,
    truth: f64,
    score: impl Fn(&mut ChaCha8Rng, bool) -> f64,
) -> usize {
    (0..runs)
        .filter(|_| {
            let obs = canaries(rng, 200, &score);
            one_run_lower_bound(&obs, cfg).map_or_else(
                |e| match e {
                    AuditError::InclusionDesign { .. } => false,
                    e => panic!("{e}"),
                },
                |b| b.epsilon > truth,
            )
        })
        .count()
}

#[test]
fn one_run_coverage() {
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    // Pure DP randomized response, δ = 0: Thm 3.1 is tight here.
    for eps0 in [0.5_f64, 1.0, 2.0] {
        let p = 1.0 / (1.0 + (-eps0).exp());
        // Randomized response of the inclusion bit.
        let rr = |r: &mut ChaCha8Rng, inc: bool| {
            if (r.gen::<f64>() < p) == inc {
                1.0
            } else {
                -1.0
            }
        };
        let cfg = OneRunConfig::new(0.95, 0.0, Selection::Fixed)
            .with_fixed_guesses(50, 50)
            .with_guesses(GuessFamily::WithOneSided);
        let bad = one_run_exceedances(&mut rng, &cfg, trials(), eps0, rr);
        assert_coverage(bad, trials(), 0.05, &format!("one-run fixed, RR ε₀={eps0}"));
        let cfg = OneRunConfig::new(0.95, 0.0, Selection::Split { seed: 3 })
            .with_guesses(GuessFamily::WithOneSided);
        let bad = one_run_exceedances(&mut rng, &cfg, trials() / 4, eps0, rr);
        assert_coverage(
            bad,
            trials() / 4,
            0.05,
            &format!("one-run split, RR ε₀={eps0}"),
        );
    }
    // Gaussian mechanism on ±1 inclusion, δ = 1e-5.
    for mu in [1.0, 2.0] {
        let sigma = 2.0 / mu;
        let truth = gdp_epsilon(mu, DELTA);
        let cfg = OneRunConfig::new(0.95, DELTA, Selection::Fixed)
            .with_fixed_guesses(20, 20)
            .with_guesses(GuessFamily::WithOneSided);
        let bad = one_run_exceedances(&mut rng, &cfg, trials(), truth, |r, inc| {
            let z: f64 = r.sample(StandardNormal);
            (if inc { 1.0 } else { -1.0 }) + sigma * z
        });
        assert_coverage(bad, trials(), 0.05, &format!("one-run, Gaussian μ={mu}"));
    }
}

#[test]
fn one_run_all_counts_coverage() {
    // Every guess count under Bonferroni (≈ 2.5·m = 500 candidates at m =
    // 200). Randomized response at ε₀ with a uniform jitter added to each
    // report: a post-processing of the ε₀-DP answer (so still ε₀-DP, δ = 0)
    // whose scores have no ties, so every count is a distinct guess set.
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    for eps0 in [1.0_f64, 2.0] {
        let p = 1.0 / (1.0 + (-eps0).exp());
        let rr = |r: &mut ChaCha8Rng, inc: bool| {
            let sign = if (r.gen::<f64>() < p) == inc {
                1.0
            } else {
                -1.0
            };
            sign + 0.1 * r.gen::<f64>()
        };
        let cfg = OneRunConfig::new(0.95, 0.0, Selection::Bonferroni)
            .with_guesses(GuessFamily::AllCounts);
        let runs = trials() / 2;
        let bad = one_run_exceedances(&mut rng, &cfg, runs, eps0, rr);
        assert_coverage(
            bad,
            runs,
            0.05,
            &format!("one-run all-counts, RR ε₀={eps0}"),
        );
    }
}

#[test]
fn panoramia_coverage() {
    // Real non-members (c = 0): {c+ε}_lb lower-bounds ε₀ at level 0.025.
    let mut rng = ChaCha8Rng::seed_from_u64(14);
    for selection in [Selection::Split { seed: 9 }, Selection::Bonferroni] {
        let cfg = PanoramiaConfig {
            confidence: 0.95,
            selection,
        };
        for eps0 in [1.0, 2.0] {
            let bad = (0..trials())
                .filter(|_| {
                    let obs = rr_scores(&mut rng, eps0, 100);
                    panoramia(&obs, &obs, &cfg).unwrap().c_plus_epsilon_lb > eps0
                })
                .count();
            assert_coverage(
                bad,
                trials(),
                0.025,
                &format!("panoramia {}, RR ε₀={eps0}", selection.name()),
            );
        }
    }
}
