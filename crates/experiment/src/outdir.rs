//! An out-dir that defends itself.
//!
//! Long audits write their state into one directory and resume from it after
//! a kill. That state must not be trusted blindly:
//!
//! * **One writer.** [`OutDir::open`] takes an exclusive lock file,
//!   `.dpaudit.lock`, created with `O_CREAT | O_EXCL` and holding the
//!   holder's pid, host, process start time and command. A second process
//!   is refused with the holder's pid and host. A lock whose process is gone
//!   (same host, pid not running or running a different process since the
//!   start times differ) is stale: it is reported and taken over. A lock from
//!   another host cannot be checked and is never taken over.
//! * **Writable before anything is computed.** Taking the lock creates a file
//!   in the out-dir, so a read-only or missing-and-uncreatable out-dir fails
//!   at once.
//! * **Whole files only.** [`OutDir::write`] writes to a hidden temporary file
//!   in the same directory, syncs it, renames it over the target and syncs
//!   the directory; a failure removes the temporary file.
//! * **Checksummed records.** [`OutDir::write_checked`] appends a last line
//!   `# sha256 <hex>` over everything before it; [`OutDir::read_checked`]
//!   tells a missing file from a damaged one (edited, truncated, trailer
//!   lost), naming the file.
//! * **One format.** [`FORMAT_VERSION`] is written into the out-dir's
//!   manifest by its users and checked when it is reopened.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{ExperimentError, Result};

/// The version of the out-dir layout this build writes and reads.
pub const FORMAT_VERSION: u32 = 2;

/// The lock file's name.
pub const LOCK_FILE: &str = ".dpaudit.lock";

/// The trailer prefix of a checksummed file.
const TRAILER: &str = "# sha256 ";

/// Who holds a lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockHolder {
    /// Process id.
    pub pid: u32,
    /// Host name.
    pub host: String,
    /// The process's start time in clock ticks since boot (Linux), to tell a
    /// reused pid from the holder.
    pub started: u64,
    /// What it runs.
    pub command: String,
}

impl fmt::Display for LockHolder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "pid {} on host {} ({})",
            self.pid, self.host, self.command
        )
    }
}

impl LockHolder {
    fn this_process(command: &str) -> Self {
        let pid = std::process::id();
        Self {
            pid,
            host: host_name(),
            started: start_time(pid).unwrap_or(0),
            command: command.replace('\n', " "),
        }
    }

    fn to_text(&self) -> String {
        format!(
            "pid {}\nhost {}\nstarted {}\ncommand {}\n",
            self.pid, self.host, self.started, self.command
        )
    }

    fn parse(text: &str) -> Option<Self> {
        let mut pid = None;
        let mut host = None;
        let mut started = None;
        let mut command = String::new();
        for line in text.lines() {
            let (key, value) = line.split_once(' ')?;
            match key {
                "pid" => pid = value.parse().ok(),
                "host" => host = Some(value.to_string()),
                "started" => started = value.parse().ok(),
                "command" => command = value.to_string(),
                _ => {}
            }
        }
        Some(Self {
            pid: pid?,
            host: host?,
            started: started?,
            command,
        })
    }

    /// Whether the holder still runs: same host and a process with that pid
    /// and start time. A holder on another host is assumed to run.
    fn alive(&self) -> bool {
        if self.host != host_name() {
            return true;
        }
        match start_time(self.pid) {
            Some(t) => self.started == 0 || t == self.started,
            None => false,
        }
    }
}

/// The host name (Linux: `/proc/sys/kernel/hostname`).
fn host_name() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// Field 22 of `/proc/<pid>/stat`: the start time in clock ticks; `None`
/// when there is no such process (or no procfs).
fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain spaces.
    let after = stat.rsplit_once(')')?.1;
    after.split_whitespace().nth(19)?.parse().ok()
}

