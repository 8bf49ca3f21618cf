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
//! * **No lock left by a failure.** If the lock's content cannot be written
//!   or synced (a full disk: `O_CREAT | O_EXCL` succeeds, the write fails),
//!   the file is removed again before the error is returned, so the next run
//!   is not refused. A lock file that names no holder (empty or cut short:
//!   its creator died or failed between creating and writing it, e.g. an
//!   older dpaudit on a full disk) is refused while it may still be being
//!   written and taken over, reported, once it has not changed for
//!   [`UNREADABLE_LOCK_GRACE`]. A process that finds, after writing its lock,
//!   that the file no longer holds its content gives the out-dir up.
//! * **Writable before anything is computed.** Taking the lock creates a file
//!   in the out-dir, so a read-only or missing-and-uncreatable out-dir fails
//!   at once.
//! * **Whole files only.** [`OutDir::write`] writes to a hidden temporary file
//!   in the same directory, syncs it, renames it over the target and syncs
//!   the directory; a failure removes the temporary file
//!   ([`dpaudit_data::atomic`], which also gives the file the mode an
//!   ordinary new file gets under the umask).
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
use std::time::Duration;

use dpaudit_data::atomic::sync_dir;

use sha2::{Digest, Sha256};

use crate::error::{Result, StoreError};

/// The version of the out-dir layout this build writes and reads.
pub const FORMAT_VERSION: u32 = 2;

/// The lock file's name.
pub const LOCK_FILE: &str = ".dpaudit.lock";

/// How long a lock file that names no holder must have been unchanged
/// before it is taken over. Its creator writes the content right after
/// creating the file (one `write` of about 100 bytes, visible to readers
/// before it is synced), so a live creator leaves it unreadable for far less
/// than a second; half a minute also covers a stalled network file system
/// and clocks a little apart. Should a creator still be writing after that,
/// it finds its content gone when it checks the lock after writing, and
/// gives the out-dir up.
pub const UNREADABLE_LOCK_GRACE: Duration = Duration::from_secs(30);

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

/// A stale lock [`OutDir::open`] took over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StaleLock {
    /// Its holder no longer runs.
    Holder(LockHolder),
    /// It named no holder (empty or cut short) and had not changed for
    /// `unchanged_s` seconds, at least [`UNREADABLE_LOCK_GRACE`].
    Unreadable {
        /// Its size.
        bytes: u64,
        /// Seconds since it last changed.
        unchanged_s: u64,
    },
}

impl fmt::Display for StaleLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StaleLock::Holder(h) => write!(f, "the stale lock of {h}, which no longer runs"),
            StaleLock::Unreadable { bytes, unchanged_s } => write!(
                f,
                "a lock file that named no holder ({bytes} bytes, unchanged for {unchanged_s} s): \
                 its creator stopped between creating and writing it"
            ),
        }
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
    stale: Option<StaleLock>,
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

impl OutDir {
    /// Create `root` if needed and take its lock for `command` (e.g.
    /// `"dpaudit run seed001.toml"`); refuses a locked or unwritable out-dir.
    pub fn open(root: &Path, command: &str) -> Result<OutDir> {
        Self::open_with(root, command, write_lock)
    }

