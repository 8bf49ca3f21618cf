//! The JSON objects of `dpaudit account --json` and `dpaudit calibrate
//! --json`, defined once for the CLI and the Python package.

use serde_json::{json, Value};

use crate::{Calibration, EpsilonUpperBound, ShuffleEpsilonLowerBound};

/// An ε upper bound: the accountant, the relation, δ, ε and, where the
/// accountant gives them, its numerical bounds, Rényi order and μ.
pub fn upper_bound_json(e: &EpsilonUpperBound) -> Value {
    let n = e.numerical;
    json!({
        "accountant": e.accountant.name(),
        "relation": e.relation,
        "delta": e.delta,
        "epsilon": e.epsilon,
        "epsilon_lower": n.map(|n| n.lower),
        "epsilon_estimate": n.map(|n| n.estimate),
        "epsilon_upper": n.map(|n| n.upper),
        "approximate": e.approximate,
        "rdp_order": e.rdp_order,
        "mu": e.mu,
    })
}

/// `dpaudit account --json`: the bound of DP-SGD with its parameters, and
/// the Chua et al. lower bound for shuffled batches when one was asked for.
pub fn account_json(
    e: &EpsilonUpperBound,
    sample_rate: f64,
    noise_multiplier: f64,
    steps: u64,
    shuffle: Option<&ShuffleEpsilonLowerBound>,
) -> Value {
    let mut v = upper_bound_json(e);
    v["sample_rate"] = json!(sample_rate);
    v["noise_multiplier"] = json!(noise_multiplier);
    v["steps"] = json!(steps);
    if let Some(s) = shuffle {
        v["shuffle_lower_bound"] = json!(s);
    }
    v
}

/// `dpaudit calibrate --json`.
pub fn calibration_json(c: &Calibration, sample_rate: f64, steps: u64) -> Value {
    json!({
        "noise_multiplier": c.noise_multiplier,
        "noise_multiplier_lower": c.noise_multiplier_lower,
        "tolerance": c.tolerance,
        "target_epsilon": c.target_epsilon,
        "sample_rate": sample_rate,
        "steps": steps,
        "evaluations": c.evaluations,
        "result": upper_bound_json(&c.epsilon),
    })
}
