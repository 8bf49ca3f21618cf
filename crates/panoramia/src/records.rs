//! Host-side record sets (real or generated) and the minibatch loop every
//! model of the pipeline is trained with.

use dpaudit_data::dataset::{Dataset, Normalization};
use dpaudit_data::seed::SeedKey;
use rand::Rng;
use tch::{Device, Tensor};

use crate::error::Result;
use crate::nn::to_tensor;

/// Records of one shape: flat features (record `i` at `i·record_len`) and
/// labels (`-1` where a record has none yet).
#[derive(Debug, Clone, PartialEq)]
pub struct Records {
    /// Flat features.
    pub x: Vec<f32>,
    /// One label per record.
    pub y: Vec<i64>,
    /// One record's shape.
    pub shape: Vec<usize>,
}

impl Records {
    /// Every record of a dataset.
    pub fn from_dataset(d: &Dataset) -> Self {
        Self {
            x: d.features().to_vec(),
            y: d.labels().to_vec(),
            shape: d.shape().to_vec(),
        }
    }

    /// Values per record.
    pub fn record_len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// No records.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// Record `i`'s features.
    pub fn record(&self, i: usize) -> &[f32] {
        let l = self.record_len();
        &self.x[i * l..(i + 1) * l]
    }

    /// The listed records, in order.
    pub fn subset(&self, idx: &[usize]) -> Self {
        let l = self.record_len();
        let mut x = Vec::with_capacity(idx.len() * l);
        let mut y = Vec::with_capacity(idx.len());
        for &i in idx {
            x.extend_from_slice(&self.x[i * l..(i + 1) * l]);
            y.push(self.y[i]);
        }
        Self {
            x,
            y,
            shape: self.shape.clone(),
        }
    }

    /// `self` then `other`.
    pub fn concat(&self, other: &Records) -> Self {
        let mut x = self.x.clone();
        x.extend_from_slice(&other.x);
        let mut y = self.y.clone();
        y.extend_from_slice(&other.y);
        Self {
            x,
            y,
            shape: self.shape.clone(),
        }
    }

    /// Records `[start, start + len)`.
    pub fn range(&self, start: usize, len: usize) -> Self {
        let idx: Vec<usize> = (start..start + len).collect();
        self.subset(&idx)
    }

    /// A copy standardised per channel (`None`: unchanged).
    pub fn normalized(&self, norm: Option<&Normalization>) -> Self {
        let Some(norm) = norm else {
            return self.clone();
        };
        let mut out = self.clone();
        let channels = norm.mean.len().max(1);
        let per = self.record_len() / channels;
        if per == 0 {
            return out;
        }
        for rec in out.x.chunks_exact_mut(self.record_len()) {
            for (c, vals) in rec.chunks_exact_mut(per).enumerate() {
                let (m, s) = (norm.mean[c % norm.mean.len()], norm.std[c % norm.std.len()]);
                for v in vals {
                    *v = (*v - m) / s;
                }
            }
        }
        out
    }

    /// Records `idx` as a `[n, shape…]` tensor on `device`.
    pub fn batch(&self, idx: &[usize], device: Device) -> Result<Tensor> {
        let l = self.record_len();
        let mut x = Vec::with_capacity(idx.len() * l);
        for &i in idx {
            x.extend_from_slice(&self.x[i * l..(i + 1) * l]);
        }
        to_tensor(&x, idx.len(), &self.shape, device)
    }

    /// A stable 64-bit fingerprint of record `i` (its feature bits and
    /// label), to find it in another set.
    pub fn record_hash(&self, i: usize) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |b: u8| {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        };
        for v in self.record(i) {
            for b in v.to_bits().to_le_bytes() {
                eat(b);
            }
        }
        for b in self.y[i].to_le_bytes() {
            eat(b);
        }
        h
    }
}

/// A uniformly random permutation of `0..n` (Fisher–Yates) from `key`.
pub fn permutation(n: usize, key: SeedKey) -> Vec<usize> {
    let mut rng = key.rng();
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = rng.gen_range(0..=i);
        p.swap(i, j);
    }
    p
}

/// The minibatches of epoch `epoch`: a fresh permutation from
/// `key.child(epoch)`, cut into batches of `batch` (the last may be short).
pub fn epoch_batches(n: usize, batch: usize, key: SeedKey, epoch: u64) -> Vec<Vec<usize>> {
    permutation(n, key.child(epoch))
        .chunks(batch.max(1))
        .map(|c| c.to_vec())
        .collect()
}

/// Fair coins `s ∈ {0,1}^m` (true = 1) from `key`.
pub fn coins(m: usize, key: SeedKey) -> Vec<bool> {
    let mut rng = key.rng();
    (0..m).map(|_| rng.gen_bool(0.5)).collect()
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;
    use dpaudit_data::seed::{RunSeed, Stream};

    #[test]
    fn permutation_is_a_permutation_and_replayable() {
        let key = RunSeed(5).stream(Stream::Split);
        let p = permutation(100, key);
        let mut s = p.clone();
        s.sort_unstable();
        assert_eq!(s, (0..100).collect::<Vec<_>>());
        assert_eq!(p, permutation(100, key));
        assert_ne!(p, permutation(100, key.child(1)));
    }

    #[test]
    fn normalisation_matches_the_data_crate() {
        let r = Records {
            x: vec![0.0, 1.0, 2.0, 3.0],
            y: vec![0, 1],
            shape: vec![1, 1, 2],
        };
        let norm = Normalization {
            mean: vec![1.5],
            std: vec![0.5],
        };
        assert_eq!(r.normalized(Some(&norm)).x, vec![-3.0, -1.0, 1.0, 3.0]);
        assert_ne!(r.record_hash(0), r.record_hash(1));
    }
}
