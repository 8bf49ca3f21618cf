//! A canary out-dir read back for analysis (`dpaudit.runs` in Python,
//! through the binding): `inclusion.csv`, and the score rows of
//! `scores.csv` or, before the experiment is finalized, of its chunks,
//! checked as [`finalize`](super::outdir::finalize) left them:
//!
//! - every chunk that is there matches its checksum and has the
//!   experiment's header;
//! - `scores.csv` is the concatenation of its chunks' rows, line for line
//!   (it has no checksum of its own, so the chunks vouch for it);
//! - the rows are every run and canary (of the chunks read) in order, and
//!   their `member` column is `inclusion.csv`;
//! - `inclusion.csv` holds the bits of the experiment's seed
//!   ([`inclusion_bits`]).
//!
//! The comparisons with the chunks and with the seed are skipped when not
//! asked for (`verify = false`, for very large out-dirs); the checksums of
//! the files read are always verified. Long reads ask an [`Interrupt`]
//! between chunks and every [`LINES_PER_CHECK`] lines.

use std::fmt::Write as _;
use std::path::Path;

use dpaudit_audit::interrupt::Interrupt;
use dpaudit_data::files::excerpt;
use dpaudit_data::seed::RunSeed;
use dpaudit_store::outdir::{read_checked, Checked};
use dpaudit_store::StoreError;

use crate::canary::book::{check_header, ScoreColumns};
use crate::canary::canaries::{inclusion_bits, ScoreKind};
use crate::canary::outdir::{chunk_file, INCLUSION_FILE, INCLUSION_HEADER};
use crate::error::{PlanError, Result};

/// The merged score rows' file.
pub const SCORES_FILE: &str = "scores.csv";

/// Lines parsed or compared between two questions to the [`Interrupt`].
pub const LINES_PER_CHECK: usize = 1 << 16;

/// Runs whose inclusion bits are drawn again between two questions to the
/// [`Interrupt`].
const RUNS_PER_CHECK: u64 = 1 << 10;

/// What the reader needs of the experiment (its manifest's `experiment`).
#[derive(Debug, Clone, Copy)]
pub struct BookShape<'a> {
    /// `audit.scores`: the score columns, in order.
    pub kinds: &'a [ScoreKind],
    /// `runs`.
    pub runs: u64,
    /// `train.replicas`: runs per chunk.
    pub replicas: u64,
    /// `canary.count`: canaries per run.
    pub count: usize,
    /// `train.seed`, which draws the inclusion bits.
    pub seed: u64,
}

impl BookShape<'_> {
    /// The number of chunks.
    pub fn chunks(&self) -> u64 {
        self.runs.div_ceil(self.replicas.max(1))
    }

    /// The runs of chunk `c`.
    fn runs_of(&self, c: u64) -> std::ops::Range<u64> {
        let start = c.saturating_mul(self.replicas).min(self.runs);
        start..start.saturating_add(self.replicas).min(self.runs)
    }
}

/// A canary out-dir's bits and score rows.
#[derive(Debug, Clone, PartialEq)]
pub struct CanaryResults {
    /// `inclusion.csv`: run `r`'s canary `c` at `r * count + c`.
    pub inclusion: Vec<bool>,
    /// `scores.csv`'s rows when it is there, else those of the chunks read,
    /// in chunk order.
    pub rows: ScoreColumns,
    /// Whether `scores.csv` is there (the experiment was finalized).
    pub finalized: bool,
    /// The chunks on disk (intact: a damaged one is an error).
    pub chunks: Vec<u64>,
    /// The chunks not on disk.
    pub missing_chunks: Vec<u64>,
}

fn inconsistent(path: &Path, reason: String) -> PlanError {
    PlanError::Store(StoreError::Inconsistent {
        path: path.to_path_buf(),
        reason,
    })
}

/// `path` as text; `Ok(None)` when it does not exist. `what` says what the
/// file holds (in the error of a file that cannot be read).
fn read_text(path: &Path, what: &'static str) -> Result<Option<String>> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|e| {
            inconsistent(
                path,
                format!("not UTF-8 text ({e}); the file was edited or damaged"),
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(PlanError::Store(StoreError::Io {
            path: path.to_path_buf(),
            action: what,
            source,
        })),
    }
}

