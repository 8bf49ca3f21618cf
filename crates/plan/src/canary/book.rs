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
    check_header(path, lines.next(), kinds)?;
    let mut out = Vec::new();
    for (i, line) in lines.enumerate() {
        let mut scores = Vec::with_capacity(kinds.len());
        let head = parse_row(path, i + 2, line, kinds.len(), &mut scores)?;
        out.push(ScoreRow {
            run: head.run,
            canary: head.canary,
            member: head.member,
            test_accuracy: head.test_accuracy,
            scores,
        });
    }
    Ok(out)
}

/// `header` (the first line of a file, `None` for an empty one) must be
/// [`csv_header`] of `kinds`; the error names the file and line 1.
pub fn check_header(path: &Path, header: Option<&str>, kinds: &[ScoreKind]) -> Result<()> {
    let header = header.unwrap_or_default();
    if header == csv_header(kinds) {
        return Ok(());
    }
    Err(bad(
        path,
        1,
        format!(
            "header `{}` does not match this experiment's `{}`",
            excerpt(header.as_bytes()),
            csv_header(kinds)
        ),
    ))
}

/// The fields of a row before its scores.
struct RowHead {
    run: u64,
    canary: usize,
    member: bool,
    test_accuracy: f64,
}

/// Line `n` of `path`, a row of `k` scores: its first fields, and its scores
/// into `scores` (cleared first).
fn parse_row(
    path: &Path,
    n: usize,
    line: &str,
    k: usize,
    scores: &mut Vec<f64>,
) -> Result<RowHead> {
    let f: Vec<&str> = line.split(',').collect();
    if f.len() != 4 + k {
        return Err(bad(
            path,
            n,
            format!("{} fields, expected {}", f.len(), 4 + k),
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
    let head = RowHead {
        run: int(f[0], "run")?,
        canary: usize::try_from(int(f[1], "canary")?)
            .map_err(|_| bad(path, n, format!("canary `{}` is too large", f[1])))?,
        member,
        test_accuracy: num(f[3])?,
    };
    scores.clear();
    for s in &f[4..] {
        scores.push(num(s)?);
    }
    Ok(head)
}

/// Score rows as columns, as a reader hands them on (to NumPy): row `i` is
/// `run[i]`, `canary[i]`, `member[i]`, `test_accuracy[i]` and, for each
/// score `k` in config order, `scores[k][i]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScoreColumns {
    /// Run index.
    pub run: Vec<u64>,
    /// Canary index within the run.
    pub canary: Vec<usize>,
    /// The inclusion bit.
    pub member: Vec<bool>,
    /// The run's test accuracy.
    pub test_accuracy: Vec<f64>,
    /// One column per configured score, in config order.
    pub scores: Vec<Vec<f64>>,
    /// One row's scores, while it is parsed.
    row: Vec<f64>,
}

impl ScoreColumns {
    /// No rows, of `k` scores.
    pub fn new(k: usize) -> Self {
        Self {
            scores: vec![Vec::new(); k],
            ..Self::default()
        }
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.run.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.run.is_empty()
    }

    /// Append line `n` of `path`, a row as [`rows_to_csv`] writes it; the
    /// error names the file and line, and nothing is appended.
    pub fn push_line(&mut self, path: &Path, n: usize, line: &str) -> Result<()> {
        let head = parse_row(path, n, line, self.scores.len(), &mut self.row)?;
        self.run.push(head.run);
        self.canary.push(head.canary);
        self.member.push(head.member);
        self.test_accuracy.push(head.test_accuracy);
        for (column, &v) in self.scores.iter_mut().zip(&self.row) {
            column.push(v);
        }
        Ok(())
    }
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
        // As columns: the same values, one column per score.
        let mut columns = ScoreColumns::new(kinds.len());
        for (i, line) in text.lines().skip(1).enumerate() {
            columns.push_line(Path::new("x.csv"), i + 2, line).unwrap();
        }
        assert_eq!(
            (columns.run.clone(), columns.canary.clone()),
            (vec![3, 4], vec![1, 0])
        );
        assert_eq!(columns.member, vec![true, false]);
        assert_eq!(columns.test_accuracy, vec![0.1 + 0.2, 1.0]);
        assert_eq!(
            columns.scores,
            vec![vec![-1.0 / 3.0, 1e300], vec![f64::MIN_POSITIVE, -0.0]]
        );
        let e = columns
            .push_line(Path::new("x.csv"), 4, "5,0,1,0.5,1.0")
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.csv: line 4: 5 fields, expected 6"), "{e}");
        assert_eq!(columns.len(), 2, "a bad line appends nothing");
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
