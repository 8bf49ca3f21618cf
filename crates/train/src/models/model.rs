//! What the engine sees of a model: [`Model`].

use tch::Tensor;

use crate::error::Result;
use crate::layers::{PerSampleGrad, Tape};

/// A stack of `M` independent replicas of one architecture.
pub trait Model: std::fmt::Debug {
    /// Number of replicas `M`.
    fn replicas(&self) -> i64;

    /// Shape of one sample, e.g. `[1, 28, 28]` or `[600]`.
    fn sample_shape(&self) -> Vec<i64>;

    /// Number of classes (logits per sample).
    fn num_classes(&self) -> i64;

    /// `[B, M, sample_shape] → [B, M, num_classes]` logits. Every trainable layer
    /// is called exactly once and records itself on `tape`. A libtorch error
    /// (an input of the wrong shape, an allocation that fails) is returned as
    /// [`crate::TrainError`], never a panic.
    fn forward(&self, x: &Tensor, tape: &mut Tape) -> Result<Tensor>;

    /// The trainable layers with their PyTorch module paths (e.g. `conv1`,
    /// `layer1.0.conv1`), in forward order, which is also PyTorch's
    /// parameter-registration order for these models.
    fn layers(&self) -> Vec<(String, &dyn PerSampleGrad)>;

    /// `(name, parameter)` pairs with PyTorch names (`conv1.weight`), each
    /// `[M, <PyTorch shape>]`.
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = Vec::new();
        for (path, layer) in self.layers() {
            for (name, t) in layer.parameters() {
                out.push((format!("{path}.{name}"), t.shallow_clone()));
            }
        }
        out
    }

    /// Trainable parameters of one replica.
    fn num_parameters(&self) -> i64 {
        let m = self.replicas();
        self.named_parameters()
            .iter()
            .map(|(_, t)| t.numel() as i64 / m)
            .sum()
    }
}
