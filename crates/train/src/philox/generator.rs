//! One Philox key on a device: [`Philox`].

use dpaudit_data::seed::SeedKey;
use tch::{Device, Kind, TchError, Tensor};

use super::binomial::binomial_cdf;
use super::rounds::{fill, key_words, Schedule, Slice, Values};
use crate::scalar::{int, WithNumber};

/// Blocks generated per slice.
pub const SLICE: i64 = 1 << 18;

/// Largest number of blocks one draw may use (the block index is one 32-bit
/// counter word).
pub const MAX_BLOCKS: i64 = 1 << 32;

/// A Philox4x32-10 key on a device.
#[derive(Debug, Clone, Copy)]
pub struct Philox {
    key: [u32; 2],
    device: Device,
}

impl Philox {
    /// The key of a node of a run's key tree (its first 64 bits).
    pub fn new(key: SeedKey, device: Device) -> Self {
        Self {
            key: key_words(key),
            device,
        }
    }

    /// A key given as two words (known-answer tests).
    pub fn from_words(key: [u32; 2], device: Device) -> Self {
        Self { key, device }
    }

    /// The device draws land on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Blocks `start .. start + n` of the draw tagged `tag`: four int64
    /// tensors `[n]` with values in `[0, 2³²)`.
    pub fn blocks(&self, start: i64, n: i64, tag: [u32; 3]) -> Result<[Tensor; 4], TchError> {
        let mut w = Slice::new(1, n, self.device)?;
        w.blocks(start, tag, &Schedule::single(self.key, self.device)?)?;
        let [a, b, c, d] = w.words()?;
        Ok([
            a.f_view([n])?,
            b.f_view([n])?,
            c.f_view([n])?,
            d.f_view([n])?,
        ])
    }

    fn check(&self, elements: i64, per_block: i64) -> Result<i64, TchError> {
        let blocks = (elements + per_block - 1) / per_block;
        if elements < 0 || blocks > MAX_BLOCKS {
            return Err(TchError::Kind(format!(
                "a Philox draw of {elements} values: at most {} per tag",
                MAX_BLOCKS * per_block
            )));
        }
        Ok(blocks)
    }

    /// A flat float64 tensor of `n` values, two per block, slice by slice.
    fn fill_pairs(&self, n: i64, tag: [u32; 3], values: Values) -> Result<Tensor, TchError> {
        let blocks = self.check(n, 2)?;
        let out = Tensor::f_empty([2 * blocks], (Kind::Double, self.device))?;
        let schedule = Schedule::single(self.key, self.device)?;
        fill(&out, 1, blocks, SLICE, tag, &schedule, values)?;
        out.f_narrow(0, 0, n)
    }

    /// Float64 uniforms in `(0, 1)` on the grid `(k + ½)·2⁻⁵²`, shaped `shape`.
    pub fn uniform(&self, shape: &[i64], tag: [u32; 3]) -> Result<Tensor, TchError> {
        let n = shape.iter().product();
        self.fill_pairs(n, tag, Values::Uniform)?.f_reshape(shape)
    }

    /// Float64 standard normals by the Box–Muller transform (Box & Muller
    /// 1958): block `i` gives `r·cos θ` and `r·sin θ` with `r = √(−2 ln u₁)`,
    /// `θ = 2πu₂`. With `u₁ ≥ 2⁻⁵³` the largest `|z|` is about 8.6.
    pub fn normal(&self, shape: &[i64], tag: [u32; 3]) -> Result<Tensor, TchError> {
        let n = shape.iter().product();
        self.fill_pairs(n, tag, Values::Normal { scale: 1.0 })?
            .f_reshape(shape)
    }
    /// Int64 values in `[0, high)` as `⌊u·high⌋` of a 52-bit uniform: each
    /// value's probability is within `2⁻⁵²` of `1/high`.
    pub fn below(&self, high: i64, shape: &[i64], tag: [u32; 3]) -> Result<Tensor, TchError> {
        if high < 1 {
            return Err(TchError::Kind(format!(
                "Philox::below({high}): expected high ≥ 1"
            )));
        }
        self.uniform(shape, tag)?
            .mul_f64(high as f64)?
            .f_floor()?
            .f_to_kind(Kind::Int64)?
            .f_clamp_max_tensor(&int(high - 1)?)
    }

