//! Bad input gives an error that names the file, the field and what was
//! expected — before anything long runs.

mod common;

use dpaudit_data::seed::{Mode, RunSeed, Stream};
use dpaudit_panoramia::nn::{save_tensors, HostInit, Parameters};
use dpaudit_panoramia::vae::{Vae, VaeMeta, FORMAT};
use dpaudit_panoramia::{run, PanoramiaConfig, PanoramiaError, Quiet};
use dpaudit_train::checkpoint::{save, CheckpointMeta};
use dpaudit_train::config::TrainConfig;
use dpaudit_train::init::Init;
use dpaudit_train::trainer::build_model;
use tch::Device;

fn setup() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    common::write_tiny_fmnist(&data, 100, 120);
    (dir, data)
}

#[test]
fn an_audit_set_too_small_for_the_confidence_is_refused_at_load() {
    let (_dir, data) = setup();
    let text = common::head(r#"kind = "real_holdout""#, "same-data", 10)
        + &common::target("f", &data, 1, 1000);
    let err = PanoramiaConfig::from_toml(&text, "small.toml").unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, PanoramiaError::Config { .. }), "{msg}");
    assert!(
        msg.contains("small.toml") && msg.contains("split.audit") && msg.contains("at least 12"),
        "{msg}"
    );
    assert!(msg.contains("too small for confidence 0.95"), "{msg}");
}

#[test]
fn members_not_in_a_targets_training_set_are_refused() {
    let (dir, data) = setup();
    // target[1] is trained on another random 900 of the 1,000 records.
    let text = common::head(r#"kind = "real_holdout""#, "same-data", 400)
        + &common::target("a", &data, 1, 900)
        + &common::target("b", &data, 2, 900);
    let cfg = PanoramiaConfig::from_toml(&text, "t.toml").unwrap();
    let err = run(&cfg, "t.toml", &dir.path().join("out"), &mut Quiet).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, PanoramiaError::NotMembers { .. }), "{msg}");
    assert!(
        msg.contains("target `b`") && msg.contains("not in its training set"),
        "{msg}"
    );
}

#[test]
fn a_checkpoint_of_another_architecture_is_refused() {
    let (dir, data) = setup();
    // An MLP checkpoint, audited as if it were LeNet-5.
    let train_text = common::target("x", &data, 1, 1000)
        .replace("[[target]]\nname = \"x\"\n[target.train]\n", "")
        .replace("[target.train.", "[")
        .replace("kind = \"lenet5\"", "kind = \"mlp\"");
    let train: TrainConfig = TrainConfig::from_toml(&train_text, "mlp.toml").unwrap();
    let mut init = Init::for_runs(RunSeed(1).stream(Stream::Init), &[0], Device::Cpu);
    let model = build_model(&train.model, &[1, 28, 28], 10, &mut init).unwrap();
    let ckpt = dir.path().join("mlp.safetensors");
    let meta = CheckpointMeta::new(
        Mode::Replayable,
        train,
        vec![1, 28, 28],
        10,
        0,
        "test".into(),
    );
    save(model.as_ref(), &ckpt, &meta).unwrap();
    let text = common::head(r#"kind = "real_holdout""#, "same-data", 400)
        + &format!(
            "[[target]]\nname = \"given\"\ncheckpoint = \"{}\"\nmodel = {{ kind = \"lenet5\" }}\n",
            ckpt.display()
        );
    let cfg = PanoramiaConfig::from_toml(&text, "arch.toml").unwrap();
    let err = run(&cfg, "arch.toml", &dir.path().join("out"), &mut Quiet).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, PanoramiaError::Checkpoint { .. }), "{msg}");
    assert!(
        msg.contains("mlp.safetensors") && msg.contains("holds a Mlp"),
        "{msg}"
    );
    assert!(
        msg.contains("expected a Lenet5")
            && msg.contains("arch.toml")
            && msg.contains("target[0].model"),
        "{msg}"
    );
}

#[test]
fn a_generator_for_another_shape_is_refused() {
    let (dir, data) = setup();
    // A VAE for 3×32×32 images, given to an audit of 1×28×28 data.
    let mut init = HostInit::new(RunSeed(1).stream(Stream::Init), Device::Cpu);
    let vae = Vae::new(&mut init, [3, 32, 32], 4, 4).unwrap();
    let meta = VaeMeta {
        format: FORMAT.into(),
        sample_shape: vec![3, 32, 32],
        latent: 4,
        width: 4,
        epochs: 0,
        train_records: 0,
        data_source: "test".into(),
        final_loss: 0.0,
        fingerprint: String::new(),
    };
    let path = dir.path().join("cifar-vae.safetensors");
    save_tensors(
        &path,
        &vae.parameters(),
        &serde_json::to_string(&meta).unwrap(),
    )
    .unwrap();
    let gen = format!(
        "kind = \"vae\"\nlatent = 4\nwidth = 4\nepochs = 1\nbatch_size = 64\nlearning_rate = 1e-3\ncheckpoint = \"{}\"",
        path.display()
    );
    let text = common::head(&gen, "same-data", 400) + &common::target("f", &data, 1, 1000);
    let cfg = PanoramiaConfig::from_toml(&text, "gen.toml").unwrap();
    let err = run(&cfg, "gen.toml", &dir.path().join("out"), &mut Quiet).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, PanoramiaError::Checkpoint { .. }), "{msg}");
    assert!(
        msg.contains("cifar-vae.safetensors") && msg.contains("[3, 32, 32]"),
        "{msg}"
    );
    assert!(
        msg.contains("expected [1, 28, 28]") && msg.contains("generator.checkpoint"),
        "{msg}"
    );
}

