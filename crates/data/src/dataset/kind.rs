//! The built-in datasets ([`DatasetKind`]): names, record shapes, class
//! names and default folders.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::Serialize;

use crate::error::{DataError, Result};

/// The datasets dpaudit knows, with the shapes and classes of the shuffling
/// audit paper's experiments (Annamalai et al. 2024 §6.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DatasetKind {
    /// Fashion-MNIST (Xiao et al. 2017): 28×28 grayscale, 10 classes.
    Fmnist,
    /// CIFAR-10 (Krizhevsky 2009), binary version: 3×32×32 RGB, 10 classes.
    Cifar10,
    /// Purchase-100 (Shokri et al. 2017): 600 binary features, 100 classes.
    Purchase100,
}

/// Fashion-MNIST class names, by label (zalandoresearch/fashion-mnist README).
pub const FMNIST_CLASSES: [&str; 10] = [
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
];

/// CIFAR-10 class names, by label (`batches.meta.txt` of the binary version).
pub const CIFAR10_CLASSES: [&str; 10] = [
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
];

impl DatasetKind {
    /// All kinds, in a fixed order.
    pub const ALL: [DatasetKind; 3] = [
        DatasetKind::Fmnist,
        DatasetKind::Cifar10,
        DatasetKind::Purchase100,
    ];

    /// The short name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            DatasetKind::Fmnist => "fmnist",
            DatasetKind::Cifar10 => "cifar10",
            DatasetKind::Purchase100 => "purchase100",
        }
    }

    /// The shape of one record: `[C, H, W]` or `[D]`.
    pub fn record_shape(self) -> Vec<usize> {
        match self {
            DatasetKind::Fmnist => vec![1, 28, 28],
            DatasetKind::Cifar10 => vec![3, 32, 32],
            DatasetKind::Purchase100 => vec![600],
        }
    }

    /// The number of classes.
    pub fn num_classes(self) -> usize {
        match self {
            DatasetKind::Fmnist | DatasetKind::Cifar10 => 10,
            DatasetKind::Purchase100 => 100,
        }
    }

    /// Class names by label. Purchase-100 classes are anonymous: `class-0` .. `class-99`.
    pub fn class_names(self) -> Vec<String> {
        match self {
            DatasetKind::Fmnist => FMNIST_CLASSES.iter().map(|s| s.to_string()).collect(),
            DatasetKind::Cifar10 => CIFAR10_CLASSES.iter().map(|s| s.to_string()).collect(),
            DatasetKind::Purchase100 => (0..100).map(|c| format!("class-{c}")).collect(),
        }
    }

    /// Where the real files are looked for when no directory is given:
    /// the Debian package `dataset-fashion-mnist` for Fashion-MNIST; none for
    /// the others (they are only read from an explicit directory).
    pub fn default_dir(self) -> Option<PathBuf> {
        match self {
            DatasetKind::Fmnist => Some(PathBuf::from("/usr/share/datasets/fashion-mnist")),
            DatasetKind::Cifar10 | DatasetKind::Purchase100 => None,
        }
    }
}

impl fmt::Display for DatasetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DatasetKind {
    type Err = DataError;

    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "fmnist" | "fashion-mnist" | "fashion_mnist" => Ok(DatasetKind::Fmnist),
            "cifar10" | "cifar-10" => Ok(DatasetKind::Cifar10),
            "purchase100" | "purchase-100" | "p100" => Ok(DatasetKind::Purchase100),
            _ => Err(DataError::InvalidArgument {
                parameter: "dataset",
                value: s.to_string(),
                expected: "one of fmnist, cifar10, purchase100".to_string(),
            }),
        }
    }
}
