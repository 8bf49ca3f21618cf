//! Shared by the pipeline tests: a tiny Fashion-MNIST-format dataset written
//! from the data crate's synthetic stand-in, and configs over it.

#![allow(dead_code)]

use std::path::Path;

use dpaudit_data::dataset::DatasetKind;
use dpaudit_data::synthetic::{generate, SyntheticSpec};
use dpaudit_panoramia::Progress;

/// Counts epochs and records stage messages.
#[derive(Default)]
pub struct Count {
    /// Epochs ended, of every model.
    pub epochs: usize,
    /// `stage: message` of every stage.
    pub stages: Vec<String>,
}

impl Progress for Count {
    fn stage(&mut self, stage: &str, message: &str) {
        self.stages.push(format!("{stage}: {message}"));
    }
    fn epoch(&mut self, _: &str, _: u64, _: u64, _: &str, _: f64) {
        self.epochs += 1;
    }
}

fn idx(magic: u32, dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut out = magic.to_be_bytes().to_vec();
    for d in dims {
        out.extend(d.to_be_bytes());
    }
    out.extend_from_slice(data);
    out
}

/// Writes the four IDX files of a synthetic Fashion-MNIST-shaped dataset
/// (`train` and `test` records per class) into `dir`. The stand-in's pixels
/// are multiples of 1/255, so the bytes round-trip exactly.
pub fn write_tiny_fmnist(dir: &Path, train: usize, test: usize) {
    let splits = generate(
        DatasetKind::Fmnist,
        &SyntheticSpec {
            seed: 11,
            train_per_class: train,
            test_per_class: test,
        },
    )
    .unwrap();
    for (d, img, lab) in [
        (
            &splits.train,
            "train-images-idx3-ubyte",
            "train-labels-idx1-ubyte",
        ),
        (
            &splits.test,
            "t10k-images-idx3-ubyte",
            "t10k-labels-idx1-ubyte",
        ),
    ] {
        let px: Vec<u8> = d
            .features()
            .iter()
            .map(|&v| (v * 255.0).round() as u8)
            .collect();
        let labels: Vec<u8> = d.labels().iter().map(|&l| l as u8).collect();
        let n = d.len() as u32;
        std::fs::write(dir.join(img), idx(0x0803, &[n, 28, 28], &px)).unwrap();
        std::fs::write(dir.join(lab), idx(0x0801, &[n], &labels)).unwrap();
    }
}

/// A target trained by the pipeline (non-private LeNet-5, a few epochs).
pub fn target(name: &str, data_dir: &Path, seed: u64, train_size: usize) -> String {
    format!(
        r#"
[[target]]
name = "{name}"
[target.train]
seed = {seed}
epochs = 3
delta = 1e-5
[target.train.model]
kind = "lenet5"
[target.train.data]
dataset = "fmnist"
data_dir = "{dir}"
train_size = {train_size}
[target.train.sampler]
kind = "poisson"
sample_rate = 0.1
[target.train.dp]
noise_multiplier = 0.0
max_grad_norm = 1e6
learning_rate = 0.05
momentum = 0.9
"#,
        dir = data_dir.display()
    )
}

/// The pipeline's sections with a given generator section and sizes.
pub fn head(generator: &str, selection: &str, audit: usize) -> String {
    format!(
        r#"
seed = 3
confidence = 0.95
selection = "{selection}"

[split]
generator = 100
helper = 200
classifier_train = 150
classifier_validation = 50
audit = {audit}

[generator]
{generator}

[helper]
model = {{ kind = "lenet5" }}
epochs = 2
batch_size = 64
learning_rate = 1e-3

[classifier]
epochs = 4
batch_size = 64
learning_rate = 1e-3

[quality]
epochs = 2
batch_size = 64
learning_rate = 1e-3
"#
    )
}
