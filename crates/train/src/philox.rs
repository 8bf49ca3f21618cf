//! Counter-based random numbers on any libtorch device, owned by the caller:
//! Philox4x32-10 (Salmon, Moraes, Dror & Shaw 2011, "Parallel random numbers:
//! as easy as 1, 2, 3", SC'11, §4.2) computed with int64 tensor operations.
//!
//! libtorch's own generators are process-global in tch (it exposes no
//! generator objects), and its CPU generator keeps only 32 bits of a seed. A
//! counter-based generator needs no state at all: word `j` of block `i` of a
//! draw is `Philox(key, counter = (i, tag₀, tag₁, tag₂))[j]`, a pure function
//! of the 64-bit key, the caller's 96-bit tag and the position. Distinct
//! `(tag, i)` are distinct counters, and Philox is a bijection of the counter
//! for a fixed key, so two draws with different tags never share a block.
//! Results do not depend on how a draw is chunked, on other threads, or on
//! anything else in the process.
//!
//! Words live in int64 tensors with values in `[0, 2³²)`. The 32×32-bit
//! products of the rounds are formed with int64 multiplication, which wraps
//! modulo 2⁶⁴ on every libtorch backend (two's complement hardware multiply);
//! the high and low words are read back with an arithmetic shift and a mask.
//! The known-answer tests below (the Random123 distribution's vectors) run on
//! whatever device the test suite is given, so a backend that did not wrap
//! would fail them.
//!
//! Cost: about 120 elementwise operations per block of four words, i.e. per
//! two float64 normals; draws are generated in slices of [`SLICE`] blocks so
//! that the temporaries stay in cache on a CPU. This generator serves the
//! tensor BGM simulator and, through [`RowKeys`] (one key per row, every row
//! in one pass), the replayable DP noise on a GPU; DP noise on the CPU is drawn
//! on the host ([`crate::noise`]), which is several times faster there.

use dpaudit_data::seed::SeedKey;
use tch::{Device, Kind, TchError, Tensor};

use crate::scalar::{full, int, WithNumber};

const M0: i64 = 0xD251_1F53;
const M1: i64 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;
const MASK: i64 = 0xFFFF_FFFF;

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

/// One round function applied ten times to the four counter words.
fn rounds(c: [Tensor; 4], key: [u32; 2]) -> Result<[Tensor; 4], TchError> {
    let mut keys = Vec::with_capacity(10);
    let (mut k0, mut k1) = (key[0], key[1]);
    for _ in 0..10 {
        keys.push([int(i64::from(k0))?, int(i64::from(k1))?]);
        k0 = k0.wrapping_add(W0);
        k1 = k1.wrapping_add(W1);
    }
    keyed_rounds(c, &keys)
}

/// The ten rounds with the round keys given as tensors that broadcast against
/// the counter words: 0-dim for one key ([`rounds`]), `[M, 1]` for one key per
/// row ([`row_keys`]).
fn keyed_rounds(c: [Tensor; 4], keys: &[[Tensor; 2]]) -> Result<[Tensor; 4], TchError> {
    let [mut c0, mut c1, mut c2, mut c3] = c;
    let (m0, m1, mask, shift) = (int(M0)?, int(M1)?, int(MASK)?, int(32)?);
    for [k0, k1] in keys {
        let p0 = c0.f_mul(&m0)?;
        let p1 = c2.f_mul(&m1)?;
        let hi0 = p0
            .f_bitwise_right_shift(&shift)?
            .f_bitwise_and_tensor(&mask)?;
        let lo0 = p0.f_bitwise_and_tensor(&mask)?;
        let hi1 = p1
            .f_bitwise_right_shift(&shift)?
            .f_bitwise_and_tensor(&mask)?;
        let lo1 = p1.f_bitwise_and_tensor(&mask)?;
        let n0 = hi1.f_bitwise_xor_tensor(&c1)?.f_bitwise_xor_tensor(k0)?;
        let n2 = hi0.f_bitwise_xor_tensor(&c3)?.f_bitwise_xor_tensor(k1)?;
        c0 = n0;
        c1 = lo1;
        c2 = n2;
        c3 = lo0;
    }
    Ok([c0, c1, c2, c3])
}

