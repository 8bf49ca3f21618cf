//! Clipping and noise: clipped per-sample norms are ≤ C,
//! gradients already within C pass unchanged, a zero gradient is handled, and
//! the noise measured on a zero-gradient run has std σC/normaliser.

// Tests may panic: the fallible-API guard (crates/train/clippy.toml) is for library code.
#![allow(clippy::disallowed_methods)]

use dpaudit_train::engine::per_sample_cross_entropy;
use dpaudit_train::models::{LeNet5, Mlp};
use dpaudit_train::noise::NoiseGenerator;
use dpaudit_train::testing::random_batch;
use dpaudit_train::{
    forward_backward, Batch, DpSgd, DpSgdConfig, Init, Model, NoiseStreams, Normaliser, Override,
    SlotOverride,
};
use tch::{Device, Kind, Tensor};

#[test]
fn clipped_norms_are_at_most_c_and_small_gradients_pass_unchanged() {
    let model = LeNet5::new(&mut Init::new(1, 2, Device::Cpu), 2).unwrap();
    let (x, y) = random_batch(&model, 8, 20).unwrap();
    let batch = Batch::new(x, y);
    let bp = forward_backward(&model, &batch).unwrap();
    let psg = bp.per_sample_grads(&model).unwrap();
    let mut sq = Tensor::zeros([8, 2], (Kind::Float, Device::Cpu));
    for g in &psg {
        sq += g.square().flatten(2, -1).sum_dim_intlist(-1, false, None);
    }
    let norms = sq.sqrt();
    // A C in the middle of the observed norms, so that both branches occur.
    let c = norms.median().double_value(&[]);
    let coef = bp
        .norms(&model, &batch)
        .unwrap()
        .clip(c, &bp, &model, &batch)
        .unwrap();
    let clipped = &norms * &coef.computed;
    let worst = clipped.max().double_value(&[]);
    assert!(
        worst <= c * (1.0 + 1e-6),
        "largest clipped norm {worst} > C = {c}"
    );
    let small = norms.le(c);
    let n_small = small.sum(Kind::Int64).int64_value(&[]);
    assert!(
        n_small > 0 && n_small < 16,
        "median C should split the slots, got {n_small} small"
    );
    // min(1, C/‖g‖) = 1 exactly for ‖g‖ ≤ C (up to the rounding of the norm itself).
    let c_small = coef.computed.masked_select(&small);
    assert!((c_small - 1.0).abs().max().double_value(&[]) <= 1e-6);
}

#[test]
fn zero_gradient_override_has_coefficient_one_and_contributes_nothing() {
    let model = Mlp::new(&mut Init::new(2, 1, Device::Cpu), &[6, 4, 3]).unwrap();
    let (x, y) = random_batch(&model, 2, 21).unwrap();
    let p = model.num_parameters();
    let mut batch = Batch::new(x, y);
    batch.overrides.push(SlotOverride {
        slot: 0,
        replica: 0,
        kind: Override::Gradient(Tensor::zeros([p], (Kind::Float, Device::Cpu))),
    });
    let bp = forward_backward(&model, &batch).unwrap();
    let norms = bp.norms(&model, &batch).unwrap();
    let coef = norms.clip(1.0, &bp, &model, &batch).unwrap();
    // min(1, C/0) = min(1, +∞) = 1 (engine.rs docs), never NaN.
    assert_eq!(coef.overrides.as_ref().unwrap().double_value(&[0]), 1.0);
    let sum = bp.clipped_sum(&model, &batch, &coef).unwrap();
    assert!(sum
        .0
        .iter()
        .all(|t| t.isfinite().all().int64_value(&[]) == 1));
}

