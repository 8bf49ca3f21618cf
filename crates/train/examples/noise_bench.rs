//! Cost of DP noise per step: the runs' own ChaCha20 streams (replayable: one
//! normal per coordinate; secure: four, summed) against libtorch's `randn` of
//! the same size as a reference, on the CPU.
//!
//! `cargo run --release -p dpaudit-train --example noise_bench [ITERS]`

// A bench program may panic: the fallible-API guard (crates/train/clippy.toml) is for library code.
#![allow(clippy::disallowed_methods)]

use std::time::Instant;

use dpaudit_data::seed::Randomness;
use dpaudit_train::NoiseStreams;
use tch::{Device, Kind, Tensor};

fn main() {
    let iters: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    println!("| parameters per replica | replicas | libtorch randn | replayable | secure | replayable / randn | secure / randn |");
    println!("|---|---|---|---|---|---|---|");
    for (p, m) in [
        (61_706i64, 1usize),
        (179_556, 1),
        (2_748_890, 1),
        (61_706, 64),
    ] {
        let params = vec![Tensor::zeros([m as i64, p], (Kind::Float, Device::Cpu))];
        let runs: Vec<u64> = (0..m as u64).collect();
        let time = |f: &mut dyn FnMut()| {
            f();
            let start = Instant::now();
            for _ in 0..iters {
                f();
            }
            start.elapsed().as_secs_f64() / iters as f64
        };
        let randn = time(&mut || {
            let _ = Tensor::randn([m as i64, p], (Kind::Float, Device::Cpu));
        });
        let mut replayable = NoiseStreams::new(&Randomness::replayable(1), &runs);
        let rep = time(&mut || {
            replayable.next_step(1.0, &params, Device::Cpu).unwrap();
        });
        let mut secure = NoiseStreams::new(&Randomness::secure(1).unwrap(), &runs);
        let sec = time(&mut || {
            secure.next_step(1.0, &params, Device::Cpu).unwrap();
        });
        println!(
            "| {p} | {m} | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} | {:.2} |",
            randn * 1e3,
            rep * 1e3,
            sec * 1e3,
            rep / randn,
            sec / randn
        );
    }
}
