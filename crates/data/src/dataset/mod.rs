//! The host dataset type every loader returns and the training engine consumes.
//!
//! # Layout
//!
//! A [`Dataset`] holds `len()` records. Record `i` is
//! `features[i * record_len() .. (i + 1) * record_len()]`, a row-major array
//! of shape [`Dataset::shape`]: `[C, H, W]` for images (channel-major, as
//! PyTorch's `NCHW` without the `N`), `[D]` for feature vectors. Its class is
//! `labels[i]`, in `0..num_classes()`. So the training engine builds its
//! tensors as `features` viewed as `[len, shape...]` (f32) and `labels` as
//! `[len]` (i64) without copying or reordering anything.
//!
//! Image pixels are scaled to `[0, 1]` (byte / 255); Purchase-100 features are
//! 0 or 1. [`Normalization`] standardises channels afterwards, if wanted.
//!
//! Every dataset carries its [`Source`]: the real files (with their SHA-256)
//! or the seed of a synthetic stand-in, so no result can silently come from
//! synthetic data.
//!
//! Files: `kind.rs` ([`DatasetKind`], the built-in datasets and their class
//! names), `source.rs` ([`Source`], where a dataset's records came from),
//! `normalization.rs` ([`Normalization`], per-channel standardisation); their
//! items are re-exported here.

mod kind;
mod normalization;
mod source;

pub use kind::{DatasetKind, CIFAR10_CLASSES, FMNIST_CLASSES};
pub use normalization::Normalization;
pub use source::{Source, SourceFile};

use rand::RngCore;

use crate::error::{DataError, Result};

/// Records of one split of a dataset, in the layout described in the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    kind: DatasetKind,
    features: Vec<f32>,
    labels: Vec<i64>,
    shape: Vec<usize>,
    class_names: Vec<String>,
    source: Source,
}

impl Dataset {
    /// Builds a dataset of a built-in `kind`, with the kind's record shape
    /// and class names; checked as [`Dataset::new`].
    pub fn of_kind(
        kind: DatasetKind,
        features: Vec<f32>,
        labels: Vec<i64>,
        source: Source,
    ) -> Result<Self> {
        Self::new(
            kind,
            features,
            labels,
            kind.record_shape(),
            kind.class_names(),
            source,
        )
    }

    /// Builds a dataset, checking that `features` holds `labels.len()` records
    /// of `shape`, and that every label is in `0..class_names.len()`.
    pub fn new(
        kind: DatasetKind,
        features: Vec<f32>,
        labels: Vec<i64>,
        shape: Vec<usize>,
        class_names: Vec<String>,
        source: Source,
    ) -> Result<Self> {
        let record_len = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
        let record_len = match record_len {
            Some(n) if n > 0 && !shape.is_empty() => n,
            _ => {
                return Err(DataError::InvalidArgument {
                    parameter: "shape",
                    value: format!("{shape:?}"),
                    expected: "a non-empty list of positive dimensions".to_string(),
                })
            }
        };
        if Some(features.len()) != labels.len().checked_mul(record_len) {
            return Err(DataError::InvalidArgument {
                parameter: "features",
                value: format!("{} values", features.len()),
                expected: format!("{} records × {record_len} values per record", labels.len()),
            });
        }
        if class_names.is_empty() {
            return Err(DataError::InvalidArgument {
                parameter: "class_names",
                value: "[]".to_string(),
                expected: "at least one class".to_string(),
            });
        }
        let num_classes = class_names.len() as i64;
        if let Some((i, &label)) = labels
            .iter()
            .enumerate()
            .find(|(_, &l)| l < 0 || l >= num_classes)
        {
            return Err(DataError::InvalidArgument {
                parameter: "labels",
                value: format!("{label} (record {i})"),
                expected: format!("labels in 0..{num_classes}"),
            });
        }
        Ok(Dataset {
            kind,
            features,
            labels,
            shape,
            class_names,
            source,
        })
    }

    /// The dataset these records were drawn from.
    pub fn kind(&self) -> DatasetKind {
        self.kind
    }

    /// All features, record after record (see the module docs for the layout).
    pub fn features(&self) -> &[f32] {
        &self.features
    }

    /// The class of each record, in `0..num_classes()`.
    pub fn labels(&self) -> &[i64] {
        &self.labels
    }

    /// The shape of one record: `[C, H, W]` or `[D]`.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Number of `f32` values per record (the product of `shape`).
    pub fn record_len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Number of classes (labels are in `0..num_classes()`).
    pub fn num_classes(&self) -> usize {
        self.class_names.len()
    }

