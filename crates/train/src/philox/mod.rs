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
//!
//! `rounds` holds the block function (Salmon et al. 2011, §4.2) on working
//! tensors, `generator` one key ([`Philox`]), `rows` one key per row
//! ([`RowKeys`]), `binomial` the host table behind [`Philox::binomial`].

mod binomial;
mod generator;
mod rounds;
mod rows;

pub use binomial::binomial_cdf;
pub use generator::{Philox, MAX_BLOCKS, SLICE};
pub use rows::{RowKeys, ROW_SLICE};
