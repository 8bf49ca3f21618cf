//! What kind of experiment a file is: its top-level `kind` key, read before
//! anything else, so that `dpaudit run FILE`, `dpaudit slurm FILE` and
//! `dpaudit merge` pick the runner from one line instead of trying parsers
//! in turn.
//!
//! ```toml
//! # header comments
//! kind = "canary"   # or "bgm", or "panoramia"
//! runs = 1000
//! ...
//! ```
//!
//! The line is taken out of the text (left empty, so line numbers in the
//! loaders' errors stay right) before the kind's own loader parses it: the
//! loaders refuse unknown fields, and the configs, their fingerprints and the
//! manifests written into out-dirs do not contain `kind`, so they are the
//! same as before the key existed.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{read_text, Result, StoreError};
use crate::store::CONFIG_FILE;

/// The kinds of experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExperimentKind {
    /// A canary audit of trained models (`dpaudit run`; `dpaudit_experiment::canary::runner`).
    Canary,
    /// Shuffling audits of the Batched Gaussian Mechanism (`dpaudit bgm`;
    /// `dpaudit_experiment::bgm::runner`).
    Bgm,
    /// PANORAMIA, one trained model against generated non-members
    /// (`dpaudit panoramia`; `dpaudit_panoramia`).
    Panoramia,
}

impl ExperimentKind {
    /// Every kind, in the order errors list them.
    pub const ALL: [ExperimentKind; 3] = [
        ExperimentKind::Canary,
        ExperimentKind::Bgm,
        ExperimentKind::Panoramia,
    ];

    /// The value of the `kind` key.
    pub fn name(self) -> &'static str {
        match self {
            ExperimentKind::Canary => "canary",
            ExperimentKind::Bgm => "bgm",
            ExperimentKind::Panoramia => "panoramia",
        }
    }

    /// What it audits, in words.
    pub fn meaning(self) -> &'static str {
        match self {
            ExperimentKind::Canary => "a canary audit of trained models",
            ExperimentKind::Bgm => "shuffling audits of the Batched Gaussian Mechanism",
            ExperimentKind::Panoramia => {
                "PANORAMIA, one trained model against generated non-members"
            }
        }
    }

    /// The kind named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The accepted values, for errors.
    pub fn expected() -> String {
        let kinds: Vec<String> = Self::ALL
            .iter()
            .map(|k| format!("`kind = \"{}\"` ({})", k.name(), k.meaning()))
            .collect();
        kinds.join(", ")
    }
}

impl fmt::Display for ExperimentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An experiment file whose kind is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExperimentFile {
    /// The file.
    pub path: PathBuf,
    /// Its kind.
    pub kind: ExperimentKind,
    /// Its text without the `kind` line (an empty line in its place), for the
    /// kind's loader.
    pub text: String,
}

impl ExperimentFile {
    /// Read `path`, which must say its kind.
    pub fn read(path: &Path) -> Result<Self> {
        let text = read_text(path)?;
        Self::parse(path, &text)
    }

    /// An experiment file's `text` (`path` names it in errors), which must
    /// say its kind.
    pub fn parse(path: &Path, text: &str) -> Result<Self> {
        match split_kind(path, text)? {
            (Some(kind), text) => Ok(Self {
                path: path.to_path_buf(),
                kind,
                text,
            }),
            (None, _) => Err(StoreError::Inconsistent {
                path: path.to_path_buf(),
                reason: format!(
                    "no top-level `kind`: an experiment file says what it is in its first key, one of {}",
                    ExperimentKind::expected()
                ),
            }),
        }
    }

    /// Read `path` for a command of one kind (`dpaudit bgm`, `dpaudit
    /// panoramia`): a file without `kind` is taken as that kind; a file of
    /// another kind is refused.
    pub fn read_as(path: &Path, kind: ExperimentKind) -> Result<Self> {
        let text = read_text(path)?;
        let (found, text) = split_kind(path, &text)?;
        let file = Self {
            path: path.to_path_buf(),
            kind: found.unwrap_or(kind),
            text,
        };
        file.expect(kind)?;
        Ok(file)
    }

