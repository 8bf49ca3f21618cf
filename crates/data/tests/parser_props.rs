//! Property tests: every parser, fed random or truncated bytes, returns an
//! error and never panics.

use std::io::Write;

use dpaudit_data::files::maybe_gunzip;
use dpaudit_data::idx::{encode_u8, parse_u8};
use dpaudit_data::purchase::{self, LabelBase};
use dpaudit_data::{cifar10, fmnist, DataError};
use flate2::write::GzEncoder;
use proptest::prelude::*;

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// A valid Fashion-MNIST images file of `n` images.
fn images(n: u32, fill: u8) -> Vec<u8> {
    encode_u8(&[n, 28, 28], &vec![fill; n as usize * 784])
}

fn purchase_text(labels: &[i64], seed: u8) -> Vec<u8> {
    let features: Vec<f32> = (0..labels.len() * 600)
        .map(|i| ((i as u8 ^ seed) % 3 == 0) as u8 as f32)
        .collect();
    purchase::encode(labels, &features, LabelBase::OneBased).into_bytes()
}

/// Every parser on the same bytes; the point is that none panics.
fn run_all(bytes: &[u8]) {
    let _ = maybe_gunzip(bytes, "x");
    let _ = parse_u8(bytes, 1, "x");
    let _ = parse_u8(bytes, 3, "x");
    let _ = fmnist::parse_images(bytes, "x");
    let _ = fmnist::parse_labels(bytes, "x");
    let _ = cifar10::parse_batch(bytes, "x");
    for base in [LabelBase::Detect, LabelBase::ZeroBased, LabelBase::OneBased] {
        let _ = purchase::parse(bytes, "x", base);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        run_all(&bytes);
    }

    #[test]
    fn random_bytes_with_valid_headers_never_panic(
        ndims in 1u8..4,
        dims in proptest::collection::vec(any::<u32>(), 3),
        tail in proptest::collection::vec(any::<u8>(), 0..2048),
        gzipped in any::<bool>(),
    ) {
        let mut bytes = vec![0, 0, 8, ndims];
        for d in &dims[..ndims as usize] {
            bytes.extend_from_slice(&d.to_be_bytes());
        }
        bytes.extend(tail);
        let bytes = if gzipped { gz(&bytes) } else { bytes };
        run_all(&bytes);
    }

    #[test]
    fn corrupted_valid_files_never_panic(
        which in 0usize..4,
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let mut bytes = match which {
            0 => images(2, 9),
            1 => gz(&images(2, 9)),
            2 => cifar10_batch(&[1, 2, 3]),
            _ => purchase_text(&[100, 3], 1),
        };
        for (i, b) in flips {
            let i = i.index(bytes.len());
            bytes[i] = b;
        }
        run_all(&bytes);
    }

    #[test]
    fn truncated_idx_is_an_error(n in 1u32..4, fill in any::<u8>(), cut in any::<prop::sample::Index>()) {
        let full = images(n, fill);
        let cut = cut.index(full.len()); // strictly shorter than the file
        prop_assert!(fmnist::parse_images(&full[..cut], "x").is_err());
        let labels = encode_u8(&[n], &vec![3; n as usize]);
        let cut_l = cut % labels.len();
        prop_assert!(fmnist::parse_labels(&labels[..cut_l], "x").is_err());
    }

    #[test]
    fn truncated_gzip_is_an_error(n in 1u32..4, fill in any::<u8>(), cut in any::<prop::sample::Index>()) {
        let full = gz(&images(n, fill));
        let cut = cut.index(full.len());
        let err = fmnist::parse_images(&full[..cut], "x").unwrap_err();
        prop_assert!(err.to_string().starts_with("x: "), "error does not name the file: {}", err);
    }

    #[test]
    fn truncated_cifar_is_an_error_unless_at_a_record_boundary(
        labels in proptest::collection::vec(0u8..10, 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let full = cifar10_batch(&labels);
        let cut = cut.index(full.len());
        let result = cifar10::parse_batch(&full[..cut], "x");
        if cut > 0 && cut % cifar10::RECORD_BYTES == 0 {
            prop_assert_eq!(result.unwrap().0.len(), cut / cifar10::RECORD_BYTES);
        } else {
            prop_assert!(result.is_err());
        }
    }

    #[test]
    fn truncated_purchase_is_an_error_inside_a_line(
        labels in proptest::collection::vec(1i64..=100, 1..4),
        seed in any::<u8>(),
        cut in any::<prop::sample::Index>(),
    ) {
        // The explicit base keeps the check about truncation, not label detection.
        let full = purchase_text(&labels, seed);
        let cut = cut.index(full.len());
        let result = purchase::parse(&full[..cut], "x", LabelBase::OneBased);
        let inside_a_line = cut > 0 && full[cut - 1] != b'\n' && full[cut] != b'\n';
        if inside_a_line {
            prop_assert!(result.is_err());
        } else if cut > 0 {
            let lines = full[..cut].iter().filter(|&&b| b == b'\n').count() + usize::from(full[cut] == b'\n');
            prop_assert_eq!(result.unwrap().labels.len(), lines);
        } else {
            let is_empty = matches!(result, Err(DataError::Empty { .. }));
            prop_assert!(is_empty, "empty input gave {:?}", result);
        }
    }
}

fn cifar10_batch(labels: &[u8]) -> Vec<u8> {
    labels
        .iter()
        .flat_map(|&l| std::iter::once(l).chain((0..3072).map(move |i| (i as u8) ^ l)))
        .collect()
}

#[test]
fn errors_name_the_file() {
    let err = fmnist::parse_images(&images(1, 0)[..100], "train-images-idx3-ubyte").unwrap_err();
    assert_eq!(
        err.to_string(),
        "train-images-idx3-ubyte: truncated: the content ends at byte offset 100, expected 784 data bytes after the header \
         (dimensions [1, 28, 28]), found only 84"
    );
    let err = cifar10::parse_batch(&[0u8; 10], "test_batch.bin").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("test_batch.bin: truncated: the content ends at byte offset 10,"),
        "{err}"
    );
}
