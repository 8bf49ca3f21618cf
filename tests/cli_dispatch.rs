#![cfg(unix)]

//! End-to-end: `dpaudit` runs the pure commands itself and hands the
//! libtorch ones to the companion `dpaudit-torch` (beside it, else on
//! PATH) with the command line unchanged; without a companion it says
//! where it looked. Runs on a copy of the binary in a temporary directory,
//! beside a stand-in companion or none.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

/// Held while writing an executable or starting a process: a process forked
/// by another test thread while a file is open for writing keeps it open
/// until its exec, and running that file then fails with "Text file busy".
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A copy of `dpaudit` in `dir`.
fn copy_of_dpaudit(dir: &Path) -> PathBuf {
    let copy = dir.join("dpaudit");
    let _serial = serial();
    std::fs::copy(common::BINARY, &copy).unwrap();
    copy
}

/// `bin ARGS…` with PATH set to `path` alone.
fn run(bin: &Path, args: &[&str], path: &Path) -> Output {
    let _serial = serial();
    Command::new(bin)
        .args(args)
        .env("PATH", path)
        .output()
        .unwrap()
}

/// A stand-in companion at `dir/dpaudit-torch`: prints its arguments one per
/// line and exits with status 7.
fn stand_in_companion(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("dpaudit-torch");
    let _serial = serial();
    std::fs::write(
        &p,
        "#!/bin/sh\nfor a in \"$@\"; do printf '<%s>\\n' \"$a\"; done\nexit 7\n",
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn help_lists_every_command_of_both_binaries() {
    let help = common::ok(&{
        let _serial = serial();
        common::dpaudit(&["--help"])
    });
    for name in [
        "doctor",
        "data",
        "account",
        "calibrate",
        "estimate",
        "counts",
        "train",
        "bench",
        "demo",
        "run",
        "merge",
        "compare",
        "selftest",
        "bgm",
        "slurm",
        "panoramia",
    ] {
        assert!(
            help.lines()
                .any(|l| l.trim_start().starts_with(&format!("{name} "))),
            "{name} missing from:\n{help}"
        );
    }
    assert!(help.contains("Usage: dpaudit <COMMAND>"), "{help}");
}

#[test]
fn a_libtorch_command_without_a_companion_names_where_it_looked() {
    let dir = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let bin = copy_of_dpaudit(dir.path());
    let out = run(&bin, &["doctor", "--json"], empty.path());
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`dpaudit doctor` needs libtorch"), "{err}");
    let beside = dir.path().join("dpaudit-torch");
    assert!(err.contains(&beside.display().to_string()), "{err}");
    assert!(err.contains("1 directories of PATH"), "{err}");
    assert!(err.contains("cargo build -p dpaudit-cli-torch"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // The command line is still checked here first: a usage error is clap's.
    let out = run(&bin, &["run"], empty.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("required"));
    // The pure commands need no companion.
    let out = run(
        &bin,
        &[
            "account",
            "--sample-rate",
            "0.01",
            "--noise-multiplier",
            "1",
            "--steps",
            "100",
            "--delta",
            "1e-5",
            "--json",
        ],
        empty.path(),
    );
    common::json(&out);
}

#[test]
fn the_companion_beside_the_binary_gets_the_command_line_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let bin = copy_of_dpaudit(dir.path());
    stand_in_companion(dir.path());
    let args = [
        "bgm",
        "--config",
        "a file with spaces.toml",
        "--threads",
        "3",
        "--engine",
        "rust",
    ];
    let out = run(&bin, &args, Path::new("/nonexistent"));
    assert_eq!(
        out.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected: String = args.iter().map(|a| format!("<{a}>\n")).collect();
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
}

#[test]
fn a_companion_on_path_is_found_when_none_is_beside_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let on_path = tempfile::tempdir().unwrap();
    let bin = copy_of_dpaudit(dir.path());
    stand_in_companion(on_path.path());
    let out = run(&bin, &["doctor"], on_path.path());
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "<doctor>\n");
}

/// `dpaudit slurm` plans an experiment's units without libtorch: the lone
/// `dpaudit` writes the job array of a BGM file (6 chunks, `tests/cli_bgm.rs`)
/// and of a canary file (4 chunks), and the jobs run that binary.
#[test]
fn slurm_writes_job_arrays_without_a_companion() {
    let dir = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let bin = copy_of_dpaudit(dir.path());
    for (name, text, command, units) in [
        ("bgm.toml", common::fixtures::TINY_BGM, "bgm", 6),
        ("canary.toml", common::fixtures::TINY_CANARY, "run", 4),
    ] {
        let file = common::write(dir.path(), name, text);
        let out = dir.path().join(format!("{command}-cluster"));
        let args = ["slurm", "--tasks", "2", "--out-dir", out.to_str().unwrap()];
        let stdout = common::ok(&run(
            &bin,
            &[&args[..], &[file.to_str().unwrap()]].concat(),
            empty.path(),
        ));
        assert!(stdout.contains("(2 array tasks)"), "{stdout}");
        let script = common::read(&out.join("slurm/shards.sbatch"));
        for part in [
            format!("exec '{}' '{command}' ", bin.display()),
            format!("'{}'", file.display()),
            "--shard auto/2".to_string(),
        ] {
            assert!(script.contains(&part), "{part} in {script}");
        }
        let too_many = (units + 1).to_string();
        let args = [
            "slurm",
            "--tasks",
            &too_many,
            "--out-dir",
            out.to_str().unwrap(),
        ];
        let e = common::failure(&run(
            &bin,
            &[&args[..], &[file.to_str().unwrap()]].concat(),
            empty.path(),
        ));
        assert!(e.contains(&format!("expected 1 to {units}")), "{e}");
    }
}
