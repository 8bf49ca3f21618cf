//! Fashion-MNIST (Xiao, Rasul and Vollgraf 2017) from its IDX files.
//!
//! A directory holds `train-images-idx3-ubyte`, `train-labels-idx1-ubyte`,
//! `t10k-images-idx3-ubyte` and `t10k-labels-idx1-ubyte`, each either gzipped
//! (`.gz`, as distributed and as installed by the Debian package
//! `dataset-fashion-mnist` in `/usr/share/datasets/fashion-mnist/`) or raw.
//! Images are 28×28 bytes (0 = background), stored as `[1, 28, 28]` records
//! scaled to `[0, 1]`; labels are bytes in `0..10` ([`crate::FMNIST_CLASSES`]).

use std::path::Path;

use crate::dataset::{Dataset, DatasetKind, Source, SourceFile, Splits};
use crate::error::{DataError, Result};
use crate::files::{display_name, find_one_of, maybe_gunzip, read_with_digest};
use crate::idx;

/// The four files of the dataset, without the optional `.gz` suffix:
/// (train images, train labels, test images, test labels).
pub const FILES: [&str; 4] = [
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
];

/// Image side length.
pub const SIDE: usize = 28;

/// Parses an images file (IDX, 3 dimensions `[n, 28, 28]`, gzipped or raw).
/// Returns the number of images and their pixels, image after image.
pub fn parse_images(bytes: &[u8], file: &str) -> Result<(usize, Vec<u8>)> {
    let content = maybe_gunzip(bytes, file)?;
    let a = idx::parse_u8(&content, 3, file)?;
    if a.dims[1] != SIDE || a.dims[2] != SIDE {
        return Err(DataError::WrongSize {
            file: file.to_string(),
            offset: 8,
            found: format!("images of {}×{}", a.dims[1], a.dims[2]),
            expected: format!("{SIDE}×{SIDE} images"),
        });
    }
    Ok((a.dims[0], a.data))
}

/// Parses a labels file (IDX, 1 dimension, gzipped or raw); every label must be in `0..10`.
pub fn parse_labels(bytes: &[u8], file: &str) -> Result<Vec<u8>> {
    let content = maybe_gunzip(bytes, file)?;
    let a = idx::parse_u8(&content, 1, file)?;
    if let Some((i, &l)) = a.data.iter().enumerate().find(|(_, &l)| l >= 10) {
        return Err(DataError::LabelOutOfRange {
            file: file.to_string(),
            position: crate::error::Position::Byte((idx::header_len(1) + i) as u64),
            label: i64::from(l),
            expected: "a class in 0..=9".to_string(),
        });
    }
    Ok(a.data)
}

/// Builds one split from the bytes of its images and labels files.
pub fn parse_split(
    images: &[u8],
    images_name: &str,
    labels: &[u8],
    labels_name: &str,
    source: Source,
) -> Result<Dataset> {
    let (n, pixels) = parse_images(images, images_name)?;
    let labels_u8 = parse_labels(labels, labels_name)?;
    if labels_u8.len() != n {
        return Err(DataError::CountMismatch {
            images: images_name.to_string(),
            image_count: n,
            labels: labels_name.to_string(),
            label_count: labels_u8.len(),
        });
    }
    let features = pixels.iter().map(|&p| f32::from(p) / 255.0).collect();
    let labels = labels_u8.iter().map(|&l| i64::from(l)).collect();
    Dataset::of_kind(DatasetKind::Fmnist, features, labels, source)
}

/// Whether `dir` holds at least one of the dataset's files (gzipped or raw).
pub fn any_file_in(dir: &Path) -> bool {
    FILES
        .iter()
        .any(|f| dir.join(format!("{f}.gz")).is_file() || dir.join(f).is_file())
}

/// Loads both splits from `dir`; every file must be present.
pub fn load_dir(dir: &Path) -> Result<Splits> {
    let hint = format!(
        "install the Debian package dataset-fashion-mnist, or run `dpaudit data fetch fmnist --to {}`",
        dir.display()
    );
    let mut contents = Vec::with_capacity(4);
    let mut files: Vec<SourceFile> = Vec::with_capacity(4);
    for name in FILES {
        let gz = format!("{name}.gz");
        let path = find_one_of(dir, &[&gz, name], &hint)?;
        let (bytes, file) = read_with_digest(&path)?;
        contents.push((bytes, display_name(&path)));
        files.push(file);
    }
    let source = Source::Real {
        dir: dir.to_path_buf(),
        files,
    };
    let split = |i: usize| {
        let (images, images_name) = &contents[i];
        let (labels, labels_name) = &contents[i + 1];
        parse_split(images, images_name, labels, labels_name, source.clone())
    };
    Ok(Splits {
        train: split(0)?,
        test: split(2)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::idx::encode_u8;

    #[test]
    fn parses_a_tiny_split() {
        let images = encode_u8(&[2, 28, 28], &[255u8; 2 * 784]);
        let labels = encode_u8(&[2], &[9, 0]);
        let d = parse_split(&images, "i", &labels, "l", Source::Synthetic { seed: 0 }).unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(d.shape(), &[1, 28, 28]);
        assert_eq!(d.labels(), &[9, 0]);
        assert!(d.features().iter().all(|&x| x == 1.0));
    }

    #[test]
    fn label_out_of_range_names_its_byte_offset() {
        let labels = encode_u8(&[3], &[1, 10, 2]);
        let err = parse_labels(&labels, "train-labels").unwrap_err();
        assert_eq!(
            err.to_string(),
            "train-labels: label 10 out of range at byte offset 9: expected a class in 0..=9"
        );
    }

    #[test]
    fn wrong_image_size_and_count_mismatch_are_errors() {
        let images = encode_u8(&[1, 32, 32], &[0u8; 1024]);
        assert!(matches!(
            parse_images(&images, "i"),
            Err(DataError::WrongSize { .. })
        ));
        let images = encode_u8(&[2, 28, 28], &[0u8; 2 * 784]);
        let labels = encode_u8(&[3], &[0, 1, 2]);
        let err =
            parse_split(&images, "i", &labels, "l", Source::Synthetic { seed: 0 }).unwrap_err();
        assert_eq!(
            err.to_string(),
            "i holds 2 images but l holds 3 labels; expected the same count"
        );
    }

    #[test]
    fn missing_directory_is_a_missing_file_error() {
        let err = load_dir(Path::new("/nonexistent/dpaudit")).unwrap_err();
        assert!(matches!(err, DataError::MissingFile { .. }), "{err}");
        assert!(
            err.to_string().contains("train-images-idx3-ubyte.gz"),
            "{err}"
        );
    }
}
