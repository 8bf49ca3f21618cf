//! Threat models: what an auditing adversary may observe.
//!
//! Every score in this crate is computed under exactly one threat model; the
//! weaker the model, the less the score may see and (usually) the looser the
//! audit. An ε lower bound is only meaningful together with the threat model
//! that produced it, so the runner records it next to every bound.

use serde::{Deserialize, Serialize};

/// What the adversary sees of a training run.
///
/// Ordered from the weakest to the strongest adversary. [`ThreatModel::name`]
/// is the identifier (serde, snake case); [`ThreatModel::describe`] is the
/// phrase written into `audit.json` and the summaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreatModel {
    /// Query access to the final model only: losses (or logits) of chosen
    /// inputs under θ_T.
    /// Score: [`crate::scores::loss_score`].
    /// Steinke, Nasr & Jagielski 2023 §4 "Black-box"; Cebere et al. 2024 §5.1 (A_L).
    BlackBox,
    /// Query access to the final model and to the public initialisation θ₀:
    /// losses of chosen inputs under both.
    /// Score: [`crate::scores::loss_difference_score`].
    BlackBoxWithInit,
    /// The final parameters θ_T and the public initialisation θ₀, nothing in
    /// between (the hidden-state model, Cebere et al. 2024 §2.2).
    /// Scores: [`crate::scores::dirac_score`], [`crate::scores::inner_product_score`],
    /// [`crate::scores::cosine_score`].
    HiddenState,
    /// Every iterate θ₀, θ₁, …, θ_T (the standard DP-SGD threat model; the
    /// white-box one-run audit, Steinke, Nasr & Jagielski 2023 §4).
    /// Score: [`crate::scores::IterateScore`], fed step by step.
    AllIterates,
    /// Every step's update, the other records' gradients as training made
    /// them (the Natural threat model of Annamalai et al. 2024 §5.1).
    /// Score: [`crate::LikelihoodRatio::Natural`].
    Natural,
    /// Every step's update, with the adversary's `−ĝ` in every batch without
    /// the target (the Partially-Informed threat model of Annamalai et al.
    /// 2024 §5.1). Score: [`crate::LikelihoodRatio::PartiallyInformed`].
    PartiallyInformed,
    /// Every privatised aggregate, with the adversary also choosing every
    /// record's gradient: the Batched Gaussian Mechanism of Annamalai et al. 2024 §4, Algorithm 4
    /// (Algorithm 4), simulated without a network by [`crate::bgm_simulator`].
    WorstCase,
}

impl ThreatModel {
    /// Every threat model, from the weakest to the strongest.
    pub const ALL: [ThreatModel; 7] = [
        ThreatModel::BlackBox,
        ThreatModel::BlackBoxWithInit,
        ThreatModel::HiddenState,
        ThreatModel::AllIterates,
        ThreatModel::Natural,
        ThreatModel::PartiallyInformed,
        ThreatModel::WorstCase,
    ];

    /// The identifier, as serialised (`hidden_state`).
    pub fn name(self) -> &'static str {
        match self {
            ThreatModel::BlackBox => "black_box",
            ThreatModel::BlackBoxWithInit => "black_box_with_init",
            ThreatModel::HiddenState => "hidden_state",
            ThreatModel::AllIterates => "all_iterates",
            ThreatModel::Natural => "natural",
            ThreatModel::PartiallyInformed => "partially_informed",
            ThreatModel::WorstCase => "worst_case",
        }
    }

    /// The threat model in words, as `audit.json` names it next to a bound.
    pub fn describe(self) -> &'static str {
        match self {
            ThreatModel::BlackBox => "black box (loss of the final model)",
            ThreatModel::BlackBoxWithInit => "black box with θ₀ (loss difference)",
            ThreatModel::HiddenState => "hidden state (final model θ_T and θ₀)",
            ThreatModel::AllIterates => "white box (all intermediate iterates)",
            ThreatModel::Natural => "every step, Natural (Annamalai et al. 2024)",
            ThreatModel::PartiallyInformed => {
                "every step, Partially-Informed (Annamalai et al. 2024)"
            }
            ThreatModel::WorstCase => "worst case (every aggregate, every gradient chosen)",
        }
    }

    /// One sentence on what a score under this model may read.
    pub fn observes(self) -> &'static str {
        match self {
            ThreatModel::BlackBox => "losses of chosen inputs under the final model",
            ThreatModel::BlackBoxWithInit => {
                "losses of chosen inputs under the final model and under θ₀"
            }
            ThreatModel::HiddenState => "the final parameters θ_T and the initial parameters θ₀",
            ThreatModel::AllIterates => "every intermediate parameter vector θ₀ … θ_T",
            ThreatModel::Natural => "every step's update, the other gradients as trained",
            ThreatModel::PartiallyInformed => {
                "every step's update, with −ĝ in every batch without the target"
            }
            ThreatModel::WorstCase => {
                "every noisy aggregate, with every record's gradient chosen by the adversary"
            }
        }
    }
}

