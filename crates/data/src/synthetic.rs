//! Deterministic synthetic stand-ins with each dataset's record shape and
//! class count, used when the real files are absent.
//!
//! They are not white noise: every class has its own structure, so a small
//! model learns them (a nearest-class-mean classifier is far above chance,
//! see the tests) and a trained model has something to memorise.
//!
//! - **Images** (Fashion-MNIST `[1, 28, 28]`, CIFAR-10 `[3, 32, 32]`): each
//!   class has a prototype, the clipped sum of 4 Gaussian blobs with random
//!   centres, widths (2–6 px), amplitudes and (for RGB) colours. A record is
//!   its class prototype shifted by up to ±2 px in each direction, scaled by
//!   a contrast factor in [0.7, 1.3], plus Gaussian pixel noise of standard
//!   deviation 0.25, clipped to [0, 1] and quantised to multiples of 1/255 like
//!   real 8-bit pixels.
//! - **Purchase-100** (`[600]`, binary): feature `j` has a background rate
//!   `b_j` uniform in [0.02, 0.10]; each class has 40 signature features
//!   whose rate is 0.5 instead. A record draws each feature as Bernoulli.
//!
//! Classes are balanced and interleaved in a seeded random order. Everything
//! is drawn from ChaCha8 (`rand_chacha`) seeded by the given seed, so the
//! same seed gives the same records (pinned by a test). The image prototypes
//! use `f32::exp`, whose last bit may differ between math libraries, so
//! another platform could in rare cases quantise a pixel differently. The
//! [`Source`] of the result is [`Source::Synthetic`] so every output can say so.

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

use crate::dataset::{uniform_below, Dataset, DatasetKind, Source, Splits};
use crate::error::{DataError, Result};

/// How much synthetic data to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyntheticSpec {
    /// Seed of the generator; part of the [`Source`].
    pub seed: u64,
    /// Training records per class.
    pub train_per_class: usize,
    /// Test records per class.
    pub test_per_class: usize,
}

impl SyntheticSpec {
    /// The embedded default: the real datasets' split sizes for the images
    /// (Fashion-MNIST 6,000 + 1,000 per class, CIFAR-10 5,000 + 1,000), so any
    /// two classes give the shuffling paper's 10,000 records (Annamalai et al. 2024 §6.1);
    /// 200 + 50 per class for Purchase-100 (20,000 + 5,000 records).
    pub fn default_for(kind: DatasetKind, seed: u64) -> SyntheticSpec {
        let (train_per_class, test_per_class) = match kind {
            DatasetKind::Fmnist => (6000, 1000),
            DatasetKind::Cifar10 => (5000, 1000),
            DatasetKind::Purchase100 => (200, 50),
        };
        SyntheticSpec {
            seed,
            train_per_class,
            test_per_class,
        }
    }
}

/// Largest number of f32 values of one synthetic split (16 GiB).
const MAX_VALUES: u64 = 1 << 32;
/// Noise standard deviation of synthetic pixels.
const PIXEL_NOISE: f32 = 0.25;
/// Largest shift of a synthetic image, in pixels, in each direction.
const MAX_SHIFT: i64 = 2;
/// Purchase-100 signature features per class.
const SIGNATURE_FEATURES: usize = 40;
/// Rate of a signature feature.
const SIGNATURE_RATE: f64 = 0.5;

/// Generates the stand-in for `kind`.
pub fn generate(kind: DatasetKind, spec: &SyntheticSpec) -> Result<Splits> {
    if spec.train_per_class == 0 {
        return Err(DataError::InvalidArgument {
            parameter: "train_per_class",
            value: "0".to_string(),
            expected: "at least one training record per class".to_string(),
        });
    }
    let record_len: usize = kind.record_shape().iter().product();
    for (parameter, per_class) in [
        ("train_per_class", spec.train_per_class),
        ("test_per_class", spec.test_per_class),
    ] {
        let values = per_class
            .checked_mul(kind.num_classes())
            .and_then(|n| n.checked_mul(record_len));
        if values.is_none_or(|v| v as u64 > MAX_VALUES) {
            return Err(DataError::InvalidArgument {
                parameter,
                value: per_class.to_string(),
                expected: format!(
                    "at most {MAX_VALUES} feature values per split ({record_len} per record)"
                ),
            });
        }
    }
    // Separate generators for the class structure and for each split, so that
    // changing a split's size leaves the others' records unchanged.
    let mut structure_rng = stream(spec.seed, 0);
    let model = ClassModel::new(kind, &mut structure_rng);
    let source = Source::Synthetic { seed: spec.seed };
    let make = |per_class: usize, stream_id: u64| {
        let mut rng = stream(spec.seed, stream_id);
        let labels = balanced_labels(kind.num_classes(), per_class, &mut rng);
        let mut features =
            Vec::with_capacity(labels.len() * kind.record_shape().iter().product::<usize>());
        for &l in &labels {
            model.sample(l as usize, &mut rng, &mut features);
        }
        Dataset::of_kind(kind, features, labels, source.clone())
    };
    Ok(Splits {
        train: make(spec.train_per_class, 1)?,
        test: make(spec.test_per_class, 2)?,
    })
}

