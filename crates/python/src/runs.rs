//! The out-dir reader under `dpaudit.runs`: what an out-dir is, its manifest,
//! its checksummed files and the values a run derives from its seed, from the
//! crates that write them (`dpaudit-store`, `dpaudit_data::seed`), so that
//! Python re-implements no format, checksum or generator.
//!
//! - [`read_manifest`]: `config.json` as a dict and the kind of experiment
//!   it belongs to ([`dpaudit_store::kind::manifest_kind`]), with the
//!   out-dir format version checked ([`dpaudit_store::FORMAT_VERSION`]);
//! - [`read_checked`]: a checksummed file's content, its `# sha256` trailer
//!   verified ([`dpaudit_store::outdir::read_checked`]);
//! - [`seed_u64`] and [`seed_coins`]: a node of a run's seed key tree
//!   ([`dpaudit_data::seed`]) as the 64-bit seed it hands out, or as fair
//!   coins ([`SeedKey::coins`]);
//! - [`read_canary_results`]: a `dpaudit run` out-dir's inclusion bits and
//!   score rows as NumPy arrays, read and checked by
//!   [`dpaudit_plan::canary::reader`];
//! - [`read_bgm_scores`] and [`read_bgm_counts`]: a `dpaudit bgm` out-dir's
//!   `scores.csv` and `counts.csv` as NumPy arrays
//!   ([`dpaudit_plan::bgm::reader`]).
//!
//! Errors are Python exceptions that name the file and what was expected:
//! `FileNotFoundError` for a missing file, `ValueError` for a damaged or
//! foreign one, `OSError` for any other failure to read.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use dpaudit_data::seed::{RunSeed, SeedKey, Stream};
use dpaudit_plan::bgm::reader::{counts_from_csv, scores_from_csv};
use dpaudit_plan::canary::canaries::ScoreKind;
use dpaudit_plan::canary::reader::{read_results, BookShape};
use dpaudit_plan::PlanError;
use dpaudit_store::kind::{manifest_kind, ExperimentKind};
use dpaudit_store::outdir::{read_checked as read_checked_file, Checked};
use dpaudit_store::store::CONFIG_FILE;
use dpaudit_store::StoreError;
use dpaudit_store::FORMAT_VERSION;

use crate::interrupt::{interruptible, Stoppable};

/// The most coins one [`seed_coins`] call draws (1 GiB of flags).
const MAX_COINS: u64 = 1 << 30;

/// Coins drawn between two checks for Ctrl-C (well under a second).
const COINS_PER_CHECK: u64 = 1 << 22;

/// Add this module's functions to the extension module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("OUTDIR_FORMAT_VERSION", FORMAT_VERSION)?;
    m.add_function(wrap_pyfunction!(read_manifest, m)?)?;
    m.add_function(wrap_pyfunction!(read_checked, m)?)?;
    m.add_function(wrap_pyfunction!(seed_u64, m)?)?;
    m.add_function(wrap_pyfunction!(seed_coins, m)?)?;
    m.add_function(wrap_pyfunction!(read_canary_results, m)?)?;
    m.add_function(wrap_pyfunction!(read_bgm_scores, m)?)?;
    m.add_function(wrap_pyfunction!(read_bgm_counts, m)?)?;
    Ok(())
}

/// A failure to read `path` as a Python exception naming it.
fn io_error(path: &Path, what: &str, e: &std::io::Error) -> PyErr {
    let p = path.display();
    match e.kind() {
        ErrorKind::NotFound => PyFileNotFoundError::new_err(format!("{p}: missing ({what})")),
        ErrorKind::InvalidData => PyValueError::new_err(format!(
            "{p}: not UTF-8 text ({e}); the file was edited or damaged"
        )),
        _ => PyOSError::new_err(format!("{p}: reading: {e}")),
    }
}

