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
//! Cost: a slice of blocks (every row's, for [`RowKeys`]) is about 90
//! elementwise operations whatever its size: the ten rounds are seven each,
//! because the four words are held as two stacked pairs and one operation
//! serves both halves of a round (`Slice`). They all run in place on five
//! working tensors allocated once per draw: a draw frees no temporaries
//! between its operations, which on a CPU is host time outside any operator
//! and on a GPU a trip through the caching allocator each. On a GPU each
//! operation is a kernel launch, so the count, not the size, sets most of
//! the draw's host cost.
//! Draws are generated in slices of [`SLICE`] blocks so that the working
//! tensors stay in cache on a CPU. This generator serves the
//! tensor BGM simulator and, through [`RowKeys`] (one key per row, every row
//! in one pass), the replayable DP noise on a GPU; DP noise on the CPU is drawn
//! on the host ([`crate::noise`]), which is several times faster there.

use dpaudit_data::seed::SeedKey;
use tch::{Device, Kind, TchError, Tensor};

use crate::scalar::{int, number, WithNumber};

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

/// The round constants of a draw, as the two windows each round needs (see
/// [`Slice`]): round `r` of an even-numbered parity multiplies `(c₀, c₂)` by
/// `(M₀, M₁)` and XORs `(k₁, k₀)`; an odd one multiplies `(c₂, c₀)` by
/// `(M₁, M₀)` and XORs `(k₀, k₁)`. Each pair is a view of one three-slot
/// tensor (`(k₀, k₁, k₀)`, `(M₁, M₀, M₁)`) on the device, built once: no
/// round uploads or allocates anything.
#[derive(Debug)]
struct Schedule {
    /// `[(M₀, M₁), (M₁, M₀)]`, each `[2, 1, 1]` int64.
    multipliers: [Tensor; 2],
    /// Per round, `[(k₁, k₀), (k₀, k₁)]`, each `[2, 1, 1]` (one key) or
    /// `[2, M, 1]` (one key per row).
    keys: Vec<[Tensor; 2]>,
}

impl Schedule {
    /// Both windows of a three-slot tensor `(x, y, x)` along dimension 0:
    /// `[(y, x), (x, y)]`.
    fn windows(three: &Tensor) -> Result<[Tensor; 2], TchError> {
        Ok([three.f_narrow(0, 1, 2)?, three.f_narrow(0, 0, 2)?])
    }

    fn multipliers(device: Device) -> Result<[Tensor; 2], TchError> {
        let m = Tensor::f_from_slice(&[M1, M0, M1])?
            .f_reshape([3, 1, 1])?
            .f_to_device(device)?;
        Self::windows(&m)
    }

    /// One key: its ten round keys in one upload.
    fn single(key: [u32; 2], device: Device) -> Result<Self, TchError> {
        let mut table = Vec::with_capacity(30);
        let (mut k0, mut k1) = (key[0], key[1]);
        for _ in 0..10 {
            table.extend([i64::from(k0), i64::from(k1), i64::from(k0)]);
            k0 = k0.wrapping_add(W0);
            k1 = k1.wrapping_add(W1);
        }
        let table = Tensor::f_from_slice(&table)?
            .f_reshape([10, 3, 1, 1])?
            .f_to_device(device)?;
        let keys = (0..10)
            .map(|r| Self::windows(&table.f_select(0, r)?))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            multipliers: Self::multipliers(device)?,
            keys,
        })
    }

    /// One key per row: `keys` is `[M, 2]` int64 (words in `[0, 2³²)`) on
    /// the device; the round keys are computed there.
    fn rows(keys: &Tensor) -> Result<Self, TchError> {
        let mask = int(MASK)?;
        let mut k0 = keys.f_narrow(1, 0, 1)?;
        let mut k1 = keys.f_narrow(1, 1, 1)?;
        let mut out = Vec::with_capacity(10);
        for _ in 0..10 {
            out.push(Self::windows(&Tensor::f_stack(&[&k0, &k1, &k0], 0)?)?);
            k0 = k0
                .f_add(&int(i64::from(W0))?)?
                .f_bitwise_and_tensor(&mask)?;
            k1 = k1
                .f_add(&int(i64::from(W1))?)?
                .f_bitwise_and_tensor(&mask)?;
        }
        Ok(Self {
            multipliers: Self::multipliers(keys.device())?,
            keys: out,
        })
    }
}

/// What a draw makes of each block's four words.
#[derive(Debug, Clone, Copy)]
enum Values {
    /// Two uniforms in `(0, 1)`.
    Uniform,
    /// Two standard normals by Box–Muller, times `scale` in float64 when it
    /// is not 1.
    Normal { scale: f64 },
}

