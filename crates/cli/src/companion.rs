//! The companion binary `dpaudit-torch`, which runs the commands that need
//! libtorch. `dpaudit` parses every command line itself (so help, usage and
//! errors are one), runs the pure commands in its own process, and replaces
//! itself with the companion for the others, passing the command line on
//! unchanged (`argv[0]` included).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The companion's file name.
pub const COMPANION: &str = "dpaudit-torch";

/// The places the companion is looked for, in order: beside `exe` (the
/// running binary, as the build and an install put them), then each
/// directory of `path_var` (the value of `PATH`).
pub fn candidates(exe: Option<&Path>, path_var: Option<&OsStr>) -> Vec<PathBuf> {
    let beside = exe.and_then(Path::parent).map(|d| d.join(COMPANION));
    let on_path = path_var
        .map(|p| {
            std::env::split_paths(p)
                .filter(|d| !d.as_os_str().is_empty())
                .map(|d| d.join(COMPANION))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    beside.into_iter().chain(on_path).collect()
}

/// A file this user may execute.
fn is_executable(p: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(p) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

/// The first executable companion among [`candidates`], or the error that
/// says where it was looked for and how to get it.
pub fn find(
    subcommand: &str,
    exe: Option<&Path>,
    path_var: Option<&OsStr>,
) -> anyhow::Result<PathBuf> {
    let places = candidates(exe, path_var);
    if let Some(found) = places.iter().find(|p| is_executable(p)) {
        return Ok(found.clone());
    }
    let beside = exe.and_then(Path::parent).map_or_else(
        || "(the running binary's path is unknown)".to_string(),
        |d| d.join(COMPANION).display().to_string(),
    );
    let dirs = path_var.map_or(0, |p| {
        std::env::split_paths(p)
            .filter(|d| !d.as_os_str().is_empty())
            .count()
    });
    anyhow::bail!(
        "`dpaudit {subcommand}` needs libtorch and runs in the companion binary `{COMPANION}`, which was not found: \
         looked for {beside} (beside this executable) and for `{COMPANION}` in the {dirs} directories of PATH. \
         Build it with `./dev cargo build -p dpaudit-cli-torch` (it is written beside `dpaudit`), or install it \
         on PATH"
    )
}

/// Replaces this process with the companion, running the same command line.
/// Returns only on failure.
pub fn exec(subcommand: &str) -> anyhow::Error {
    let exe = std::env::current_exe().ok();
    let path_var = std::env::var_os("PATH");
    let companion = match find(subcommand, exe.as_deref(), path_var.as_deref()) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_else(|| "dpaudit".into());
    let mut command = std::process::Command::new(&companion);
    command.args(args);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let err = command.arg0(arg0).exec();
        anyhow::Error::new(err).context(format!("starting {}", companion.display()))
    }
    #[cfg(not(unix))]
    {
        let _ = arg0;
        match command.status() {
            Ok(status) => std::process::exit(status.code().unwrap_or(1)),
            Err(err) => {
                anyhow::Error::new(err).context(format!("starting {}", companion.display()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_companion_beside_the_binary_comes_before_path() {
        let dir = tempfile::tempdir().unwrap();
        let (bin, other) = (dir.path().join("bin"), dir.path().join("other"));
        for d in [&bin, &other] {
            std::fs::create_dir(d).unwrap();
        }
        let exe = bin.join("dpaudit");
        let path_var = std::env::join_paths([&other]).unwrap();
        let err = format!(
            "{:#}",
            find("run", Some(&exe), Some(&path_var)).unwrap_err()
        );
        assert!(err.contains("`dpaudit run` needs libtorch"), "{err}");
        assert!(
            err.contains(&bin.join(COMPANION).display().to_string()),
            "{err}"
        );
        assert!(err.contains("in the 1 directories of PATH"), "{err}");

        let make = |d: &Path, mode: u32| {
            let p = d.join(COMPANION);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            }
            let _ = mode;
            p
        };
        // Not executable: skipped (on Unix).
        let _ = make(&bin, 0o644);
        let on_path = make(&other, 0o755);
        #[cfg(unix)]
        assert_eq!(find("run", Some(&exe), Some(&path_var)).unwrap(), on_path);
        let beside = make(&bin, 0o755);
        assert_eq!(find("run", Some(&exe), Some(&path_var)).unwrap(), beside);
        let _ = on_path;
    }
}