fn stream(seed: u64, id: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(id);
    rng
}

/// `per_class` labels of each class, in a uniformly random order.
fn balanced_labels(classes: usize, per_class: usize, rng: &mut impl RngCore) -> Vec<i64> {
    let mut labels: Vec<i64> = (0..classes * per_class)
        .map(|i| (i % classes) as i64)
        .collect();
    for i in (1..labels.len()).rev() {
        let j = uniform_below(i as u64 + 1, rng) as usize;
        labels.swap(i, j);
    }
    labels
}

enum ClassModel {
    Images {
        channels: usize,
        side: usize,
        prototypes: Vec<Vec<f32>>,
    },
    Bernoulli {
        rates: Vec<Vec<f64>>,
    },
}

impl ClassModel {
    fn new(kind: DatasetKind, rng: &mut ChaCha8Rng) -> ClassModel {
        let shape = kind.record_shape();
        match kind {
            DatasetKind::Fmnist | DatasetKind::Cifar10 => {
                let (channels, side) = (shape[0], shape[1]);
                let prototypes = (0..kind.num_classes())
                    .map(|_| prototype(channels, side, rng))
                    .collect();
                ClassModel::Images {
                    channels,
                    side,
                    prototypes,
                }
            }
            DatasetKind::Purchase100 => {
                let d = shape[0];
                let background: Vec<f64> = (0..d).map(|_| rng.gen_range(0.02..0.10)).collect();
                let rates = (0..kind.num_classes())
                    .map(|_| {
                        let mut r = background.clone();
                        let mut idx: Vec<usize> = (0..d).collect();
                        for i in 0..SIGNATURE_FEATURES {
                            let j = i + uniform_below((d - i) as u64, rng) as usize;
                            idx.swap(i, j);
                            r[idx[i]] = SIGNATURE_RATE;
                        }
                        r
                    })
                    .collect();
                ClassModel::Bernoulli { rates }
            }
        }
    }

    fn sample(&self, class: usize, rng: &mut ChaCha8Rng, out: &mut Vec<f32>) {
        match self {
            ClassModel::Images {
                channels,
                side,
                prototypes,
            } => {
                let proto = &prototypes[class];
                let dy = rng.gen_range(-MAX_SHIFT..=MAX_SHIFT);
                let dx = rng.gen_range(-MAX_SHIFT..=MAX_SHIFT);
                let contrast: f32 = rng.gen_range(0.7..1.3);
                let s = *side as i64;
                for c in 0..*channels {
                    for y in 0..s {
                        for x in 0..s {
                            let (sy, sx) = (y - dy, x - dx);
                            let base = if (0..s).contains(&sy) && (0..s).contains(&sx) {
                                proto[(c * *side + sy as usize) * *side + sx as usize]
                            } else {
                                0.0
                            };
                            let noise: f32 = rng.sample(StandardNormal);
                            let v = (contrast * base + PIXEL_NOISE * noise).clamp(0.0, 1.0);
                            out.push((v * 255.0).round() / 255.0);
                        }
                    }
                }
            }
            ClassModel::Bernoulli { rates } => {
                for &p in &rates[class] {
                    out.push(if rng.gen_bool(p) { 1.0 } else { 0.0 });
                }
            }
        }
    }
}