    /// Class names, by label.
    pub fn class_names(&self) -> &[String] {
        &self.class_names
    }

    /// Where the records come from.
    pub fn source(&self) -> &Source {
        &self.source
    }

    /// Features of record `i`, or `None` when `i >= len()`.
    pub fn record(&self, i: usize) -> Option<&[f32]> {
        let n = self.record_len();
        let start = i.checked_mul(n)?;
        self.features.get(start..start.checked_add(n)?)
    }

    /// Number of records of each class, by label.
    pub fn class_histogram(&self) -> Vec<usize> {
        let mut counts = vec![0usize; self.num_classes()];
        for &l in &self.labels {
            // Labels are validated in `new`, so the index is in range.
            counts[l as usize] += 1;
        }
        counts
    }

    /// Takes the features and labels out, for building tensors without a copy.
    pub fn into_parts(self) -> (Vec<f32>, Vec<i64>) {
        (self.features, self.labels)
    }

    /// The records at `indices`, in that order (repeats allowed).
    pub fn subset(&self, indices: &[usize]) -> Result<Dataset> {
        let n = self.record_len();
        let mut features = Vec::with_capacity(indices.len() * n);
        let mut labels = Vec::with_capacity(indices.len());
        for &i in indices {
            let Some(record) = self.record(i) else {
                return Err(DataError::InvalidArgument {
                    parameter: "indices",
                    value: i.to_string(),
                    expected: format!("record indices below {}", self.len()),
                });
            };
            features.extend_from_slice(record);
            labels.push(self.labels[i]);
        }
        Ok(Dataset {
            features,
            labels,
            ..self.empty_like()
        })
    }

    /// Keeps only the records of `classes` and relabels them by position:
    /// `classes[j]` becomes label `j`. For example `[0, 1]` on Fashion-MNIST
    /// is the shuffling paper's T-shirt/top (0) vs Trouser (1) task, and on
    /// CIFAR-10 its airplane (0) vs automobile (1) task (Annamalai et al. 2024 §6.1).
    pub fn select_classes(&self, classes: &[i64]) -> Result<Dataset> {
        let k = self.num_classes() as i64;
        if classes.is_empty() {
            return Err(DataError::InvalidArgument {
                parameter: "classes",
                value: "[]".to_string(),
                expected: "at least one class".to_string(),
            });
        }
        let mut remap = vec![None; self.num_classes()];
        for (j, &c) in classes.iter().enumerate() {
            if c < 0 || c >= k {
                return Err(DataError::InvalidArgument {
                    parameter: "classes",
                    value: c.to_string(),
                    expected: format!("class labels in 0..{k}"),
                });
            }
            if remap[c as usize].is_some() {
                return Err(DataError::InvalidArgument {
                    parameter: "classes",
                    value: format!("{classes:?}"),
                    expected: "each class at most once".to_string(),
                });
            }
            remap[c as usize] = Some(j as i64);
        }
        let n = self.record_len();
        let mut features = Vec::new();
        let mut labels = Vec::new();
        for (i, &l) in self.labels.iter().enumerate() {
            if let Some(new) = remap[l as usize] {
                features.extend_from_slice(&self.features[i * n..(i + 1) * n]);
                labels.push(new);
            }
        }
        let class_names = classes
            .iter()
            .map(|&c| self.class_names[c as usize].clone())
            .collect();
        Ok(Dataset {
            features,
            labels,
            class_names,
            ..self.empty_like()
        })
    }

    /// A uniformly random subset of `count` records, drawn without
    /// replacement from `rng` and kept in their original order (the shuffling
    /// paper downsamples each dataset to 10,000 records, Annamalai et al. 2024 §6.1).
    /// Pass a named substream of the run seed, e.g. `split`.
    pub fn downsample(&self, count: usize, rng: &mut impl RngCore) -> Result<Dataset> {
        if count > self.len() {
            return Err(DataError::InvalidArgument {
                parameter: "count",
                value: count.to_string(),
                expected: format!("at most the {} records available", self.len()),
            });
        }
        let mut chosen = choose_without_replacement(self.len(), count, rng);
        chosen.sort_unstable();
        self.subset(&chosen)
    }

    /// Splits into `(rest, held_out)` with `held_out_count` records drawn
    /// uniformly without replacement from `rng`; both keep the original order.
    pub fn split(
        &self,
        held_out_count: usize,
        rng: &mut impl RngCore,
    ) -> Result<(Dataset, Dataset)> {
        if held_out_count > self.len() {
            return Err(DataError::InvalidArgument {
                parameter: "held_out_count",
                value: held_out_count.to_string(),
                expected: format!("at most the {} records available", self.len()),
            });
        }
        let mut in_held_out = vec![false; self.len()];
        for i in choose_without_replacement(self.len(), held_out_count, rng) {
            in_held_out[i] = true;
        }
        let rest: Vec<usize> = (0..self.len()).filter(|&i| !in_held_out[i]).collect();
        let held: Vec<usize> = (0..self.len()).filter(|&i| in_held_out[i]).collect();
        Ok((self.subset(&rest)?, self.subset(&held)?))
    }

