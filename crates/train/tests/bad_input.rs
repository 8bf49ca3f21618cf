//! Bad input: BatchNorm is refused with the reason;
//! unknown fields, missing DP fields and impossible shapes give clear errors;
//! a NaN loss stops the run naming the step.

// Tests may panic: the fallible-API guard (crates/train/clippy.toml) is for library code.
#![allow(clippy::disallowed_methods)]

use dpaudit_train::config::TrainConfig;
use dpaudit_train::models::Mlp;
use dpaudit_train::{Batch, DpSgd, DpSgdConfig, Init, Normaliser, TrainError};
use tch::{Device, Kind, Tensor};

const GOOD: &str = r#"
seed = 1
steps = 10
delta = 1e-5
[model]
kind = "lenet5"
[data]
dataset = "fmnist"
classes = [0, 1]
[sampler]
kind = "poisson"
sample_rate = 0.01
[dp]
noise_multiplier = 1.0
max_grad_norm = 1.0
learning_rate = 0.1
"#;

fn err(text: &str) -> String {
    TrainConfig::from_toml(text, "test.toml")
        .unwrap_err()
        .to_string()
}

#[test]
fn a_good_config_loads() {
    let c = TrainConfig::from_toml(GOOD, "test.toml").unwrap();
    assert_eq!(c.replicas, 1);
    assert_eq!(c.dp.momentum, 0.0);
}

#[test]
fn batch_norm_is_refused_with_the_reason() {
    let text = GOOD
        .replace("kind = \"lenet5\"", "kind = \"resnet18\"\nnorm = \"batch\"")
        .replace("\"fmnist\"", "\"cifar10\"");
    let e = err(&text);
    assert!(
        e.contains("BatchNorm") && e.contains("per-sample") && e.contains("group"),
        "{e}"
    );
}

#[test]
fn unknown_fields_are_errors_with_their_place() {
    let e = err(&GOOD.replace("max_grad_norm = 1.0", "max_grad_norm = 1.0\nclip = 2.0"));
    assert!(e.contains("clip") && e.contains("line"), "{e}");
}

#[test]
fn dp_fields_have_no_defaults() {
    for field in [
        "noise_multiplier = 1.0",
        "max_grad_norm = 1.0",
        "sample_rate = 0.01",
        "seed = 1",
        "delta = 1e-5",
    ] {
        let e = err(&GOOD.replace(field, ""));
        let name = field.split(' ').next().unwrap();
        assert!(e.contains(name), "missing {name}: {e}");
    }
    let e = err(&GOOD.replace("steps = 10", ""));
    assert!(e.contains("steps") && e.contains("epochs"), "{e}");
}

#[test]
fn impossible_shapes_and_ranges_are_errors() {
    let e = err(&GOOD.replace("\"fmnist\"", "\"cifar10\""));
    assert!(e.contains("1×28×28"), "{e}");
    let e = err(&GOOD.replace("max_grad_norm = 1.0", "max_grad_norm = 0.0"));
    assert!(e.contains("dp.max_grad_norm"), "{e}");
    let e = err(&GOOD.replace(
        "kind = \"lenet5\"",
        "kind = \"wrn\"\ndepth = 15\nwidth = 4\nnorm = \"group\"",
    ));
    assert!(e.contains("depth"), "{e}");
}

/// The DP fields are refused by the one validation
/// (`dpaudit_accounting::dp_fields`) in its training context: σ = 0 trains
/// without noise, a negative, NaN or infinite σ is refused with the
/// validator's words under the TOML key.
#[test]
fn dp_fields_are_refused_by_the_one_validation() {
    use dpaudit_accounting::dp_fields::{check, expected, DpContext, DpField};
    let sigma =
        |v: &str| GOOD.replace("noise_multiplier = 1.0", &format!("noise_multiplier = {v}"));
    assert!(TrainConfig::from_toml(&sigma("0.0"), "test.toml").is_ok());
    let said = expected(DpContext::Training, DpField::NoiseMultiplier);
    for bad in ["-1.0", "nan", "inf"] {
        let e = err(&sigma(bad));
        assert!(
            e.contains("dp.noise_multiplier") && e.contains(said),
            "{bad}: {e}"
        );
    }
    let e = err(&GOOD.replace("delta = 1e-5", "delta = 1.0"));
    assert!(
        e.contains("delta") && e.contains(expected(DpContext::Claimed, DpField::Delta)),
        "{e}"
    );
    // The engine's own config: the same refusal, field for field.
    let engine = DpSgdConfig {
        noise_multiplier: 1.0,
        max_grad_norm: f64::NAN,
        learning_rate: 0.1,
        normaliser: Normaliser::ExpectedBatchSize(10.0),
        momentum: 0.0,
        weight_decay: 0.0,
    };
    let refusal = check(DpContext::Training, DpField::MaxGradNorm, f64::NAN).unwrap_err();
    assert_eq!(
        engine.validate().unwrap_err().to_string(),
        dpaudit_plan::PlanError::from(refusal).to_string()
    );
}