    /// [`OutDir::open`], writing the lock's content with `write` (tests make
    /// it fail as a full disk does).
    fn open_with(
        root: &Path,
        command: &str,
        write: impl Fn(&mut File, &[u8]) -> std::io::Result<()>,
    ) -> Result<OutDir> {
        let created = !root.exists();
        fs::create_dir_all(root).map_err(|source| StoreError::NotWritable {
            path: root.to_path_buf(),
            source,
        })?;
        // Give a directory this call created back when it ends in an error.
        let fail = |e: StoreError| {
            if created {
                // Fails (and keeps the directory) unless it is empty.
                let _ = fs::remove_dir(root);
            }
            e
        };
        let path = root.join(LOCK_FILE);
        let me = LockHolder::this_process(command);
        let content = me.to_text();
        let mut stale = None;
        for attempt in 0..2 {
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut f) => {
                    if let Err(source) = write(&mut f, content.as_bytes()) {
                        // The file exists but does not (wholly) name us: left
                        // there, it would refuse every later run. Removing it
                        // is safe, the exclusive create made it ours; should
                        // that fail too, the grace rule takes it over later.
                        drop(f);
                        let _ = fs::remove_file(&path);
                        return Err(fail(StoreError::NotWritable {
                            path: root.to_path_buf(),
                            source,
                        }));
                    }
                    sync_dir(root);
                    // Taken over by another process while this one was
                    // writing (see UNREADABLE_LOCK_GRACE)? Then it is theirs.
                    let taken = "another process that took it over while this one wrote it";
                    match fs::read_to_string(&path) {
                        Ok(now) if now == content => {}
                        Ok(now) => {
                            return Err(fail(StoreError::Locked {
                                path: path.clone(),
                                holder: LockHolder::parse(&now)
                                    .map_or_else(|| taken.into(), |h| h.to_string()),
                            }))
                        }
                        Err(e) if e.kind() == ErrorKind::NotFound => {
                            return Err(fail(StoreError::Locked {
                                path: path.clone(),
                                holder: taken.into(),
                            }))
                        }
                        Err(source) => {
                            let _ = fs::remove_file(&path);
                            return Err(fail(StoreError::NotWritable {
                                path: root.to_path_buf(),
                                source,
                            }));
                        }
                    }
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
                            return Err(fail(StoreError::Locked {
                                path: path.clone(),
                                holder: holder.to_string(),
                            }))
                        }
                        Some(holder) => {
                            // Stale: its process is gone. Take it over.
                            remove_stale(&path).map_err(fail)?;
                            stale = Some(StaleLock::Holder(holder));
                        }
                        None => {
                            // Gone meanwhile: try again.
                            let Some((bytes, unchanged_s)) = lock_age(&path).map_err(fail)? else {
                                continue;
                            };
                            if unchanged_s < UNREADABLE_LOCK_GRACE.as_secs() {
                                return Err(fail(StoreError::Locked {
                                    path: path.clone(),
                                    holder: format!(
                                        "a process writing its lock right now, or one that stopped before it could \
                                         (the lock file names no holder: {bytes} bytes, unchanged for {unchanged_s} s; \
                                         once unchanged for {} s it is taken over, so run again then if no dpaudit \
                                         process uses {})",
                                        UNREADABLE_LOCK_GRACE.as_secs(),
                                        root.display(),
                                    ),
                                }));
                            }
                            remove_stale(&path).map_err(fail)?;
                            stale = Some(StaleLock::Unreadable { bytes, unchanged_s });
                        }
                    }
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                    return Err(fail(StoreError::Locked {
                        path: path.clone(),
                        holder: "another process that took it at the same moment".into(),
                    }))
                }
                Err(source) => {
                    return Err(fail(StoreError::NotWritable {
                        path: root.to_path_buf(),
                        source,
                    }))
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

    /// The stale lock this process took over, if any.
    pub fn took_over(&self) -> Option<&StaleLock> {
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
        let json = serde_json::to_string_pretty(value).map_err(|e| StoreError::Inconsistent {
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
            return Err(StoreError::Io {
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

/// The lock's content, written and synced.
fn write_lock(f: &mut File, content: &[u8]) -> std::io::Result<()> {
    f.write_all(content)?;
    f.sync_all()
}

/// The size of an existing lock file and the seconds since it last changed
/// (a modification time in the future, from a clock ahead of this one,
/// counts as now); `None` if it is gone.
fn lock_age(path: &Path) -> Result<Option<(u64, u64)>> {
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(StoreError::Io {
                path: path.to_path_buf(),
                action: "reading the lock's metadata",
                source,
            })
        }
    };
    let unchanged = meta
        .modified()
        .ok()
        .and_then(|m| m.elapsed().ok())
        .unwrap_or(Duration::ZERO);
    Ok(Some((meta.len(), unchanged.as_secs())))
}

/// Remove a stale lock; one already gone (another process took it over
/// first) is fine: the exclusive create that follows decides.
fn remove_stale(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(StoreError::Io {
            path: path.to_path_buf(),
            action: "removing a stale lock",
            source: e,
        }),
        _ => Ok(()),
    }
}

/// Write `bytes` to `path` whole or not at all, with the mode of an
/// ordinary new file: [`dpaudit_data::atomic::write_atomic`].
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    dpaudit_data::atomic::write_atomic(path, bytes).map_err(|e| StoreError::Io {
        path: e.path,
        action: e.action,
        source: e.source,
    })
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
        assert_eq!(out.took_over(), Some(&StaleLock::Holder(dead)));
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

    /// A write that stores a few bytes and then fails as on a full disk
    /// (ENOSPC after the exclusive create succeeded).
    fn disk_full(f: &mut File, content: &[u8]) -> std::io::Result<()> {
        f.write_all(&content[..5])?;
        Err(std::io::Error::from_raw_os_error(28))
    }

    #[test]
    fn a_lock_that_cannot_be_written_is_removed_and_the_next_open_succeeds() {
        let dir = tempfile::tempdir().unwrap();
        // An existing out-dir: kept, without a lock.
        let err = OutDir::open_with(dir.path(), "full", disk_full).unwrap_err();
        assert!(matches!(err, StoreError::NotWritable { .. }), "{err}");
        assert!(err.to_string().contains("nothing was computed"), "{err}");
        assert!(!dir.path().join(LOCK_FILE).exists());
        assert!(dir.path().exists());
        // An out-dir this call created: removed again.
        let fresh = dir.path().join("fresh");
        assert!(OutDir::open_with(&fresh, "full", disk_full).is_err());
        assert!(!fresh.exists());
        // Space again: the next run is not refused, and nothing was stale.
        let out = OutDir::open(dir.path(), "next").unwrap();
        assert!(out.took_over().is_none());
    }

    /// Sets a file's modification time `ago` in the past.
    fn age(path: &Path, ago: Duration) {
        let f = OpenOptions::new().write(true).open(path).unwrap();
        f.set_modified(std::time::SystemTime::now().checked_sub(ago).unwrap())
            .unwrap();
    }

    #[test]
    fn a_lock_naming_no_holder_is_refused_while_fresh_then_taken_over() {
        for text in ["", "pid 12\nho"] {
            let dir = tempfile::tempdir().unwrap();
            let lock = dir.path().join(LOCK_FILE);
            fs::write(&lock, text).unwrap();
            // Fresh: its creator may be writing it right now.
            let err = OutDir::open(dir.path(), "second").unwrap_err();
            assert!(matches!(err, StoreError::Locked { .. }), "{err}");
            let msg = err.to_string();
            assert!(
                msg.contains("names no holder") && msg.contains("unchanged for 30 s"),
                "{msg}"
            );
            assert!(lock.exists());
            // Unchanged past the grace period: its creator is gone.
            age(&lock, UNREADABLE_LOCK_GRACE + Duration::from_secs(5));
            let out = OutDir::open(dir.path(), "third").unwrap();
            let Some(StaleLock::Unreadable { bytes, unchanged_s }) = out.took_over() else {
                panic!("{:?}", out.took_over())
            };
            assert_eq!(*bytes, text.len() as u64);
            assert!(*unchanged_s >= 35, "{unchanged_s}");
            assert!(out
                .took_over()
                .unwrap()
                .to_string()
                .contains("named no holder"));
            assert!(fs::read_to_string(&lock).unwrap().contains("third"));
        }
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
        assert!(matches!(err, StoreError::NotWritable { .. }), "{err}");
        assert!(err.to_string().contains("a-file"), "{err}");
    }
}
