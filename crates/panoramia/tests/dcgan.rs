//! The conditional DCGAN and the real-vs-generated filter: training,
//! samples, checkpoints, resuming, the filter's threshold, the config's
//! fields, and the pipeline with both.

#![allow(clippy::disallowed_methods, clippy::arithmetic_side_effects)]

mod common;

use common::Count;
use dpaudit_data::dataset::DatasetKind;
use dpaudit_data::seed::{RunSeed, Stream};
use dpaudit_data::synthetic::{generate, SyntheticSpec};
use dpaudit_panoramia::config::FilterConfig;
use dpaudit_panoramia::dcgan::{self, Dcgan, Settings, Stage};
use dpaudit_panoramia::filter::{self, Generator};
use dpaudit_panoramia::nn::{HostInit, Trained};
use dpaudit_panoramia::records::Records;
use dpaudit_panoramia::{run, PanoramiaConfig, PanoramiaError};
use tch::Device;

/// 10 records per class of the Fashion-MNIST-shaped synthetic stand-in.
fn tiny() -> Records {
    let splits = generate(
        DatasetKind::Fmnist,
        &SyntheticSpec {
            seed: 4,
            train_per_class: 10,
            test_per_class: 1,
        },
    )
    .unwrap();
    Records::from_dataset(&splits.train)
}

fn settings(epochs: u64) -> Settings {
    Settings {
        latent: 4,
        width: 4,
        epochs,
        batch_size: 32,
        learning_rate: 2e-4,
        checkpoint: None,
    }
}

fn stage<'a>(d_g: &'a Records, path: &'a std::path::Path, fp: &'a str) -> Stage<'a> {
    let key = RunSeed(7);
    Stage {
        d_g,
        classes: 10,
        data_source: "synthetic",
        noise: key.stream(Stream::Generator),
        net: Trained {
            path,
            fingerprint: fp,
            init: key.stream(Stream::Init),
            batches: key.stream(Stream::Sampler),
            device: Device::Cpu,
        },
    }
}

fn fresh_gan() -> Dcgan {
    let mut init = HostInit::new(RunSeed(1).stream(Stream::Init), Device::Cpu);
    Dcgan::new(&mut init, [1, 28, 28], 10, 4, 4, vec![0.1; 10]).unwrap()
}

#[test]
fn the_dcgan_trains_and_its_samples_are_labelled_8_bit_images() {
    let d_g = tiny();
    let gan = fresh_gan();
    let mut seen = Vec::new();
    let (d, g) = gan
        .train(
            &d_g,
            &settings(2),
            RunSeed(2).stream(Stream::Sampler),
            RunSeed(2).stream(Stream::Generator),
            Device::Cpu,
            &mut |e, d, g| seen.push((e, d, g)),
        )
        .unwrap();
    assert_eq!(seen.len(), 2);
    assert!(
        d.is_finite() && g.is_finite() && d > 0.0 && g > 0.0,
        "{d} {g}"
    );
    let key = RunSeed(3).stream(Stream::Generator);
    let s = gan.sample(1100, key, 0, Device::Cpu).unwrap();
    assert_eq!(s.shape, vec![1, 28, 28]);
    assert_eq!(s.len(), 1100);
    assert_eq!(s.x.len(), 1100 * 784);
    assert!(s.x.iter().all(|&v| (0.0..=1.0).contains(&v)));
    // Rounded to 8-bit levels.
    assert!(s
        .x
        .iter()
        .all(|&v| ((v * 255.0).round() - v * 255.0).abs() < 1e-3));
    // Labels from the class frequencies (uniform here): every class appears.
    assert!(s.y.iter().all(|&y| (0..10).contains(&y)));
    for c in 0..10 {
        let k = s.y.iter().filter(|&&y| y == c).count();
        assert!(k > 60 && k < 160, "class {c}: {k} of 1100");
    }
    // Replayable per purpose; another purpose is another draw.
    assert_eq!(gan.sample(1100, key, 0, Device::Cpu).unwrap(), s);
    assert_ne!(
        gan.sample(10, key, 1, Device::Cpu).unwrap().x,
        s.range(0, 10).x
    );
    // A label outside the classes is refused.
    assert!(gan.one_hot(&[10], Device::Cpu).is_err());
}

