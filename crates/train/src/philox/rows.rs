//! One Philox key per row of a draw: [`RowKeys`].

use dpaudit_data::seed::SeedKey;
use tch::{Device, Kind, TchError, Tensor};

#[cfg(doc)]
use super::generator::Philox;
use super::generator::MAX_BLOCKS;
use super::rounds::{fill, key_words, Schedule, Slice, Values};

/// One Philox key per row of a `[M, n]` draw: row `r` is the stream of the
/// key `keys[r]`, and the same row with the same tag gives the same values
/// whatever the other rows are. The replayable DP noise on a GPU
/// ([`crate::noise`]) draws all replicas' noise at once this way, with a
/// number of operations that does not depend on `M`.
#[derive(Debug)]
pub struct RowKeys {
    /// `[M, 2]` int64 on the device: the two key words of each row.
    keys: Tensor,
    /// The round constants, computed once.
    schedule: Schedule,
}

impl RowKeys {
    /// The first 64 bits of each node (as [`Philox::new`]), uploaded to `device`.
    pub fn new(keys: &[SeedKey], device: Device) -> Result<Self, TchError> {
        let words: Vec<i64> = keys
            .iter()
            .flat_map(|k| {
                let key = key_words(*k);
                [i64::from(key[0]), i64::from(key[1])]
            })
            .collect();
        let m = keys.len() as i64;
        let keys = Tensor::f_from_slice(&words)?
            .f_reshape([m, 2])?
            .f_to_device(device)?;
        let schedule = Schedule::rows(&keys)?;
        Ok(Self { keys, schedule })
    }

    /// The device the keys (and draws) are on.
    pub fn device(&self) -> Device {
        self.keys.device()
    }

    /// Rows.
    pub fn rows(&self) -> i64 {
        self.keys.size().first().copied().unwrap_or(0)
    }

    /// Blocks `start .. start + n` of every row's draw tagged `tag`: four
    /// int64 tensors `[M, n]`; row `r` equals `Philox(keys[r]).blocks(start,
    /// n, tag)`.
    pub fn blocks(&self, start: i64, n: i64, tag: [u32; 3]) -> Result<[Tensor; 4], TchError> {
        let mut w = Slice::new(self.rows(), n, self.device())?;
        w.blocks(start, tag, &self.schedule)?;
        w.words()
    }

    /// `[M, n]` float64 standard normals, row `r` from key `r`, by the same
    /// Box–Muller transform as [`Philox::normal`] (block `i` gives values
    /// `2i` and `2i + 1` of a row), in slices of at most [`ROW_SLICE`] blocks
    /// over all rows.
    pub fn normal(&self, n: i64, tag: [u32; 3]) -> Result<Tensor, TchError> {
        self.scaled_normal(n, tag, 1.0, Kind::Double)
    }

    /// [`RowKeys::normal`] times `scale`, computed in float64 and written to
    /// `kind` slice by slice, so no float64 copy of the whole draw is held.
    /// A draw of up to [`ROW_SLICE`] blocks runs a fixed number of
    /// operations and allocates five working tensors and the result.
    pub fn scaled_normal(
        &self,
        n: i64,
        tag: [u32; 3],
        scale: f64,
        kind: Kind,
    ) -> Result<Tensor, TchError> {
        let m = self.rows();
        let blocks = (n + 1) / 2;
        if n < 0 || blocks > MAX_BLOCKS {
            return Err(TchError::Kind(format!(
                "a Philox draw of {n} values per row: at most {} per tag",
                MAX_BLOCKS * 2
            )));
        }
        let out = Tensor::f_empty([m, 2 * blocks], (kind, self.keys.device()))?;
        let per_slice = (ROW_SLICE / m.max(1)).max(1);
        fill(
            &out,
            m,
            blocks,
            per_slice,
            tag,
            &self.schedule,
            Values::Normal { scale },
        )?;
        out.f_narrow(1, 0, n)
    }
}

/// Largest number of blocks (all rows together) one slice of
/// [`RowKeys::normal`] generates: 2²² blocks keep each int64 working tensor
/// at 32 MiB, and a draw of up to that many blocks runs a fixed number of
/// operations.
pub const ROW_SLICE: i64 = 1 << 22;

#[cfg(test)]
#[allow(clippy::disallowed_methods, clippy::arithmetic_side_effects)] // tests may panic
mod tests {
    use super::*;
    use crate::philox::generator::Philox;
    use crate::philox::rounds::{M0, M1, W0, W1};

