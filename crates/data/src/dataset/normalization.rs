//! Per-channel standardisation of a [`Dataset`]'s features.

use serde::Serialize;

use super::Dataset;
use crate::error::{DataError, Result};

/// Per-channel standardisation `x ↦ (x − mean_c) / std_c`.
///
/// Channels are the first dimension of `[C, H, W]` records; a `[D]` record is
/// one channel. `mean_c` and `std_c` are the mean and the population standard
/// deviation (divisor N) of all values of channel `c` over the records it was
/// fitted on, accumulated in f64. Fit it on the training split only and apply
/// the same values to the test split. A constant channel (std below 1e-12)
/// gets std 1, so it is only centred.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Normalization {
    /// Mean of each channel.
    pub mean: Vec<f32>,
    /// Standard deviation of each channel.
    pub std: Vec<f32>,
}

impl Normalization {
    /// Computes the per-channel mean and standard deviation of `data`.
    pub fn fit(data: &Dataset) -> Result<Normalization> {
        if data.is_empty() {
            return Err(DataError::InvalidArgument {
                parameter: "data",
                value: "0 records".to_string(),
                expected: "at least one record to fit a normalisation on".to_string(),
            });
        }
        let channels = channel_count(data.shape());
        let per_channel = data.record_len() / channels;
        let mut sum = vec![0f64; channels];
        let mut sum_sq = vec![0f64; channels];
        for record in data.features.chunks_exact(data.record_len()) {
            for (c, values) in record.chunks_exact(per_channel).enumerate() {
                for &v in values {
                    sum[c] += f64::from(v);
                    sum_sq[c] += f64::from(v) * f64::from(v);
                }
            }
        }
        let count = (data.len() * per_channel) as f64;
        let mut mean = Vec::with_capacity(channels);
        let mut std = Vec::with_capacity(channels);
        for c in 0..channels {
            let m = sum[c] / count;
            let var = (sum_sq[c] / count - m * m).max(0.0);
            let s = var.sqrt();
            mean.push(m as f32);
            std.push(if s < 1e-12 { 1.0 } else { s as f32 });
        }
        Ok(Normalization { mean, std })
    }

    /// Standardises `data` in place.
    pub fn apply(&self, data: &mut Dataset) -> Result<()> {
        let channels = channel_count(data.shape());
        if channels != self.mean.len() || channels != self.std.len() {
            return Err(DataError::InvalidArgument {
                parameter: "normalization",
                value: format!("{} channels", self.mean.len()),
                expected: format!(
                    "{channels} channels, as in records of shape {:?}",
                    data.shape()
                ),
            });
        }
        let record_len = data.record_len();
        let per_channel = record_len / channels;
        for record in data.features.chunks_exact_mut(record_len) {
            for (c, values) in record.chunks_exact_mut(per_channel).enumerate() {
                for v in values {
                    *v = (*v - self.mean[c]) / self.std[c];
                }
            }
        }
        Ok(())
    }
}

fn channel_count(shape: &[usize]) -> usize {
    if shape.len() == 3 {
        shape[0]
    } else {
        1
    }
}
