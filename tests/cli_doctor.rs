//! End-to-end: the `dpaudit` binary finds libtorch by itself (rpath) and
//! reports what it runs on.

mod common;

use std::process::Command;

fn dpaudit() -> Command {
    let mut cmd = common::binary();
    // The binary must not need any of these to find libtorch.
    for var in [
        "LD_LIBRARY_PATH",
        "LIBTORCH",
        "LIBTORCH_USE_PYTORCH",
        "VIRTUAL_ENV",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

#[test]
fn doctor_runs_without_library_path_and_reports_libtorch_2_11() {
    let out = dpaudit().args(["doctor", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "doctor failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The stack is pinned to the PyPI wheel torch==2.11.0 (README, ./dev).
    let version = info["libtorch_version"].as_str().unwrap();
    assert!(version.starts_with("2.11.0"), "libtorch version {version}");
    assert!(info["num_threads"].as_i64().unwrap() >= 1);
    let cuda = info["cuda_available"].as_bool().unwrap();
    let devices = info["cuda_device_count"].as_i64().unwrap();
    assert_eq!(
        cuda,
        devices > 0,
        "CUDA availability and device count disagree"
    );
    if !cuda {
        assert!(info["device_name"].is_null());
    }
}

#[test]
fn doctor_text_names_every_fact() {
    let out = dpaudit().arg("doctor").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for key in ["libtorch version", "CUDA available", "device", "threads"] {
        assert!(text.contains(key), "missing {key:?} in:\n{text}");
    }
}

#[test]
fn unknown_subcommand_is_a_clear_error_not_a_panic() {
    let out = dpaudit().arg("no-such-command").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unrecognized subcommand"), "{err}");
    assert!(!err.contains("panicked"));
}
