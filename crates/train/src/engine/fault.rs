//! Deliberately broken DP-SGD variants, for `dpaudit selftest` only.

/// A deliberately broken DP-SGD variant, for `dpaudit selftest` only: an audit of a correct pipeline must not flag it, an audit of
/// these should. Never used by training configs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// Per-sample clipping removed: every coefficient is 1.
    NoClipping,
    /// The noise std is `factor·σ·C` instead of `σ·C` (e.g. 0.5: noise halved).
    NoiseScale(f64),
    /// The noisy sum of each replica is divided by its realised batch size
    /// (present slots, at least 1) instead of the public normaliser.
    RealisedBatchSize,
}