/// The working tensors of one slice of `rows × len` blocks, allocated once
/// per draw (and again only for a shorter last slice); every step of a slice
/// writes into them in place, so a draw frees no temporaries between its
/// operations (on a CPU, freeing a large tensor costs host time outside any
/// operator; on a GPU each temporary is a trip through the caching
/// allocator).
///
/// The four counter words are held as two stacked pairs, so that one
/// operation serves both halves of a round: `multiplied`, the two words a
/// round multiplies, and `others`, the other two with the first repeated, so
/// that both orders of the pair are contiguous windows:
/// - before an even-numbered round, `multiplied = (c₀, c₂)` and
///   `others = (c₃, c₁, c₃)`;
/// - before an odd-numbered one, `multiplied = (c₂, c₀)` and the same
///   `others` layout of the then current words.
///
/// One round maps `(c₀, c₁, c₂, c₃)` to `(hi(c₂·M₁) ⊕ c₁ ⊕ k₀, lo(c₂·M₁),
/// hi(c₀·M₀) ⊕ c₃ ⊕ k₁, lo(c₀·M₀))` (Salmon et al. 2011, §4.2). With the
/// layout above it is seven operations: the product of `multiplied` by the
/// multipliers' window, the high words XORed with the `others` window and the
/// keys' window into `multiplied` (which then holds the pair in the other
/// order), the low words into the other `others` window, and one copy of the
/// repeated slot. After ten rounds the layout is the even one again.
struct Slice {
    rows: i64,
    len: i64,
    /// `[2, rows, len]` int64.
    multiplied: Tensor,
    /// `[3, rows, len]` int64, and its windows `[0, 2)` and `[1, 3)` and
    /// slots 0 and 2.
    others: Tensor,
    windows: [Tensor; 2],
    ends: [Tensor; 2],
    /// `[2, rows, len]` int64: the round's products.
    products: Tensor,
    /// `[2, rows, len]` float64: the uniforms `(u₁, u₂)`.
    uniforms: Tensor,
    /// `[2, rows, len]` float64: `(r·cos θ, r·sin θ)`.
    normals: Tensor,
}

impl Slice {
    fn new(rows: i64, len: i64, device: Device) -> Result<Self, TchError> {
        let int = |k| Tensor::f_empty([k, rows, len], (Kind::Int64, device));
        let float = || Tensor::f_empty([2, rows, len], (Kind::Double, device));
        let others = int(3)?;
        Ok(Self {
            rows,
            len,
            multiplied: int(2)?,
            windows: [others.f_narrow(0, 0, 2)?, others.f_narrow(0, 1, 2)?],
            ends: [others.f_select(0, 0)?, others.f_select(0, 2)?],
            others,
            products: int(2)?,
            uniforms: float()?,
            normals: float()?,
        })
    }

    /// The four words `(c₀, c₁, c₂, c₃)` as `[rows, len]` views, in the
    /// even layout (before the rounds, and after all ten).
    fn words(&self) -> Result<[Tensor; 4], TchError> {
        Ok([
            self.multiplied.f_select(0, 0)?,
            self.others.f_select(0, 1)?,
            self.multiplied.f_select(0, 1)?,
            self.others.f_select(0, 0)?,
        ])
    }

    /// The words of blocks `start .. start + len` of every row's draw tagged
    /// `tag`: the counters `(start + j, tag₀, tag₁, tag₂)` through the ten
    /// rounds.
    fn blocks(&mut self, start: i64, tag: [u32; 3], schedule: &Schedule) -> Result<(), TchError> {
        let device = self.multiplied.device();
        // start, start + 1, …, start + len − 1 (`arange` without a number argument).
        let index = Tensor::f_ones([1, self.len], (Kind::Int64, device))?
            .f_cumsum(1, Kind::Int64)?
            .f_add(&int(start - 1)?)?;
        let [mut c0, mut c1, mut c2, _] = self.words()?;
        c0.f_copy_(&index)?;
        let _ = c2.f_fill_tensor_(&int(i64::from(tag[1]))?)?;
        let _ = self.others.f_fill_tensor_(&int(i64::from(tag[2]))?)?;
        let _ = c1.f_fill_tensor_(&int(i64::from(tag[0]))?)?;
        self.rounds(schedule)
    }

    /// The ten rounds (see [`Slice`]).
    fn rounds(&mut self, schedule: &Schedule) -> Result<(), TchError> {
        let (mask, shift) = (int(MASK)?, int(32)?);
        for (r, keys) in schedule.keys.iter().enumerate() {
            let odd = r % 2;
            // The products wrap modulo 2⁶⁴; hi is the arithmetic shift, masked.
            let _ = self
                .multiplied
                .f_mul_out(&self.products, &schedule.multipliers[odd])?;
            let _ = self
                .products
                .f_bitwise_right_shift_tensor_out(&self.multiplied, &shift)?;
            let _ = self.multiplied.f_bitwise_and_tensor_(&mask)?;
            let _ = self.multiplied.f_bitwise_xor_tensor_(&self.windows[odd])?;
            let _ = self.multiplied.f_bitwise_xor_tensor_(&keys[odd])?;
            let _ = self
                .products
                .f_bitwise_and_tensor_out(&self.windows[odd], &mask)?;
            // Repeat the slot the next round's window needs.
            let [first, last] = &mut self.ends;
            match odd {
                0 => last.f_copy_(first)?,
                _ => first.f_copy_(last)?,
            }
        }
        Ok(())
    }

