//! Replicas: a stack of M replicas trains exactly like M
//! separate models, and masked (padding) slots contribute exactly zero.

// Tests may panic: the fallible-API guard (crates/train/clippy.toml) is for library code.
#![allow(clippy::disallowed_methods)]

use dpaudit_train::models::LeNet5;
use dpaudit_train::testing::random_batch;
use dpaudit_train::{
    forward_backward, Batch, DpSgd, DpSgdConfig, Init, Model, NoiseStreams, Normaliser,
};
use tch::{Device, Tensor};

fn config() -> DpSgdConfig {
    DpSgdConfig {
        noise_multiplier: 0.0,
        max_grad_norm: 0.5,
        learning_rate: 0.1,
        normaliser: Normaliser::FixedBatchSize(4),
        momentum: 0.0,
        weight_decay: 0.0,
    }
}

fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
    (a - b).abs().max().double_value(&[])
}

#[test]
fn a_stack_of_replicas_trains_like_separate_models() {
    let m = 3;
    let stacked = LeNet5::new(&mut Init::new(9, m, Device::Cpu), 2).unwrap();
    let singles: Vec<LeNet5> = (0..m as u64)
        .map(|r| LeNet5::new(&mut Init::with_streams(9, &[r], Device::Cpu), 2).unwrap())
        .collect();
    let (x, y) = random_batch(&stacked, 4, 30).unwrap();
    let mut dp = DpSgd::new(config(), NoiseStreams::replayable(9, m)).unwrap();
    for _ in 0..2 {
        dp.step(&stacked, &Batch::new(x.shallow_clone(), y.shallow_clone()))
            .unwrap();
    }
    for (r, single) in singles.iter().enumerate() {
        let noise = NoiseStreams::new(&dpaudit_data::seed::Randomness::replayable(9), &[r as u64]);
        let mut dp1 = DpSgd::new(config(), noise).unwrap();
        let xr = x.narrow(1, r as i64, 1);
        let yr = y.narrow(1, r as i64, 1);
        for _ in 0..2 {
            dp1.step(single, &Batch::new(xr.shallow_clone(), yr.shallow_clone()))
                .unwrap();
        }
        for ((name, a), (_, b)) in stacked
            .named_parameters()
            .iter()
            .zip(single.named_parameters())
        {
            // fp32, two steps of summed per-sample gradients: 1e-5.
            let d = max_diff(&a.get(r as i64), &b.get(0));
            assert!(d < 1e-5, "replica {r} {name} differs by {d}");
        }
    }
}

#[test]
fn masked_slots_contribute_exactly_zero() {
    let model = LeNet5::new(&mut Init::new(4, 2, Device::Cpu), 2).unwrap();
    let (x, y) = random_batch(&model, 4, 31).unwrap();
    // Replica 1 drew only 2 records; slots 2 and 3 are padding.
    let mask = Tensor::from_slice(&[1f32, 1., 1., 1., 1., 0., 1., 0.]).reshape([4, 2]);
    let sums = |x: &Tensor| {
        let batch = Batch {
            inputs: x.shallow_clone(),
            targets: y.shallow_clone(),
            mask: Some(mask.shallow_clone()),
            overrides: vec![],
            gradient_rows: None,
        };
        let bp = forward_backward(&model, &batch).unwrap();
        let norms = bp.norms(&model, &batch).unwrap();
        let zero_norms =
            norms.sq.get(2).get(1).double_value(&[]) + norms.sq.get(3).get(1).double_value(&[]);
        let coef = norms.clip(1.0, &bp, &model, &batch).unwrap();
        (bp.clipped_sum(&model, &batch, &coef).unwrap(), zero_norms)
    };
    // Same batch with different (finite) padding content: identical sums, bit for bit.
    let x2 = x.copy();
    x2.narrow(0, 2, 2)
        .narrow(1, 1, 1)
        .copy_(&(dpaudit_train::testing::normal_tensor(&[2, 1, 1, 28, 28], 32).unwrap() * 100.0));
    let (s1, z1) = sums(&x);
    let (s2, z2) = sums(&x2);
    assert_eq!(z1, 0.0);
    assert_eq!(z2, 0.0);
    for (a, b) in s1.0.iter().zip(&s2.0) {
        assert_eq!(max_diff(a, b), 0.0);
    }
    // And equal to the unpadded batch of replica 1 alone (first 2 slots).
    let single = Batch::new(x.narrow(0, 0, 2), y.narrow(0, 0, 2));
    let bp = forward_backward(&model, &single).unwrap();
    let coef = bp
        .norms(&model, &single)
        .unwrap()
        .clip(1.0, &bp, &model, &single)
        .unwrap();
    let s3 = bp.clipped_sum(&model, &single, &coef).unwrap();
    for (a, b) in s1.0.iter().zip(&s3.0) {
        assert!(max_diff(&a.get(1), &b.get(1)) < 1e-6);
    }
}
