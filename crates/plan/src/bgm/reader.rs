//! A BGM out-dir's merged files read back for analysis (`dpaudit.runs` in
//! Python, through the binding): `scores.csv` and `counts.csv` as
//! [`runner`](super::runner)'s finalization writes them, parsed into
//! columns. Errors name the file and line; the checks of the rows against
//! the settings and the units are the caller's. Long reads ask an
//! [`Interrupt`] every [`LINES_PER_CHECK`] lines.

use std::path::Path;

use dpaudit_audit::interrupt::Interrupt;
use dpaudit_data::files::excerpt;
use dpaudit_store::StoreError;

use crate::error::{PlanError, Result};

/// The header of `scores.csv`.
pub const SCORES_HEADER: &str = "setting,run,with_target,without_target";

/// The header of `counts.csv`.
pub const COUNTS_HEADER: &str = "setting,stream,bucket,cut,with_target,without_target";

/// The streams of `counts.csv`, by their index in [`CountColumns::stream`].
pub const STREAMS: [&str; 2] = ["selection", "evaluation"];

/// Lines parsed between two questions to the [`Interrupt`].
pub const LINES_PER_CHECK: usize = 1 << 16;

/// `scores.csv`: one row per run of each scores-mode setting.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScoreColumns {
    /// The setting's index.
    pub setting: Vec<u64>,
    /// The run's index within its setting.
    pub run: Vec<u64>,
    /// log Λ of the run on D (the target in).
    pub with_target: Vec<f64>,
    /// log Λ of the run on D′.
    pub without_target: Vec<f64>,
}

/// `counts.csv`: one row per bucket of each counts-mode setting's streams.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CountColumns {
    /// The setting's index.
    pub setting: Vec<u64>,
    /// The stream, an index into [`STREAMS`].
    pub stream: Vec<u8>,
    /// The bucket of the fixed grid.
    pub bucket: Vec<i64>,
    /// The score at which "member iff above this bucket" cuts.
    pub cut: Vec<f64>,
    /// Runs with the target in this bucket.
    pub with_target: Vec<u64>,
    /// Runs without the target in this bucket.
    pub without_target: Vec<u64>,
}

/// The body lines of `text` (the file at `path`) after its header, which
/// must be `header`, numbered from 2, each split at its commas into
/// `fields` fields, handed to `row`.
fn rows(
    path: &Path,
    text: &str,
    header: &str,
    fields: usize,
    interrupt: &Interrupt<'_>,
    mut row: impl FnMut(&dyn Fn(String) -> PlanError, &[&str]) -> Result<()>,
) -> Result<()> {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    if first != header {
        return Err(bad(
            path,
            1,
            format!(
                "header `{}`, expected `{header}`; the file was edited or damaged",
                excerpt(first.as_bytes())
            ),
        ));
    }
    let mut f = Vec::with_capacity(fields);
    for (i, line) in lines.enumerate() {
        if i % LINES_PER_CHECK == LINES_PER_CHECK - 1 {
            interrupt
                .check("reading the out-dir")
                .map_err(|source| PlanError::Audit {
                    context: path.display().to_string(),
                    source,
                })?;
        }
        let n = i + 2;
        f.clear();
        f.extend(line.split(','));
        if f.len() != fields {
            return Err(bad(
                path,
                n,
                format!(
                    "{} fields, expected {fields}; the file was edited or damaged",
                    f.len()
                ),
            ));
        }
        row(&|reason| bad(path, n, reason), &f)?;
    }
    Ok(())
}

fn bad(path: &Path, line: usize, reason: String) -> PlanError {
    PlanError::Store(StoreError::Inconsistent {
        path: path.to_path_buf(),
        reason: format!("line {line}: {reason}"),
    })
}

/// `s` as a `T`, or the error `what` `s` is not `expected`.
fn field<T: std::str::FromStr>(
    s: &str,
    what: &str,
    expected: &str,
    bad: &dyn Fn(String) -> PlanError,
) -> Result<T> {
    s.parse().map_err(|_| {
        bad(format!(
            "{what} `{}` is not {expected}; the file was edited or damaged",
            excerpt(s.as_bytes())
        ))
    })
}

/// `scores.csv` ([`SCORES_HEADER`]), read from `text`, the file at `path`.
pub fn scores_from_csv(path: &Path, text: &str, interrupt: &Interrupt<'_>) -> Result<ScoreColumns> {
    let mut out = ScoreColumns::default();
    rows(path, text, SCORES_HEADER, 4, interrupt, |bad, f| {
        let setting = field(f[0], "setting", "a non-negative integer", bad)?;
        let run = field(f[1], "run", "a non-negative integer", bad)?;
        let with_target = field(f[2], "with_target", "a number", bad)?;
        let without_target = field(f[3], "without_target", "a number", bad)?;
        out.setting.push(setting);
        out.run.push(run);
        out.with_target.push(with_target);
        out.without_target.push(without_target);
        Ok(())
    })?;
    Ok(out)
}

