//! Membership scores under each threat model, computed from host data
//! (losses, weight deltas, per-step observations) handed over by `train`,
//! and the CPU simulator of the Batched Gaussian Mechanism (seed 000).
//!
//! This crate never depends on tch.
//!
//! Orientation, everywhere in this crate: **a higher score means "the target
//! (canary) was included"**, so an estimator thresholds `score > τ ⇒ member`.
//!
//! | module | threat model | paper / spec |
//! |---|---|---|
//! | [`scores`] | black box, hidden state, all iterates | spec 001 §3.2–3.6, spec 002 §4 |
//! | [`gradient_crafting`] | hidden state (choosing the Dirac coordinate) | spec 001 §3.3 |
//! | [`landscape`] | hidden state with a crafted loss landscape | spec 001 §3.7 |
//! | [`likelihood`] | all iterates, per-step observations | spec 000 §2.4–2.8 |
//! | [`bgm_simulator`] | worst case | spec 000 §2.3 |

pub mod bgm_simulator;
pub mod error;
pub mod gradient_crafting;
pub mod landscape;
pub mod likelihood;
pub mod scores;
pub mod threat;

pub use bgm_simulator::{
    BgmConfig, BgmDataset, BgmSampler, BgmSimulator, Hypothesis, PairedScores, CHUNK_SIZE,
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
pub use threat::ThreatModel;