/// The manifest (`config.json`) of the out-dir `dir`: `(kind, manifest)`,
/// where `kind` is `"canary"`, `"bgm"` or `"panoramia"`, or `None` for a
/// JSON file of no dpaudit kind, and `manifest` the file as Python objects
/// (parsed by Python's `json`, so every number is the one written). A canary
/// or BGM manifest of another out-dir format version raises `ValueError`.
#[pyfunction]
fn read_manifest(py: Python<'_>, dir: PathBuf) -> PyResult<(Option<&'static str>, Py<PyAny>)> {
    let path = dir.join(CONFIG_FILE);
    let text = py
        .detach(|| std::fs::read_to_string(&path))
        .map_err(|e| io_error(&path, "the out-dir's manifest", &e))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        PyValueError::new_err(format!(
            "{}: not JSON ({e}); the file was edited or damaged",
            path.display()
        ))
    })?;
    let kind = manifest_kind(&value);
    if matches!(kind, Some(ExperimentKind::Canary | ExperimentKind::Bgm)) {
        let version = value.get("format_version");
        if version.and_then(serde_json::Value::as_u64) != Some(u64::from(FORMAT_VERSION)) {
            let written = version.map_or_else(|| "1".to_string(), ToString::to_string);
            let by = value
                .get("dpaudit_version")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("unknown");
            return Err(PyValueError::new_err(format!(
                "{}: written by out-dir format {written} (dpaudit {by}); this reader reads format {FORMAT_VERSION}",
                path.display()
            )));
        }
    }
    let manifest = py.import("json")?.call_method1("loads", (text,))?.unbind();
    Ok((kind.map(ExperimentKind::name), manifest))
}

/// The content of the checksummed file `path` without its trailer line
/// `# sha256 <hex>`. Raises `FileNotFoundError` when it does not exist and
/// `ValueError`, naming it, when it does not match its checksum (edited,
/// truncated, or its trailer lost).
#[pyfunction]
fn read_checked(py: Python<'_>, path: PathBuf) -> PyResult<Py<PyBytes>> {
    let checked = py.detach(|| read_checked_file(&path));
    let p = path.display();
    match checked {
        Ok(Checked::Intact(body)) => Ok(PyBytes::new(py, &body).unbind()),
        Ok(Checked::Missing) => Err(PyFileNotFoundError::new_err(format!(
            "{p}: missing (expected a checksummed file written by dpaudit)"
        ))),
        Ok(Checked::Damaged(why)) => Err(PyValueError::new_err(format!(
            "{p}: damaged: {why}; the file was edited or damaged after dpaudit wrote it"
        ))),
        Err(e) => Err(PyOSError::new_err(e.to_string())),
    }
}

/// The key `RunSeed(seed).stream(stream).child(path[0]).child(path[1])…`.
fn seed_key(seed: u64, stream: &str, path: &[u64]) -> PyResult<SeedKey> {
    let stream = Stream::from_name(stream).ok_or_else(|| {
        let names: Vec<&str> = Stream::ALL.iter().map(|s| s.name()).collect();
        PyValueError::new_err(format!(
            "stream = {stream:?}: expected one of {}",
            names.join(", ")
        ))
    })?;
    Ok(path
        .iter()
        .fold(RunSeed(seed).stream(stream), |key, &i| key.child(i)))
}

/// `RunSeed(seed).stream(stream).child(path…).to_u64()`: the 64-bit seed a
/// run derives at that node of its key tree (`dpaudit_data::seed`).
#[pyfunction]
fn seed_u64(seed: u64, stream: &str, path: Vec<u64>) -> PyResult<u64> {
    Ok(seed_key(seed, stream, &path)?.to_u64())
}

