//! The report of a bound as every front end shows it: the assumptions in
//! words and the JSON object of `dpaudit estimate --json`, which the Python
//! package returns from `to_dict()`. One definition, so that the CLI and the
//! bindings cannot drift apart.

use serde_json::{json, Value};

use crate::bound::{EpsilonLowerBound, Evidence};
use crate::error::{AuditError, Result};
use crate::observations::{Method, Selection};
use crate::one_run_fdp::TradeoffFamily;
use crate::panoramia::PanoramiaMeasurement;
use crate::tie_break::TieBreak;

/// What a method's bound assumes under `selection`, in words (printed and
/// in the JSON); `family` is the f-DP one-run audit's trade-off family.
pub fn assumptions_of(
    method: Method,
    family: Option<TradeoffFamily>,
    selection: Selection,
) -> Vec<&'static str> {
    method.assumptions(!matches!(family, Some(TradeoffFamily::EpsDelta)), selection)
}

/// What `bound` assumes, in words: [`assumptions_of`] its method, its
/// selection and, for the f-DP one-run audit, its trade-off family.
pub fn assumptions(bound: &EpsilonLowerBound) -> Vec<&'static str> {
    let family = match &bound.evidence {
        Evidence::OneRun(ev) => match ev.family {
            Some("gaussian") => Some(TradeoffFamily::Gaussian),
            Some(_) => Some(TradeoffFamily::EpsDelta),
            None => None,
        },
        Evidence::Threshold(_) | Evidence::GaussianScores(_) => None,
    };
    let mut out = assumptions_of(bound.method, family, bound.selection);
    if let Evidence::OneRun(ev) = &bound.evidence {
        if let TieBreak::Seeded { .. } = ev.tie_break {
            // The selection's sentence on the row order, for the seeded
            // tie-break (crate::tie_break), whose keys go by row: they
            // order only tied scores, so without ties the order matters
            // only to a split.
            let seeded = match (bound.selection, ev.tied_scores) {
                (Selection::Split { .. } | Selection::MultiSplit { .. }, _) => SEEDED_TIES_SPLIT,
                (Selection::SameData | Selection::Bonferroni | Selection::Fixed, true) => {
                    SEEDED_TIES
                }
                (Selection::SameData | Selection::Bonferroni | Selection::Fixed, false) => {
                    SEEDED_NO_TIES
                }
            };
            if let Some(s) = out.iter_mut().find(|a| a.contains("row order")) {
                *s = seeded;
            }
        }
    }
    out
}

const SEEDED_TIES: &str = "the bound depends on the row order and the tie-break seed: tied scores \
                           are ordered by a seeded random key per row, each test at the full level \
                           (valid for every order and seed fixed before the scores are seen)";
const SEEDED_NO_TIES: &str =
    "the bound does not depend on the row order: no two scores are tied, so \
                              the seeded tie-break orders nothing";
const SEEDED_TIES_SPLIT: &str = "the bound depends on the row order and the seed: the random \
                                 halving assigns each row by its position and a seeded coin, and \
                                 tied scores are ordered by a seeded random key per row (valid for \
                                 every order and seed fixed before the scores are seen)";

fn serialize<T: serde::Serialize>(value: &T, what: &str) -> Result<Value> {
    serde_json::to_value(value).map_err(|e| AuditError::Write {
        what: format!("the {what} as JSON"),
        source: std::io::Error::other(e),
    })
}

/// The JSON object of a bound (`dpaudit estimate --json`): the bound's own
/// fields, the selection by name and in detail (and the seed of a split),
/// `label`, `bound = "lower"`, the assumptions, and, when the policy was the
/// default (`--selection auto`), what chose it.
pub fn bound_json(bound: &EpsilonLowerBound, chosen_by_default: bool) -> Result<Value> {
    let mut v = serialize(bound, "bound")?;
    v["selection"] = Value::from(bound.selection.name());
    v["selection_detail"] = serialize(&bound.selection, "selection")?;
    if chosen_by_default {
        v["selection_chosen_by"] = Value::from(format!(
            "default for {} with {} rows",
            bound.method.name(),
            bound.metrics.members + bound.metrics.nonmembers
        ));
    }
    if let Selection::Split { seed } | Selection::MultiSplit { seed, .. } = bound.selection {
        v["seed"] = Value::from(seed);
    }
    if let Evidence::OneRun(ev) = &bound.evidence {
        if let TieBreak::Seeded { seed } = ev.tie_break {
            v["tie_break_seed"] = Value::from(seed);
        }
        v["tie_break"] = Value::from(ev.tie_break_note());
    }
    v["bound"] = Value::from("lower");
    v["label"] = Value::from(bound.label());
    v["assumptions"] = json!(assumptions(bound));
    Ok(v)
}

/// The JSON object of a PANORAMIA measurement (`dpaudit estimate --method
/// panoramia --json`).
pub fn panoramia_json(m: &PanoramiaMeasurement) -> Result<Value> {
    let mut v = serialize(m, "measurement")?;
    v["epsilon"] = Value::from(m.epsilon_tilde.value);
    v["bound"] = Value::from("none: PANORAMIA's epsilon_tilde is a measurement, not a lower bound");
    v["method"] = Value::from("panoramia");
    v["selection"] = Value::from(m.selection.name());
    v["assumptions"] = json!(assumptions_of(Method::Panoramia, None, m.selection));
    if let Selection::Split { seed } = m.selection {
        v["seed"] = Value::from(seed);
    }
    Ok(v)
}
