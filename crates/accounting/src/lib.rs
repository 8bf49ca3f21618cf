//! Privacy accounting for DP-SGD: ε upper bounds (PLD, RDP, GDP), noise
//! calibration, and the Chua et al. lower bound for shuffled batches.
//!
//! This crate never depends on tch.
