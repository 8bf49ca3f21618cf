//! How much of the CPU's "time outside operators" is host work, and how much
//! is the host's caches being emptied by the operators in between.
//!
//! `dpaudit bench --overhead` reports a step's wall time minus the time inside
//! libtorch operators (`train::op_count`) as its host time. On a CPU the
//! operators run on the same cores and through the same caches as the host
//! code, so host code that runs between large operators finds its own data and
//! libtorch's dispatch path evicted. This program holds the host work fixed —
//! the same two in-place operators (`x ^= y`, `x &= k`) repeated, allocating
//! and freeing nothing — and grows only the tensors they stream through: any
//! growth of the time outside operators is then cache and TLB refill, not
//! host work. A second row allocates each result and frees it, as a
//! step's temporaries do.
//!
//! `cargo run --release -p dpaudit-train --example host_time_per_op [REPEATS]`

// A bench program may panic: the fallible-API guard (crates/train/clippy.toml) is for library code.
#![allow(clippy::disallowed_methods)]

use dpaudit_train::op_count::OpCounter;
use dpaudit_train::runtime::retain_freed_host_memory;
use tch::{Device, Kind, Tensor};

fn main() {
    let repeats: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200);
    // The allocator setting of dpaudit's own runs.
    retain_freed_host_memory();
    println!("| int64 elements | MiB per tensor | µs outside per operator, in place | allocating | µs inside per operator, in place |");
    println!("|---|---|---|---|---|");
    for numel in [1_024i64, 131_072, 1_048_576, 3_276_800] {
        let opts = (Kind::Int64, Device::Cpu);
        let mut x = Tensor::ones([numel], opts);
        let y = Tensor::ones([numel], opts);
        let k = Tensor::from_slice(&[3i64]).reshape([]);
        for _ in 0..20 {
            let _ = x.bitwise_xor_tensor_(&y);
        }
        let ops = 2.0 * repeats as f64;
        let counter = OpCounter::start().expect("this build counts operators");
        for _ in 0..repeats {
            let _ = x.bitwise_xor_tensor_(&y);
            let _ = x.bitwise_and_tensor_(&k);
        }
        let in_place = counter.finish();
        let counter = OpCounter::start().expect("this build counts operators");
        for _ in 0..repeats {
            let t = x.bitwise_xor_tensor(&y);
            let u = t.bitwise_and_tensor(&k);
            drop((t, u));
        }
        let allocating = counter.finish();
        println!(
            "| {numel} | {:.3} | {:.2} | {:.2} | {:.1} |",
            numel as f64 * 8.0 / 1_048_576.0,
            in_place.outside() * 1e6 / ops,
            allocating.outside() * 1e6 / ops,
            in_place.inside * 1e6 / ops,
        );
    }
}