fn ask(interrupt: &Interrupt<'_>, dir: &Path) -> Result<()> {
    interrupt
        .check("reading the out-dir")
        .map_err(|source| PlanError::Audit {
            context: dir.display().to_string(),
            source,
        })
}

/// Read the canary out-dir `dir` of the experiment `shape`. A missing
/// `inclusion.csv` is a [`StoreError::Io`] of kind `NotFound`; a missing
/// `scores.csv` or chunk is not an error (see [`CanaryResults`]); anything
/// else that does not hold (see the module's list) is a
/// [`StoreError::Inconsistent`] naming the file (and line). `verify` asks
/// for the comparisons with the chunks and the seed.
pub fn read_results(
    dir: &Path,
    shape: &BookShape<'_>,
    verify: bool,
    interrupt: Interrupt<'_>,
) -> Result<CanaryResults> {
    let inclusion = read_inclusion(dir, shape, verify, &interrupt)?;

    let scores_path = dir.join(SCORES_FILE);
    let merged = read_text(&scores_path, "reading the merged scores")?;
    let mut rows = ScoreColumns::new(shape.kinds.len());
    let mut merged_lines: Vec<&str> = Vec::new();
    if let Some(text) = &merged {
        let mut lines = text.lines();
        check_header(&scores_path, lines.next(), shape.kinds).map_err(with_damage)?;
        merged_lines = lines.collect();
        let expected = usize::try_from(shape.runs)
            .ok()
            .and_then(|r| r.checked_mul(shape.count));
        if expected != Some(merged_lines.len()) {
            return Err(inconsistent(
                &scores_path,
                format!(
                    "{} rows, expected {} × {} (runs × canaries); the file was edited or damaged",
                    merged_lines.len(),
                    shape.runs,
                    shape.count
                ),
            ));
        }
        for (i, line) in merged_lines.iter().enumerate() {
            if i % LINES_PER_CHECK == LINES_PER_CHECK - 1 {
                ask(&interrupt, dir)?;
            }
            rows.push_line(&scores_path, i + 2, line)?;
        }
    }

    let per_chunk = usize::try_from(shape.replicas)
        .unwrap_or(usize::MAX)
        .saturating_mul(shape.count);
    let (mut chunks, mut missing_chunks) = (Vec::new(), Vec::new());
    for c in 0..shape.chunks() {
        ask(&interrupt, dir)?;
        let path = dir.join(chunk_file(c));
        let body = match read_checked(&path)? {
            Checked::Missing => {
                missing_chunks.push(c);
                continue;
            }
            Checked::Damaged(why) => {
                return Err(inconsistent(
                    &path,
                    format!(
                        "damaged: {why}; the file was edited or damaged after dpaudit wrote it"
                    ),
                ))
            }
            Checked::Intact(body) => String::from_utf8(body).map_err(|_| {
                inconsistent(
                    &path,
                    "its checksum matches but it is not UTF-8 text".into(),
                )
            })?,
        };
        chunks.push(c);
        let mut lines = body.lines();
        check_header(&path, lines.next(), shape.kinds)?;
        if merged.is_some() {
            if verify {
                let start = usize::try_from(c)
                    .unwrap_or(usize::MAX)
                    .saturating_mul(per_chunk)
                    .min(merged_lines.len());
                let want =
                    &merged_lines[start..(start.saturating_add(per_chunk)).min(merged_lines.len())];
                if !lines.eq(want.iter().copied()) {
                    return Err(inconsistent(
                        &scores_path,
                        format!(
                            "differs from its checksummed chunk {}: {SCORES_FILE} was edited or damaged after \
                             dpaudit wrote it (it is the concatenation of the chunks)",
                            path.display()
                        ),
                    ));
                }
            }
        } else {
            for (i, line) in lines.enumerate() {
                if i % LINES_PER_CHECK == LINES_PER_CHECK - 1 {
                    ask(&interrupt, dir)?;
                }
                rows.push_line(&path, i + 2, line)?;
            }
        }
    }

    let source = if merged.is_some() {
        scores_path
    } else {
        dir.join("chunks")
    };
    let runs_read: Vec<u64> = if merged.is_some() {
        (0..shape.runs).collect()
    } else {
        chunks.iter().flat_map(|&c| shape.runs_of(c)).collect()
    };
    check_rows(&source, &rows, &runs_read, shape.count, &inclusion)?;
    Ok(CanaryResults {
        inclusion,
        rows,
        finalized: merged.is_some(),
        chunks,
        missing_chunks,
    })
}

