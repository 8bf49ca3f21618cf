//! Purchase-100 (Shokri et al. 2017, "Membership inference attacks against
//! machine learning models"), in its commonly distributed text form.
//!
//! The file `dataset_purchase` (inside `dataset_purchase.tgz`) has one record
//! per line: the class label, then 600 binary features, comma separated
//! (601 fields). Features must be `0` or `1` (written as integers or as
//! `0.0`/`1.0`); fields may carry surrounding spaces, lines may end in `\r\n`,
//! and blank lines are skipped.
//!
//! # Labels: which base
//!
//! The distributed file labels its classes `1..=100`; re-exports often use
//! `0..=99`. [`LabelBase::Detect`] decides from the whole file:
//! a label `100` anywhere means 1-based, a label `0` anywhere means 0-based,
//! both is an error, and neither (all labels in `1..=99`) is refused as
//! ambiguous: then say which with [`LabelBase::OneBased`] or
//! [`LabelBase::ZeroBased`]. Labels are stored 0-based. There is no official
//! test split: [`load_dir`] returns every record as `train` and an empty `test`.

use std::path::Path;

use crate::dataset::{Dataset, DatasetKind, Source, Splits};
use crate::error::{DataError, Position, Result};
use crate::files::{display_name, read_with_digest};

/// Features per record.
pub const FEATURES: usize = 600;
/// Number of classes.
pub const CLASSES: usize = 100;
/// The file name inside the distributed archive.
pub const FILE: &str = "dataset_purchase";

/// How class labels are numbered in the file (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LabelBase {
    /// Decide from the whole file.
    #[default]
    Detect,
    /// Labels are `0..=99`.
    ZeroBased,
    /// Labels are `1..=100`, as distributed by Shokri et al.
    OneBased,
}

/// Parsed records: 0-based labels and features, record after record.
#[derive(Debug, Clone, PartialEq)]
pub struct Records {
    /// Class of each record, in `0..100`.
    pub labels: Vec<i64>,
    /// `labels.len() * 600` values, each 0 or 1.
    pub features: Vec<f32>,
    /// The base the labels were read in (never `Detect`).
    pub base: LabelBase,
}