/// The ten round keys of one key per row: `keys` is `[M, 2]` int64 (words in
/// `[0, 2³²)`), each result `[M, 1]`.
fn row_keys(keys: &Tensor) -> Result<Vec<[Tensor; 2]>, TchError> {
    let mask = int(MASK)?;
    let mut k0 = keys.f_narrow(1, 0, 1)?;
    let mut k1 = keys.f_narrow(1, 1, 1)?;
    let mut out = Vec::with_capacity(10);
    for _ in 0..10 {
        let next0 = k0
            .f_add(&int(i64::from(W0))?)?
            .f_bitwise_and_tensor(&mask)?;
        let next1 = k1
            .f_add(&int(i64::from(W1))?)?
            .f_bitwise_and_tensor(&mask)?;
        out.push([k0, k1]);
        k0 = next0;
        k1 = next1;
    }
    Ok(out)
}

/// Two words `(a, b)` as a float64 in `(0, 1)`: the top 52 of their 64 bits
/// as an integer `k`, then `(k + ½)·2⁻⁵²`, which float64 represents exactly
/// (`k + ½ < 2⁵²`), so the value is never 0 nor 1.
fn unit(a: &Tensor, b: &Tensor) -> Result<Tensor, TchError> {
    let k = a
        .f_bitwise_left_shift(&int(20)?)?
        .f_bitwise_or_tensor(&b.f_bitwise_right_shift(&int(12)?)?)?
        .f_to_kind(Kind::Double)?;
    k.add_f64(0.5)?.mul_f64(2f64.powi(-52))
}

/// The Box–Muller pair `(r·cos θ, r·sin θ)` with `r = √(−2 ln u₁)` and
/// `θ = 2πu₂` (Box & Muller 1958).
fn box_muller(u1: &Tensor, u2: &Tensor) -> Result<(Tensor, Tensor), TchError> {
    let r = u1.f_log()?.mul_f64(-2.0)?.f_sqrt()?;
    let theta = u2.mul_f64(2.0 * std::f64::consts::PI)?;
    Ok((r.f_mul(&theta.f_cos()?)?, r.f_mul(&theta.f_sin()?)?))
}