/// `count` fair coins ([`SeedKey::coins`]) of the node `RunSeed(seed)
/// .stream(stream).child(path…)`, as a bool array of shape `(count,)`; with
/// `children = n`, those of its children `0..n`, shape `(n, count)`.
#[pyfunction]
#[pyo3(signature = (seed, stream, path, count, children=None))]
fn seed_coins<'py>(
    py: Python<'py>,
    seed: u64,
    stream: &str,
    path: Vec<u64>,
    count: u64,
    children: Option<u64>,
) -> PyResult<Bound<'py, PyAny>> {
    let key = seed_key(seed, stream, &path)?;
    let rows = children.unwrap_or(1);
    let total = rows.checked_mul(count).filter(|&n| n <= MAX_COINS);
    let (Some(total), Ok(per_row)) = (total, usize::try_from(count)) else {
        return Err(PyValueError::new_err(format!(
            "{rows} × {count} coins: expected at most {MAX_COINS} ({} GiB of flags)",
            MAX_COINS >> 30
        )));
    };
    let mut flags: Vec<bool> = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    let node = |r: u64| {
        if children.is_some() {
            key.child(r)
        } else {
            key
        }
    };
    // Draw in pieces of at most COINS_PER_CHECK coins, within a row too (a
    // single node may ask for 2³⁰), and check for Ctrl-C between pieces.
    let (mut row, mut stream, mut left) = (0, node(0).coin_stream(), 0);
    loop {
        let done = py.detach(|| {
            let mut budget = COINS_PER_CHECK as usize;
            loop {
                if left == 0 {
                    if row == rows {
                        return true;
                    }
                    (stream, left) = (node(row).coin_stream(), per_row);
                    row += 1;
                    // A row counts as work, so empty rows still yield.
                    budget = budget.saturating_sub(1);
                } else if budget == 0 {
                    return false;
                } else {
                    let n = budget.min(left);
                    flags.extend(stream.by_ref().take(n));
                    (left, budget) = (left - n, budget - n);
                }
            }
        });
        py.check_signals()?;
        if done {
            break;
        }
    }
    let flat = PyArray1::from_vec(py, flags);
    match children {
        Some(n) => Ok(flat.reshape([usize::try_from(n)?, per_row])?.into_any()),
        None => Ok(flat.into_any()),
    }
}

impl Stoppable for PlanError {
    fn interrupted(&self) -> Option<&'static str> {
        match self {
            PlanError::Audit { source, .. } => source.interrupted(),
            _ => None,
        }
    }

    /// A missing file is `FileNotFoundError`, another failure to read one
    /// `OSError`, anything else `ValueError`; each names the file.
    fn into_py(self) -> PyErr {
        match self {
            PlanError::Store(StoreError::Io {
                path,
                action,
                source,
            }) => io_error(&path, action, &source),
            e => PyValueError::new_err(e.to_string()),
        }
    }
}

/// A `dpaudit run` out-dir's `inclusion.csv` and score rows, read and
/// checked by [`read_results`] (the bits against the experiment's seed,
/// `scores.csv` against its checksummed chunks, only when `verify`): a dict
/// of `inclusion` (bool, shape `(runs, count)`), the rows' `run`, `canary`
/// (int64), `member` (bool), `test_accuracy` (float64) and `scores` (a
/// float64 array per name of `scores`, in order), `finalized` (whether the
/// rows are `scores.csv`'s; else those of the chunks read), `chunks` and
/// `missing_chunks` (the chunk indices on disk and not). The arguments are
/// the manifest's `audit.scores`, `runs`, `train.replicas`, `canary.count`
/// and `train.seed`. Errors name the file and line; Ctrl-C stops the read.
#[pyfunction]
#[pyo3(signature = (dir, scores, runs, replicas, count, seed, verify=true))]
#[allow(clippy::too_many_arguments)]
fn read_canary_results<'py>(
    py: Python<'py>,
    dir: PathBuf,
    scores: Vec<String>,
    runs: u64,
    replicas: u64,
    count: usize,
    seed: u64,
    verify: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let kinds = scores
        .iter()
        .map(|name| {
            serde_json::from_value::<ScoreKind>(serde_json::Value::String(name.clone())).map_err(
                |e| {
                    PyValueError::new_err(format!(
                        "{}: audit.scores: {e}",
                        dir.join(CONFIG_FILE).display()
                    ))
                },
            )
        })
        .collect::<PyResult<Vec<_>>>()?;
    if replicas == 0 {
        return Err(PyValueError::new_err(format!(
            "{}: train.replicas = 0, expected at least 1",
            dir.join(CONFIG_FILE).display()
        )));
    }
    let shape = BookShape {
        kinds: &kinds,
        runs,
        replicas,
        count,
        seed,
    };
    let read = interruptible(py, |stop| read_results(&dir, &shape, verify, stop))?;
    let index = |values: Vec<u64>, what: &str| int64(py, values, &dir, what);
    let rows = read.rows;
    let out = PyDict::new(py);
    out.set_item(
        "inclusion",
        PyArray1::from_vec(py, read.inclusion).reshape([usize::try_from(runs)?, count])?,
    )?;
    out.set_item("run", index(rows.run, "run")?)?;
    out.set_item(
        "canary",
        index(
            rows.canary.into_iter().map(|c| c as u64).collect(),
            "canary",
        )?,
    )?;
    out.set_item("member", PyArray1::from_vec(py, rows.member))?;
    out.set_item("test_accuracy", PyArray1::from_vec(py, rows.test_accuracy))?;
    let columns: Vec<_> = rows
        .scores
        .into_iter()
        .map(|c| PyArray1::from_vec(py, c))
        .collect();
    out.set_item("scores", columns)?;
    out.set_item("finalized", read.finalized)?;
    out.set_item("chunks", read.chunks)?;
    out.set_item("missing_chunks", read.missing_chunks)?;
    Ok(out)
}

