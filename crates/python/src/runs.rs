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
//!   coins ([`SeedKey::coins`]).
//!
//! Errors are Python exceptions that name the file and what was expected:
//! `FileNotFoundError` for a missing file, `ValueError` for a damaged or
//! foreign one, `OSError` for any other failure to read.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use dpaudit_data::seed::{RunSeed, SeedKey, Stream};
use dpaudit_store::kind::{manifest_kind, ExperimentKind};
use dpaudit_store::outdir::{read_checked as read_checked_file, Checked};
use dpaudit_store::store::CONFIG_FILE;
use dpaudit_store::FORMAT_VERSION;

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
