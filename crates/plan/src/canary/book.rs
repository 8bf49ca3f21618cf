//! The score book: one row per canary of a run, as stored in chunk files and
//! `scores.csv` (CSV, floats in Rust's shortest round-trip form, so a file
//! read back gives the same bits).

use std::path::Path;

use dpaudit_data::files::excerpt;

use crate::canary::canaries::ScoreKind;

use crate::error::{PlanError, Result};
use dpaudit_store::StoreError;

/// One canary of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreRow {
    /// Run index.
    pub run: u64,
    /// Canary index within the run.
    pub canary: usize,
    /// The inclusion bit.
    pub member: bool,
    /// The run's test accuracy.
    pub test_accuracy: f64,
    /// One value per configured score, in config order.
    pub scores: Vec<f64>,
}

/// The CSV header for these scores.
pub fn csv_header(kinds: &[ScoreKind]) -> String {
    let mut h = String::from("run,canary,member,test_accuracy");
    for k in kinds {
        h.push(',');
        h.push_str(k.name());
    }
    h
}

/// Rows as CSV.
pub fn rows_to_csv(kinds: &[ScoreKind], rows: &[ScoreRow]) -> String {
    let mut s = csv_header(kinds);
    s.push('\n');
    for r in rows {
        s.push_str(&format!(
            "{},{},{},{}",
            r.run,
            r.canary,
            u8::from(r.member),
            r.test_accuracy
        ));
        for v in &r.scores {
            s.push_str(&format!(",{v}"));
        }
        s.push('\n');
    }
    s
}

fn bad(path: &Path, line: usize, reason: String) -> PlanError {
    PlanError::Store(StoreError::Inconsistent {
        path: path.to_path_buf(),
        reason: format!("line {line}: {reason}"),
    })
}

/// Parse rows written by [`rows_to_csv`]; errors name the file and line.
pub fn rows_from_csv(path: &Path, text: &str, kinds: &[ScoreKind]) -> Result<Vec<ScoreRow>> {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    if header != csv_header(kinds) {
        return Err(bad(
            path,
            1,
            format!(
                "header `{}` does not match this experiment's `{}`",
                excerpt(header.as_bytes()),
                csv_header(kinds)
            ),
        ));
    }
    let mut out = Vec::new();
    for (i, line) in lines.enumerate() {
        let n = i + 2;
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 4 + kinds.len() {
            return Err(bad(
                path,
                n,
                format!("{} fields, expected {}", f.len(), 4 + kinds.len()),
            ));
        }
        let member = match f[2] {
            "1" => true,
            "0" => false,
            other => {
                return Err(bad(
                    path,
                    n,
                    format!("member `{}`, expected 1 or 0", excerpt(other.as_bytes())),
                ))
            }
        };
        let num = |s: &str| -> Result<f64> {
            s.parse::<f64>().map_err(|_| {
                bad(
                    path,
                    n,
                    format!("`{}` is not a number", excerpt(s.as_bytes())),
                )
            })
        };
        let int = |s: &str, what: &str| -> Result<u64> {
            s.parse::<u64>().map_err(|_| {
                bad(
                    path,
                    n,
                    format!(
                        "{what} `{}` is not a non-negative integer",
                        excerpt(s.as_bytes())
                    ),
                )
            })
        };
        out.push(ScoreRow {
            run: int(f[0], "run")?,
            canary: int(f[1], "canary")? as usize,
            member,
            test_accuracy: num(f[3])?,
            scores: f[4..].iter().map(|s| num(s)).collect::<Result<_>>()?,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_bit_for_bit_and_errors_name_the_line() {
        let kinds = [ScoreKind::Dirac, ScoreKind::Loss];
        let rows = vec![
            ScoreRow {
                run: 3,
                canary: 1,
                member: true,
                test_accuracy: 0.1 + 0.2,
                scores: vec![-1.0 / 3.0, f64::MIN_POSITIVE],
            },
            ScoreRow {
                run: 4,
                canary: 0,
                member: false,
                test_accuracy: 1.0,
                scores: vec![1e300, -0.0],
            },
        ];
        let text = rows_to_csv(&kinds, &rows);
        let back = rows_from_csv(Path::new("x.csv"), &text, &kinds).unwrap();
        assert_eq!(back, rows);
        let e = rows_from_csv(
            Path::new("x.csv"),
            &text.replace("3,1,1,", "3,1,2,"),
            &kinds,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("x.csv") && e.contains("line 2") && e.contains("member"),
            "{e}"
        );
        let e = rows_from_csv(Path::new("x.csv"), &text, &kinds[..1])
            .unwrap_err()
            .to_string();
        assert!(e.contains("header"), "{e}");
        // A file with another line end is one long header line: quoted cut.
        let e = rows_from_csv(
            Path::new("x.csv"),
            &text.replace('\n', "\r").repeat(1000),
            &kinds,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("header") && e.len() < 400, "{e}");
    }
}