    /// Philox4x32-10 on the host, from the round function of Salmon et al.
    /// 2011 (§4.2) in `u32`/`u64` arithmetic: a reference that shares no code
    /// with the tensor version.
    fn host_block(key: [u32; 2], counter: [u32; 4]) -> [u32; 4] {
        let (mut c, mut k) = (counter, key);
        for _ in 0..10 {
            let p0 = u64::from(c[0]) * (M0 as u64);
            let p1 = u64::from(c[2]) * (M1 as u64);
            c = [
                ((p1 >> 32) as u32) ^ c[1] ^ k[0],
                p1 as u32,
                ((p0 >> 32) as u32) ^ c[3] ^ k[1],
                p0 as u32,
            ];
            k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        }
        c
    }

    /// Uniforms are exactly `(k + ½)·2⁻⁵²` of the top 52 bits of each word
    /// pair, block `i` giving values `2i` and `2i + 1`; normals are the
    /// Box–Muller pair of them. libtorch's vectorised `log`/`cos`/`sin` may
    /// differ from Rust's by an ulp or so, hence the tolerance on normals.
    #[test]
    fn values_match_a_host_reference() {
        let key = [0x1234_5678, 0x9abc_def0];
        let p = Philox::from_words(key, Device::Cpu);
        let tag = [3, 1, 4];
        let n = 2001;
        let host_unit = |hi: u32, lo: u32| {
            let k = (u64::from(hi) << 20) | (u64::from(lo) >> 12);
            (k as f64 + 0.5) * 2f64.powi(-52)
        };
        let mut uniforms = Vec::new();
        let mut normals = Vec::new();
        for i in 0..(n as u32).div_ceil(2) {
            let w = host_block(key, [i, tag[0], tag[1], tag[2]]);
            let (u1, u2) = (host_unit(w[0], w[1]), host_unit(w[2], w[3]));
            uniforms.extend([u1, u2]);
            let (r, theta) = ((-2.0 * u1.ln()).sqrt(), 2.0 * std::f64::consts::PI * u2);
            normals.extend([r * theta.cos(), r * theta.sin()]);
        }
        let got = Vec::<f64>::try_from(p.uniform(&[n], tag).unwrap()).unwrap();
        assert_eq!(got[..], uniforms[..n as usize]);
        let got = Vec::<f64>::try_from(p.normal(&[n], tag).unwrap()).unwrap();
        for (i, (g, h)) in got.iter().zip(&normals).enumerate() {
            assert!(
                (g - h).abs() <= 1e-13 * h.abs().max(1.0),
                "value {i}: {g} against {h}"
            );
        }
        // One key per row: row r is the stream of key r, scaled in float64
        // and rounded once to float32.
        let keys = Tensor::from_slice(&[i64::from(key[0]), i64::from(key[1])]).reshape([1, 2]);
        let rows = RowKeys {
            schedule: Schedule::rows(&keys).unwrap(),
            keys,
        };
        let got = Vec::<f32>::try_from(
            rows.scaled_normal(n, tag, 0.7, Kind::Float)
                .unwrap()
                .reshape([-1]),
        )
        .unwrap();
        for (i, (g, h)) in got.iter().zip(&normals).enumerate() {
            let want = (0.7 * h) as f32;
            assert!(
                (g - want).abs() <= 2.0 * f32::EPSILON * want.abs().max(1.0),
                "row value {i}: {g} against {want}"
            );
        }
    }

    /// Empty draws (no values, no rows) are empty tensors of the right shape,
    /// not errors: the working tensors are then empty too.
    #[test]
    fn empty_draws_have_their_shapes() {
        let p = Philox::from_words([1, 2], Device::Cpu);
        assert_eq!(p.normal(&[0], [0, 0, 0]).unwrap().size(), [0]);
        assert_eq!(p.uniform(&[3, 0], [0, 0, 0]).unwrap().size(), [3, 0]);
        assert_eq!(p.blocks(5, 0, [0, 0, 0]).unwrap()[0].size(), [0]);
        let one = Tensor::from_slice(&[1i64, 2]).reshape([1, 2]);
        let rows = RowKeys {
            schedule: Schedule::rows(&one).unwrap(),
            keys: one,
        };
        assert_eq!(rows.normal(0, [0, 0, 0]).unwrap().size(), [1, 0]);
        let none = Tensor::zeros([0, 2], (Kind::Int64, Device::Cpu));
        let rows = RowKeys {
            schedule: Schedule::rows(&none).unwrap(),
            keys: none,
        };
        let z = rows.scaled_normal(5, [0, 0, 0], 2.0, Kind::Float).unwrap();
        assert_eq!(z.size(), [0, 5]);
    }
}