    /// The words as values, written into `out` (a `[2, rows, len]` view of
    /// the output, of any kind: the float64 value is rounded once on the
    /// copy; `out[0]` gets the first value of each block, `out[1]` the
    /// second). The words are overwritten.
    ///
    /// Two words `(a, b)` make one float64 in `(0, 1)`: the top 52 of their
    /// 64 bits as an integer `k`, then `(k + ½)·2⁻⁵²`, which float64
    /// represents exactly (`k + ½ < 2⁵²`), so the value is never 0 nor 1.
    /// `(c₀, c₁)` give `u₁` and `(c₂, c₃)` give `u₂`. Normals are the
    /// Box–Muller pair `(r·cos θ, r·sin θ)` with `r = √(−2 ln u₁)` and
    /// `θ = 2πu₂` (Box & Muller 1958).
    fn values(&mut self, values: Values, mut out: Tensor) -> Result<(), TchError> {
        // Even layout: multiplied = (c₀, c₂), window 1 of others = (c₁, c₃).
        let _ = self.multiplied.f_bitwise_left_shift_(&int(20)?)?;
        let _ = self.windows[1].f_bitwise_right_shift_(&int(12)?)?;
        let _ = self.multiplied.f_bitwise_or_tensor_(&self.windows[1])?;
        self.uniforms.f_copy_(&self.multiplied)?;
        let _ = self.uniforms.f_add_(&number(0.5, Kind::Double)?)?;
        let _ = self
            .uniforms
            .f_mul_(&number(2f64.powi(-52), Kind::Double)?)?;
        let scale = match values {
            Values::Uniform => return out.f_copy_(&self.uniforms),
            Values::Normal { scale } => scale,
        };
        let mut r = self.uniforms.f_select(0, 0)?;
        let mut theta = self.uniforms.f_select(0, 1)?;
        let _ = r.f_log_()?;
        let _ = r.f_mul_(&number(-2.0, Kind::Double)?)?;
        let _ = r.f_sqrt_()?;
        let _ = theta.f_mul_(&number(2.0 * std::f64::consts::PI, Kind::Double)?)?;
        let _ = theta.f_cos_out(&self.normals.f_select(0, 0)?)?;
        let _ = theta.f_sin_out(&self.normals.f_select(0, 1)?)?;
        let _ = self.normals.f_mul_(&r)?;
        if scale != 1.0 {
            let _ = self.normals.f_mul_(&number(scale, Kind::Double)?)?;
        }
        out.f_copy_(&self.normals)
    }
}

/// Blocks `0 .. blocks` of every row's draw as values, into `out` viewed as
/// `[rows, blocks, 2]` (block `i` gives values `2i` and `2i + 1` of a row),
/// in slices of at most `slice` blocks per row.
fn fill(
    out: &Tensor,
    rows: i64,
    blocks: i64,
    slice: i64,
    tag: [u32; 3],
    schedule: &Schedule,
    values: Values,
) -> Result<(), TchError> {
    let pairs = out.f_view([rows, blocks, 2])?;
    let mut work: Option<Slice> = None;
    let mut start = 0;
    while start < blocks {
        let len = slice.min(blocks - start);
        let w = match work.take() {
            Some(w) if w.len == len && w.rows == rows => w,
            _ => Slice::new(rows, len, out.device())?,
        };
        let w = work.insert(w);
        w.blocks(start, tag, schedule)?;
        w.values(values, pairs.f_narrow(1, start, len)?.f_permute([2, 0, 1])?)?;
        start += len;
    }
    Ok(())
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
                let p = Philox::new(*k, device);
                [i64::from(p.key[0]), i64::from(p.key[1])]
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
        let mut w = Slice::new(1, 1, Device::Cpu).unwrap();
        for (mut word, c) in w.words().unwrap().into_iter().zip(counter) {
            let _ = word.fill_(i64::from(c));
        }
        // The even layout repeats c₃ in the last slot of `others`.
        let [first, last] = &mut w.ends;
        last.copy_(first);
        w.rounds(&Schedule::single(p.key, Device::Cpu).unwrap())
            .unwrap();
        w.words().unwrap().map(|t| t.int64_value(&[0, 0]) as u32)
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