    fn empty_like(&self) -> Dataset {
        Dataset {
            kind: self.kind,
            features: Vec::new(),
            labels: Vec::new(),
            shape: self.shape.clone(),
            class_names: self.class_names.clone(),
            source: self.source.clone(),
        }
    }
}

/// `count` distinct indices in `0..n`, by a partial Fisher–Yates shuffle.
fn choose_without_replacement(n: usize, count: usize, rng: &mut impl RngCore) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    for i in 0..count {
        let j = i + uniform_below((n - i) as u64, rng) as usize;
        idx.swap(i, j);
    }
    idx.truncate(count);
    idx
}

/// A uniform integer in `0..bound` (`bound > 0`), by rejection sampling on
/// 64-bit words, so the result does not depend on `rand`'s range algorithms.
pub(crate) fn uniform_below(bound: u64, rng: &mut impl RngCore) -> u64 {
    debug_assert!(bound > 0);
    // Largest multiple of `bound` that fits: accept words below it.
    let zone = u64::MAX - (u64::MAX - bound + 1) % bound;
    loop {
        let w = rng.next_u64();
        if w <= zone {
            return w % bound;
        }
    }
}

/// The train and test splits of a dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct Splits {
    /// Training records.
    pub train: Dataset,
    /// Test records. Empty for Purchase-100, which has no official test
    /// split: use [`Dataset::split`] with a seeded generator.
    pub test: Dataset,
}

impl Splits {
    /// [`Dataset::select_classes`] on both splits.
    pub fn select_classes(&self, classes: &[i64]) -> Result<Splits> {
        Ok(Splits {
            train: self.train.select_classes(classes)?,
            test: self.test.select_classes(classes)?,
        })
    }