/// The exclusive lock of an out-dir; released (the file removed) on drop.
#[derive(Debug)]
struct Lock {
    path: PathBuf,
    content: String,
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Remove the lock only if it is still ours.
        if fs::read_to_string(&self.path).is_ok_and(|c| c == self.content) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// What [`OutDir::read_checked`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// No such file.
    Missing,
    /// The file, without its trailer, and the checksum matched.
    Intact(Vec<u8>),
    /// The file is there but does not match its checksum.
    Damaged(String),
}

/// A locked out-dir. Dropping it releases the lock, and removes the
/// directory again if this process created it and nothing was written.
#[derive(Debug)]
pub struct OutDir {
    root: PathBuf,
    lock: Option<Lock>,
    stale: Option<LockHolder>,
    created: bool,
}

impl Drop for OutDir {
    fn drop(&mut self) {
        drop(self.lock.take());
        if self.created {
            // Fails (and keeps the directory) unless it is empty.
            let _ = fs::remove_dir(&self.root);
        }
    }
}

fn io_err<'a>(
    path: &'a Path,
    action: &'static str,
) -> impl FnOnce(std::io::Error) -> ExperimentError + 'a {
    move |source| ExperimentError::Io {
        path: path.to_path_buf(),
        action,
        source,
    }
}

impl OutDir {
    /// Create `root` if needed and take its lock for `command` (e.g.
    /// `"dpaudit run seed001.toml"`); refuses a locked or unwritable out-dir.
    pub fn open(root: &Path, command: &str) -> Result<OutDir> {
        let created = !root.exists();
        fs::create_dir_all(root).map_err(|source| ExperimentError::NotWritable {
            path: root.to_path_buf(),
            source,
        })?;
        let path = root.join(LOCK_FILE);
        let me = LockHolder::this_process(command);
        let content = me.to_text();
        let mut stale = None;
        for attempt in 0..2 {
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut f) => {
                    f.write_all(content.as_bytes())
                        .and_then(|_| f.sync_all())
                        .map_err(|source| ExperimentError::NotWritable {
                            path: root.to_path_buf(),
                            source,
                        })?;
                    sync_dir(root);
                    return Ok(OutDir {
                        root: root.to_path_buf(),
                        lock: Some(Lock { path, content }),
                        stale,
                        created,
                    });
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists && attempt == 0 => {
                    let text = fs::read_to_string(&path).unwrap_or_default();
                    match LockHolder::parse(&text) {
                        Some(holder) if holder.alive() => {
                            return Err(ExperimentError::Locked {
                                path: path.clone(),
                                holder: holder.to_string(),
                            })
                        }
                        Some(holder) => {
                            // Stale: its process is gone. Take it over.
                            fs::remove_file(&path)
                                .map_err(io_err(&path, "removing a stale lock"))?;
                            stale = Some(holder);
                        }
                        None => {
                            return Err(ExperimentError::Locked {
                                path: path.clone(),
                                holder: format!(
                                "an unreadable lock file; if no dpaudit process uses {}, remove {}",
                                root.display(),
                                path.display()
                            ),
                            })
                        }
                    }
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                    return Err(ExperimentError::Locked {
                        path: path.clone(),
                        holder: "another process that took it at the same moment".into(),
                    })
                }
                Err(source) => {
                    return Err(ExperimentError::NotWritable {
                        path: root.to_path_buf(),
                        source,
                    })
                }
            }
        }
        unreachable!("the loop returns within two attempts")
    }

    /// The out-dir.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// A path inside the out-dir.
    pub fn path(&self, relative: impl AsRef<Path>) -> PathBuf {
        self.root.join(relative)
    }

    /// The holder of a stale lock this process took over, if any.
    pub fn took_over(&self) -> Option<&LockHolder> {
        self.stale.as_ref()
    }

    /// Write `bytes` to `relative` whole or not at all (see the module docs).
    pub fn write(&self, relative: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
        write_atomic(&self.path(relative), bytes)
    }

    /// `value` as pretty JSON, written as [`OutDir::write`] does.
    pub fn write_json<T: serde::Serialize>(
        &self,
        relative: impl AsRef<Path>,
        value: &T,
    ) -> Result<()> {
        let path = self.path(&relative);
        let json =
            serde_json::to_string_pretty(value).map_err(|e| ExperimentError::Inconsistent {
                path,
                reason: format!("serialising: {e}"),
            })?;
        self.write(relative, json.as_bytes())
    }

    /// [`OutDir::write`] with a checksum trailer.
    pub fn write_checked(&self, relative: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
        self.write(relative, &with_trailer(bytes))
    }

    /// Read a file written by [`OutDir::write_checked`].
    pub fn read_checked(&self, relative: impl AsRef<Path>) -> Result<Checked> {
        read_checked(&self.path(relative))
    }
}

