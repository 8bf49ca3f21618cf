//! Shared by the pipeline tests: a tiny Fashion-MNIST-format dataset written
//! from the data crate's synthetic stand-in, and configs over it.

#![allow(dead_code)]

use std::path::Path;

use dpaudit_data::dataset::DatasetKind;
use dpaudit_data::synthetic::{generate, SyntheticSpec};
use dpaudit_panoramia::Progress;

#[path = "../../../../tests/fixtures/mod.rs"]
mod fixtures;

use fixtures::{with, PANORAMIA_HEAD, PANORAMIA_TARGET};

/// Counts epochs and records stage messages.
#[derive(Default)]
pub struct Count {
    /// Epochs ended, of every model.
    pub epochs: usize,
    /// `stage: message` of every stage.
    pub stages: Vec<String>,
}

impl Count {
    /// Asserts that a stage reported `message` (the stages in the failure).
    pub fn assert_stage(&self, message: &str) {
        assert!(
            self.stages.iter().any(|s| s == message),
            "{:?}",
            self.stages
        );
    }
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

/// A target trained by the pipeline (non-private LeNet-5, a few epochs):
/// `tests/fixtures/panoramia-target.toml` named `name`, of seed `seed`, on
/// the first `train_size` records of the files in `data_dir`.
pub fn target(name: &str, data_dir: &Path, seed: u64, train_size: usize) -> String {
    with(
        PANORAMIA_TARGET,
        &[
            ("name = \"f\"", &format!("name = \"{name}\"")),
            ("seed = 1", &format!("seed = {seed}")),
            ("DATA_DIR", &data_dir.display().to_string()),
            ("train_size = 1000", &format!("train_size = {train_size}")),
        ],
    )
}

/// The pipeline's sections (`tests/fixtures/panoramia-head.toml`) with a
/// given generator section, selection policy and audit size.
pub fn head(generator: &str, selection: &str, audit: usize) -> String {
    with(
        PANORAMIA_HEAD,
        &[
            (
                "selection = \"same-data\"",
                &format!("selection = \"{selection}\""),
            ),
            ("audit = 400", &format!("audit = {audit}")),
            ("kind = \"real_holdout\"", generator),
        ],
    )
}
