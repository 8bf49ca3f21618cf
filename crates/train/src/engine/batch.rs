//! What a step is given: one batch for all replicas, and what some of its
//! slots contribute instead of their computed gradient.

use tch::Tensor;

#[cfg(doc)]
use crate::models::Model;

/// What a slot contributes instead of its computed per-sample gradient
/// (the crafted gradient canaries of Cebere et al. 2024, §4, and the
/// zero-out neighbouring relation; `docs/canary-audits.md`).
#[derive(Debug)]
pub enum Override {
    /// A given gradient, flat over all parameters of the slot's replica in
    /// [`Model::named_parameters`] order (PyTorch row-major within each
    /// parameter), on the model's device. It is clipped by the same rule as
    /// computed gradients: a vector of norm ≤ C passes unchanged.
    Gradient(Tensor),
    /// A zero gradient (the slot is present, its contribution is exactly zero).
    Zero,
    /// The slot is absent (like a masked slot).
    Exclude,
}

/// An override of one slot `(slot, replica)` of a batch.
#[derive(Debug)]
pub struct SlotOverride {
    /// Index along the batch axis `B`.
    pub slot: usize,
    /// Index along the replica axis `M`.
    pub replica: usize,
    /// What the slot contributes.
    pub kind: Override,
}

/// Gradient overrides of many slots as one tensor: row `k` of `rows`
/// replaces the computed gradient of slot `host[k] = (slot, replica)`, like an
/// [`Override::Gradient`] of that slot. Rows are in *rank-major* order: first
/// the first override of every replica that has one, then the second, and so
/// on; so each rank adds into every replica at most once, and the clipped sum
/// adds a replica's overrides in the order they were listed for it, as it does
/// for the per-slot [`Batch::overrides`].
#[derive(Debug)]
pub struct GradientRows {
    /// `[K]` int64 slot indices, on the model's device.
    pub slots: Tensor,
    /// `[K]` int64 replica indices, on the model's device.
    pub replicas: Tensor,
    /// `[K, P]` float32, flat over all parameters of one replica in
    /// [`Model::named_parameters`] order, on the model's device.
    pub rows: Tensor,
    /// `(slot, replica)` of every row, on the host (checks and grouping only).
    pub host: Vec<(usize, usize)>,
}

/// One batch for all replicas.
#[derive(Debug)]
pub struct Batch {
    /// `[B, M, sample_shape]`, float32. Masked slots must hold finite values
    /// (zeros by convention).
    pub inputs: Tensor,
    /// `[B, M]`, int64 class indices.
    pub targets: Tensor,
    /// `[B, M]`, 1.0 for real slots and 0.0 for padding; `None` = all real.
    pub mask: Option<Tensor>,
    /// Per-slot overrides; at most one per slot.
    pub overrides: Vec<SlotOverride>,
    /// Gradient overrides of many slots in one tensor (the training loop's
    /// canaries); not together with [`Batch::overrides`].
    pub gradient_rows: Option<GradientRows>,
}

impl Batch {
    /// A batch without mask or overrides.
    pub fn new(inputs: Tensor, targets: Tensor) -> Self {
        Self {
            inputs,
            targets,
            mask: None,
            overrides: Vec::new(),
            gradient_rows: None,
        }
    }
}
