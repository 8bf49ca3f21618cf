//! Set-up shared by the workspace CLI tests (`tests/cli_*.rs`): the binary,
//! what one of its runs returned (a success's stdout or JSON, a failure's
//! stderr), the experiment fixtures of `tests/fixtures/` written into a
//! test's directory, and a long run that a second process must find locked.

// Every test file uses its own subset.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

#[path = "../fixtures/mod.rs"]
pub mod fixtures;

/// The binary under test: `dpaudit` in the tests of `dpaudit-cli` (the pure
/// commands), `dpaudit-torch` in those of `dpaudit-cli-torch` (a whole
/// command line by itself; `dpaudit` hands it the libtorch commands).
pub const BINARY: &str = match option_env!("CARGO_BIN_EXE_dpaudit") {
    Some(p) => p,
    None => match option_env!("CARGO_BIN_EXE_dpaudit-torch") {
        Some(p) => p,
        None => panic!("the tests of dpaudit-cli or dpaudit-cli-torch only"),
    },
};

/// The binary with one intra-op thread and without `RUST_BACKTRACE`: the
/// tests run several processes at once on a 2-core machine, where
/// libtorch's spinning OpenMP workers would oversubscribe the cores (every
/// compared pair of runs uses the same setting), and a panic's message must
/// read the same whatever the caller's environment.
pub fn binary() -> Command {
    let mut c = Command::new(BINARY);
    c.env("OMP_NUM_THREADS", "1").env_remove("RUST_BACKTRACE");
    c
}

/// `dpaudit ARGS…`, run to its end.
pub fn dpaudit(args: &[&str]) -> Output {
    dpaudit_on(args, &[])
}

/// `dpaudit ARGS… PATHS…`, run to its end.
pub fn dpaudit_on(args: &[&str], paths: &[&Path]) -> Output {
    binary().args(args).args(paths).output().unwrap()
}

/// The stdout of a run that must have succeeded.
pub fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The JSON stdout of a run that must have succeeded.
pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_str(&ok(out)).unwrap()
}

/// The stderr of a run that must have failed, and not by a panic.
pub fn failure(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "expected failure, got {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// `text` written to `dir/name`.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

pub fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `command` started in the background, its output discarded.
pub fn spawn_quiet(mut command: Command) -> Child {
    command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Two processes on one out-dir: `first`, a run of minutes, is started;
/// once its lock file exists (or a minute has passed) `second` runs on the
/// same out-dir, then `first` is killed. The second must have been refused
/// while the first was still running, naming the first's pid.
pub fn assert_second_process_is_refused(first: Command, mut second: Command, out: &Path) {
    let mut first = spawn_quiet(first);
    let lock = out.join(".dpaudit.lock");
    let start = Instant::now();
    while !lock.exists() && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let second = second.output().unwrap();
    let running = first.try_wait().unwrap().is_none();
    let _ = first.kill();
    let _ = first.wait();
    assert!(
        running,
        "the first run ended before the second started; make it slower"
    );
    let e = failure(&second);
    assert!(
        e.contains(&format!("pid {}", first.id())) && e.contains("in use"),
        "{e}"
    );
}