impl Philox {
    /// The key of a node of a run's key tree (its first 64 bits).
    pub fn new(key: SeedKey, device: Device) -> Self {
        let b = key.key_bytes();
        Self {
            key: [
                u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
            ],
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
        let opts = (Kind::Int64, self.device);
        // start, start + 1, …, start + n − 1 (`arange` without a number argument).
        let c0 = Tensor::f_ones([n], opts)?
            .f_cumsum(0, Kind::Int64)?
            .f_add(&int(start - 1)?)?;
        let word = |w: u32| full(&[n], &int(i64::from(w))?, opts);
        rounds([c0, word(tag[0])?, word(tag[1])?, word(tag[2])?], self.key)
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

    /// Fill a flat float64 tensor of `n` values, two per block, slice by slice.
    fn fill_pairs(
        &self,
        n: i64,
        tag: [u32; 3],
        pair: impl Fn(&Tensor, &Tensor) -> Result<(Tensor, Tensor), TchError>,
    ) -> Result<Tensor, TchError> {
        let blocks = self.check(n, 2)?;
        let out = Tensor::f_empty([2 * blocks], (Kind::Double, self.device))?;
        let mut start = 0;
        while start < blocks {
            let len = SLICE.min(blocks - start);
            let [w0, w1, w2, w3] = self.blocks(start, len, tag)?;
            let (a, b) = pair(&unit(&w0, &w1)?, &unit(&w2, &w3)?)?;
            // Block i gives values 2i and 2i + 1.
            let both = Tensor::f_stack(&[a, b], 1)?.f_reshape([-1])?;
            out.f_narrow(0, 2 * start, 2 * len)?.f_copy_(&both)?;
            start += len;
        }
        out.f_narrow(0, 0, n)
    }

    /// Float64 uniforms in `(0, 1)` on the grid `(k + ½)·2⁻⁵²`, shaped `shape`.
    pub fn uniform(&self, shape: &[i64], tag: [u32; 3]) -> Result<Tensor, TchError> {
        let n = shape.iter().product();
        self.fill_pairs(n, tag, |a, b| Ok((a.shallow_clone(), b.shallow_clone())))?
            .f_reshape(shape)
    }

    /// Float64 standard normals by the Box–Muller transform (Box & Muller
    /// 1958): block `i` gives `r·cos θ` and `r·sin θ` with `r = √(−2 ln u₁)`,
    /// `θ = 2πu₂`. With `u₁ ≥ 2⁻⁵³` the largest `|z|` is about 8.6.
    pub fn normal(&self, shape: &[i64], tag: [u32; 3]) -> Result<Tensor, TchError> {
        let n = shape.iter().product();
        self.fill_pairs(n, tag, box_muller)?.f_reshape(shape)
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

/// One Philox key per row of a `[M, n]` draw: row `r` is the stream of the
/// key `keys[r]`, and the same row with the same tag gives the same values
/// whatever the other rows are. The replayable DP noise on a GPU
/// ([`crate::noise`]) draws all replicas' noise at once this way, with a
/// number of operations that does not depend on `M`.
#[derive(Debug)]
pub struct RowKeys {
    /// `[M, 2]` int64 on the device: the two key words of each row.
    keys: Tensor,
    /// The ten round keys, `[M, 1]` each, computed once.
    round_keys: Vec<[Tensor; 2]>,
}

impl RowKeys {
    /// The first 64 bits of each node (as [`Philox::new`]), uploaded to `device`.
    pub fn new(keys: &[SeedKey], device: Device) -> Result<Self, TchError> {
        let words: Vec<i64> = keys
            .iter()
            .flat_map(|k| {
                let p = Philox::new(*k, device);
                [i64::from(p.key[0]), i64::from(p.key[1])]
            })
            .collect();
        let m = keys.len() as i64;
        let keys = Tensor::f_from_slice(&words)?
            .f_reshape([m, 2])?
            .f_to_device(device)?;
        let round_keys = row_keys(&keys)?;
        Ok(Self { keys, round_keys })
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
        let opts = (Kind::Int64, self.keys.device());
        let m = self.rows();
        let c0 = Tensor::f_ones([1, n], opts)?
            .f_cumsum(1, Kind::Int64)?
            .f_add(&int(start - 1)?)?
            .f_expand([m, n], false)?;
        let word = |w: u32| full(&[m, n], &int(i64::from(w))?, opts);
        keyed_rounds(
            [c0, word(tag[0])?, word(tag[1])?, word(tag[2])?],
            &self.round_keys,
        )
    }

    /// `[M, n]` float64 standard normals, row `r` from key `r`, by the same
    /// Box–Muller transform as [`Philox::normal`] (block `i` gives values
    /// `2i` and `2i + 1` of a row), in slices of at most [`ROW_SLICE`] blocks
    /// over all rows.
    pub fn normal(&self, n: i64, tag: [u32; 3]) -> Result<Tensor, TchError> {
        self.scaled_normal(n, tag, 1.0, Kind::Double)
    }

    /// [`RowKeys::normal`] times `scale`, computed in float64 and converted to
    /// `kind` slice by slice, so no float64 copy of the whole draw is held.
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
        let mut start = 0;
        while start < blocks {
            let len = per_slice.min(blocks - start);
            let [w0, w1, w2, w3] = self.blocks(start, len, tag)?;
            let (a, b) = box_muller(&unit(&w0, &w1)?, &unit(&w2, &w3)?)?;
            let mut both = Tensor::f_stack(&[a, b], 2)?.f_reshape([m, 2 * len])?;
            if scale != 1.0 {
                both = both.mul_f64(scale)?;
            }
            out.f_narrow(1, 2 * start, 2 * len)?
                .f_copy_(&both.f_to_kind(kind)?)?;
            start += len;
        }
        out.f_narrow(1, 0, n)
    }
}

/// Largest number of blocks (all rows together) one slice of
/// [`RowKeys::normal`] generates: 2²² blocks keep each int64 temporary at
/// 32 MiB, and a draw of up to that many blocks runs a fixed number of
/// operations.
pub const ROW_SLICE: i64 = 1 << 22;

/// `F(0), F(1), …` of Binomial(`n`, `p`) in float64, stopping once
/// the mass beyond `k` is below 2⁻⁶⁰ (or at `k = n`); the last entry is set
/// to 1.
pub fn binomial_cdf(n: u64, p: f64) -> Result<Vec<f64>, String> {
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("binomial p = {p}: expected 0 ≤ p ≤ 1"));
    }
    if p == 0.0 || n == 0 {
        return Ok(vec![1.0]);
    }
    if p == 1.0 {
        let mut cdf = vec![0.0; n as usize];
        cdf.push(1.0);
        return Ok(cdf);
    }
    let (lp, lq) = (p.ln(), (-p).ln_1p());
    // log C(n, k) by the recurrence log C(n, k+1) = log C(n, k) + ln((n−k)/(k+1)).
    let mut log_choose = 0.0f64;
    let mut pmf = Vec::new();
    for k in 0..=n {
        if k > 0 {
            log_choose += ((n - k + 1) as f64).ln() - (k as f64).ln();
        }
        let v = (log_choose + k as f64 * lp + (n - k) as f64 * lq).exp();
        pmf.push(v);
        // Past the mode the pmf falls at least geometrically with ratio
        // r = (n−k)p / ((k+1)(1−p)) < 1, so the mass beyond k is at most
        // v·r/(1−r): stop once that is below 2⁻⁶⁰.
        let r = (n - k) as f64 * p / ((k + 1) as f64 * (1.0 - p));
        if r < 1.0 && v * r / (1.0 - r) < 2f64.powi(-60) {
            break;
        }
        if pmf.len() > 50_000_000 {
            return Err(format!(
                "binomial({n}, {p}): the CDF table would exceed 5·10⁷ entries"
            ));
        }
    }
    let mut cdf = Vec::with_capacity(pmf.len());
    let mut acc = 0.0;
    for v in pmf {
        acc += v;
        cdf.push(acc.min(1.0));
    }
    if let Some(last) = cdf.last_mut() {
        *last = 1.0;
    }
    Ok(cdf)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, clippy::arithmetic_side_effects)] // tests may panic
