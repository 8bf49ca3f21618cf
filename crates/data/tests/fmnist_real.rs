//! The real Fashion-MNIST files of the Debian package `dataset-fashion-mnist`
//! (installed by CI). This test fails when they are missing.

use std::path::Path;

use dpaudit_data::{load, DatasetKind, Source};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

const DIR: &str = "/usr/share/datasets/fashion-mnist";

#[test]
fn debian_fashion_mnist_has_the_published_counts() {
    assert!(
        Path::new(DIR).join("train-images-idx3-ubyte.gz").is_file(),
        "{DIR} is missing: install the Debian package dataset-fashion-mnist (apt-get install dataset-fashion-mnist)"
    );
    // Without a data directory, the default directory is used when it has the files.
    let splits = load(DatasetKind::Fmnist, None, 0).unwrap();
    let Source::Real { dir, files } = splits.source() else {
        panic!("expected the real files, got {}", splits.source());
    };
    assert_eq!(dir, Path::new(DIR));
    assert_eq!(files.len(), 4);
    assert!(files.iter().all(|f| f.sha256.len() == 64 && f.bytes > 0));

    // Xiao et al. 2017 §3 / the fashion-mnist README: 60,000 training and
    // 10,000 test images, 6,000 and 1,000 per class.
    assert_eq!((splits.train.len(), splits.test.len()), (60_000, 10_000));
    assert_eq!(splits.train.class_histogram(), vec![6_000; 10]);
    assert_eq!(splits.test.class_histogram(), vec![1_000; 10]);
    assert_eq!(splits.train.shape(), &[1, 28, 28]);
    assert_eq!(splits.train.features().len(), 60_000 * 784);

    // TensorFlow's "Basic classification: Classify images of clothing"
    // tutorial prints train_labels = [9, 0, 0, ..., 3, 0, 5] and has
    // test_labels[0] = 9 (Ankle boot).
    let train = splits.train.labels();
    assert_eq!(&train[..3], &[9, 0, 0]);
    assert_eq!(&train[59_997..], &[3, 0, 5]);
    assert_eq!(splits.test.labels()[0], 9);
    assert!(splits
        .train
        .features()
        .iter()
        .all(|&x| (0.0..=1.0).contains(&x)));
}

#[test]
fn shuffling_paper_task_tshirt_vs_trouser() {
    // Annamalai et al. 2024 §6.1: T-shirt/top (0) vs Trouser (1), downsampled to 10,000 records.
    let splits = load(DatasetKind::Fmnist, Some(Path::new(DIR)), 0).unwrap();
    let task = splits.select_classes(&[0, 1]).unwrap();
    assert_eq!(task.train.len(), 12_000);
    assert_eq!(task.test.len(), 2_000);
    assert_eq!(
        task.train.class_names(),
        &["T-shirt/top".to_string(), "Trouser".to_string()]
    );
    let d = task
        .train
        .downsample(10_000, &mut ChaCha20Rng::seed_from_u64(0))
        .unwrap();
    assert_eq!(d.len(), 10_000);
    // Hypergeometric: 6,000 of 12,000 are class 0, so the count of class 0 has
    // mean 5,000 and sd sqrt(10000·0.5·0.5·2000/11999) ≈ 20.4; 5 sd ≈ 102.
    let h = d.class_histogram();
    assert!((h[0] as i64 - 5_000).abs() < 102, "{h:?}");
}