#[test]
fn a_nan_loss_stops_the_run_naming_the_step() {
    let model = Mlp::new(&mut Init::new(0, 1, Device::Cpu), &[4, 3, 2]).unwrap();
    let mut dp = DpSgd::new(
        DpSgdConfig {
            noise_multiplier: 0.0,
            max_grad_norm: 1.0,
            learning_rate: 0.1,
            normaliser: Normaliser::FixedBatchSize(2),
            momentum: 0.0,
            weight_decay: 0.0,
        },
        dpaudit_train::NoiseStreams::replayable(0, 1),
    )
    .unwrap();
    let y = Tensor::zeros([2, 1], (Kind::Int64, Device::Cpu));
    let good = Batch::new(
        Tensor::ones([2, 1, 4], (Kind::Float, Device::Cpu)),
        y.shallow_clone(),
    );
    dp.step(&model, &good).unwrap();
    let before = model.fcs[0].weight.copy();
    let bad = Batch::new(
        Tensor::full([2, 1, 4], f64::NAN, (Kind::Float, Device::Cpu)),
        y,
    );
    match dp.step(&model, &bad) {
        Err(TrainError::NonFiniteLoss { step, .. }) => assert_eq!(step, 1),
        other => panic!("expected NonFiniteLoss at step 1, got {other:?}"),
    }
    // The parameters are untouched by the failed step.
    assert_eq!(
        (model.fcs[0].weight.copy() - before)
            .abs()
            .max()
            .double_value(&[]),
        0.0
    );
}

/// The preflight refuses on its lower bound of the memory a run needs.
#[test]
fn preflight_refuses_what_cannot_fit_with_the_estimate() {
    use dpaudit_train::preflight;
    let c = TrainConfig::from_toml(
        &GOOD.replace("kind = \"lenet5\"", "kind = \"mlp\"\nhidden = [100000000]"),
        "t.toml",
    )
    .unwrap();
    // 784 → 10⁸ → 2: 784·10⁸ + 10⁸ + 2·10⁸ + 2 parameters.
    assert_eq!(
        preflight::parameters_per_replica(&c, &[1, 28, 28], 2).unwrap(),
        78_700_000_002
    );
    let est = preflight::training(&c, &[1, 28, 28], 2, 12_000, 120.0, 1).unwrap();
    // Four float32 copies of the parameters dominate.
    assert_eq!(est.parts[0].1, 78_700_000_002 * 16);
    let e = preflight::check_against("training", "`model`", &est, Some(24 << 30)).unwrap_err();
    assert!(
        matches!(e, dpaudit_plan::PlanError::InsufficientMemory { .. }),
        "{e}"
    );
    assert!(
        e.to_string().contains("1172.") && e.to_string().contains("`model`"),
        "{e}"
    );
    preflight::check_against("training", "`model`", &est, None).unwrap();
}

/// Parameter counts without allocation equal those of a built model.
#[test]
fn parameter_counts_without_allocating_match_built_models() {
    use dpaudit_train::preflight;
    for (kind, shape) in [
        ("kind = \"lenet5\"", vec![1usize, 28, 28]),
        ("kind = \"mlp\"\nhidden = [7, 5]", vec![1, 28, 28]),
        ("kind = \"convnet\"", vec![3, 32, 32]),
        (
            "kind = \"wrn\"\ndepth = 16\nwidth = 4\nnorm = \"group\"",
            vec![3, 32, 32],
        ),
    ] {
        let text = GOOD.replace("kind = \"lenet5\"", kind);
        let text = if shape[0] == 3 {
            text.replace("\"fmnist\"", "\"cifar10\"")
        } else {
            text
        };
        let c = TrainConfig::from_toml(&text, "t.toml").unwrap();
        let mut init = Init::new(0, 1, Device::Cpu);
        let built = dpaudit_train::trainer::build_model(&c.model, &shape, 10, &mut init).unwrap();
        assert_eq!(
            preflight::parameters_per_replica(&c, &shape, 10).unwrap(),
            built.num_parameters() as u64,
            "{kind}"
        );
    }
}

#[test]
fn one_class_and_empty_training_sets_are_refused_naming_the_field() {
    let e = err(&GOOD.replace("classes = [0, 1]", "classes = [3]"));
    assert!(e.contains("data.classes") && e.contains("two"), "{e}");
    let e = err(&GOOD.replace("classes = [0, 1]", "classes = [3, 3]"));
    assert!(e.contains("data.classes"), "{e}");
    let e = err(&GOOD.replace("classes = [0, 1]", "classes = [0, 1]\ntrain_size = 0"));
    assert!(e.contains("data.train_size"), "{e}");
}
