//! The shuffling game of the Batched Gaussian Mechanism (`dpaudit bgm`):
//! simulated runs, no training.
//!
//! Everything but the libtorch engine lives in `dpaudit_plan::bgm`, so that
//! the pure `dpaudit` merges shards; it is re-exported here under its old
//! paths:
//! - [`audit`]: shuffling audits of the BGM (settings, validation, the guess
//!   search, the report), on any [`engine::BgmEngine`]: the pure-Rust
//!   [`engine::CpuBgmEngine`] or the libtorch [`engine::TensorBgmEngine`]
//!   ([`tensor`]).
//! - [`counts`]: BGM audits in bounded memory (a threshold chosen on
//!   separate selection runs, the evaluation runs counted on a grid fixed in
//!   advance), for 10⁸–10⁹ observations.
//! - [`runner`]: a BGM experiment in the store, its units ([`unit`](mod@unit)) slices
//!   of a setting's simulated runs.
//!
//! Here: [`engine`] (the trait and the CPU engine re-exported, the tensor
//! engine defined) and [`tensor`], the libtorch simulator.

pub mod engine;
pub mod tensor;

/// Shuffling audits of the BGM: `dpaudit_plan`'s (no libtorch).
pub use dpaudit_plan::bgm::audit;
/// BGM audits in bounded memory: `dpaudit_plan`'s (no libtorch).
pub use dpaudit_plan::bgm::counts;
/// A BGM experiment in the out-dir store: `dpaudit_plan`'s (no libtorch).
pub use dpaudit_plan::bgm::runner;
/// The units of a BGM experiment: `dpaudit_plan`'s (no libtorch).
pub use dpaudit_plan::bgm::unit;