#[test]
fn the_checkpoint_round_trips_and_the_stage_resumes() {
    let d_g = tiny();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("generator.safetensors");
    let mut p = Count::default();
    let (a, text) = dcgan::obtain(&settings(1), &stage(&d_g, &path, "fp1"), &mut p).unwrap();
    assert!(text.contains("DCGAN"), "{text}");
    assert_eq!(p.epochs, 2, "one D and one G report per epoch");
    assert!(path.is_file());
    // Resumed: nothing trained, the same samples.
    let mut again = Count::default();
    let (b, _) = dcgan::obtain(&settings(1), &stage(&d_g, &path, "fp1"), &mut again).unwrap();
    assert_eq!(again.epochs, 0, "{:?}", again.stages);
    assert!(again
        .stages
        .iter()
        .any(|s| s.contains("found in the out-dir")));
    let key = RunSeed(9).stream(Stream::Generator);
    assert_eq!(
        a.sample(20, key, 3, Device::Cpu).unwrap(),
        b.sample(20, key, 3, Device::Cpu).unwrap()
    );
    // Loaded as a given checkpoint, whatever the fingerprint.
    let mut given = settings(1);
    given.checkpoint = Some(path.clone());
    let mut quiet = Count::default();
    let (c, text) = dcgan::obtain(&given, &stage(&d_g, &path, "other"), &mut quiet).unwrap();
    assert_eq!(quiet.epochs, 0);
    assert!(text.contains("loaded from"), "{text}");
    assert_eq!(
        a.sample(5, key, 1, Device::Cpu).unwrap(),
        c.sample(5, key, 1, Device::Cpu).unwrap()
    );
    // Another fingerprint in the out-dir: retrained.
    let mut retrain = Count::default();
    dcgan::obtain(&settings(1), &stage(&d_g, &path, "fp2"), &mut retrain).unwrap();
    assert_eq!(retrain.epochs, 2);
    // Another shape or class count is refused, naming what was expected.
    let mut init = HostInit::new(RunSeed(1).stream(Stream::Init), Device::Cpu);
    let err = dcgan::load(&path, &[3, 32, 32], 10, &mut init)
        .unwrap_err()
        .to_string();
    assert!(err.contains("expected [3, 32, 32]"), "{err}");
    let err = dcgan::load(&path, &[1, 28, 28], 5, &mut init)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("5 classes") || err.contains("expected 5"),
        "{err}"
    );
}

fn filter_config(threshold: f64) -> FilterConfig {
    FilterConfig {
        threshold,
        max_candidates: 3,
        keep_class_frequencies: true,
        epochs: 2,
        batch_size: 32,
        learning_rate: 1e-3,
    }
}

#[test]
fn the_filter_keeps_what_its_threshold_says() {
    let real = tiny();
    let gen = Generator::Dcgan(fresh_gan());
    let dir = tempfile::tempdir().unwrap();
    let key = RunSeed(5).stream(Stream::Generator);
    let make = |cfg: &FilterConfig, name: &str| {
        let path = dir.path().join(name);
        let st = filter::Stage {
            file: "f.toml",
            config: cfg,
            real: &real,
            generator: &gen,
            pool_key: key,
            net: Trained {
                path: &path,
                fingerprint: "fp",
                init: RunSeed(5).stream(Stream::Init),
                batches: RunSeed(5).stream(Stream::Sampler),
                device: Device::Cpu,
            },
        };
        filter::obtain(&st, &mut Count::default()).unwrap()
    };
    // Threshold 1: every candidate kept, one round.
    let mut all = make(&filter_config(1.0), "a.safetensors");
    let pool = filter::draw(
        &gen,
        Some(&mut all),
        "audit",
        300,
        key,
        3,
        "f.toml",
        Device::Cpu,
    )
    .unwrap();
    assert_eq!(pool.len(), 300);
    // The class frequencies (uniform here) are kept exactly.
    for c in 0..10 {
        assert_eq!(pool.y.iter().filter(|&&y| y == c).count(), 30, "class {c}");
    }
    assert_eq!(gen.class_quota(7).unwrap().iter().sum::<usize>(), 7);
    let r = all.report();
    assert_eq!((r.kept, r.pools[0].kept), (300, 300));
    assert!(r.drawn >= 300 && r.drawn <= 900, "{}", r.drawn);
    assert!(r.fit.best_validation_accuracy >= 0.0);
    // Threshold 0: nothing kept, a clear error naming the field.
    let mut none = make(&filter_config(0.0), "n.safetensors");
    let err = filter::draw(
        &gen,
        Some(&mut none),
        "audit",
        100,
        key,
        3,
        "f.toml",
        Device::Cpu,
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, PanoramiaError::Config { .. }), "{msg}");
    assert!(
        msg.contains("f.toml") && msg.contains("filter.threshold") && msg.contains("kept 0"),
        "{msg}"
    );
    // A threshold in between: every kept record is below it.
    let mut mid = make(&filter_config(0.5), "m.safetensors");
    let p_all = mid
        .p_generated(&gen.draw(400, key, 8, Device::Cpu).unwrap(), Device::Cpu)
        .unwrap();
    let rate = p_all.iter().filter(|&&p| p < 0.5).count();
    if rate > 100 {
        let kept = filter::draw(
            &gen,
            Some(&mut mid),
            "audit",
            50,
            key,
            3,
            "f.toml",
            Device::Cpu,
        )
        .unwrap();
        let p = mid.p_generated(&kept, Device::Cpu).unwrap();
        assert!(p.iter().all(|&q| q < 0.5), "{p:?}");
    }
    // Without a filter: one plain draw.
    let plain = filter::draw(&gen, None, "audit", 30, key, 3, "f.toml", Device::Cpu).unwrap();
    assert_eq!(plain, gen.draw(30, key, 3, Device::Cpu).unwrap());
}

