//! The out-dir's JSON files: read (None when absent or unreadable: the
//! stage reruns), written atomically, and the guard of `config.json`.

use std::path::Path;

use serde::{de::DeserializeOwned, Serialize};

use super::FORMAT;
use crate::config::PanoramiaConfig;
use crate::error::{out_err, Result};
use crate::nn::write_atomic;

pub(super) fn read_json<T: DeserializeOwned>(path: &Path) -> Option<T> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

pub(super) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| out_err(path, e))?;
    write_atomic(path, text.as_bytes())
}

/// Guard the out-dir: `config.json` holds this config's fingerprint.
pub(super) fn guard_out_dir(config: &PanoramiaConfig, out: &Path, fp: &str) -> Result<()> {
    std::fs::create_dir_all(out).map_err(|e| out_err(out, format!("cannot create: {e}")))?;
    let path = out.join("config.json");
    if path.exists() {
        let v: Option<serde_json::Value> = read_json(&path);
        let theirs = v
            .as_ref()
            .and_then(|v| v.get("fingerprint"))
            .and_then(|f| f.as_str())
            .map(str::to_string);
        if theirs.as_deref() != Some(fp) {
            return Err(out_err(
                &path,
                format!(
                    "belongs to another config (fingerprint {} vs this config's {fp}): use another --out-dir",
                    theirs.unwrap_or_else(|| "unreadable".into())
                ),
            ));
        }
        return Ok(());
    }
    write_json(
        &path,
        &serde_json::json!({"format": FORMAT, "fingerprint": fp, "config": config}),
    )
}