/// `values` as an int64 array; an index beyond 2⁶³ (of `what`, in the file
/// `path`) raises `ValueError`.
fn int64<'py>(
    py: Python<'py>,
    values: Vec<u64>,
    path: &Path,
    what: &str,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let values = values
        .into_iter()
        .map(i64::try_from)
        .collect::<Result<Vec<i64>, _>>()
        .map_err(|_| PyValueError::new_err(format!("{}: a {what} beyond 2^63", path.display())))?;
    Ok(PyArray1::from_vec(py, values))
}

/// The text of `path`, read without the GIL; `what` says what it holds (in
/// the error of a missing file).
fn read_text(py: Python<'_>, path: &Path, what: &str) -> PyResult<String> {
    py.detach(|| std::fs::read_to_string(path))
        .map_err(|e| io_error(path, what, &e))
}

/// `scores.csv` of a `dpaudit bgm` out-dir, read by
/// [`scores_from_csv`]: a dict of `setting`, `run` (int64),
/// `with_target` and `without_target` (float64), one row per run of each
/// scores-mode setting. Errors name the file and line; Ctrl-C stops the
/// read.
#[pyfunction]
fn read_bgm_scores<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let text = read_text(py, &path, "the merged scores")?;
    let c = interruptible(py, |stop| scores_from_csv(&path, &text, &stop))?;
    let out = PyDict::new(py);
    out.set_item("setting", int64(py, c.setting, &path, "setting")?)?;
    out.set_item("run", int64(py, c.run, &path, "run")?)?;
    out.set_item("with_target", PyArray1::from_vec(py, c.with_target))?;
    out.set_item("without_target", PyArray1::from_vec(py, c.without_target))?;
    Ok(out)
}

/// `counts.csv` of a `dpaudit bgm` out-dir, read by [`counts_from_csv`]:
/// a dict of `setting`, `stream` (0 = selection, 1 = evaluation), `bucket`
/// (int64), `cut` (float64), `with_target` and `without_target` (int64),
/// one row per bucket of each counts-mode setting's streams. Errors name
/// the file and line; Ctrl-C stops the read.
#[pyfunction]
fn read_bgm_counts<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let text = read_text(py, &path, "the histograms of the counts-mode settings")?;
    let c = interruptible(py, |stop| counts_from_csv(&path, &text, &stop))?;
    let stream: Vec<i64> = c.stream.into_iter().map(i64::from).collect();
    let out = PyDict::new(py);
    out.set_item("setting", int64(py, c.setting, &path, "setting")?)?;
    out.set_item("stream", PyArray1::from_vec(py, stream))?;
    out.set_item("bucket", PyArray1::from_vec(py, c.bucket))?;
    out.set_item("cut", PyArray1::from_vec(py, c.cut))?;
    out.set_item("with_target", int64(py, c.with_target, &path, "count")?)?;
    out.set_item(
        "without_target",
        int64(py, c.without_target, &path, "count")?,
    )?;
    Ok(out)
}
