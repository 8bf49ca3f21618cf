//! Membership scores under each threat model, computed from host data
//! (losses, weight deltas, per-step observations) handed over by `train`.
//!
//! This crate never depends on tch.
