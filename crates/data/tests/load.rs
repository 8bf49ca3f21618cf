//! Choosing between real files and the synthetic stand-in, and missing files.

use std::path::Path;

use dpaudit_data::idx::encode_u8;
use dpaudit_data::{load, load_dir, DataError, DatasetKind, Source};

#[test]
fn without_real_files_the_default_is_synthetic_and_says_so() {
    // CIFAR-10 and Purchase-100 have no default directory. (CIFAR-10's
    // stand-in is 60,000 images: too slow for this suite, so only Purchase-100
    // is generated here.)
    assert_eq!(DatasetKind::Cifar10.default_dir(), None);
    let s = load(DatasetKind::Purchase100, None, 4).unwrap();
    assert_eq!(s.source(), &Source::Synthetic { seed: 4 });
    assert_eq!(s.test.source(), &Source::Synthetic { seed: 4 });
    assert_eq!(s.source().label(), "synthetic");
    assert!(
        s.source().to_string().contains("SYNTHETIC"),
        "{}",
        s.source()
    );
    // Subsets keep saying so.
    assert!(s
        .train
        .select_classes(&[0, 1])
        .unwrap()
        .source()
        .is_synthetic());
    assert_eq!((s.train.len(), s.test.len()), (20_000, 5_000));
}

#[test]
fn an_explicit_directory_never_falls_back_to_synthetic() {
    let tmp = tempfile::tempdir().unwrap();
    for kind in DatasetKind::ALL {
        let err = load(kind, Some(tmp.path()), 0).unwrap_err();
        let DataError::MissingFile { path, .. } = &err else {
            panic!("{kind}: {err}")
        };
        assert!(path.starts_with(tmp.path()), "{err}");
        assert!(err.to_string().contains("dpaudit data fetch"), "{err}");
    }
}

#[test]
fn a_partial_fmnist_directory_names_the_missing_file() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("train-images-idx3-ubyte"),
        encode_u8(&[1, 28, 28], &[0; 784]),
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("train-labels-idx1-ubyte"),
        encode_u8(&[1], &[0]),
    )
    .unwrap();
    let err = load_dir(DatasetKind::Fmnist, tmp.path()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: file not found; expected one of t10k-images-idx3-ubyte.gz, t10k-images-idx3-ubyte \
             (install the Debian package dataset-fashion-mnist, or run `dpaudit data fetch fmnist --to {}`)",
            tmp.path().join("t10k-images-idx3-ubyte.gz").display(),
            tmp.path().display()
        )
    );
}

#[test]
fn a_bad_file_in_a_directory_is_named_by_its_path() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        (
            "train-images-idx3-ubyte",
            encode_u8(&[1, 28, 28], &[0; 784]),
        ),
        ("train-labels-idx1-ubyte", encode_u8(&[1], &[0])),
        ("t10k-images-idx3-ubyte", encode_u8(&[1, 28, 28], &[0; 700])), // truncated
        ("t10k-labels-idx1-ubyte", encode_u8(&[1], &[0])),
    ] {
        std::fs::write(tmp.path().join(name), bytes).unwrap();
    }
    let err = load_dir(DatasetKind::Fmnist, tmp.path()).unwrap_err();
    let DataError::Truncated { file, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(Path::new(file), tmp.path().join("t10k-images-idx3-ubyte"));
}