/// Parses the text form. `file` names the source in errors.
pub fn parse(bytes: &[u8], file: &str, base: LabelBase) -> Result<Records> {
    let mut labels: Vec<(i64, usize)> = Vec::new();
    let mut features = Vec::new();
    for (i, raw_line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line_no = i + 1;
        let line = raw_line.strip_suffix(b"\r").unwrap_or(raw_line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let field_count = line.iter().filter(|&&b| b == b',').count() + 1;
        if field_count != FEATURES + 1 {
            return Err(DataError::FieldCount {
                file: file.to_string(),
                line: line_no,
                found: field_count,
                expected: FEATURES + 1,
            });
        }
        for (j, field) in line.split(|&b| b == b',').enumerate() {
            let text = std::str::from_utf8(field).map(str::trim);
            let bad = |expected: &str| DataError::Parse {
                file: file.to_string(),
                line: line_no,
                field: j + 1,
                found: crate::files::excerpt(field),
                expected: expected.to_string(),
            };
            if j == 0 {
                let label = text.ok().and_then(|t| t.parse::<i64>().ok());
                let Some(label) = label else {
                    return Err(bad("an integer class label (1..=100 or 0..=99)"));
                };
                labels.push((label, line_no));
            } else {
                let value = text.ok().and_then(|t| t.parse::<f32>().ok());
                match value {
                    Some(v) if v == 0.0 || v == 1.0 => features.push(v),
                    _ => return Err(bad("a binary feature, 0 or 1")),
                }
            }
        }
    }
    if labels.is_empty() {
        return Err(DataError::Empty {
            file: file.to_string(),
            expected: format!("lines of a label and {FEATURES} binary features"),
        });
    }
    let base = resolve_base(&labels, file, base)?;
    let offset = if base == LabelBase::OneBased { 1 } else { 0 };
    let labels = labels.iter().map(|&(l, _)| l - offset).collect();
    Ok(Records {
        labels,
        features,
        base,
    })
}

/// Applies the rule of the module docs and checks every label against the chosen range.
fn resolve_base(labels: &[(i64, usize)], file: &str, base: LabelBase) -> Result<LabelBase> {
    let first = |value: i64| {
        labels
            .iter()
            .find(|&&(l, _)| l == value)
            .map(|&(_, line)| line)
    };
    let base = match base {
        LabelBase::Detect => match (first(0), first(CLASSES as i64)) {
            (Some(zero), Some(hundred)) => {
                return Err(DataError::LabelOutOfRange {
                    file: file.to_string(),
                    position: Position::Line(zero.max(hundred)),
                    label: if zero > hundred { 0 } else { CLASSES as i64 },
                    expected: format!(
                        "labels all in 1..=100 or all in 0..=99, but line {zero} has label 0 \
                         and line {hundred} has label 100"
                    ),
                })
            }
            (None, Some(_)) => LabelBase::OneBased,
            (Some(_), None) => LabelBase::ZeroBased,
            (None, None) => {
                // Out-of-range labels are reported as such before ambiguity.
                check_range(labels, file, 1, CLASSES as i64, "1..=100 or 0..=99")?;
                return Err(DataError::LabelOutOfRange {
                    file: file.to_string(),
                    position: Position::Line(labels[0].1),
                    label: labels[0].0,
                    expected: "a file in which label 100 (1-based) or label 0 (0-based) occurs; \
                               all labels are in 1..=99, so the numbering is ambiguous: \
                               state it (label base one-based or zero-based)"
                        .to_string(),
                });
            }
        },
        explicit => explicit,
    };
    match base {
        LabelBase::OneBased => {
            check_range(labels, file, 1, CLASSES as i64, "1..=100 (1-based labels)")?
        }
        _ => check_range(
            labels,
            file,
            0,
            CLASSES as i64 - 1,
            "0..=99 (0-based labels)",
        )?,
    }
    Ok(base)
}

fn check_range(
    labels: &[(i64, usize)],
    file: &str,
    lo: i64,
    hi: i64,
    expected: &str,
) -> Result<()> {
    match labels.iter().find(|&&(l, _)| l < lo || l > hi) {
        Some(&(label, line)) => Err(DataError::LabelOutOfRange {
            file: file.to_string(),
            position: Position::Line(line),
            label,
            expected: expected.to_string(),
        }),
        None => Ok(()),
    }
}

/// Loads `dir/dataset_purchase`: every record as `train`, and an empty `test`.
pub fn load_dir(dir: &Path, base: LabelBase) -> Result<Splits> {
    let path = dir.join(FILE);
    if !path.is_file() {
        return Err(DataError::MissingFile {
            path,
            expected: format!("the Purchase-100 text file {FILE}"),
            hint: format!(
                "run `dpaudit data fetch purchase100 --to {} --sha256 HEX`",
                dir.display()
            ),
        });
    }
    let (bytes, file) = read_with_digest(&path)?;
    let records = parse(&bytes, &display_name(&path), base)?;
    let source = Source::Real {
        dir: dir.to_path_buf(),
        files: vec![file],
    };
    let kind = DatasetKind::Purchase100;
    let train = Dataset::of_kind(kind, records.features, records.labels, source.clone())?;
    let test = Dataset::of_kind(kind, Vec::new(), Vec::new(), source)?;
    Ok(Splits { train, test })
}

/// Formats records in the text form (for fixtures and tests): labels are
/// written with `base` (`Detect` means 1-based, as distributed).
pub fn encode(labels: &[i64], features: &[f32], base: LabelBase) -> String {
    let offset = if base == LabelBase::ZeroBased { 0 } else { 1 };
    let mut out = String::new();
    for (i, &l) in labels.iter().enumerate() {
        out.push_str(&(l + offset).to_string());
        for &f in &features[i * FEATURES..(i + 1) * FEATURES] {
            out.push(',');
            out.push(if f == 1.0 { '1' } else { '0' });
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(label: &str, ones: usize) -> String {
        let mut s = label.to_string();
        for j in 0..FEATURES {
            s.push_str(if j < ones { ",1" } else { ",0" });
        }
        s
    }

    #[test]
    fn detects_one_based_labels() {
        let text = format!(
            "{}\n{}\r\n\n{}\n",
            line("100", 3),
            line("1", 0),
            line(" 7 ", 600)
        );
        let r = parse(text.as_bytes(), "p", LabelBase::Detect).unwrap();
        assert_eq!(r.base, LabelBase::OneBased);
        assert_eq!(r.labels, vec![99, 0, 6]);
        assert_eq!(r.features.len(), 3 * FEATURES);
        assert_eq!(r.features[..4], [1.0, 1.0, 1.0, 0.0]);
        assert!(r.features[2 * FEATURES..].iter().all(|&f| f == 1.0));
    }

    #[test]
    fn detects_zero_based_labels() {
        let text = format!("{}\n{}\n", line("0", 1), line("99", 0));
        let r = parse(text.as_bytes(), "p", LabelBase::Detect).unwrap();
        assert_eq!((r.base, r.labels), (LabelBase::ZeroBased, vec![0, 99]));
    }

    #[test]
    fn ambiguous_and_mixed_labels_are_refused() {
        let text = format!("{}\n{}\n", line("5", 1), line("99", 0));
        let err = parse(text.as_bytes(), "p", LabelBase::Detect).unwrap_err();
        assert!(err.to_string().contains("ambiguous"), "{err}");
        let r = parse(text.as_bytes(), "p", LabelBase::OneBased).unwrap();
        assert_eq!(r.labels, vec![4, 98]);
        let text = format!("{}\n{}\n", line("0", 1), line("100", 0));
        let err = parse(text.as_bytes(), "p", LabelBase::Detect).unwrap_err();
        assert!(
            matches!(
                err,
                DataError::LabelOutOfRange {
                    position: Position::Line(2),
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn out_of_range_labels_name_their_line() {
        let text = format!("{}\n{}\n", line("100", 1), line("101", 0));
        let err = parse(text.as_bytes(), "purchase.txt", LabelBase::Detect).unwrap_err();
        assert_eq!(
            err.to_string(),
            "purchase.txt: label 101 out of range at line 2: expected 1..=100 (1-based labels)"
        );
        let text = format!("{}\n", line("100", 1));
        assert!(parse(text.as_bytes(), "p", LabelBase::ZeroBased).is_err());
        let text = format!("{}\n", line("-1", 1));
        assert!(parse(text.as_bytes(), "p", LabelBase::Detect).is_err());
    }

    #[test]
    fn non_numeric_and_non_binary_fields_are_errors() {
        let text = line("3", 0).replacen(",0", ",x", 1);
        let err = parse(
            format!("{}\n{text}\n", line("100", 0)).as_bytes(),
            "p",
            LabelBase::Detect,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "p: line 2, field 2: cannot use \"x\": expected a binary feature, 0 or 1"
        );
        let text = line("3", 0).replacen(",0", ",2", 1);
        assert!(matches!(
            parse(text.as_bytes(), "p", LabelBase::Detect),
            Err(DataError::Parse { field: 2, .. })
        ));
        let text = line("three", 0);
        assert!(matches!(
            parse(text.as_bytes(), "p", LabelBase::Detect),
            Err(DataError::Parse { field: 1, .. })
        ));
    }

    #[test]
    fn errors_quote_at_most_a_hundred_bytes_of_a_field() {
        let err = parse(
            line(&"7".repeat(100_000), 0).as_bytes(),
            "p",
            LabelBase::Detect,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.len() < 300 && err.contains("… (100000 bytes)"),
            "{}",
            &err[..err.len().min(300)]
        );
    }

    #[test]
    fn wrong_field_count_and_empty_file_are_errors() {
        let short = line("3", 0) + ",1";
        let err = parse(short.as_bytes(), "p", LabelBase::Detect).unwrap_err();
        assert_eq!(
            err.to_string(),
            "p: line 1: found 602 comma-separated fields, expected 601"
        );
        assert!(matches!(
            parse(b"\n \n", "p", LabelBase::Detect),
            Err(DataError::Empty { .. })
        ));
    }

    #[test]
    fn encode_round_trips() {
        let labels = vec![0, 99, 42];
        let features: Vec<f32> = (0..3 * FEATURES)
            .map(|i| (i % 3 == 0) as u8 as f32)
            .collect();
        for base in [LabelBase::ZeroBased, LabelBase::OneBased] {
            let r = parse(
                encode(&labels, &features, base).as_bytes(),
                "p",
                LabelBase::Detect,
            )
            .unwrap();
            assert_eq!((r.labels.clone(), r.base), (labels.clone(), base));
            assert_eq!(r.features, features);
        }
    }
}