/// `counts.csv` ([`COUNTS_HEADER`]), read from `text`, the file at `path`.
pub fn counts_from_csv(path: &Path, text: &str, interrupt: &Interrupt<'_>) -> Result<CountColumns> {
    let mut out = CountColumns::default();
    rows(path, text, COUNTS_HEADER, 6, interrupt, |bad, f| {
        let setting = field(f[0], "setting", "a non-negative integer", bad)?;
        let stream = STREAMS.iter().position(|s| *s == f[1]).ok_or_else(|| {
            bad(format!(
                "stream `{}` is not {} or {}; the file was edited or damaged",
                excerpt(f[1].as_bytes()),
                STREAMS[0],
                STREAMS[1]
            ))
        })?;
        let bucket = field(f[2], "bucket", "an integer", bad)?;
        let cut = field(f[3], "cut", "a number", bad)?;
        let with_target = field(f[4], "with_target", "a non-negative integer", bad)?;
        let without_target = field(f[5], "without_target", "a non-negative integer", bad)?;
        out.setting.push(setting);
        out.stream.push(stream as u8);
        out.bucket.push(bucket);
        out.cut.push(cut);
        out.with_target.push(with_target);
        out.without_target.push(without_target);
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> &'static Path {
        Path::new("x.csv")
    }

    #[test]
    fn scores_read_back_bit_for_bit_and_errors_name_the_line() {
        // As the runner writes them: `{w:?}`.
        let values = [0.1 + 0.2, -1e-300, f64::MAX, -0.0, 1e16, f64::INFINITY];
        let mut text = format!("{SCORES_HEADER}\n");
        for (i, w) in values.iter().enumerate() {
            text.push_str(&format!("{},{i},{w:?},{:?}\n", i / 3, -w));
        }
        let s = scores_from_csv(p(), &text, &Interrupt::NEVER).unwrap();
        assert_eq!(
            (s.setting, s.run),
            (vec![0, 0, 0, 1, 1, 1], vec![0, 1, 2, 3, 4, 5])
        );
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&s.with_target), bits(&values));
        assert_eq!(
            bits(&s.without_target),
            bits(&values.map(|w| -w)),
            "the sign of zero kept"
        );
        let e = scores_from_csv(p(), &text.replacen("0,1,", "0,-1,", 1), &Interrupt::NEVER)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x.csv: line 3: run `-1` is not a non-negative integer"),
            "{e}"
        );
        let e = scores_from_csv(p(), &text.replacen("\n1,", "\n1,x,", 1), &Interrupt::NEVER)
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.csv: line 5: 5 fields, expected 4"), "{e}");
        let e = scores_from_csv(p(), "setting,run\n", &Interrupt::NEVER)
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.csv: line 1: header `setting,run`, expected `setting,run,with_target,without_target`"), "{e}");
        assert_eq!(
            scores_from_csv(p(), &format!("{SCORES_HEADER}\n"), &Interrupt::NEVER).unwrap(),
            ScoreColumns::default()
        );
        let nan = scores_from_csv(
            p(),
            &format!("{SCORES_HEADER}\n0,0,NaN,{:?}\n", f64::NAN),
            &Interrupt::NEVER,
        )
        .unwrap();
        assert!(nan.with_target[0].is_nan() && nan.without_target[0].is_nan());
    }

    #[test]
    fn counts_read_back_and_errors_name_the_line() {
        let text =
            format!("{COUNTS_HEADER}\n0,selection,-3,-0.25,10,0\n0,evaluation,7,1.75,0,12\n");
        let c = counts_from_csv(p(), &text, &Interrupt::NEVER).unwrap();
        assert_eq!(c.setting, vec![0, 0]);
        assert_eq!(c.stream, vec![0, 1]);
        assert_eq!(c.bucket, vec![-3, 7]);
        assert_eq!(c.cut, vec![-0.25, 1.75]);
        assert_eq!(
            (c.with_target, c.without_target),
            (vec![10, 0], vec![0, 12])
        );
        let e = counts_from_csv(p(), &text.replace("evaluation", "eval"), &Interrupt::NEVER)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x.csv: line 3: stream `eval` is not selection or evaluation"),
            "{e}"
        );
        let e = counts_from_csv(p(), &text.replace(",10,", ",1.5,"), &Interrupt::NEVER)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x.csv: line 2: with_target `1.5` is not a non-negative integer"),
            "{e}"
        );
        let e = counts_from_csv(p(), &text.replace(",7,", ",7.5,"), &Interrupt::NEVER)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x.csv: line 3: bucket `7.5` is not an integer"),
            "{e}"
        );
    }

    #[test]
    fn a_stop_ends_a_long_read() {
        let mut text = format!("{SCORES_HEADER}\n");
        for i in 0..LINES_PER_CHECK {
            text.push_str(&format!("0,{i},1.0,2.0\n"));
        }
        let stop = || true;
        let e = scores_from_csv(p(), &text, &Interrupt::new(&stop)).unwrap_err();
        assert!(
            matches!(
                e,
                PlanError::Audit {
                    source: dpaudit_audit::AuditError::Interrupted { .. },
                    ..
                }
            ),
            "{e}"
        );
    }
}
