//! The DP-SGD step (Abadi et al. 2016, Alg. 1; Cebere et al. 2024, §2.1 Eq. (2)), read as a
//! pipeline of types:
//!
//! [`Backprops`] (one forward, one backward) → [`PerSampleNorms`] →
//! [`ClipCoefficients`] → [`ClippedSum`] → [`NoisySum`] → [`Sgd::step`].
//!
//! * One forward pass records every trainable layer's input and output; one
//!   backward pass (`Tensor::run_backward` with the layer outputs as inputs) gives
//!   `δ = ∂L/∂output` per layer for `L = Σ_i ℓ_i` (reduction = sum, so `δ_i` is
//!   sample `i`'s own backprop).
//! * Squared norms per layer are summed over all layers; the clip coefficient of
//!   slot `i` is `c_i = min(1, C/‖g_i‖)`, and `c_i = 1` when `‖g_i‖ = 0` (the
//!   gradient is zero, so any coefficient gives the same, exact, zero
//!   contribution; `C/0 = +∞` and `min(1, +∞) = 1` in IEEE arithmetic).
//!   No `+ε` in the denominator: clipped norms are `≤ C` up to one rounding.
//! * The clipped sum `Σ_i c_i g_i` is computed per layer from `(x, δ, c)`
//!   without a second backward through the network (book-keeping): linear and
//!   GroupNorm layers contract directly; a convolution runs libtorch's weight
//!   backward of its own recorded node with output gradient `c ⊙ δ`.
//! * Gaussian noise `N(0, σ²C²)` is added to the **sum** of every replica
//!   independently, then the sum is divided by a public constant: the expected
//!   batch size `q·n` under Poisson sampling, or the fixed batch size — never the
//!   realised batch size.
//! * Masked slots (padding, when replicas draw batches of different sizes) and
//!   overridden slots have their loss multiplied by an exact 0, so their backprop
//!   is exactly 0, and their coefficient is multiplied by 0 as well.

mod backprop;
mod batch;
mod clip;
mod dp_sgd;
mod fault;
mod noisy;
mod norms;
mod overrides;
mod read_back;
mod sgd;
mod sum;

pub use backprop::{forward_backward, per_sample_cross_entropy, Backprops, KEEP_PER_SAMPLE_BYTES};
pub use batch::{Batch, GradientRows, Override, SlotOverride};
pub use clip::{clip_coefficients, ClipCoefficients};
pub use dp_sgd::DpSgd;
pub use dpaudit_plan::train::dp_sgd::{DpSgdConfig, Normaliser};
pub use fault::Fault;
pub use noisy::NoisySum;
pub use norms::PerSampleNorms;
pub use overrides::OverrideTable;
pub use read_back::{StepReport, LOOP_READ_BACK_EVERY};
pub use sgd::{non_private_step, Sgd};
pub use sum::{ClippedSum, SumChecks};