mod tests {
    use super::*;

    fn block(p: &Philox, counter: [u32; 4]) -> [u32; 4] {
        let opts = (Kind::Int64, Device::Cpu);
        let c: Vec<Tensor> = counter
            .iter()
            .map(|&w| Tensor::from_slice(&[i64::from(w)]).to_kind(opts.0))
            .collect();
        let out = rounds(
            [
                c[0].shallow_clone(),
                c[1].shallow_clone(),
                c[2].shallow_clone(),
                c[3].shallow_clone(),
            ],
            p.key,
        )
        .unwrap();
        out.map(|t| t.int64_value(&[0]) as u32)
    }

    /// Known-answer vectors of Philox4x32-10 from the Random123 distribution
    /// (`kat_vectors`, lines `philox4x32 10`; also the test vectors of
    /// Salmon et al. 2011's reference code).
    #[test]
    fn philox4x32_10_matches_the_random123_known_answers() {
        let cases: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
            (
                [0, 0, 0, 0],
                [0, 0],
                [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8],
            ),
            (
                [0xffffffff; 4],
                [0xffffffff; 2],
                [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd],
            ),
            (
                [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
                [0xa4093822, 0x299f31d0],
                [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
            ),
        ];
        for (counter, key, expected) in cases {
            let p = Philox::from_words(key, Device::Cpu);
            assert_eq!(
                block(&p, counter),
                expected,
                "counter {counter:x?} key {key:x?}"
            );
        }
    }

    #[test]
    fn blocks_are_the_block_function_of_their_counters() {
        let p = Philox::from_words([0xa4093822, 0x299f31d0], Device::Cpu);
        let tag = [7, 8, 9];
        let [w0, w1, w2, w3] = p.blocks(5, 3, tag).unwrap();
        for j in 0..3 {
            let got = [&w0, &w1, &w2, &w3].map(|t| t.int64_value(&[j]) as u32);
            assert_eq!(got, block(&p, [5 + j as u32, 7, 8, 9]));
        }
    }

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

    #[test]
    fn binomial_cdf_matches_closed_forms() {
        // Binomial(3, 1/2): 1/8, 4/8, 7/8, 1 (to the rounding of exp/ln).
        let cdf = binomial_cdf(3, 0.5).unwrap();
        for (got, want) in cdf.iter().zip([0.125, 0.5, 0.875, 1.0]) {
            assert!((got - want).abs() < 1e-15, "{cdf:?}");
        }
        assert_eq!(cdf.len(), 4);
        assert_eq!(binomial_cdf(5, 0.0).unwrap(), vec![1.0]);
        assert_eq!(binomial_cdf(2, 1.0).unwrap(), vec![0.0, 0.0, 1.0]);
        assert!(binomial_cdf(5, 1.5).is_err());
        // Large n: F(0) = (1 − p)^n.
        let cdf = binomial_cdf(60_000, 1e-3).unwrap();
        assert!((cdf[0] - (1.0f64 - 1e-3).powi(60_000)).abs() < 1e-30);
        assert!(cdf.len() < 200, "{} entries", cdf.len());
    }
}
