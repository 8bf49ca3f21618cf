//! Per-sample gradient overrides (Cebere et al. 2024 App. C, Algorithm 2 gradient
//! canaries): a given gradient, a zero gradient, an excluded slot. Their
//! contribution to the clipped sum is exact and obeys the clipping rule.

// Tests may panic: the fallible-API guard (crates/train/clippy.toml) is for library code.
#![allow(clippy::disallowed_methods)]

use dpaudit_train::models::Mlp;
use dpaudit_train::testing::random_batch;
use dpaudit_train::{
    forward_backward, Batch, ClippedSum, GradientRows, Init, Model, Override, SlotOverride,
    TrainError,
};
use tch::{Device, Kind, Tensor};

const C: f64 = 1.0;

fn clipped_sum(model: &dyn Model, batch: &Batch) -> Result<ClippedSum, TrainError> {
    let bp = forward_backward(model, batch)?;
    let coef = bp.norms(model, batch)?.clip(C, &bp, model, batch)?;
    bp.clipped_sum(model, batch, &coef)
}

fn flat(sum: &ClippedSum, replica: i64) -> Tensor {
    Tensor::cat(
        &sum.0
            .iter()
            .map(|t| t.get(replica).flatten(0, -1))
            .collect::<Vec<_>>(),
        0,
    )
}

fn setup() -> (Mlp, Tensor, Tensor) {
    let model = Mlp::new(&mut Init::new(8, 2, Device::Cpu), &[6, 5, 3]).unwrap();
    let (x, y) = random_batch(&model, 3, 40).unwrap();
    (model, x, y)
}

fn with(x: &Tensor, y: &Tensor, overrides: Vec<SlotOverride>) -> Batch {
    Batch {
        inputs: x.shallow_clone(),
        targets: y.shallow_clone(),
        mask: None,
        overrides,
        gradient_rows: None,
    }
}

/// The clipped sum of the batch `(x, y)` with one slot `(slot, replica)`
/// overridden by `kind`.
fn overridden(
    model: &Mlp,
    (x, y): (&Tensor, &Tensor),
    (slot, replica): (usize, usize),
    kind: Override,
) -> ClippedSum {
    let overrides = vec![SlotOverride {
        slot,
        replica,
        kind,
    }];
    clipped_sum(model, &with(x, y, overrides)).unwrap()
}

#[test]
fn gradient_override_adds_the_clipped_vector_exactly() {
    let (model, x, y) = setup();
    let p = model.num_parameters();
    // Reference: slot 1 of replica 1 excluded.
    let excluded = overridden(&model, (&x, &y), (1, 1), Override::Exclude);
    // A Dirac canary C·e_d (Cebere et al. 2024 App. C, Algorithm 2): norm exactly C, passes unchanged.
    let d = 7;
    let dirac = Tensor::zeros([p], (Kind::Float, Device::Cpu));
    let _ = dirac.get(d).fill_(C);
    let s = overridden(&model, (&x, &y), (1, 1), Override::Gradient(dirac.copy()));
    let diff = flat(&s, 1) - flat(&excluded, 1);
    assert!((diff - &dirac).abs().max().double_value(&[]) < 1e-6);
    // Replica 0 is untouched by an override of replica 1.
    assert_eq!(
        (flat(&s, 0) - flat(&excluded, 0))
            .abs()
            .max()
            .double_value(&[]),
        0.0
    );
    // A vector of norm 5C is clipped to norm C: contributes v/5.
    let v = dpaudit_train::testing::normal_tensor(&[p], 41).unwrap();
    let v = &v * (5.0 * C / v.norm().double_value(&[]));
    let s = overridden(&model, (&x, &y), (1, 1), Override::Gradient(v.copy()));
    let diff = flat(&s, 1) - flat(&excluded, 1);
    assert!((diff - &v / 5.0).abs().max().double_value(&[]) < 1e-6);
}

#[test]
fn zero_and_exclude_contribute_nothing() {
    let (model, x, y) = setup();
    let zero = overridden(&model, (&x, &y), (0, 0), Override::Zero);
    let excl = overridden(&model, (&x, &y), (0, 0), Override::Exclude);
    let rest = Batch::new(x.narrow(0, 1, 2), y.narrow(0, 1, 2));
    let without = clipped_sum(&model, &rest).unwrap();
    for ((a, b), c) in zero.0.iter().zip(&excl.0).zip(&without.0) {
        assert_eq!((a - b).abs().max().double_value(&[]), 0.0);
        assert!((a.get(0) - c.get(0)).abs().max().double_value(&[]) < 1e-6);
    }
}

#[test]
fn bad_overrides_are_refused() {
    let (model, x, y) = setup();
    let p = model.num_parameters();
    let wrong_len = with(
        &x,
        &y,
        vec![SlotOverride {
            slot: 0,
            replica: 0,
            kind: Override::Gradient(Tensor::zeros([p + 1], (Kind::Float, Device::Cpu))),
        }],
    );
    assert!(matches!(
        clipped_sum(&model, &wrong_len),
        Err(TrainError::Override {
            slot: 0,
            replica: 0,
            ..
        })
    ));
    let outside = with(
        &x,
        &y,
        vec![SlotOverride {
            slot: 3,
            replica: 0,
            kind: Override::Zero,
        }],
    );
    assert!(matches!(
        clipped_sum(&model, &outside),
        Err(TrainError::Override { slot: 3, .. })
    ));
    let twice = with(
        &x,
        &y,
        vec![
            SlotOverride {
                slot: 1,
                replica: 1,
                kind: Override::Zero,
            },
            SlotOverride {
                slot: 1,
                replica: 1,
                kind: Override::Exclude,
            },
        ],
    );
    assert!(matches!(
        clipped_sum(&model, &twice),
        Err(TrainError::Override {
            slot: 1,
            replica: 1,
            ..
        })
    ));
    // The same guards for gradient rows (the training loops' form).
    let rows = |host: Vec<(usize, usize)>| {
        let k = host.len() as i64;
        let ints = |f: fn(&(usize, usize)) -> usize| {
            Tensor::from_slice(&host.iter().map(|h| f(h) as i64).collect::<Vec<_>>())
        };
        Batch {
            gradient_rows: Some(GradientRows {
                slots: ints(|h| h.0),
                replicas: ints(|h| h.1),
                rows: Tensor::zeros([k, p], (Kind::Float, Device::Cpu)),
                host,
            }),
            ..with(&x, &y, Vec::new())
        }
    };
    assert!(clipped_sum(&model, &rows(vec![(1, 1), (2, 0)])).is_ok());
    assert!(matches!(
        clipped_sum(&model, &rows(vec![(3, 0)])),
        Err(TrainError::Override { slot: 3, .. })
    ));
    assert!(matches!(
        clipped_sum(&model, &rows(vec![(0, 2)])),
        Err(TrainError::Override { replica: 2, .. })
    ));
    let err = clipped_sum(&model, &rows(vec![(1, 1), (1, 1)])).unwrap_err();
    assert!(err.to_string().contains("more than one override"), "{err}");
}
