//! How a PANORAMIA run reports its progress: the pipeline and the
//! generators it trains call a [`Progress`]; the CLI prints, tests ignore.

/// Progress of a run; the CLI prints it, tests ignore it.
pub trait Progress {
    /// A stage starts (or is skipped: `message` says so).
    fn stage(&mut self, _stage: &str, _message: &str) {}
    /// An epoch of one of the pipeline's models ended.
    fn epoch(&mut self, _model: &str, _epoch: u64, _epochs: u64, _metric: &str, _value: f64) {}
    /// A target's DP-SGD training starts.
    fn target_start(&mut self, _name: &str, _steps: u64) {}
    /// A DP-SGD step of a target ended.
    fn target_step(&mut self) {}
}

/// Ignores everything.
#[derive(Debug, Default)]
pub struct Quiet;
impl Progress for Quiet {}
