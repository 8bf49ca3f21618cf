//! Canaries and their scores: what an audit inserts into DP-SGD and how it
//! scores each canary afterwards.
//!
//! See `docs/canary-audits.md` for the methods in our words.
//!
//! * Gradient canaries (Cebere, Bellet & Papernot 2024, §4 and Alg. 2; the random-gradient canary A_CotS of Andrew et al. 2024; Steinke, Nasr & Jagielski 2023, §4.1): a *Dirac* canary is
//!   `s·C·e_d` (one coordinate, distinct across canaries), a *random-direction*
//!   canary is `s·C·u` with `u` uniform on the unit sphere. `s` = `scale`, 1 by
//!   default, so clipping leaves the canary unchanged; the self-test uses
//!   `s > 1` to check that clipping is applied to it. A gradient canary fills
//!   one batch slot through [`dpaudit_train::engine::Override::Gradient`], so it is clipped by the same
//!   rule as every record and the sum is divided by the same public normaliser.
//! * Input canaries (Steinke, Nasr & Jagielski 2023, §2 and §4.2; the loss-based baseline A_L of Cebere, Bellet & Papernot 2024, §5.1): test records, either
//!   mislabeled (a uniformly chosen label different from the true one) or kept
//!   as they are (in-distribution). They go through the ordinary per-sample
//!   pipeline.
//! * Insertion: every `k`-th step (steps `k−1, 2k−1, …` counted from 0, i.e.
//!   Algorithm 4's `t mod k = 0` with `t` from 1), or *sampled* like an
//!   ordinary record — with probability `q` at every step under Poisson
//!   sampling, or once per epoch as the record at stored position 0 under the
//!   shuffle samplers (a uniform step; among the first `K/B` steps under a
//!   partial shuffle with buffer `K`).
//! * Inclusion: canary `j` of run `r` is included with probability 1/2,
//!   independently (Steinke, Nasr & Jagielski 2023, Alg. 1; Cebere, Bellet & Papernot 2024, Alg. 1), from the
//!   `membership` stream, so the bits do not depend on how runs are batched.
//! * The Dirac coordinate is drawn at random (A_GC-R, Cebere, Bellet & Papernot 2024, Alg. 2) or
//!   chosen as the least-updated coordinate of a noiseless simulation of the
//!   training run without canaries (A_GC-S, Cebere, Bellet & Papernot 2024, Alg. 3, Noiseless-PS: the
//!   variant the paper found best).
//!
//! Scores are oriented "higher = member" and computed on the device for all
//! replicas at once; `dpaudit-attacks` holds the host-side definitions they are
//! tested against.

//!
//! Layout: `dpaudit_plan::canary::canaries` (the `[canary]` table, the scores and when canaries are
//! in a batch), [`realised`] (the canaries on the device and their clipped
//! gradients), [`score_book`] (the scores accumulated over a run).

pub mod realised;
pub mod score_book;

pub use dpaudit_plan::canary::canaries::*;
pub use dpaudit_train::gather::Extra;
pub use realised::*;
pub use score_book::*;
