//! The few random primitives the samplers use, written out so that their
//! output depends only on the ChaCha20 keystream (see [`crate::seed`]) and
//! not on the version of `rand`: `rand`'s `gen_range` and `shuffle` changed
//! their algorithms between releases, which would silently change every
//! seeded batch sequence.

use rand_chacha::rand_core::RngCore;

/// A uniform integer in `0..bound` (`bound ≥ 1`), exactly uniform.
///
/// Lemire's multiply-shift with rejection ("Fast random integer generation
/// in an interval", ACM TOMACS 29(1), 2019): for `bound ≤ 2^32` from
/// `next_u32()`, otherwise from `next_u64()`.
pub(crate) fn uniform_below<R: RngCore>(rng: &mut R, bound: usize) -> usize {
    debug_assert!(bound >= 1);
    if let Ok(bound32) = u32::try_from(bound) {
        let mut product = u64::from(rng.next_u32()) * u64::from(bound32);
        if (product as u32) < bound32 {
            // Values of the low half below 2^32 mod bound are rejected.
            let threshold = bound32.wrapping_neg() % bound32;
            while (product as u32) < threshold {
                product = u64::from(rng.next_u32()) * u64::from(bound32);
            }
        }
        (product >> 32) as usize
    } else {
        let bound64 = bound as u64;
        let mut product = u128::from(rng.next_u64()) * u128::from(bound64);
        if (product as u64) < bound64 {
            let threshold = bound64.wrapping_neg() % bound64;
            while (product as u64) < threshold {
                product = u128::from(rng.next_u64()) * u128::from(bound64);
            }
        }
        (product >> 64) as usize
    }
}

/// Uniformly random permutation in place: Fisher–Yates (Durstenfeld),
/// `i` from the last index down to 1, swapping `i` with `uniform_below(i+1)`.
pub(crate) fn shuffle<T, R: RngCore>(rng: &mut R, items: &mut [T]) {
    for i in (1..items.len()).rev() {
        let j = uniform_below(rng, i + 1);
        items.swap(i, j);
    }
}

/// The inclusion probability of Poisson sampling as a 64-bit fixed-point
/// threshold: a record is included iff `U < threshold / 2^64` for a uniform
/// `U`, i.e. with probability `floor(q · 2^64) / 2^64`, which is within
/// 2^-64 of `q` and never above it (so the realised rate never exceeds the
/// accounted `sample_rate`). `q = 1` means "always".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Inclusion {
    Always,
    Below(u64),
}

impl Inclusion {
    /// `q` must be finite and in `(0, 1]` (checked by the caller).
    pub(crate) fn from_rate(q: f64) -> Self {
        if q >= 1.0 {
            Self::Always
        } else {
            // q · 2^64 is exact in binary floating point; the cast truncates.
            Self::Below((q * 18_446_744_073_709_551_616.0) as u64)
        }
    }

    /// The exact probability this threshold realises.
    pub(crate) fn probability(self) -> f64 {
        match self {
            Self::Always => 1.0,
            Self::Below(t) => t as f64 / 18_446_744_073_709_551_616.0,
        }
    }
}

/// Exact Bernoulli draws that consume random bytes lazily.
///
/// To decide `U < t / 2^64` for a uniform `U`, the bytes of `U` are
/// compared with those of `t` from the most significant down (base-256
/// digits); the first differing byte decides, and if all 8 bytes agree the
/// answer is "no". This is exactly the event `u < t` for the 64-bit prefix
/// `u` of `U` (so exactly the distribution of `next_u64() < t`), but it
/// usually decides after one byte, so one `next_u64()` serves about 8
/// records. Bytes are taken from `next_u64()` words, most significant first.
#[derive(Debug)]
pub(crate) struct ByteReader {
    word: u64,
    left: u32,
}

impl ByteReader {
    pub(crate) fn new() -> Self {
        Self { word: 0, left: 0 }
    }

    #[inline(always)]
    fn byte<R: RngCore>(&mut self, rng: &mut R) -> u8 {
        if self.left == 0 {
            self.word = rng.next_u64();
            self.left = 8;
        }
        self.left -= 1;
        let byte = (self.word >> 56) as u8;
        self.word <<= 8;
        byte
    }

