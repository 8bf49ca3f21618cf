//! The microbatch oracle (`dpaudit_train::testing`) for every model: per-sample gradients,
//! squared norms and clipped sums equal one-sample-at-a-time autograd within a
//! relative error of 1e-5 per tensor (`‖engine − oracle‖ ≤ 1e-5·‖oracle‖`,
//! fp32, CPU), for batches of 0, 1 and several samples, with and without
//! replicas. Large models run on tiny images.

// Tests may panic: the fallible-API guard (crates/train/clippy.toml) is for library code.
#![allow(clippy::disallowed_methods)]

use dpaudit_train::models::{ConvNet, LeNet5, Mlp, ResNet18, ShallowCnn, WideResNet};
use dpaudit_train::testing::{check_against_oracle, random_batch};
use dpaudit_train::{Init, Model};
use tch::Device;

const TOL: f64 = 1e-5;

fn run(make: impl Fn(&mut Init) -> Box<dyn Model>, batches: &[i64], what: &str, seed: u64) {
    run_cases(make, &[(1, batches), (2, batches)], what, seed);
}

/// `(replicas, batch sizes)` cases; the large models use fewer to keep the suite fast.
fn run_cases(
    make: impl Fn(&mut Init) -> Box<dyn Model>,
    cases: &[(usize, &[i64])],
    what: &str,
    seed: u64,
) {
    for &(m, batches) in cases {
        let model = make(&mut Init::new(5, m, Device::Cpu));
        for &b in batches {
            let (x, y) = random_batch(model.as_ref(), b, seed + b as u64).unwrap();
            if let Err(e) = check_against_oracle(model.as_ref(), &x, &y, TOL) {
                panic!("{what}, batch {b}, {m} replicas: {e}");
            }
        }
    }
}

#[test]
fn mlp_matches_oracle() {
    run(
        |i| Box::new(Mlp::new(i, &[12, 8, 5]).unwrap()),
        &[0, 1, 4],
        "mlp",
        10,
    );
}

#[test]
fn lenet5_matches_oracle() {
    run(
        |i| Box::new(LeNet5::new(i, 2).unwrap()),
        &[0, 1, 3],
        "lenet5",
        11,
    );
}

#[test]
fn shallow_cnn_matches_oracle() {
    run(
        |i| Box::new(ShallowCnn::new(i, 2).unwrap()),
        &[0, 1, 2],
        "shallow cnn",
        12,
    );
}

#[test]
fn convnet_matches_oracle() {
    run(
        |i| Box::new(ConvNet::new(i, 10).unwrap()),
        &[0, 1, 2],
        "convnet",
        13,
    );
}

#[test]
fn resnet18_matches_oracle() {
    // Tiny 4×4 images; empty and several samples without replicas, one sample with.
    run_cases(
        |i| Box::new(ResNet18::new(i, 10, 32, [3, 4, 4]).unwrap()),
        &[(1, &[0, 2]), (2, &[1])],
        "resnet18",
        14,
    );
}

#[test]
fn wrn_16_4_matches_oracle() {
    run_cases(
        |i| Box::new(WideResNet::new(i, 16, 4, 10, 16, [3, 4, 4]).unwrap()),
        &[(1, &[0, 2]), (2, &[1])],
        "wrn-16-4",
        15,
    );
}
