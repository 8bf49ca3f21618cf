//! `runtime::retain_freed_host_memory`: after it, the large CPU tensors of a
//! training step reuse the pages of the previous step instead of faulting
//! every page in anew. Counted with the kernel's minor-fault counter of this
//! process, so the test measures the mechanism, not a time.
//!
//! Its own binary without the test harness (`harness = false`): the setting is
//! process-wide, the first part needs the defaults, and the steps must run on
//! the main thread, as in `dpaudit`, and then on a thread started after the
//! setting. It answers the listing protocol cargo-nextest uses for such
//! binaries (`--list --format terse`: one line `name: test`).

use dpaudit_train::engine::{forward_backward, Batch};
use dpaudit_train::models::LeNet5;
use dpaudit_train::runtime::{retain_freed_host_memory, HostMemory, HOST_MEMORY_ENV};
use dpaudit_train::testing::random_batch;
use dpaudit_train::{Init, Model};

/// Minor page faults of this process so far (`/proc/self/stat`, field 10).
fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // The command name (field 2) is in parentheses and may hold spaces.
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split(' ').nth(7).unwrap().parse().unwrap()
}

/// Faults taken by two per-sample-norm passes of LeNet-5 at B = 2048, after
/// one untimed pass. Its first convolution's output, 2048 × 6 × 28 × 28
/// floats = 37 MiB, is above the largest mmap threshold glibc uses by default
/// (32 MiB).
fn faults_of_two_steps() -> u64 {
    let model = LeNet5::new(&mut Init::new(0, 1, tch::Device::Cpu), 10).unwrap();
    let (x, y) = random_batch(&model, 2048, 0).unwrap();
    let batch = Batch::new(x, y);
    let step = || {
        let bp = forward_backward(&model, &batch).unwrap();
        let norms = bp.norms(&model, &batch).unwrap();
        assert_eq!(norms.sq.size(), [2048, model.replicas()]);
    };
    step();
    let before = minor_faults();
    step();
    step();
    minor_faults() - before
}

/// Answers `--list` (with `--ignored`: none) and returns true when listing.
fn listed() -> bool {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        if !args.iter().any(|a| a == "--ignored") {
            println!("freed_host_memory_is_reused: test");
        }
        return true;
    }
    false
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn main() {
    if listed() {
        return;
    }
    if std::env::var(HOST_MEMORY_ENV).is_ok() {
        println!("host_memory: skipped, {HOST_MEMORY_ENV} is set");
        return;
    }
    let default = faults_of_two_steps();
    assert_eq!(retain_freed_host_memory(), HostMemory::Retained);
    let retained = faults_of_two_steps();
    let on_thread = std::thread::spawn(faults_of_two_steps).join().unwrap();
    println!(
        "host_memory: minor faults of two steps: {default} with glibc's defaults, {retained} retained, \
         {on_thread} retained on a new thread"
    );
    // Each step maps at least the 37 MiB activation (9,472 pages) afresh by default.
    assert!(default > 2 * 9_472, "defaults: {default} faults");
    for (what, faults) in [("retained", retained), ("on a new thread", on_thread)] {
        assert!(
            faults * 4 < default,
            "{what}: {faults} faults against {default} with the defaults"
        );
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn main() {
    if listed() {
        return;
    }
    let _ = (faults_of_two_steps, minor_faults, HOST_MEMORY_ENV);
    assert_eq!(retain_freed_host_memory(), HostMemory::Unsupported);
}