    /// One draw of the event `U < t / 2^64`.
    #[inline(always)]
    pub(crate) fn below<R: RngCore>(&mut self, rng: &mut R, threshold: u64) -> bool {
        let t_byte = (threshold >> 56) as u8;
        let u_byte = self.byte(rng);
        if u_byte != t_byte {
            return u_byte < t_byte;
        }
        self.below_after_tie(rng, threshold)
    }

    /// The rest of [`ByteReader::below`] once the leading bytes agree
    /// (probability 2^-8).
    #[cold]
    #[inline(never)]
    fn below_after_tie<R: RngCore>(&mut self, rng: &mut R, threshold: u64) -> bool {
        for digit in (0..7).rev() {
            let t_byte = (threshold >> (8 * digit)) as u8;
            let u_byte = self.byte(rng);
            if u_byte != t_byte {
                return u_byte < t_byte;
            }
        }
        // All 8 bytes equal: U's 64-bit prefix equals t, so U ≥ t / 2^64.
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// A scripted source of words, to check the bit logic exhaustively.
    struct Words(Vec<u64>);
    impl RngCore for Words {
        fn next_u32(&mut self) -> u32 {
            self.next_u64() as u32
        }
        fn next_u64(&mut self) -> u64 {
            self.0.remove(0)
        }
        fn fill_bytes(&mut self, _dest: &mut [u8]) {
            unreachable!("not used")
        }
        fn try_fill_bytes(
            &mut self,
            _dest: &mut [u8],
        ) -> Result<(), rand_chacha::rand_core::Error> {
            unreachable!("not used")
        }
    }

    /// The lazy comparison decides exactly `u < t` for the 64-bit prefix `u`,
    /// reading only the bytes it needs.
    #[test]
    fn lazy_bernoulli_equals_full_comparison() {
        let thresholds = [
            0u64,
            1,
            2,
            3,
            1 << 63,
            (1 << 63) + 1,
            u64::MAX,
            0x28f5_c28f_5c28_f5c2,
        ];
        let words = [
            0u64,
            1,
            2,
            1 << 63,
            (1 << 63) + 1,
            u64::MAX,
            u64::MAX - 1,
            0x28f5_c28f_5c28_f5c2,
            0x28f5_c28f_5c28_f5c1,
        ];
        for &t in &thresholds {
            for &u in &words {
                let mut reader = ByteReader::new();
                let mut rng = Words(vec![u]);
                assert_eq!(reader.below(&mut rng, t), u < t, "u = {u:#x}, t = {t:#x}");
                // Bytes consumed: up to and including the first differing one.
                let differing = (u ^ t).leading_zeros() / 8;
                assert_eq!(
                    reader.left,
                    8 - (differing + 1).min(8),
                    "u = {u:#x}, t = {t:#x}"
                );
            }
        }
    }

    /// With a dyadic rate the realised probability is exact: q = 3/8.
    #[test]
    fn inclusion_threshold_is_exact_for_dyadic_rates() {
        assert_eq!(Inclusion::from_rate(0.375), Inclusion::Below(3 << 61));
        assert_eq!(Inclusion::from_rate(1.0), Inclusion::Always);
        assert_eq!(Inclusion::from_rate(0.375).probability(), 0.375);
        // q = 0.01 rounds down by less than 2^-64.
        let p = Inclusion::from_rate(0.01).probability();
        assert!(p <= 0.01 && 0.01 - p < 1e-18, "{p}");
    }

    #[test]
    fn uniform_below_stays_in_range_and_hits_every_value() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        for bound in [1usize, 2, 3, 7, 10] {
            let mut seen = vec![0usize; bound];
            for _ in 0..2000 {
                seen[uniform_below(&mut rng, bound)] += 1;
            }
            assert!(seen.iter().all(|&c| c > 0), "bound {bound}: {seen:?}");
        }
        let big = (u32::MAX as usize) + 10;
        for _ in 0..100 {
            assert!(uniform_below(&mut rng, big) < big);
        }
    }

    /// Lemire's rejection: with 32-bit words and bound 3, the low half of
    /// `x · 3` is below `2^32 mod 3 = 1` only for x = 0, which is rejected.
    #[test]
    fn uniform_below_rejects_the_biased_region() {
        let mut rng = Words(vec![0, 1 << 32 | 5]);
        // First word 0 → product 0, low half 0 < threshold 1: rejected;
        // second word (as u32) 5 → 15 >> 32 = 0.
        assert_eq!(uniform_below(&mut rng, 3), 0);
        assert!(rng.0.is_empty());
    }
}
