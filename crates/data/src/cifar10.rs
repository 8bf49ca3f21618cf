//! CIFAR-10 (Krizhevsky 2009), binary version.
//!
//! Each batch file is a sequence of 3073-byte records: one label byte in
//! `0..10` ([`crate::CIFAR10_CLASSES`]), then 3072 pixel bytes: the 1024 red
//! values of the 32×32 image in row-major order, then the 1024 green, then the
//! 1024 blue ("Binary version" on the CIFAR page). That is already the
//! `[3, 32, 32]` channel-major layout of [`crate::Dataset`]; pixels are scaled
//! to `[0, 1]`. Training records are `data_batch_1.bin` .. `data_batch_5.bin`
//! in that order, test records `test_batch.bin`. A directory may hold them
//! directly or in the `cifar-10-batches-bin/` folder of the official archive.

use std::path::{Path, PathBuf};

use crate::dataset::{Dataset, DatasetKind, Source, SourceFile, Splits};
use crate::error::{DataError, Position, Result};
use crate::files::{display_name, read_with_digest};

/// Bytes per record: 1 label byte and 3 × 32 × 32 pixel bytes.
pub const RECORD_BYTES: usize = 1 + PIXELS;
/// Pixel bytes per record.
pub const PIXELS: usize = 3 * 32 * 32;
/// Training batch files, in order.
pub const TRAIN_FILES: [&str; 5] = [
    "data_batch_1.bin",
    "data_batch_2.bin",
    "data_batch_3.bin",
    "data_batch_4.bin",
    "data_batch_5.bin",
];
/// The test batch file.
pub const TEST_FILE: &str = "test_batch.bin";
/// The folder the official archive unpacks to.
pub const ARCHIVE_DIR: &str = "cifar-10-batches-bin";

/// Parses one batch file. Returns the labels and the pixels, record after record.
pub fn parse_batch(bytes: &[u8], file: &str) -> Result<(Vec<u8>, Vec<u8>)> {
    if bytes.is_empty() {
        return Err(DataError::Truncated {
            file: file.to_string(),
            offset: 0,
            expected: format!(
                "at least one {RECORD_BYTES}-byte record (1 label byte + {PIXELS} pixel bytes)"
            ),
        });
    }
    let whole = bytes.len() / RECORD_BYTES * RECORD_BYTES;
    if whole != bytes.len() {
        return Err(DataError::Truncated {
            file: file.to_string(),
            offset: bytes.len() as u64,
            expected: format!(
                "a whole number of {RECORD_BYTES}-byte records; the last record starts at byte offset {whole} \
                 and has only {} bytes",
                bytes.len() - whole
            ),
        });
    }
    let n = bytes.len() / RECORD_BYTES;
    let mut labels = Vec::with_capacity(n);
    let mut pixels = Vec::with_capacity(n * PIXELS);
    for (i, record) in bytes.chunks_exact(RECORD_BYTES).enumerate() {
        let label = record[0];
        if label >= 10 {
            return Err(DataError::LabelOutOfRange {
                file: file.to_string(),
                position: Position::Byte((i * RECORD_BYTES) as u64),
                label: i64::from(label),
                expected: format!("a class in 0..=9 as the first byte of record {i}"),
            });
        }
        labels.push(label);
        pixels.extend_from_slice(&record[1..]);
    }
    Ok((labels, pixels))
}

/// The directory that holds the batch files: `dir` itself or `dir/cifar-10-batches-bin`.
pub fn batches_dir(dir: &Path) -> PathBuf {
    let nested = dir.join(ARCHIVE_DIR);
    if !dir.join(TRAIN_FILES[0]).is_file() && nested.join(TRAIN_FILES[0]).is_file() {
        nested
    } else {
        dir.to_path_buf()
    }
}

/// Loads both splits from `dir` (or `dir/cifar-10-batches-bin`); every file must be present.
pub fn load_dir(dir: &Path) -> Result<Splits> {
    let dir = batches_dir(dir);
    let hint = format!("run `dpaudit data fetch cifar10 --to {}`", dir.display());
    let mut files: Vec<SourceFile> = Vec::new();
    let mut read_split = |names: &[&str]| -> Result<(Vec<f32>, Vec<i64>)> {
        let mut features = Vec::new();
        let mut labels = Vec::new();
        for name in names {
            let path = dir.join(name);
            if !path.is_file() {
                return Err(DataError::MissingFile {
                    path,
                    expected: format!("the CIFAR-10 binary batch {name}"),
                    hint: hint.clone(),
                });
            }
            let (bytes, file) = read_with_digest(&path)?;
            let (l, p) = parse_batch(&bytes, &display_name(&path))?;
            labels.extend(l.iter().map(|&x| i64::from(x)));
            features.extend(p.iter().map(|&x| f32::from(x) / 255.0));
            files.push(file);
        }
        Ok((features, labels))
    };
    let train = read_split(&TRAIN_FILES)?;
    let test = read_split(&[TEST_FILE])?;
    let source = Source::Real {
        dir: dir.clone(),
        files,
    };
    let kind = DatasetKind::Cifar10;
    let make = |(features, labels): (Vec<f32>, Vec<i64>)| {
        Dataset::of_kind(kind, features, labels, source.clone())
    };
    Ok(Splits {
        train: make(train)?,
        test: make(test)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(label: u8, fill: u8) -> Vec<u8> {
        let mut r = vec![label];
        r.extend(std::iter::repeat_n(fill, PIXELS));
        r
    }

    #[test]
    fn parses_records_in_order() {
        let mut bytes = record(3, 255);
        bytes.extend(record(9, 0));
        let (labels, pixels) = parse_batch(&bytes, "b").unwrap();
        assert_eq!(labels, vec![3, 9]);
        assert_eq!(pixels.len(), 2 * PIXELS);
        assert!(
            pixels[..PIXELS].iter().all(|&p| p == 255) && pixels[PIXELS..].iter().all(|&p| p == 0)
        );
    }

    #[test]
    fn partial_record_and_bad_label_are_errors() {
        let mut bytes = record(3, 1);
        bytes.extend(record(10, 1));
        let err = parse_batch(&bytes, "data_batch_1.bin").unwrap_err();
        assert_eq!(
            err.to_string(),
            "data_batch_1.bin: label 10 out of range at byte offset 3073: \
             expected a class in 0..=9 as the first byte of record 1"
        );
        let err = parse_batch(&bytes[..4000], "b").unwrap_err();
        assert!(
            matches!(err, DataError::Truncated { offset: 4000, .. }),
            "{err}"
        );
        assert!(
            err.to_string().contains("starts at byte offset 3073"),
            "{err}"
        );
        assert!(parse_batch(&[], "b").is_err());
    }
}