/// A header error of `scores.csv`, which has no checksum: say that it was
/// edited or damaged.
fn with_damage(e: PlanError) -> PlanError {
    match e {
        PlanError::Store(StoreError::Inconsistent { path, reason }) => {
            inconsistent(&path, format!("{reason}; the file was edited or damaged"))
        }
        e => e,
    }
}

/// The bits of `inclusion.csv`
/// ([`inclusion_csv`](crate::canary::outdir::inclusion_csv)) of an experiment of
/// `runs` runs of `count` canaries, read from `text`, the file at `path`:
/// run `r`'s canary `c` at `r * count + c`. Every row must be there, in
/// order; errors name the file and line. It asks `interrupt` every
/// [`LINES_PER_CHECK`] lines.
pub fn inclusion_from_csv(
    path: &Path,
    text: &str,
    runs: u64,
    count: usize,
    interrupt: &Interrupt<'_>,
) -> Result<Vec<bool>> {
    let bad = |reason: String| {
        PlanError::Store(StoreError::Inconsistent {
            path: path.to_path_buf(),
            reason,
        })
    };
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    if header != INCLUSION_HEADER {
        return Err(bad(format!(
            "header `{}`, expected `{INCLUSION_HEADER}`",
            excerpt(header.as_bytes())
        )));
    }
    let rows = lines.clone().count();
    let expected = usize::try_from(runs)
        .ok()
        .and_then(|r| r.checked_mul(count));
    if expected != Some(rows) {
        return Err(bad(format!(
            "{rows} rows, expected {runs} × {count} (runs × canaries); the file was edited or damaged"
        )));
    }
    let mut bits = Vec::with_capacity(rows);
    let mut prefix = String::new();
    for (i, line) in lines.enumerate() {
        if i % LINES_PER_CHECK == LINES_PER_CHECK - 1 {
            ask(interrupt, path)?;
        }
        let (r, c) = (i / count, i % count);
        prefix.clear();
        // Writing into a String cannot fail.
        let _ = write!(prefix, "{r},{c},");
        let bit = line.strip_prefix(prefix.as_str()).and_then(|b| match b {
            "1" => Some(true),
            "-1" => Some(false),
            _ => None,
        });
        match bit {
            Some(b) => bits.push(b),
            None => {
                return Err(bad(format!(
                    "line {}: `{}`, expected `{r},{c},1` or `{r},{c},-1`; the file was edited or damaged",
                    i + 2,
                    excerpt(line.as_bytes())
                )))
            }
        }
    }
    Ok(bits)
}

/// `inclusion.csv` of `dir`, checked against the seed's bits when `verify`.
fn read_inclusion(
    dir: &Path,
    shape: &BookShape<'_>,
    verify: bool,
    interrupt: &Interrupt<'_>,
) -> Result<Vec<bool>> {
    let path = dir.join(INCLUSION_FILE);
    let what = "reading every canary's inclusion bit, written before training";
    let Some(text) = read_text(&path, what)? else {
        return Err(PlanError::Store(StoreError::Io {
            path,
            action: what,
            source: std::io::ErrorKind::NotFound.into(),
        }));
    };
    ask(interrupt, dir)?;
    let bits = inclusion_from_csv(&path, &text, shape.runs, shape.count, interrupt)?;
    if verify {
        let seed = RunSeed(shape.seed);
        for run in 0..shape.runs {
            if run % RUNS_PER_CHECK == 0 {
                ask(interrupt, dir)?;
            }
            let start = usize::try_from(run).unwrap_or(usize::MAX) * shape.count;
            let want = inclusion_bits(seed, run, shape.count);
            if let Some(c) = (0..shape.count).find(|&c| bits[start + c] != want[c]) {
                return Err(inconsistent(
                    &path,
                    format!(
                        "the inclusion bits differ from those of this experiment's seed {} (first at run {run}, \
                         canary {c}): the file was edited or belongs to another experiment; the audit's secret \
                         bits cannot be trusted",
                        shape.seed
                    ),
                ));
            }
        }
    }
    Ok(bits)
}