/// A class prototype: the clipped sum of 4 random Gaussian blobs.
fn prototype(channels: usize, side: usize, rng: &mut ChaCha8Rng) -> Vec<f32> {
    let mut img = vec![0f32; channels * side * side];
    let lo = side as f32 * 0.2;
    let hi = side as f32 * 0.8;
    for _ in 0..4 {
        let cy: f32 = rng.gen_range(lo..hi);
        let cx: f32 = rng.gen_range(lo..hi);
        let width: f32 = rng.gen_range(2.0..6.0);
        let amplitude: f32 = rng.gen_range(0.5..1.0);
        let colour: Vec<f32> = (0..channels)
            .map(|_| {
                if channels == 1 {
                    1.0
                } else {
                    rng.gen_range(0.1..1.0)
                }
            })
            .collect();
        for (c, &weight) in colour.iter().enumerate() {
            for y in 0..side {
                for x in 0..side {
                    let d2 = (y as f32 - cy).powi(2) + (x as f32 - cx).powi(2);
                    img[(c * side + y) * side + x] +=
                        weight * amplitude * (-d2 / (2.0 * width * width)).exp();
                }
            }
        }
    }
    for v in &mut img {
        *v = v.min(1.0);
    }
    img
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(seed: u64) -> SyntheticSpec {
        SyntheticSpec {
            seed,
            train_per_class: 3,
            test_per_class: 2,
        }
    }

    #[test]
    fn shapes_counts_and_source() {
        for kind in DatasetKind::ALL {
            let s = generate(kind, &small(5)).unwrap();
            assert_eq!(s.train.len(), 3 * kind.num_classes());
            assert_eq!(s.test.len(), 2 * kind.num_classes());
            assert_eq!(s.train.shape(), kind.record_shape().as_slice());
            assert_eq!(s.train.class_histogram(), vec![3; kind.num_classes()]);
            assert_eq!(s.source(), &Source::Synthetic { seed: 5 });
            assert!(s.train.features().iter().all(|&v| (0.0..=1.0).contains(&v)));
        }
    }

    #[test]
    fn deterministic_in_the_seed() {
        let a = generate(DatasetKind::Cifar10, &small(1)).unwrap();
        let b = generate(DatasetKind::Cifar10, &small(1)).unwrap();
        let c = generate(DatasetKind::Cifar10, &small(2)).unwrap();
        assert_eq!(a, b);
        assert_ne!(a.train.features(), c.train.features());
    }

    #[test]
    fn test_split_does_not_depend_on_train_size() {
        let a = generate(DatasetKind::Fmnist, &small(1)).unwrap();
        let b = generate(
            DatasetKind::Fmnist,
            &SyntheticSpec {
                train_per_class: 7,
                ..small(1)
            },
        )
        .unwrap();
        assert_eq!(a.test, b.test);
    }

    #[test]
    fn purchase_features_are_binary() {
        let s = generate(DatasetKind::Purchase100, &small(0)).unwrap();
        assert!(s.train.features().iter().all(|&v| v == 0.0 || v == 1.0));
    }

    #[test]
    fn zero_training_records_is_refused() {
        let spec = SyntheticSpec {
            seed: 0,
            train_per_class: 0,
            test_per_class: 1,
        };
        assert!(generate(DatasetKind::Fmnist, &spec).is_err());
    }
}

#[cfg(test)]
mod pin {
    use super::*;
    use crate::files::sha256_hex;

    fn digest(kind: DatasetKind) -> String {
        let spec = SyntheticSpec {
            seed: 42,
            train_per_class: 2,
            test_per_class: 1,
        };
        let s = generate(kind, &spec).unwrap();
        let mut bytes = Vec::new();
        for d in [&s.train, &s.test] {
            bytes.extend(d.features().iter().flat_map(|x| x.to_le_bytes()));
            bytes.extend(d.labels().iter().flat_map(|l| l.to_le_bytes()));
        }
        sha256_hex(&bytes)
    }

    /// Regression pin: the stand-ins are part of results (the embedded default
    /// data), so any change to them must be deliberate. Values computed by this
    /// implementation when it was written; update them only on purpose.
    #[test]
    fn stand_ins_are_pinned() {
        let got: Vec<String> = DatasetKind::ALL.iter().map(|&k| digest(k)).collect();
        assert_eq!(
            got,
            vec![
                "049760a9ccb43b2443e15fb572ceb8c83a2707b0daa4ce56e50c01768b09fb29",
                "fb6f7459b943fac42d3abd1db59c97f6526fd32bd2a83beeeeb1ac1c2256a196",
                "47d3b17df42b4aeb6dbd7acb4cfe386a922ee195db6d2c05878b6a403dcad870",
            ]
        );
    }
}