#[test]
fn config_errors_name_file_and_field() {
    let (_dir, data) = setup();
    let base = common::head(r#"kind = "real_holdout""#, "same-data", 400);
    // ε with a non-zero noise multiplier.
    let t = common::target("f", &data, 1, 1000)
        .replace("name = \"f\"\n", "name = \"f\"\nepsilon = 2.0\n");
    let t = t.replace("noise_multiplier = 0.0", "noise_multiplier = 1.0");
    let msg = PanoramiaConfig::from_toml(&(base.clone() + &t), "e.toml")
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("e.toml") && msg.contains("target[0].train.dp.noise_multiplier"),
        "{msg}"
    );
    // An unknown field.
    let msg = PanoramiaConfig::from_toml(&(base.clone() + "colour = 1\n"), "u.toml")
        .unwrap_err()
        .to_string();
    assert!(msg.contains("u.toml") && msg.contains("colour"), "{msg}");
    // Classifier seeds out of range, an unknown MIA side information.
    let with_classifier = |extra: &str| {
        base.replacen(
            "learning_rate = 1e-3\n\n[quality]",
            &format!("learning_rate = 1e-3\n{extra}\n\n[quality]"),
            1,
        ) + &common::target("f", &data, 1, 1000)
    };
    let msg = PanoramiaConfig::from_toml(&with_classifier("seeds = 0"), "k.toml")
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("k.toml") && msg.contains("classifier.seeds") && msg.contains("1..=64"),
        "{msg}"
    );
    let msg = PanoramiaConfig::from_toml(&with_classifier("mia_losses = \"both\""), "l.toml")
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("l.toml") && msg.contains("target_and_helper"),
        "{msg}"
    );
    // Too little data for the split.
    let small = common::target("f", &data, 1, 500);
    let cfg = PanoramiaConfig::from_toml(&(base + &small), "s.toml").unwrap();
    let msg = run(&cfg, "s.toml", &_dir.path().join("o"), &mut Quiet)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("s.toml") && msg.contains("`split`") && msg.contains("at most 500 records"),
        "{msg}"
    );
}

/// A target with `epsilon` is read in the calibrated context of the one
/// DP-field validation (`dpaudit_accounting::dp_fields`): σ must be 0 and the
/// target ε finite and > 0, in the validator's words.
#[test]
fn a_calibrated_target_refuses_through_the_validator() {
    use dpaudit_accounting::dp_fields::{expected, DpContext, DpField};
    let (_dir, data) = setup();
    let base = common::head(r#"kind = "real_holdout""#, "same-data", 400);
    let target = |eps: &str, sigma: &str| {
        common::target("f", &data, 1, 1000)
            .replace(
                "name = \"f\"\n",
                &format!("name = \"f\"\nepsilon = {eps}\n"),
            )
            .replace(
                "noise_multiplier = 0.0",
                &format!("noise_multiplier = {sigma}"),
            )
    };
    let refusal = |t: String| {
        PanoramiaConfig::from_toml(&(base.clone() + &t), "e.toml")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert!(PanoramiaConfig::from_toml(&(base.clone() + &target("2.0", "0.0")), "e.toml").is_ok());
    let sigma = expected(DpContext::Calibrated, DpField::NoiseMultiplier);
    for bad in ["1.0", "-1.0", "nan"] {
        let msg = refusal(target("2.0", bad));
        assert!(
            msg.contains("target[0].train.dp.noise_multiplier") && msg.contains(sigma),
            "{bad}: {msg}"
        );
    }
    let eps = expected(DpContext::Calibrated, DpField::TargetEpsilon);
    for bad in ["0.0", "-1.0", "inf", "nan"] {
        let msg = refusal(target(bad, "0.0"));
        assert!(
            msg.contains("target[0].epsilon") && msg.contains(eps),
            "{bad}: {msg}"
        );
    }
}

#[test]
fn a_second_process_on_the_same_out_dir_is_refused_before_any_work() {
    let (dir, data) = setup();
    let text = common::head(r#"kind = "real_holdout""#, "same-data", 400)
        + &common::target("a", &data, 1, 900);
    let cfg = PanoramiaConfig::from_toml(&text, "t.toml").unwrap();
    let out = dir.path().join("out");
    // Another holder of the out-dir (this test process, as another command).
    let held = dpaudit_store::OutDir::open(&out, "another dpaudit").unwrap();
    let err = run(&cfg, "t.toml", &out, &mut Quiet).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, PanoramiaError::Store(_)), "{msg}");
    let pid = format!("pid {}", std::process::id());
    assert!(
        msg.contains(&pid) && msg.contains("another dpaudit"),
        "{msg}"
    );
    // Nothing was computed: the out-dir holds only the other holder's lock.
    let names: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, vec![dpaudit_store::outdir::LOCK_FILE.to_string()]);
    drop(held);
}