    /// Refuse a file that is not of `kind`.
    pub fn expect(&self, kind: ExperimentKind) -> Result<()> {
        if self.kind == kind {
            return Ok(());
        }
        Err(StoreError::Inconsistent {
            path: self.path.clone(),
            reason: format!(
                "`kind = \"{}\"` ({}), but this command runs `kind = \"{}\"` ({}); use `dpaudit run {}`",
                self.kind,
                self.kind.meaning(),
                kind,
                kind.meaning(),
                self.path.display()
            ),
        })
    }
}

/// The kind `text` names (none if it has no `kind` key), and the text
/// without its `kind` line.
fn split_kind(path: &Path, text: &str) -> Result<(Option<ExperimentKind>, String)> {
    let bad = |reason: String| StoreError::Inconsistent {
        path: path.to_path_buf(),
        reason,
    };
    let table: toml::Table = toml::from_str(text).map_err(|e| bad(format!("not TOML: {e}")))?;
    let kind = match table.get("kind") {
        None => return Ok((None, text.to_string())),
        Some(toml::Value::String(name)) => ExperimentKind::from_name(name).ok_or_else(|| {
            bad(format!(
                "`kind = \"{name}\"`: expected one of {}",
                ExperimentKind::expected()
            ))
        })?,
        Some(other) => {
            return Err(bad(format!(
                "`kind = {other}`: expected one of {}",
                ExperimentKind::expected()
            )))
        }
    };
    // The `kind = ...` line among the top-level keys (before the first table).
    let mut rest = String::with_capacity(text.len());
    let mut in_top = true;
    let mut found = false;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        in_top &= !trimmed.starts_with('[');
        let is_kind = in_top
            && !found
            && trimmed
                .strip_prefix("kind")
                .is_some_and(|r| r.trim_start().starts_with('='));
        if is_kind {
            found = true;
            rest.push_str(&line[line.trim_end_matches(['\n', '\r']).len()..]);
        } else {
            rest.push_str(line);
        }
    }
    let still_there = toml::from_str::<toml::Table>(&rest)
        .map(|t| t.contains_key("kind"))
        .unwrap_or(true);
    if !found || still_there {
        return Err(bad(format!(
            "write `kind = \"{kind}\"` on a line of its own, before the first [table]"
        )));
    }
    Ok((Some(kind), rest))
}

/// The kind of the out-dir `dir`, from its `config.json`
/// ([`manifest_kind`]); a file that is missing, not JSON or of no kind is
/// taken as a canary audit's (whose reader names what is wrong).
pub fn out_dir_kind(dir: &Path) -> ExperimentKind {
    std::fs::read_to_string(dir.join(CONFIG_FILE))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|value| manifest_kind(&value))
        .unwrap_or(ExperimentKind::Canary)
}