/// The rows are every canary of `runs` in order, and their member column is
/// the inclusion bits.
fn check_rows(
    source: &Path,
    rows: &ScoreColumns,
    runs: &[u64],
    count: usize,
    inclusion: &[bool],
) -> Result<()> {
    let expected = runs.iter().flat_map(|&r| (0..count).map(move |c| (r, c)));
    let in_order = rows.len() == runs.len().saturating_mul(count)
        && expected
            .zip(rows.run.iter().zip(&rows.canary))
            .all(|((r, c), (&run, &canary))| run == r && canary == c);
    if !in_order {
        return Err(inconsistent(
            source,
            "the rows are not every run and canary in order (run, canary): edited, or written by another experiment"
                .into(),
        ));
    }
    let bit = |i: usize| {
        let r = usize::try_from(rows.run[i]).unwrap_or(usize::MAX);
        inclusion[r * count + rows.canary[i]]
    };
    if let Some(i) = (0..rows.len()).find(|&i| rows.member[i] != bit(i)) {
        return Err(inconsistent(
            source,
            format!(
                "the member column differs from {INCLUSION_FILE} at run {}, canary {}: edited, or written by \
                 another experiment",
                rows.run[i], rows.canary[i]
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canary::book::{rows_to_csv, ScoreRow};
    use dpaudit_store::outdir::with_trailer;
    use std::sync::atomic::{AtomicBool, Ordering};

    const KINDS: [ScoreKind; 2] = [ScoreKind::Dirac, ScoreKind::Loss];

    fn shape() -> BookShape<'static> {
        // 5 runs of 3 canaries in chunks of 2 runs: chunks 0, 1 and a last
        // one of one run.
        BookShape {
            kinds: &KINDS,
            runs: 5,
            replicas: 2,
            count: 3,
            seed: 11,
        }
    }

    /// The rows of the runs `runs`: members from the seed's bits, scores
    /// that need all 17 digits (and a NaN, which must survive the check).
    fn rows(runs: std::ops::Range<u64>) -> Vec<ScoreRow> {
        let s = shape();
        runs.flat_map(|run| {
            inclusion_bits(RunSeed(s.seed), run, s.count)
                .into_iter()
                .enumerate()
                .map(move |(canary, member)| ScoreRow {
                    run,
                    canary,
                    member,
                    test_accuracy: 0.1 + 0.2 * run as f64,
                    scores: vec![
                        (run as f64 + 1.0) / 3.0 - canary as f64,
                        if run == 4 { f64::NAN } else { -1.0 / 7.0 },
                    ],
                })
        })
        .collect()
    }

    /// A finalized out-dir of [`shape`], as `finalize` writes it.
    fn out_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let s = shape();
        let mut inc = format!("{INCLUSION_HEADER}\n");
        for r in rows(0..s.runs) {
            inc.push_str(&format!(
                "{},{},{}\n",
                r.run,
                r.canary,
                if r.member { 1 } else { -1 }
            ));
        }
        std::fs::write(dir.path().join(INCLUSION_FILE), inc).unwrap();
        std::fs::create_dir(dir.path().join("chunks")).unwrap();
        for c in 0..s.chunks() {
            let body = rows_to_csv(&KINDS, &rows(s.runs_of(c)));
            std::fs::write(
                dir.path().join(chunk_file(c)),
                with_trailer(body.as_bytes()),
            )
            .unwrap();
        }
        let merged = rows_to_csv(&KINDS, &rows(0..s.runs));
        std::fs::write(dir.path().join(SCORES_FILE), merged).unwrap();
        dir
    }

    fn read(dir: &Path, verify: bool) -> Result<CanaryResults> {
        read_results(dir, &shape(), verify, Interrupt::NEVER)
    }

    fn error(dir: &Path, verify: bool) -> String {
        read(dir, verify).unwrap_err().to_string()
    }

    /// `columns` as rows again.
    fn as_rows(columns: &ScoreColumns) -> Vec<ScoreRow> {
        (0..columns.len())
            .map(|i| ScoreRow {
                run: columns.run[i],
                canary: columns.canary[i],
                member: columns.member[i],
                test_accuracy: columns.test_accuracy[i],
                scores: columns.scores.iter().map(|s| s[i]).collect(),
            })
            .collect()
    }

    /// Rows equal bit for bit (NaN included).
    fn same(a: &[ScoreRow], b: &[ScoreRow]) -> bool {
        let bits = |r: &ScoreRow| {
            let mut v = vec![
                r.run,
                r.canary as u64,
                u64::from(r.member),
                r.test_accuracy.to_bits(),
            ];
            v.extend(r.scores.iter().map(|s| s.to_bits()));
            v
        };
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| bits(x) == bits(y))
    }

    #[test]
    fn a_finalized_out_dir_reads_back_bit_for_bit() {
        let dir = out_dir();
        let read = read(dir.path(), true).unwrap();
        assert!(read.finalized);
        assert_eq!((read.chunks, read.missing_chunks), (vec![0, 1, 2], vec![]));
        assert!(same(&as_rows(&read.rows), &rows(0..5)));
        let bits: Vec<bool> = rows(0..5).iter().map(|r| r.member).collect();
        assert_eq!(read.inclusion, bits);
        // Both kinds of bit occur, so the member check is not vacuous.
        assert!(bits.contains(&true) && bits.contains(&false));
    }

    #[test]
    fn a_partial_out_dir_reads_the_chunks_there() {
        let dir = out_dir();
        std::fs::remove_file(dir.path().join(SCORES_FILE)).unwrap();
        std::fs::remove_file(dir.path().join(chunk_file(1))).unwrap();
        let read = read(dir.path(), true).unwrap();
        assert!(!read.finalized);
        assert_eq!((read.chunks, read.missing_chunks), (vec![0, 2], vec![1]));
        let want: Vec<ScoreRow> = rows(0..2).into_iter().chain(rows(4..5)).collect();
        assert!(same(&as_rows(&read.rows), &want));
        // A chunk whose rows belong to other runs (another chunk's file).
        std::fs::copy(
            dir.path().join(chunk_file(0)),
            dir.path().join(chunk_file(2)),
        )
        .unwrap();
        let e = error(dir.path(), true);
        assert!(
            e.contains("chunks") && e.contains("not every run and canary in order"),
            "{e}"
        );
    }

    #[test]
    fn damaged_files_are_named_with_their_line() {
        let dir = out_dir();
        let p = dir.path();
        // A chunk edited after it was written.
        let chunk = p.join(chunk_file(1));
        let good = std::fs::read(&chunk).unwrap();
        std::fs::write(
            &chunk,
            String::from_utf8(good.clone())
                .unwrap()
                .replacen(",1,", ",2,", 1),
        )
        .unwrap();
        let e = error(p, false);
        assert!(
            e.contains("chunk-000001.csv: damaged: ") && e.contains("edited or damaged"),
            "{e}"
        );
        std::fs::write(&chunk, &good).unwrap();

        // scores.csv edited: only the chunks tell (verify), in the last digit.
        let scores = p.join(SCORES_FILE);
        let text = std::fs::read_to_string(&scores).unwrap();
        let line = text.lines().nth(4).unwrap().to_string();
        let (head, last) = line.rsplit_once(',').unwrap();
        // The last digit of the last score, changed.
        let digit = if last.ends_with('5') { "4" } else { "5" };
        let edited = text.replace(&line, &format!("{head},{}{digit}", &last[..last.len() - 1]));
        assert_ne!(edited, text);
        std::fs::write(&scores, &edited).unwrap();
        let e = error(p, true);
        // Line 5 is run 1's first canary, in chunk 0.
        assert!(
            e.contains("scores.csv: differs from its checksummed chunk")
                && e.contains("chunk-000000.csv"),
            "{e}"
        );
        assert!(read(p, false).is_ok());
        // Not a number, and a field too few: the line is named.
        std::fs::write(
            &scores,
            text.replace(&line, &line.replacen(",0.", ",x.", 1)),
        )
        .unwrap();
        let e = error(p, false);
        assert!(
            e.contains("scores.csv: line 5: `x.") && e.contains("not a number"),
            "{e}"
        );
        std::fs::write(&scores, text.replace(&line, head)).unwrap();
        assert!(error(p, false).contains("scores.csv: line 5: 5 fields, expected 6"));
        std::fs::write(&scores, text.replacen("dirac", "cosine", 1)).unwrap();
        let e = error(p, false);
        assert!(
            e.contains("scores.csv: line 1: header `run,canary,member,test_accuracy,cosine,loss`"),
            "{e}"
        );
        assert!(e.contains("edited or damaged"), "{e}");
        // A row missing; two rows swapped (their member bits differ from the
        // inclusion bits, or their order from every run and canary).
        let mut lines: Vec<&str> = text.lines().collect();
        lines.remove(3);
        std::fs::write(&scores, lines.join("\n") + "\n").unwrap();
        assert!(error(p, false).contains("14 rows, expected 5 × 3"));
        let mut lines: Vec<&str> = text.lines().collect();
        lines.swap(1, 4);
        std::fs::write(&scores, lines.join("\n") + "\n").unwrap();
        assert!(error(p, false).contains("not every run and canary in order"));
        std::fs::write(&scores, &text).unwrap();
        assert!(read(p, true).is_ok());
    }

    #[test]
    fn inclusion_bits_are_checked_against_the_file_and_the_seed() {
        let dir = out_dir();
        let p = dir.path();
        let inc = p.join(INCLUSION_FILE);
        let text = std::fs::read_to_string(&inc).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let with = |i: usize, line: &str| {
            let mut l = lines.clone();
            l[i] = line;
            l.join("\n") + "\n"
        };
        // One bit flipped: the seed's bits differ, and so does the member column.
        let flipped = match lines[2].rsplit_once(',') {
            Some((head, "1")) => format!("{head},-1"),
            Some((head, _)) => format!("{head},1"),
            None => unreachable!("a line of inclusion_csv"),
        };
        std::fs::write(&inc, with(2, &flipped)).unwrap();
        let e = error(p, true);
        assert!(
            e.contains(
                "inclusion.csv: the inclusion bits differ from those of this experiment's seed 11"
            ),
            "{e}"
        );
        assert!(e.contains("first at run 0, canary 1"), "{e}");
        let e = error(p, false);
        assert!(
            e.contains(
                "scores.csv: the member column differs from inclusion.csv at run 0, canary 1"
            ),
            "{e}"
        );
        // A line out of order, a bad header, a row short, the file missing.
        std::fs::write(&inc, with(2, &lines[2].replacen("0,1,", "0,2,", 1))).unwrap();
        let e = error(p, false);
        assert!(
            e.contains("inclusion.csv: line 3: `0,2,")
                && e.contains("expected `0,1,1` or `0,1,-1`"),
            "{e}"
        );
        std::fs::write(&inc, with(0, "run,canary,in")).unwrap();
        assert!(error(p, false).contains("header `run,canary,in`, expected `run,canary,included`"));
        std::fs::write(&inc, lines[..lines.len() - 1].join("\n") + "\n").unwrap();
        assert!(error(p, false).contains("14 rows, expected 5 × 3"));
        std::fs::remove_file(&inc).unwrap();
        let e = read(p, false).unwrap_err();
        assert!(
            matches!(&e, PlanError::Store(StoreError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound),
            "{e}"
        );
    }

    #[test]
    fn a_stop_ends_the_read() {
        let dir = out_dir();
        let asked = AtomicBool::new(false);
        let stop = || {
            asked.store(true, Ordering::Relaxed);
            true
        };
        let e = read_results(dir.path(), &shape(), true, Interrupt::new(&stop)).unwrap_err();
        assert!(asked.load(Ordering::Relaxed));
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