/// `bytes` followed by the line `# sha256 <hex of bytes>`.
pub fn with_trailer(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    if !out.is_empty() && !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    let digest = hex::encode(Sha256::digest(&out));
    out.extend_from_slice(format!("{TRAILER}{digest}\n").as_bytes());
    out
}

/// Read and verify a checksummed file anywhere (e.g. in another out-dir).
pub fn read_checked(path: &Path) -> Result<Checked> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Checked::Missing),
        Err(source) => {
            return Err(ExperimentError::Io {
                path: path.to_path_buf(),
                action: "reading",
                source,
            })
        }
    };
    // The trailer is the last line.
    let body_end = bytes
        .strip_suffix(b"\n")
        .and_then(|b| b.iter().rposition(|&c| c == b'\n'))
        .map_or(0, |i| i + 1);
    let last = String::from_utf8_lossy(&bytes[body_end..]);
    let Some(hex) = last.trim_end().strip_prefix(TRAILER) else {
        return Ok(Checked::Damaged(format!(
            "no checksum line at its end (truncated, or edited: {} bytes)",
            bytes.len()
        )));
    };
    let body = &bytes[..body_end];
    let actual = hex::encode(Sha256::digest(body));
    if actual != hex.trim() {
        return Ok(Checked::Damaged(format!(
            "its content does not match its checksum (edited or damaged): sha256 {actual}, recorded {}",
            hex.trim()
        )));
    }
    Ok(Checked::Intact(body.to_vec()))
}

/// Write to a hidden temporary file beside `path`, sync, rename over `path`,
/// sync the directory. The temporary file is removed on failure.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(io_err(dir, "creating the directory"))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempfile_in(dir)
        .map_err(io_err(dir, "creating a temporary file in"))?;
    tmp.write_all(bytes)
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(io_err(path, "writing"))?;
    tmp.persist(path).map_err(|e| ExperimentError::Io {
        path: path.to_path_buf(),
        action: "renaming into place",
        source: e.error,
    })?;
    sync_dir(dir);
    Ok(())
}

