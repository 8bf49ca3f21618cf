//! The training loop's host work per step does not grow with the replicas in
//! what a GPU pays per step whatever the tensor sizes: the number of libtorch
//! operators it dispatches (`dpaudit_train::op_count`). A change that loops
//! over replicas with tensor operations, or draws the noise per replica on
//! the device, fails here; timings never enter.

// Tests may panic: the fallible-API guard (crates/train/clippy.toml, shared by this crate) is for library code.
#![allow(clippy::disallowed_methods)]

use dpaudit_experiment::canary::throughput::{prepare, LoopModel, LoopSpec};
use dpaudit_train::noise::NoiseGenerator;
use dpaudit_train::op_count::{OpCounter, OpCounts};
use tch::Device;

/// The counts of `counted` steps of the real loop (sampler, gather, one
/// Dirac canary per replica and step, DP-SGD, per-step scores) of the tiny
/// model with `replicas` replicas, after `warm` steps; the chunk is longer,
/// so its final read-back is not among them. `every`: the read-back interval
/// (default: the training loops').
fn count_steps(
    replicas: usize,
    noise: NoiseGenerator,
    every: Option<u64>,
    warm: usize,
    counted: usize,
) -> OpCounts {
    let spec = LoopSpec {
        model: LoopModel::Tiny,
        batch: 2,
        replicas,
    };
    let prepared = prepare(spec, (warm + counted + 1) as u64, Device::Cpu).unwrap();
    let mut run = prepared.start_chunk(0).unwrap();
    run.set_noise_generator(noise).unwrap();
    if let Some(k) = every {
        run.set_read_back_every(k);
    }
    for _ in 0..warm {
        run.step().unwrap().unwrap();
    }
    let counter = OpCounter::start().unwrap();
    for _ in 0..counted {
        run.step().unwrap().unwrap();
    }
    counter.finish()
}

/// Top-level operators per step, counted over 3 steps after 2.
fn operators_per_step(replicas: usize, noise: NoiseGenerator) -> u64 {
    let counts = count_steps(replicas, noise, None, 2, 3);
    assert_eq!(counts.top_level % 3, 0, "{counts:?}");
    counts.top_level / 3
}

#[test]
fn operators_per_step_do_not_grow_with_the_replicas() {
    for noise in [NoiseGenerator::HostChaCha20, NoiseGenerator::DevicePhilox] {
        let counts: Vec<u64> = [8, 64, 256]
            .iter()
            .map(|&m| operators_per_step(m, noise))
            .collect();
        assert!(
            counts.windows(2).all(|w| w[0] == w[1]),
            "{noise:?}: operators per step at M = 8, 64, 256: {counts:?}"
        );
        // Tiny stacks take fewer operators (`dpaudit bench --overhead --noise
        // host`, 2026-11-26: 239 at M = 1 against 273; the count changes
        // once, between M = 5 and 6, i.e. 10 and 12 samples per step, and is
        // flat after); never more.
        for m in [1, 2] {
            assert!(
                operators_per_step(m, noise) <= counts[0],
                "{noise:?} M = {m}"
            );
        }
    }
}

/// Between read-backs the loop never makes a GPU host wait: over 8 steps
/// read back every 4, the only waits are the 2 read-backs, with either noise
/// generator; reading back every step waits once per step. An `item()` or a
/// boolean index added to the step fails here (whole-tensor copies by
/// libtorch are not seen: `dpaudit_train::op_count`).
#[test]
fn the_loop_waits_for_the_device_only_at_its_read_backs() {
    for noise in [NoiseGenerator::HostChaCha20, NoiseGenerator::DevicePhilox] {
        for (every, want) in [(4, 2.0), (1, 8.0)] {
            // Steps 0–3 fill the first window; counted: steps 4–11.
            let counts = count_steps(8, noise, Some(every), 4, 8);
            assert_eq!(
                counts.waits, want,
                "{noise:?}, read back every {every}: {counts:?}"
            );
        }
    }
}
