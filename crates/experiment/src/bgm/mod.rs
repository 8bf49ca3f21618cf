//! The shuffling game of the Batched Gaussian Mechanism (`dpaudit bgm`):
//! simulated runs, no training.
//!
//! - [`audit`]: shuffling audits of the BGM (settings, validation, the guess
//!   search, the report), on any [`engine::BgmEngine`]: the pure-Rust
//!   [`engine::CpuBgmEngine`] or the libtorch [`engine::TensorBgmEngine`]
//!   ([`tensor`]).
//! - [`counts`]: BGM audits in bounded memory (a threshold chosen on
//!   separate selection runs, the evaluation runs counted on a grid fixed in
//!   advance), for 10⁸–10⁹ observations.
//! - [`runner`]: a BGM experiment in the store, its units ([`unit`](mod@unit)) slices
//!   of a setting's simulated runs.

pub mod audit;
pub mod counts;
pub mod engine;
pub mod runner;
pub mod tensor;
pub mod unit;