/// Sync a directory so that a rename in it survives a crash (best effort:
/// not every file system supports it).
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_process_is_refused_with_the_holders_pid_and_host() {
        let dir = tempfile::tempdir().unwrap();
        let first = OutDir::open(dir.path(), "first").unwrap();
        let err = OutDir::open(dir.path(), "second").unwrap_err().to_string();
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        assert!(err.contains(&host_name()) && err.contains("first"), "{err}");
        drop(first);
        // Released on drop.
        let again = OutDir::open(dir.path(), "third").unwrap();
        assert!(again.took_over().is_none());
    }

    #[test]
    fn a_stale_lock_of_a_dead_process_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        // A pid far above pid_max (4 194 304 at most on Linux) never runs.
        let dead = LockHolder {
            pid: 999_999_999,
            host: host_name(),
            started: 1,
            command: "killed".into(),
        };
        fs::write(dir.path().join(LOCK_FILE), dead.to_text()).unwrap();
        let out = OutDir::open(dir.path(), "resume").unwrap();
        assert_eq!(out.took_over(), Some(&dead));
        // A reused pid (this process, but another start time) is stale too.
        drop(out);
        let reused = LockHolder {
            started: start_time(std::process::id()).unwrap() + 1,
            ..LockHolder::this_process("old")
        };
        fs::write(dir.path().join(LOCK_FILE), reused.to_text()).unwrap();
        assert!(OutDir::open(dir.path(), "resume")
            .unwrap()
            .took_over()
            .is_some());
    }

    #[test]
    fn a_lock_from_another_host_is_never_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let remote = LockHolder {
            pid: 12,
            host: "some-other-host".into(),
            started: 1,
            command: "dpaudit run".into(),
        };
        fs::write(dir.path().join(LOCK_FILE), remote.to_text()).unwrap();
        let err = OutDir::open(dir.path(), "here").unwrap_err().to_string();
        assert!(
            err.contains("some-other-host") && err.contains("pid 12"),
            "{err}"
        );
    }

    #[test]
    fn checksummed_files_tell_missing_from_edited_and_truncated() {
        let dir = tempfile::tempdir().unwrap();
        let out = OutDir::open(dir.path(), "test").unwrap();
        assert_eq!(out.read_checked("a.csv").unwrap(), Checked::Missing);
        out.write_checked("a.csv", b"run,score\n0,1.5\n").unwrap();
        assert_eq!(
            out.read_checked("a.csv").unwrap(),
            Checked::Intact(b"run,score\n0,1.5\n".to_vec())
        );
        let full = fs::read(out.path("a.csv")).unwrap();
        // Edited: one digit changed.
        let edited = String::from_utf8(full.clone())
            .unwrap()
            .replace("1.5", "1.6");
        fs::write(out.path("a.csv"), edited).unwrap();
        assert!(
            matches!(out.read_checked("a.csv").unwrap(), Checked::Damaged(m) if m.contains("does not match"))
        );
        // Truncated: the trailer is gone.
        fs::write(out.path("a.csv"), &full[..full.len() - 30]).unwrap();
        assert!(
            matches!(out.read_checked("a.csv").unwrap(), Checked::Damaged(m) if m.contains("no checksum"))
        );
        // Empty.
        fs::write(out.path("a.csv"), b"").unwrap();
        assert!(matches!(
            out.read_checked("a.csv").unwrap(),
            Checked::Damaged(_)
        ));
    }

    #[test]
    fn atomic_writes_leave_no_temporary_files() {
        let dir = tempfile::tempdir().unwrap();
        let out = OutDir::open(dir.path(), "test").unwrap();
        out.write("x.json", b"one").unwrap();
        out.write("x.json", b"two").unwrap();
        assert_eq!(fs::read(out.path("x.json")).unwrap(), b"two");
        // A target that cannot be written (a directory of that name) fails
        // and leaves nothing behind.
        fs::create_dir(out.path("d")).unwrap();
        fs::write(out.path("d/keep"), b"").unwrap();
        assert!(out.write("d", b"x").is_err());
        let mut names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, [LOCK_FILE, "d", "x.json"]);
    }

    #[test]
    fn an_out_dir_created_and_left_empty_is_removed_again() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("fresh");
        drop(OutDir::open(&fresh, "test").unwrap());
        assert!(!fresh.exists());
        let used = dir.path().join("used");
        let out = OutDir::open(&used, "test").unwrap();
        out.write("a", b"x").unwrap();
        drop(out);
        assert!(used.join("a").exists() && !used.join(LOCK_FILE).exists());
    }

    #[test]
    fn an_out_dir_that_cannot_be_created_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        fs::write(&file, b"").unwrap();
        // Below a regular file: not creatable, for root too.
        let err = OutDir::open(&file.join("out"), "test").unwrap_err();
        assert!(matches!(err, ExperimentError::NotWritable { .. }), "{err}");
        assert!(err.to_string().contains("a-file"), "{err}");
    }
}