    /// Float64 draws of Binomial(`trials`, `p`) by inversion: the smallest
    /// `k` with `u ≤ F(k)`, with the CDF `F` tabulated on the host in float64
    /// from the log-pmf (up to where the upper tail is below 2⁻⁶⁰, beyond
    /// which `u` never reaches).
    pub fn binomial(
        &self,
        trials: u64,
        p: f64,
        shape: &[i64],
        tag: [u32; 3],
    ) -> Result<Tensor, TchError> {
        let cdf = binomial_cdf(trials, p).map_err(TchError::Kind)?;
        let last = cdf.len() as i64 - 1;
        let table = Tensor::f_from_slice(&cdf)?.f_to_device(self.device)?;
        let u = self.uniform(shape, tag)?;
        u.f_searchsorted(&table, false, false, "left", None::<Tensor>)?
            .f_clamp_max_tensor(&int(last)?)?
            .f_to_kind(Kind::Double)
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, clippy::arithmetic_side_effects)] // tests may panic
mod tests {
    use super::*;

    #[test]
    fn draws_do_not_depend_on_slicing_and_differ_by_tag() {
        let p = Philox::from_words([1, 2], Device::Cpu);
        let n = 2 * SLICE + 11;
        let all = p.normal(&[n], [0, 0, 0]).unwrap();
        let head = p.normal(&[101], [0, 0, 0]).unwrap();
        assert!(all.narrow(0, 0, 101).equal(&head));
        let other = p.normal(&[101], [1, 0, 0]).unwrap();
        assert!(!other.equal(&head));
    }

    #[test]
    fn normals_have_unit_moments() {
        let p = Philox::from_words([3, 4], Device::Cpu);
        let z = p.normal(&[400_000], [0, 0, 0]).unwrap();
        let mean = z.mean(Kind::Double).double_value(&[]);
        let var = z.var(true).double_value(&[]);
        // Standard errors: 1/√n = 1.6e-3 for the mean, √(2/n) = 2.2e-3 for the
        // variance; 5 standard errors.
        assert!(mean.abs() < 8e-3, "mean {mean}");
        assert!((var - 1.0).abs() < 1.1e-2, "variance {var}");
        let tail = z
            .abs()
            .gt(3.0)
            .to_kind(Kind::Double)
            .mean(Kind::Double)
            .double_value(&[]);
        // P(|Z| > 3) = 0.0026998 (normal table); binomial sd √(p/n) = 8.2e-5.
        assert!((tail - 0.0026998).abs() < 4.1e-4, "tail {tail}");
    }

    #[test]
    fn below_and_binomial_have_their_means() {
        let p = Philox::from_words([5, 6], Device::Cpu);
        let k = p.below(7, &[70_000], [0, 0, 0]).unwrap();
        assert_eq!(k.min().int64_value(&[]), 0);
        assert_eq!(k.max().int64_value(&[]), 6);
        let mean = k.to_kind(Kind::Double).mean(Kind::Double).double_value(&[]);
        // Mean 3, sd of the mean √(4/70000) = 7.6e-3.
        assert!((mean - 3.0).abs() < 0.04, "mean {mean}");
        let b = p.binomial(1000, 0.01, &[50_000], [1, 0, 0]).unwrap();
        let mean = b.mean(Kind::Double).double_value(&[]);
        let var = b.var(true).double_value(&[]);
        // Mean np = 10, variance np(1−p) = 9.9; sd of the mean √(9.9/5e4) = 0.014.
        assert!((mean - 10.0).abs() < 0.07, "mean {mean}");
        assert!((var - 9.9).abs() < 0.4, "variance {var}");
    }
}