/// Zero-gradient run: every slot excluded, so the update is exactly the noise,
/// `Δθ = −η·N(0, σ²C²)/normaliser`. With σ = 2, C = 0.5, normaliser 4, η = 1 the
/// expected std is 0.25 (closed form). Each replica has 61,026 coordinates; the
/// sample std of n normal draws has relative standard error ≈ 1/√(2n) ≈ 0.0029,
/// so the tolerance is 1.5% (≈ 5 standard errors). Replicas must get independent
/// noise: the correlation of n independent pairs is ≈ N(0, 1/n), tolerance 5/√n.
/// Both generators: ChaCha20 on the host, and Philox on the device (the default
/// of replayable runs on a GPU, run here on the CPU).
#[test]
fn noise_std_on_a_zero_gradient_run_is_sigma_c_over_normaliser() {
    noise_std_is_sigma_c_over_normaliser(NoiseGenerator::HostChaCha20);
}

#[test]
fn device_noise_std_on_a_zero_gradient_run_is_sigma_c_over_normaliser() {
    noise_std_is_sigma_c_over_normaliser(NoiseGenerator::DevicePhilox);
}

fn noise_std_is_sigma_c_over_normaliser(generator: NoiseGenerator) {
    let model = LeNet5::new(&mut Init::new(3, 2, Device::Cpu), 2).unwrap();
    let before: Vec<Tensor> = model
        .named_parameters()
        .iter()
        .map(|(_, t)| t.detach().copy())
        .collect();
    let (x, y) = random_batch(&model, 3, 22).unwrap();
    let mut batch = Batch::new(x, y);
    for slot in 0..3 {
        for replica in 0..2 {
            batch.overrides.push(SlotOverride {
                slot,
                replica,
                kind: Override::Exclude,
            });
        }
    }
    let mut dp = DpSgd::new(
        DpSgdConfig {
            noise_multiplier: 2.0,
            max_grad_norm: 0.5,
            learning_rate: 1.0,
            normaliser: Normaliser::ExpectedBatchSize(4.0),
            momentum: 0.0,
            weight_decay: 0.0,
        },
        NoiseStreams::replayable(22, 2)
            .with_generator(generator)
            .unwrap(),
    )
    .unwrap();
    let report = dp.step(&model, &batch).unwrap();
    assert_eq!(report.samples, 0.0);
    let after = model.named_parameters();
    let delta = Tensor::cat(
        &before
            .iter()
            .zip(&after)
            .map(|(b, (_, a))| (a.detach() - b).flatten(1, -1))
            .collect::<Vec<_>>(),
        1,
    )
    .to_kind(Kind::Double);
    let n = delta.size()[1] as f64;
    for r in 0..2 {
        let d = delta.get(r);
        let std = d.std(true).double_value(&[]);
        assert!(
            (std / 0.25 - 1.0).abs() < 0.015,
            "replica {r}: noise std {std}, expected 0.25"
        );
        let mean = d.mean(Kind::Double).double_value(&[]);
        assert!(
            mean.abs() < 5.0 * 0.25 / n.sqrt(),
            "replica {r}: noise mean {mean}"
        );
    }
    let (a, b) = (delta.get(0), delta.get(1));
    let corr = ((&a - a.mean(Kind::Double)) * (&b - b.mean(Kind::Double)))
        .mean(Kind::Double)
        .double_value(&[])
        / (a.std(false).double_value(&[]) * b.std(false).double_value(&[]));
    assert!(
        corr.abs() < 5.0 / n.sqrt(),
        "replica noises correlated: {corr}"
    );
}

#[test]
fn loss_is_summed_per_sample() {
    // δ_i of the summed loss is sample i's own gradient: the cross-entropy helper
    // returns one loss per slot, equal to −log softmax at the target.
    let logits = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 0.0, 0.0, 0.0]).reshape([2, 1, 3]);
    let targets = Tensor::from_slice(&[2i64, 0]).reshape([2, 1]);
    let l = per_sample_cross_entropy(&logits, &targets).unwrap();
    // Closed form: −log(e³/(e+e²+e³)) = 0.40760596; −log(1/3) = 1.09861229.
    assert!((l.double_value(&[0, 0]) - 0.407_605_96).abs() < 1e-6);
    assert!((l.double_value(&[1, 0]) - 1.098_612_29).abs() < 1e-6);
}