    /// Where the records come from (the same for both splits).
    pub fn source(&self) -> &Source {
        self.train.source()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    fn toy(labels: Vec<i64>) -> Dataset {
        // Record i is [i, i + 0.5] so that tests can see which records survived.
        let features = (0..labels.len())
            .flat_map(|i| [i as f32, i as f32 + 0.5])
            .collect();
        Dataset::new(
            DatasetKind::Purchase100,
            features,
            labels,
            vec![2],
            vec!["a".into(), "b".into(), "c".into()],
            Source::Synthetic { seed: 1 },
        )
        .unwrap()
    }

    #[test]
    fn new_rejects_inconsistent_buffers() {
        let names = vec!["a".to_string()];
        let src = Source::Synthetic { seed: 0 };
        let k = DatasetKind::Fmnist;
        // (values, label): 3 values are not one record of shape [2]; labels 1 and −1 lie
        // outside 0..1.
        for (len, label) in [(3, 0), (2, 1), (2, -1)] {
            let src = src.clone();
            let bad = Dataset::new(k, vec![0.0; len], vec![label], vec![2], names.clone(), src);
            assert!(bad.is_err());
        }
        assert!(Dataset::new(k, vec![], vec![], vec![], names.clone(), src.clone()).is_err());
        assert!(Dataset::new(k, vec![], vec![], vec![2], vec![], src.clone()).is_err());
        assert!(Dataset::new(k, vec![0.0; 2], vec![0], vec![2], names, src).is_ok());
    }

    #[test]
    fn select_classes_keeps_order_and_remaps() {
        let d = toy(vec![2, 0, 1, 2, 0]);
        let s = d.select_classes(&[2, 0]).unwrap();
        assert_eq!(s.labels(), &[0, 1, 0, 1]);
        assert_eq!(s.features(), &[0.0, 0.5, 1.0, 1.5, 3.0, 3.5, 4.0, 4.5]);
        assert_eq!(s.class_names(), &["c".to_string(), "a".to_string()]);
        assert_eq!(s.num_classes(), 2);
        assert!(d.select_classes(&[0, 0]).is_err());
        assert!(d.select_classes(&[3]).is_err());
        assert!(d.select_classes(&[]).is_err());
    }

    #[test]
    fn downsample_is_deterministic_distinct_and_ordered() {
        let d = toy((0..100).map(|i| i % 3).collect());
        let a = d
            .downsample(30, &mut ChaCha20Rng::seed_from_u64(7))
            .unwrap();
        let b = d
            .downsample(30, &mut ChaCha20Rng::seed_from_u64(7))
            .unwrap();
        let c = d
            .downsample(30, &mut ChaCha20Rng::seed_from_u64(8))
            .unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let firsts: Vec<f32> = a.features().chunks(2).map(|r| r[0]).collect();
        assert!(
            firsts.windows(2).all(|w| w[0] < w[1]),
            "distinct and in original order"
        );
        for (r, &l) in a.features().chunks(2).zip(a.labels()) {
            assert_eq!(l, (r[0] as i64) % 3, "label travels with its record");
        }
        assert_eq!(
            d.downsample(100, &mut ChaCha20Rng::seed_from_u64(7))
                .unwrap(),
            d
        );
        assert!(d
            .downsample(101, &mut ChaCha20Rng::seed_from_u64(7))
            .is_err());
    }

    #[test]
    fn downsample_is_uniform() {
        // Each record is chosen with probability count / n = 0.3; over 2,000
        // draws the count of record 0 is Binomial(2000, 0.3): mean 600,
        // sd sqrt(2000·0.3·0.7) = 20.5; 5 sd = 102.
        let d = toy(vec![0; 10]);
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let mut hits = [0usize; 10];
        for _ in 0..2000 {
            for r in d.downsample(3, &mut rng).unwrap().features().chunks(2) {
                hits[r[0] as usize] += 1;
            }
        }
        for h in hits {
            assert!((h as f64 - 600.0).abs() < 102.0, "hits {hits:?}");
        }
    }

    #[test]
    fn split_partitions_the_records() {
        let d = toy((0..50).map(|i| i % 3).collect());
        let (rest, held) = d.split(20, &mut ChaCha20Rng::seed_from_u64(1)).unwrap();
        assert_eq!((rest.len(), held.len()), (30, 20));
        let mut all: Vec<i64> = rest
            .features()
            .chunks(2)
            .chain(held.features().chunks(2))
            .map(|r| r[0] as i64)
            .collect();
        all.sort_unstable();
        assert_eq!(all, (0..50).collect::<Vec<_>>());
        assert!(d.split(51, &mut ChaCha20Rng::seed_from_u64(1)).is_err());
    }

    #[test]
    fn normalization_standardises_each_channel() {
        // Two records of shape [2, 1, 2]: channel 0 holds {1, 3, 5, 7} (mean 4,
        // population sd sqrt(5)), channel 1 is constant 2 (sd 0 → 1).
        let mut d = Dataset::new(
            DatasetKind::Cifar10,
            vec![1.0, 3.0, 2.0, 2.0, 5.0, 7.0, 2.0, 2.0],
            vec![0, 0],
            vec![2, 1, 2],
            vec!["x".into()],
            Source::Synthetic { seed: 0 },
        )
        .unwrap();
        let n = Normalization::fit(&d).unwrap();
        assert!((n.mean[0] - 4.0).abs() < 1e-6 && (n.std[0] - 5f32.sqrt()).abs() < 1e-6);
        assert_eq!((n.mean[1], n.std[1]), (2.0, 1.0));
        n.apply(&mut d).unwrap();
        let s = 5f32.sqrt();
        let want = [-3.0 / s, -1.0 / s, 0.0, 0.0, 1.0 / s, 3.0 / s, 0.0, 0.0];
        for (a, b) in d.features().iter().zip(want) {
            assert!((a - b).abs() < 1e-6, "{:?}", d.features());
        }
        let mut flat = toy(vec![0]);
        assert!(n.apply(&mut flat).is_err(), "channel count must match");
    }

    #[test]
    fn record_out_of_range_is_none() {
        let d = toy(vec![0, 1]);
        assert_eq!(d.record(1), Some(&[1.0, 1.5][..]));
        assert_eq!(d.record(2), None);
        assert_eq!(d.record(usize::MAX), None);
        assert!(d.subset(&[usize::MAX]).is_err());
    }

    #[test]
    fn uniform_below_handles_extremes() {
        let mut rng = ChaCha20Rng::seed_from_u64(0);
        assert_eq!(uniform_below(1, &mut rng), 0);
        assert!(uniform_below(u64::MAX, &mut rng) < u64::MAX);
    }

    #[test]
    fn kind_names_round_trip() {
        for k in DatasetKind::ALL {
            assert_eq!(k.name().parse::<DatasetKind>().unwrap(), k);
            assert_eq!(k.class_names().len(), k.num_classes());
        }
        assert!("mnist".parse::<DatasetKind>().is_err());
    }
}
