//! The block function of Philox4x32-10 on working tensors allocated once per
//! draw: round constants ([`Schedule`]), the slice of blocks being computed
//! ([`Slice`]) and the values made of its words ([`fill`]).

use dpaudit_data::seed::SeedKey;
use tch::{Device, Kind, TchError, Tensor};

use crate::scalar::{int, number};

pub(super) const M0: i64 = 0xD251_1F53;
pub(super) const M1: i64 = 0xCD9E_8D57;
pub(super) const W0: u32 = 0x9E37_79B9;
pub(super) const W1: u32 = 0xBB67_AE85;
pub(super) const MASK: i64 = 0xFFFF_FFFF;

/// The two key words of a node of a run's key tree: its first 64 bits.
pub(super) fn key_words(key: SeedKey) -> [u32; 2] {
    let b = key.key_bytes();
    [
        u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
    ]
}

/// The round constants of a draw, as the two windows each round needs (see
/// [`Slice`]): round `r` of an even-numbered parity multiplies `(c₀, c₂)` by
/// `(M₀, M₁)` and XORs `(k₁, k₀)`; an odd one multiplies `(c₂, c₀)` by
/// `(M₁, M₀)` and XORs `(k₀, k₁)`. Each pair is a view of one three-slot
/// tensor (`(k₀, k₁, k₀)`, `(M₁, M₀, M₁)`) on the device, built once: no
/// round uploads or allocates anything.
#[derive(Debug)]
pub(super) struct Schedule {
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
    pub(super) fn single(key: [u32; 2], device: Device) -> Result<Self, TchError> {
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
    pub(super) fn rows(keys: &Tensor) -> Result<Self, TchError> {
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
pub(super) enum Values {
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
pub(super) struct Slice {
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
    pub(super) fn new(rows: i64, len: i64, device: Device) -> Result<Self, TchError> {
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
    pub(super) fn words(&self) -> Result<[Tensor; 4], TchError> {
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
    pub(super) fn blocks(
        &mut self,
        start: i64,
        tag: [u32; 3],
        schedule: &Schedule,
    ) -> Result<(), TchError> {
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
pub(super) fn fill(
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

#[cfg(test)]
#[allow(clippy::disallowed_methods, clippy::arithmetic_side_effects)] // tests may panic
mod tests {
    use super::*;
    use crate::philox::generator::Philox;

    /// The block function at one counter, through [`Slice::rounds`].
    fn block(key: [u32; 2], counter: [u32; 4]) -> [u32; 4] {
        let mut w = Slice::new(1, 1, Device::Cpu).unwrap();
        for (mut word, c) in w.words().unwrap().into_iter().zip(counter) {
            let _ = word.fill_(i64::from(c));
        }
        // The even layout repeats c₃ in the last slot of `others`.
        let [first, last] = &mut w.ends;
        last.copy_(first);
        w.rounds(&Schedule::single(key, Device::Cpu).unwrap())
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
            assert_eq!(
                block(key, counter),
                expected,
                "counter {counter:x?} key {key:x?}"
            );
        }
    }

    #[test]
    fn blocks_are_the_block_function_of_their_counters() {
        let key = [0xa4093822, 0x299f31d0];
        let p = Philox::from_words(key, Device::Cpu);
        let tag = [7, 8, 9];
        let [w0, w1, w2, w3] = p.blocks(5, 3, tag).unwrap();
        for j in 0..3 {
            let got = [&w0, &w1, &w2, &w3].map(|t| t.int64_value(&[j]) as u32);
            assert_eq!(got, block(key, [5 + j as u32, 7, 8, 9]));
        }
    }
}
