//! The zero-threshold audit, the worked example of "How to add an audit
//! statistic": reachable by name (CLI, experiment files, JSON) through
//! `Method` and `estimate::lower_bound`, and valid: on randomized response
//! with ε₀ = 1, where the fixed test "score > 0" is the optimal one, the
//! bound exceeds ε₀ at most about β of the time.

use dpaudit_audit::estimate::{lower_bound, BoundSettings};
use dpaudit_audit::method::{Method, Observed, Selection, SelectionChoice};
use dpaudit_audit::observations::Observations;
use dpaudit_audit::one_run::GuessFamily;
use dpaudit_audit::one_run_fdp::TradeoffFamily;
use dpaudit_audit::report::bound_json;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const EPS0: f64 = 1.0;
const CONFIDENCE: f64 = 0.95;

fn settings(selection: Selection) -> BoundSettings {
    BoundSettings {
        confidence: CONFIDENCE,
        delta: 0.0,
        selection,
        family: TradeoffFamily::EpsDelta,
        guesses: GuessFamily::Symmetric,
        fixed_guesses: None,
    }
}

/// `n` members and `n` non-members of randomized response at ε₀: ±1, the
/// true answer with probability e^ε₀/(1 + e^ε₀).
fn randomized_response(n: usize, rng: &mut ChaCha8Rng) -> Observations<'static> {
    let p = EPS0.exp() / (1.0 + EPS0.exp());
    let answer = |truth: f64, rng: &mut ChaCha8Rng| if rng.gen_bool(p) { truth } else { -truth };
    let members: Vec<f64> = (0..n).map(|_| answer(1.0, rng)).collect();
    let nonmembers: Vec<f64> = (0..n).map(|_| answer(-1.0, rng)).collect();
    Observations::from_classes(&members, &nonmembers).unwrap()
}

#[test]
fn reachable_by_name_everywhere() {
    assert_eq!(
        "zero-threshold".parse::<Method>(),
        Ok(Method::ZeroThreshold)
    );
    let from_file: Method = serde_json::from_str("\"zero_threshold\"").unwrap();
    assert_eq!(from_file, Method::ZeroThreshold);
    assert_eq!(Method::ZeroThreshold.observes(), Observed::Runs);
    let obs = randomized_response(200, &mut ChaCha8Rng::seed_from_u64(1));
    let selection = SelectionChoice::Auto.resolve(Method::ZeroThreshold, obs.len(), 0, 10);
    let b = lower_bound(Method::ZeroThreshold, &obs, &settings(selection)).unwrap();
    assert!(b.epsilon > 0.0 && b.valid_at_confidence, "{b:?}");
    let json = bound_json(&b, true).unwrap();
    assert_eq!(json["method"], "zero-threshold");
    assert_eq!(json["selection"], "fixed");
    // Nothing is searched: a searching policy is refused.
    assert!(lower_bound(
        Method::ZeroThreshold,
        &obs,
        &settings(Selection::Bonferroni)
    )
    .is_err());
}

#[test]
fn covers_randomized_response() {
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    let trials = 400;
    let mut above = 0;
    for _ in 0..trials {
        let obs = randomized_response(500, &mut rng);
        let b = lower_bound(Method::ZeroThreshold, &obs, &settings(Selection::Fixed)).unwrap();
        assert!(b.epsilon.is_finite() && b.epsilon >= 0.0);
        if b.epsilon > EPS0 {
            above += 1;
        }
    }
    // At most β = 5% in expectation; 3 standard deviations of Bin(400, 0.05) above.
    assert!(
        above <= 20 + 13,
        "{above} of {trials} bounds above ε₀ = {EPS0}"
    );
}
