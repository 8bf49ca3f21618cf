//! Membership scores under each threat model, computed from host data
//! (losses, weight deltas, per-step observations) handed over by `train`,
//! and the CPU simulator of the Batched Gaussian Mechanism (Annamalai et al. 2024).
//!
//! This crate never depends on tch.
//!
//! Orientation, everywhere in this crate: **a higher score means "the target
//! (canary) was included"**, so an estimator thresholds `score > τ ⇒ member`.
//!
//! | module | threat model | paper |
//! |---|---|---|
//! | [`scores`] | black box, hidden state, all iterates | Cebere et al. 2024 App. C, Algorithm 2; App. G, Algorithms 7–8, Steinke, Nasr & Jagielski 2023 §4 |
//! | [`gradient_crafting`] | hidden state (choosing the Dirac coordinate) | Cebere et al. 2024 App. C, Algorithm 3 |
//! | [`landscape`] | hidden state with a crafted loss landscape | Cebere et al. 2024 §6 |
//! | [`likelihood`] | all iterates, per-step observations | Annamalai et al. 2024 §5.2, Algorithm 1; §7.1, Algorithm 2 |
//! | [`bgm_simulator`] | worst case | Annamalai et al. 2024 §4, Algorithm 4 |

pub mod bgm_simulator;
pub mod error;
pub mod gradient_crafting;
pub mod landscape;
pub mod likelihood;
pub mod scores;
pub mod threat;

pub use bgm_simulator::{
    BgmConfig, BgmDataset, BgmLayout, BgmSimulator, Hypothesis, PairedScores, BGM_SAMPLERS,
    CHUNK_SIZE,
};
pub use error::{AttacksError, Result};
pub use gradient_crafting::{least_updated_coordinates, CoordinateRanking, LeastUpdatedCoordinate};
pub use landscape::{Landscape, LandscapeSimulation};
pub use likelihood::{
    default_partial_shuffle_guesses, dpsgd_observation, log_likelihood_ratio,
    log_likelihood_ratios, partial_shuffle_search, GuessResult, LikelihoodRatio,
    LogRatioCoefficients, ObservationMatrix, PartialShuffleSearch,
};
pub use scores::{
    cosine_score, dirac_score, dirac_scores, inner_product_score, loss_difference_score,
    loss_difference_scores, loss_score, loss_scores, IterateScore,
};
pub use threat::{ScoreKind, ThreatModel};
