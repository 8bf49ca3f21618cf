//! What a run claims: the mechanism one record (or one canary) goes through,
//! in the accountant's terms, and the ε the accountant gives for it.
//!
//! Pure logic, defined beside the samplers in
//! [`dpaudit_data::sampler::claim`] (no libtorch needed); re-exported here
//! under its old paths.

pub use dpaudit_data::sampler::claim::{
    claimed_epsilon, insertions, mechanism, Claim, Participation,
};
