//! Threat models: what an auditing adversary may observe.
//!
//! Every score in this crate is computed under exactly one threat model; the
//! weaker the model, the less the score may see and (usually) the looser the
//! audit. An ε lower bound is only meaningful together with the threat model
//! that produced it, so the runner records it next to every bound.

use serde::{Deserialize, Serialize};

/// What the adversary sees of a training run.
///
/// Ordered from the weakest to the strongest adversary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreatModel {
    /// Query access to the final model only: losses (or logits) of chosen
    /// inputs under θ_T, and optionally under the public initialisation θ₀.
    /// Scores: [`crate::scores::loss_score`], [`crate::scores::loss_difference_score`].
    /// Steinke, Nasr & Jagielski 2023 §4 "Black-box"; Cebere et al. 2024 §5.1 (A_L).
    BlackBox,
    /// The final parameters θ_T and the public initialisation θ₀, nothing in
    /// between (the hidden-state model, Cebere et al. 2024 §2.2).
    /// Scores: [`crate::scores::dirac_score`], [`crate::scores::inner_product_score`],
    /// [`crate::scores::cosine_score`].
    HiddenState,
    /// Every iterate θ₀, θ₁, …, θ_T (the standard DP-SGD threat model; the
    /// white-box one-run audit, Steinke, Nasr & Jagielski 2023 §4).
    /// Score: [`crate::scores::IterateScore`], fed step by step.
    AllIterates,
    /// Every privatised aggregate, with the adversary also choosing every
    /// record's gradient: the Batched Gaussian Mechanism of Annamalai et al. 2024 §4, Algorithm 4
    /// (Algorithm 4), simulated without a network by [`crate::bgm_simulator`].
    WorstCase,
}

impl ThreatModel {
    /// One sentence on what a score under this model may read.
    pub fn observes(self) -> &'static str {
        match self {
            ThreatModel::BlackBox => "losses of chosen inputs under the final model (and under θ₀)",
            ThreatModel::HiddenState => "the final parameters θ_T and the initial parameters θ₀",
            ThreatModel::AllIterates => "every intermediate parameter vector θ₀ … θ_T",
            ThreatModel::WorstCase => {
                "every noisy aggregate, with every record's gradient chosen by the adversary"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_as_snake_case_names_written_into_audit_json() {
        let names: Vec<String> = [
            ThreatModel::BlackBox,
            ThreatModel::HiddenState,
            ThreatModel::AllIterates,
            ThreatModel::WorstCase,
        ]
        .iter()
        .map(|m| serde_json::to_string(m).unwrap())
        .collect();
        assert_eq!(
            names,
            [
                "\"black_box\"",
                "\"hidden_state\"",
                "\"all_iterates\"",
                "\"worst_case\""
            ]
        );
        let back: ThreatModel = serde_json::from_str("\"all_iterates\"").unwrap();
        assert_eq!(back, ThreatModel::AllIterates);
    }
}