/// The kind of experiment an out-dir's manifest (its `config.json`) was
/// written by, or `None` when it is none of dpaudit's: a BGM manifest says
/// `"kind": "bgm"`; PANORAMIA's has a `format` and no `format_version`; a
/// canary audit's has no `kind`, a `format_version` and an `experiment`.
/// Whether a BGM setting keeps scores or counts is its own `evaluation`
/// field; shards are told by the manifest's `shard`.
pub fn manifest_kind(manifest: &serde_json::Value) -> Option<ExperimentKind> {
    let has = |key: &str| manifest.get(key).is_some();
    if manifest.get("kind").and_then(|k| k.as_str()) == Some(ExperimentKind::Bgm.name()) {
        Some(ExperimentKind::Bgm)
    } else if has("format") && !has("format_version") {
        Some(ExperimentKind::Panoramia)
    } else if !has("kind") && has("format_version") && has("experiment") {
        Some(ExperimentKind::Canary)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ExperimentFile> {
        ExperimentFile::parse(Path::new("exp.toml"), text)
    }

    #[test]
    fn the_kind_line_is_read_and_left_empty() {
        let text = "# a comment\nkind = \"bgm\"  # the kind\nruns = 3\n[train]\nkind = \"x\"\n";
        let f = parse(text).unwrap();
        assert_eq!(f.kind, ExperimentKind::Bgm);
        assert_eq!(f.text, "# a comment\n\nruns = 3\n[train]\nkind = \"x\"\n");
        for k in ExperimentKind::ALL {
            let f = parse(&format!("kind = '{}'\r\nruns = 1\r\n", k.name())).unwrap();
            assert_eq!((f.kind, f.text.as_str()), (k, "\r\nruns = 1\r\n"));
        }
    }

    #[test]
    fn a_missing_or_unknown_kind_names_the_file_and_the_values() {
        for text in ["runs = 3\n", "[canary]\nkind = \"dirac\"\n"] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.starts_with("exp.toml: no top-level `kind`"), "{e}");
            for k in ExperimentKind::ALL {
                assert!(e.contains(&format!("`kind = \"{k}\"`")), "{e}");
            }
        }
        let e = parse("kind = \"train\"\n").unwrap_err().to_string();
        assert!(
            e.contains("exp.toml") && e.contains("\"train\"") && e.contains("\"panoramia\""),
            "{e}"
        );
        let e = parse("kind = 3\n").unwrap_err().to_string();
        assert!(e.contains("`kind = 3`"), "{e}");
        let e = parse("kind = \n").unwrap_err().to_string();
        assert!(e.contains("not TOML"), "{e}");
    }

    #[test]
    fn a_command_of_one_kind_takes_files_without_kind_and_refuses_others() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain.toml");
        std::fs::write(&plain, "runs = 3\n").unwrap();
        let f = ExperimentFile::read_as(&plain, ExperimentKind::Bgm).unwrap();
        assert_eq!(
            (f.kind, f.text.as_str()),
            (ExperimentKind::Bgm, "runs = 3\n")
        );
        let canary = dir.path().join("canary.toml");
        std::fs::write(&canary, "kind = \"canary\"\nruns = 3\n").unwrap();
        let e = ExperimentFile::read_as(&canary, ExperimentKind::Bgm)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("canary.toml") && e.contains("dpaudit run"),
            "{e}"
        );
        assert!(ExperimentFile::read(&plain).is_err());
    }

    #[test]
    fn out_dirs_say_their_kind() {
        let dir = tempfile::tempdir().unwrap();
        let kind_of = |json: &str| {
            std::fs::write(dir.path().join(CONFIG_FILE), json).unwrap();
            out_dir_kind(dir.path())
        };
        assert_eq!(
            kind_of(r#"{"kind": "bgm", "format_version": 2}"#),
            ExperimentKind::Bgm
        );
        assert_eq!(kind_of(r#"{"format_version": 2}"#), ExperimentKind::Canary);
        assert_eq!(
            kind_of(r#"{"format": 1, "fingerprint": "x"}"#),
            ExperimentKind::Panoramia
        );
        assert_eq!(
            out_dir_kind(&dir.path().join("none")),
            ExperimentKind::Canary
        );
    }

    #[test]
    fn manifests_of_no_kind_are_told_apart() {
        let kind = |json: &str| manifest_kind(&serde_json::from_str(json).unwrap());
        assert_eq!(
            kind(r#"{"kind": "bgm", "format_version": 2}"#),
            Some(ExperimentKind::Bgm)
        );
        assert_eq!(
            kind(r#"{"format_version": 2, "experiment": {}}"#),
            Some(ExperimentKind::Canary)
        );
        assert_eq!(
            kind(r#"{"format": "dpaudit-panoramia/1", "config": {}}"#),
            Some(ExperimentKind::Panoramia)
        );
        for other in [
            r#"{"name": "something else"}"#,
            r#"{"format_version": 2}"#,
            r#"{"kind": "canary", "format_version": 2, "experiment": {}}"#,
            "[1, 2]",
        ] {
            assert_eq!(kind(other), None, "{other}");
        }
    }
}
