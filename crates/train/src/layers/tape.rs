//! Where trainable layers record what they saw in a forward pass.

use tch::Tensor;

use crate::error::{torch, Result};

/// The identity of a layer object: its address. Records are matched to the
/// layers of [`crate::Model::layers`] by identity, never by position, so a
/// model whose forward pass visits its layers in another order than it lists
/// them is still paired correctly, and one that skips, repeats or adds a
/// layer is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LayerId(usize);

impl LayerId {
    /// The identity of `layer` (the address of the object; layers are never
    /// zero-sized).
    pub fn of<T: ?Sized>(layer: &T) -> Self {
        LayerId((layer as *const T).cast::<()>() as usize)
    }
}

/// What a trainable layer saw in the forward pass.
#[derive(Debug)]
pub struct Recorded {
    /// Which layer recorded it.
    pub layer: LayerId,
    /// The layer's input as the per-sample formulas need it (detached), e.g. the
    /// `[B, M·C, H, W]` view for a convolution or the normalised input `x̂` of a
    /// GroupNorm.
    pub input: Tensor,
    /// The layer's output, still attached to the autograd graph.
    pub output: Tensor,
    /// A convolution computed as one convolution per sample records the
    /// per-sample copies of its weight, the leaf whose gradient is the
    /// per-sample gradient ([`conv2d::PerSampleMethod::ExpandedWeights`](crate::layers::conv2d::PerSampleMethod::ExpandedWeights)).
    pub expanded_weight: Option<Tensor>,
}

/// Where trainable layers record themselves during a forward pass.
#[derive(Debug, Default)]
pub struct Tape {
    records: Option<Vec<Recorded>>,
}

impl Tape {
    /// A tape that records every trainable layer.
    pub fn recording() -> Self {
        Self {
            records: Some(Vec::new()),
        }
    }

    /// A tape that records nothing (evaluation, non-private training).
    pub fn off() -> Self {
        Self { records: None }
    }

    /// Whether this tape records (a DP-SGD forward pass).
    pub fn is_recording(&self) -> bool {
        self.records.is_some()
    }

    /// Record one trainable layer (called by the layers themselves, with
    /// `LayerId::of(self)`).
    pub fn record(&mut self, layer: LayerId, input: &Tensor, output: &Tensor) -> Result<()> {
        self.record_expanded(layer, input, output, None)
    }

    /// [`Tape::record`] for a layer that computed its output from per-sample
    /// copies of its weight, `expanded_weight` (a leaf that requires grad).
    pub fn record_expanded(
        &mut self,
        layer: LayerId,
        input: &Tensor,
        output: &Tensor,
        expanded_weight: Option<Tensor>,
    ) -> Result<()> {
        if let Some(r) = self.records.as_mut() {
            r.push(Recorded {
                layer,
                input: torch("recording a layer's input", || input.f_detach())?,
                output: output.shallow_clone(),
                expanded_weight,
            });
        }
        Ok(())
    }

    /// The records, in forward order.
    pub fn into_records(self) -> Vec<Recorded> {
        self.records.unwrap_or_default()
    }
}
