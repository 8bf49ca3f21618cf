//! What every stage shares: the sub-keys of the pipeline's streams, the
//! run's context ([`Run`]) and the relay of a target's training steps to
//! [`Progress`]. It names no stage; below it are only the out-dir (`store`)
//! and the artifacts' types (`artifacts`).

use std::path::Path;

use dpaudit_data::seed::Randomness;
use dpaudit_train::trainer::Observer;
use tch::Device;

use super::store::PanoramiaStore;
use crate::config::PanoramiaConfig;
use crate::progress::Progress;

pub(super) struct StepRelay<'a>(pub(super) &'a mut dyn Progress, pub(super) String);
impl Observer for StepRelay<'_> {
    fn on_start(&mut self, total: u64) {
        self.0.target_start(&self.1, total);
    }
    fn on_step(&mut self, _r: &dpaudit_train::StepReport) {
        self.0.target_step();
    }
}

/// Sub-keys of the pipeline's streams (children of each named stream).
pub(super) mod keys {
    pub const SPLIT_DF: u64 = 0;
    pub const SPLIT_HOLDOUT: u64 = 1;
    pub const SPLIT_REAL_NONMEMBERS: u64 = 2;
    pub const GENERATOR: u64 = 0;
    pub const QUALITY: u64 = 1;
    pub const LABELER: u64 = 2;
    pub const HELPER: u64 = 3;
    /// The baseline and every MIA share initialisation and batch order.
    pub const CLASSIFIER: u64 = 4;
    pub const FILTER: u64 = 5;
    pub const GAME: u64 = 0;
    pub const GAME_O1: u64 = 1;
    /// Generator purposes (Philox tags).
    pub const POOL_HELPER: u32 = 0;
    pub const POOL_TRAIN: u32 = 1;
    pub const POOL_VALIDATION: u32 = 2;
    pub const POOL_AUDIT: u32 = 3;
    pub const POOL_QUALITY: u32 = 4;
    pub const POOL_GRID: u32 = 5;
}

/// What every stage reads: the config, its file (named in errors), the
/// out-dir (and its store), the config's fingerprint, the randomness and
/// the device.
pub(super) struct Run<'a> {
    pub(super) config: &'a PanoramiaConfig,
    pub(super) file: &'a str,
    pub(super) out: &'a Path,
    pub(super) store: &'a PanoramiaStore,
    pub(super) fp: &'a str,
    pub(super) rnd: &'a Randomness,
    pub(super) device: Device,
}