fn dcgan_section(extra: &str) -> String {
    format!(
        "kind = \"dcgan\"\nlatent = 8\nwidth = 8\nepochs = 2\nbatch_size = 32\nlearning_rate = 2e-4\nlabels = \"generator\"\n{extra}"
    )
}

// Threshold 1 keeps every candidate: the pipeline test checks the wiring
// (the filter trains, every pool is drawn through it and counted); what the
// threshold drops is `the_filter_keeps_what_its_threshold_says`.
const FILTER: &str =
    "\n[filter]\nthreshold = 1.0\nmax_candidates = 10\nkeep_class_frequencies = true\nepochs = 1\nbatch_size = 64\nlearning_rate = 1e-3\n";

#[test]
fn bad_dcgan_and_filter_fields_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let t = common::target("f", dir.path(), 1, 1000);
    let check = |generator: &str, filter: &str, field: &str| {
        let text = common::head(generator, "same-data", 400) + filter + &t;
        let msg = PanoramiaConfig::from_toml(&text, "bad.toml")
            .map(|_| "accepted".to_string())
            .unwrap_or_else(|e| e.to_string());
        assert!(
            msg.contains("bad.toml") && msg.contains(field),
            "{field}: {msg}"
        );
    };
    let good = dcgan_section("");
    for (from, to, field) in [
        ("latent = 8", "latent = 0", "generator.latent"),
        ("width = 8", "width = 0", "generator.width"),
        ("epochs = 2", "epochs = 0", "generator.epochs"),
        ("batch_size = 32", "batch_size = 0", "generator.batch_size"),
        (
            "learning_rate = 2e-4",
            "learning_rate = -1.0",
            "generator.learning_rate",
        ),
    ] {
        check(&good.replace(from, to), "", field);
    }
    check(&dcgan_section("colour = 1\n"), "", "colour");
    for (from, to, field) in [
        ("threshold = 1.0", "threshold = 1.5", "filter.threshold"),
        (
            "max_candidates = 10",
            "max_candidates = 0",
            "filter.max_candidates",
        ),
        ("epochs = 1", "epochs = 0", "filter.epochs"),
        (
            "keep_class_frequencies = true\n",
            "",
            "keep_class_frequencies",
        ),
    ] {
        check(&good, &FILTER.replace(from, to), field);
    }
    check(&good, &(FILTER.to_string() + "colour = 1\n"), "colour");
    check("kind = \"real_holdout\"", FILTER, "filter");
    // The good ones parse.
    let text = common::head(&good, "same-data", 400) + FILTER + &t;
    let cfg = PanoramiaConfig::from_toml(&text, "good.toml").unwrap();
    assert!(cfg.filter.is_some());
}

/// The pipeline with the DCGAN and the filter: the report carries the
/// filter's counts, the quality check, `c_lb` with its ceiling; a second
/// run resumes without training anything.
#[test]
fn the_pipeline_runs_with_the_dcgan_and_the_filter_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    common::write_tiny_fmnist(&data, 100, 20);
    let text = common::head(&dcgan_section(""), "same-data", 400)
        + FILTER
        + &common::target("f", &data, 1, 1000);
    let cfg = PanoramiaConfig::from_toml(&text, "test.toml").unwrap();
    let out = dir.path().join("out");
    let report = run(&cfg, "test.toml", &out, &mut Count::default()).unwrap();
    for f in [
        "generator.safetensors",
        "filter.safetensors",
        "plots/samples.png",
        "audit.json",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    let f = report.filter.as_ref().expect("a filter report");
    let names: Vec<&str> = f.pools.iter().map(|p| p.pool.as_str()).collect();
    for pool in [
        "helper",
        "classifier_train",
        "classifier_validation",
        "audit",
        "quality",
    ] {
        assert!(names.contains(&pool), "{names:?}");
    }
    let audit = f.pools.iter().find(|p| p.pool == "audit").unwrap();
    assert_eq!(audit.kept, 400);
    assert!(audit.drawn >= 400);
    assert!(f.kept <= f.drawn);
    assert!((0.0..=1.0).contains(&report.quality.accuracy));
    let agreement = report.generator_label_agreement.expect("DCGAN labels");
    assert!((0.0..=1.0).contains(&agreement));
    let ceiling = report.c_lb_ceiling.expect("a ceiling");
    assert!(report.c_lb <= ceiling + 1e-9 && ceiling > 0.0);
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("filter") && summary.contains("DCGAN") && summary.contains("ceiling"),
        "{summary}"
    );
    let json = std::fs::read_to_string(out.join("audit.json")).unwrap();
    assert!(json.contains("\"c_lb_ceiling\"") && json.contains("\"kept\""));
    // Resumed: nothing is trained again, the same numbers.
    let mut again = Count::default();
    let report2 = run(&cfg, "test.toml", &out, &mut again).unwrap();
    assert_eq!(again.epochs, 0, "{:?}", again.stages);
    assert!((report2.c_lb - report.c_lb).abs() < 1e-9);
    assert_eq!(report2.filter.as_ref().unwrap().kept, f.kept);
}
