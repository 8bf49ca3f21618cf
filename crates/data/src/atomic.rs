//! Files written whole or not at all, with the mode an ordinary new file gets.
//!
//! [`write_atomic`] writes to a hidden temporary file in the target's
//! directory, syncs it, renames it over the target and syncs the directory;
//! any failure removes the temporary file, so a reader sees the old file or
//! the new one, never a part. It is the one atomic writer of the workspace:
//! out-dirs (`dpaudit_store::outdir`), checkpoints (`dpaudit_train`),
//! PANORAMIA's files and the fetch's downloads ([`temp_file_in`]) all go
//! through this module.
//!
//! # Mode
//!
//! A temporary file is private (`0600`) by default, and a rename keeps the
//! mode, so every result used to be unreadable to the user's group whatever
//! their umask. [`temp_file_in`] instead asks `open(2)` for `0666`, which the
//! kernel masks with the process's umask exactly as it does for
//! `File::create`: the file ends with `0666 & !umask` (`0644` under the usual
//! `022`), or whatever a default ACL of the directory gives a new file. The
//! umask is never read: reading it means `umask(2)`, which also sets it, and a
//! second thread creating a file between the two calls would get the wrong
//! mode; letting the kernel apply it in the same call that creates the file
//! has no such window. The file is visible with that mode while it is
//! written, but only under a hidden temporary name, and the final file gets
//! the same mode anyway.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A file could not be written whole: which path, what was being done, and
/// the system's error.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {action}: {source}")]
pub struct WriteError {
    /// The file, or the directory for the steps that concern it.
    pub path: PathBuf,
    /// What was being done, e.g. "writing" or "renaming into place".
    pub action: &'static str,
    /// The system's error.
    #[source]
    pub source: std::io::Error,
}

/// The mode requested for new files before the umask applies: what
/// `File::create` asks for.
#[cfg(unix)]
const NEW_FILE_MODE: u32 = 0o666;

/// A hidden temporary file in `dir` (name starting with `prefix`), created
/// with the mode an ordinary new file gets there (see the module docs);
/// removed when dropped unless persisted.
pub fn temp_file_in(dir: &Path, prefix: &str) -> std::io::Result<tempfile::NamedTempFile> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(NEW_FILE_MODE));
    }
    builder.tempfile_in(dir)
}

/// Write `bytes` to `path` whole or not at all (see the module docs),
/// creating its directory if needed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let err = |path: &Path, action: &'static str| {
        let path = path.to_path_buf();
        move |source| WriteError {
            path,
            action,
            source,
        }
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(err(dir, "creating the directory"))?;
    let mut tmp = temp_file_in(dir, ".tmp-").map_err(err(dir, "creating a temporary file in"))?;
    tmp.write_all(bytes)
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(err(path, "writing"))?;
    tmp.persist(path)
        .map_err(|e| err(path, "renaming into place")(e.error))?;
    sync_dir(dir);
    Ok(())
}

/// Sync a directory so that a rename in it survives a crash (best effort:
/// not every file system supports it).
pub fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut n: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    }

    #[test]
    fn writes_replace_whole_files_and_failures_leave_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/x.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        // A directory of the target's name cannot be replaced: the error
        // names the path and the step, and no temporary file is left.
        std::fs::create_dir(dir.path().join("sub/d")).unwrap();
        std::fs::write(dir.path().join("sub/d/keep"), b"").unwrap();
        let err = write_atomic(&dir.path().join("sub/d"), b"x").unwrap_err();
        assert_eq!(err.action, "renaming into place");
        assert!(err.to_string().contains("sub/d"), "{err}");
        assert_eq!(names(&dir.path().join("sub")), ["d", "x.json"]);
    }

    /// The mode of a file `File::create` makes in `dir` now.
    #[cfg(unix)]
    fn ordinary_mode(dir: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        let probe = dir.join("probe");
        File::create(&probe).unwrap();
        let mode = std::fs::metadata(&probe).unwrap().permissions().mode() & 0o777;
        std::fs::remove_file(probe).unwrap();
        mode
    }

    #[cfg(unix)]
    fn mode_of(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    /// Under the test process's own umask (not changed here: tests share the
    /// process), a written file and a downloaded temporary get the mode
    /// `File::create` gives in the same directory, also when they replace a
    /// file of another mode.
    #[cfg(unix)]
    #[test]
    fn written_files_get_the_mode_of_an_ordinary_new_file() {
        use std::fs::Permissions;
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let want = ordinary_mode(dir.path());
        let path = dir.path().join("audit.json");
        write_atomic(&path, b"{}").unwrap();
        assert_eq!(mode_of(&path), want, "{:o} vs {want:o}", mode_of(&path));
        std::fs::set_permissions(&path, Permissions::from_mode(0o600)).unwrap();
        write_atomic(&path, b"{}").unwrap();
        assert_eq!(mode_of(&path), want);
        let tmp = temp_file_in(dir.path(), ".fetch-").unwrap();
        assert_eq!(mode_of(tmp.path()), want);
    }

    /// Child processes with a known umask (set by `sh` before it runs this
    /// test binary again, so this process's umask is never touched) write a
    /// file; its mode must be exactly `0666 & !umask`. Fails with the old
    /// private temporary files, whose results were 0600 under every umask.
    #[cfg(unix)]
    #[test]
    fn under_a_known_umask_the_mode_is_0666_masked() {
        const CHILD: &str = "DPAUDIT_ATOMIC_UMASK_CHILD";
        if let Ok(dir) = std::env::var(CHILD) {
            // The child: write, and report the mode.
            let path = Path::new(&dir).join("f");
            write_atomic(&path, b"x").unwrap();
            println!("mode={:o}", mode_of(&path));
            return;
        }
        let exe = std::env::current_exe().unwrap();
        for (umask, want) in [(0o022, 0o644), (0o002, 0o664), (0o027, 0o640)] {
            let dir = tempfile::tempdir().unwrap();
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "umask {umask:03o} && exec \"$0\" --exact atomic::tests::under_a_known_umask_the_mode_is_0666_masked --nocapture --test-threads 1"
                ))
                .arg(&exe)
                .env(CHILD, dir.path())
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                stdout.contains(&format!("mode={want:o}")),
                "umask {umask:03o}: expected mode {want:o}; child said: {stdout:?}"
            );
        }
    }
}
