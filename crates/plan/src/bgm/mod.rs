//! The shuffling game of the Batched Gaussian Mechanism (`dpaudit bgm`)
//! without libtorch: simulated runs on the CPU, the out-dir, its
//! finalization and the merge of shards.
//!
//! - [`audit`]: shuffling audits of the BGM (settings, validation, the guess
//!   search, the report), on any [`engine::BgmEngine`].
//! - [`engine`]: the engine trait and the pure-Rust [`engine::CpuBgmEngine`]
//!   (the libtorch engine is `dpaudit_experiment::bgm::engine::TensorBgmEngine`).
//! - [`counts`]: BGM audits in bounded memory (a threshold chosen on
//!   separate selection runs, the evaluation runs counted on a grid fixed in
//!   advance), for 10⁸–10⁹ observations.
//! - [`runner`]: a BGM experiment in the store, its units ([`unit`](mod@unit)) slices
//!   of a setting's simulated runs. Finalizing and merging read the engine's
//!   name, device and threads from `config.json` and simulate nothing.
//! - [`reader`]: its `scores.csv` and `counts.csv` read back for analysis
//!   (`dpaudit.runs`).

pub mod audit;
pub mod counts;
pub mod engine;
pub mod reader;
pub mod runner;
pub mod unit;