impl std::fmt::Display for ThreatModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.describe())
    }
}

/// A score: one threat model's view of a canary, as experiment files and
/// `audit.json` name it (which canaries it applies to is the experiment's
/// business). Higher = member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScoreKind {
    /// Hidden state, Dirac: `θ₀[d] − θ_T[d]` (Cebere, Bellet & Papernot 2024, Alg. 2, with the descent
    /// sign flipped so that members score high).
    Dirac,
    /// Hidden state: `⟨θ₀ − θ_T, g⟩`.
    InnerProduct,
    /// Hidden state: `cos(θ₀ − θ_T, g)` (A_CotS, Andrew et al. 2024).
    Cosine,
    /// All intermediate iterates: `Σ_t ⟨θ_t − θ_{t+1}, g_t⟩`, with `g_t` the
    /// canary gradient (clipped, at `θ_t` for input canaries) (Steinke, Nasr & Jagielski 2023, §2).
    Iterates,
    /// Black box: `−ℓ(θ_T; x)` (Steinke, Nasr & Jagielski 2023, §2; A_L of Cebere, Bellet & Papernot 2024, §5.1).
    Loss,
    /// Black box with θ₀: `ℓ(θ₀; x) − ℓ(θ_T; x)`.
    LossDifference,
    /// Every step (the Natural threat model of Annamalai et al. 2024, §5.1): `log Λ^N` of the per-step
    /// observations `o_t = normaliser·⟨θ_t − θ_{t+1}, ĝ⟩/(η·C²)` (Annamalai et al.
    /// 2024, Alg. 1 and §5.3), per epoch of the sampler.
    NaturalLr,
    /// Every step, with the Partially-Informed overrides (`−ĝ` in every batch
    /// without the target): `log Λ^PI` of the same observations.
    #[serde(rename = "pi_lr")]
    PartiallyInformedLr,
    /// Hidden state, any canary: `−‖θ_T − θ₀‖²`. It detects a canary that
    /// changes the noise scale (the realised-batch-size normaliser); on a
    /// correct pipeline it carries almost no signal.
    UpdateNorm,
}

impl ScoreKind {
    /// Name in files.
    pub fn name(self) -> &'static str {
        match self {
            ScoreKind::Dirac => "dirac",
            ScoreKind::InnerProduct => "inner_product",
            ScoreKind::Cosine => "cosine",
            ScoreKind::Iterates => "iterates",
            ScoreKind::Loss => "loss",
            ScoreKind::LossDifference => "loss_difference",
            ScoreKind::UpdateNorm => "update_norm",
            ScoreKind::NaturalLr => "natural_lr",
            ScoreKind::PartiallyInformedLr => "pi_lr",
        }
    }

    /// The threat model the score belongs to (its words:
    /// [`ThreatModel::describe`]).
    pub fn threat_model(self) -> ThreatModel {
        match self {
            ScoreKind::Dirac
            | ScoreKind::InnerProduct
            | ScoreKind::Cosine
            | ScoreKind::UpdateNorm => ThreatModel::HiddenState,
            ScoreKind::Iterates => ThreatModel::AllIterates,
            ScoreKind::NaturalLr => ThreatModel::Natural,
            ScoreKind::PartiallyInformedLr => ThreatModel::PartiallyInformed,
            ScoreKind::Loss => ThreatModel::BlackBox,
            ScoreKind::LossDifference => ThreatModel::BlackBoxWithInit,
        }
    }
}

/// Serde of a [`ThreatModel`] as its words ([`ThreatModel::describe`]), the
/// form `audit.json` writes next to each bound: `#[serde(with =
/// "dpaudit_attacks::threat::words")]`.
pub mod words {
    use super::ThreatModel;
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes [`ThreatModel::describe`].
    pub fn serialize<S: Serializer>(m: &ThreatModel, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(m.describe())
    }

    /// Reads the words back; other words are an error naming them.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ThreatModel, D::Error> {
        let words = String::deserialize(d)?;
        ThreatModel::ALL
            .into_iter()
            .find(|m| m.describe() == words)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown threat model `{words}`")))
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
        for m in ThreatModel::ALL {
            assert_eq!(
                serde_json::to_string(&m).unwrap(),
                format!("\"{}\"", m.name())
            );
        }
    }
}
