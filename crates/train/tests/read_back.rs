//! Reading the step's report and checks back every `k` steps
//! (`DpSgd::set_read_back_every`) changes when the host learns them, not what
//! the run computes: the same parameters bit for bit, reports that sum the
//! per-step ones, and a failed check that stops the run at the next read-back
//! naming the step that failed, with the parameters as they were before it.

// Tests may panic: the fallible-API guard (crates/train/clippy.toml) is for library code.
#![allow(clippy::disallowed_methods)]

use dpaudit_train::models::Mlp;
use dpaudit_train::testing::{flat_parameters, random_batch};
use dpaudit_train::{
    Batch, DpSgd, DpSgdConfig, Init, Model, NoiseStreams, Normaliser, StepReport, TrainError,
};
use tch::{Device, Kind, Tensor};

const REPLICAS: usize = 2;

fn model() -> Mlp {
    Mlp::new(&mut Init::new(3, REPLICAS, Device::Cpu), &[5, 4, 3]).unwrap()
}

fn engine(every: u64) -> DpSgd {
    engine_with_noise(0.7, every)
}

fn engine_with_noise(noise_multiplier: f64, every: u64) -> DpSgd {
    let mut dp = DpSgd::new(
        DpSgdConfig {
            noise_multiplier,
            max_grad_norm: 2.5,
            learning_rate: 0.3,
            normaliser: Normaliser::FixedBatchSize(6),
            momentum: 0.5,
            weight_decay: 0.0,
        },
        NoiseStreams::replayable(11, REPLICAS),
    )
    .unwrap();
    dp.set_read_back_every(every);
    dp
}

/// Step `t`'s batch: random records, or NaN inputs where `nan_at == t`.
fn batch(model: &Mlp, t: u64, nan_at: Option<u64>) -> Batch {
    let (x, y) = random_batch(model, 6, 100 + t).unwrap();
    if nan_at == Some(t) {
        return Batch::new(x.full_like(f64::NAN), y);
    }
    Batch::new(x, y)
}

fn flat(model: &dyn Model) -> Tensor {
    flat_parameters(model).unwrap()
}

/// Same bits (NaN included).
fn same_bits(a: &Tensor, b: &Tensor) -> bool {
    a.view_dtype(Kind::Int).equal(&b.view_dtype(Kind::Int))
}

#[test]
fn reading_back_every_k_steps_changes_no_value() {
    let (every_step, every_four) = (model(), model());
    let (mut one, mut four) = (engine(1), engine(4));
    let mut per_step: Vec<StepReport> = Vec::new();
    for t in 0..8 {
        per_step.push(one.step(&every_step, &batch(&every_step, t, None)).unwrap());
        let r = four
            .step(&every_four, &batch(&every_four, t, None))
            .unwrap();
        assert_eq!(r.step, t);
        if t % 4 == 3 {
            assert_eq!(r.steps, 4, "step {t} reads back the last four");
            let window = &per_step[(t as usize - 3)..=t as usize];
            // The host adds the same f64 figures in the same order.
            let loss: f64 = window.iter().fold(0.0, |s, w| s + w.loss_sum);
            let samples: f64 = window.iter().fold(0.0, |s, w| s + w.samples);
            let clipped: f64 = window
                .iter()
                .fold(0.0, |s, w| s + w.clipped_fraction * w.samples);
            assert_eq!(r.loss_sum, loss);
            assert_eq!(r.samples, samples);
            assert!((r.clipped_fraction - clipped / samples).abs() < 1e-12);
            assert!(r.loss_sum > 0.0 && r.samples == 48.0, "{r:?}");
            assert!(
                r.clipped_fraction > 0.0 && r.clipped_fraction < 1.0,
                "{r:?}"
            );
        } else {
            assert_eq!(
                (r.steps, r.samples),
                (0, 0.0),
                "step {t} stays on the device"
            );
            assert!(!r.is_read_back());
        }
        assert!(per_step[t as usize].is_read_back());
    }
    assert!(four.read_back().unwrap().is_none(), "nothing left");
    assert!(same_bits(&flat(&every_step), &flat(&every_four)));
}

#[test]
fn a_failure_between_read_backs_stops_the_run_at_the_read_back_naming_its_step() {
    // Reference: the two good steps alone, read back every step.
    let reference = model();
    let mut dp = engine(1);
    for t in 0..2 {
        dp.step(&reference, &batch(&reference, t, None)).unwrap();
    }
    // Steps 0, 1 good, step 2 has a NaN loss, step 3 is good again; read
    // back at step 3.
    let m = model();
    let mut dp = engine(4);
    for t in 0..3 {
        let r = dp.step(&m, &batch(&m, t, Some(2))).unwrap();
        assert!(!r.is_read_back());
    }
    match dp.step(&m, &batch(&m, 3, Some(2))) {
        Err(TrainError::NonFiniteLoss { step, loss }) => {
            assert_eq!(step, 2);
            assert!(loss.is_nan());
        }
        other => panic!("expected NonFiniteLoss at step 2, got {other:?}"),
    }
    // Steps 2 and 3 left the parameters (and with them NaN) out.
    assert!(same_bits(&flat(&m), &flat(&reference)));
}

#[test]
fn steps_not_yet_read_back_are_checked_by_read_back() {
    let m = model();
    let before = flat(&m);
    let mut dp = engine(16);
    let r = dp.step(&m, &batch(&m, 0, Some(0))).unwrap();
    assert!(!r.is_read_back());
    match dp.read_back() {
        Err(TrainError::NonFiniteLoss { step: 0, .. }) => {}
        other => panic!("expected NonFiniteLoss at step 0, got {other:?}"),
    }
    assert!(same_bits(&flat(&m), &before), "parameters changed");
    // After a good step the read-back covers just that one.
    dp.step(&m, &batch(&m, 1, None)).unwrap();
    let r = dp.read_back().unwrap().unwrap();
    assert_eq!((r.step, r.steps, r.samples), (1, 1, 12.0));
}

#[test]
fn a_failed_step_keeps_the_momentum_as_well() {
    // σ = 0, so the noise does not depend on the step index.
    let quiet = || engine_with_noise(0.0, 1);
    let reference = model();
    let mut dp = quiet();
    for t in [0, 2] {
        dp.step(&reference, &batch(&reference, t, None)).unwrap();
    }
    let m = model();
    let mut dp = quiet();
    dp.step(&m, &batch(&m, 0, None)).unwrap();
    assert!(dp.step(&m, &batch(&m, 1, Some(1))).is_err());
    dp.step(&m, &batch(&m, 2, None)).unwrap();
    assert!(same_bits(&flat(&m), &flat(&reference)));
}
