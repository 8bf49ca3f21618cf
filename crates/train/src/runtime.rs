//! Facts about the libtorch runtime this binary was linked against.

use serde::Serialize;

/// libtorch version captured at build time from the library directory
/// torch-sys linked against (`torch/version.py` or `build-version`).
pub const LIBTORCH_VERSION: &str = env!("DPAUDIT_LIBTORCH_VERSION");

/// What `dpaudit doctor` reports.
#[derive(Debug, Clone, Serialize)]
pub struct RuntimeInfo {
    pub libtorch_version: String,
    pub libtorch_lib_dir: String,
    pub cuda_available: bool,
    pub cuda_device_count: i64,
    pub cudnn_available: bool,
    pub device_name: Option<String>,
    pub num_threads: i32,
    /// Whether freed host memory is kept for reuse ([`retain_freed_host_memory`]).
    pub host_memory: HostMemory,
}

impl RuntimeInfo {
    /// Probe the linked libtorch. Never fails: absent facts are reported as such.
    pub fn probe() -> Self {
        let cuda_available = tch::Cuda::is_available();
        Self {
            libtorch_version: LIBTORCH_VERSION.to_string(),
            libtorch_lib_dir: env!("DPAUDIT_LIBTORCH_LIB").to_string(),
            cuda_available,
            cuda_device_count: tch::Cuda::device_count(),
            cudnn_available: tch::Cuda::cudnn_is_available(),
            device_name: if cuda_available { gpu_name() } else { None },
            num_threads: tch::get_num_threads(),
            host_memory: retain_freed_host_memory(),
        }
    }
}

/// The name of GPU 0. libtorch's C API as exposed by tch has no device-name
/// query, so ask the driver's own tools: `nvidia-smi`, then the driver's proc
/// file.
fn gpu_name() -> Option<String> {
    if let Ok(out) = std::process::Command::new("nvidia-smi")
        .args(["--query-gpu=name", "--format=csv,noheader", "--id=0"])
        .output()
    {
        let name = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if out.status.success() && !name.is_empty() {
            return Some(name);
        }
    }
    let dir = std::fs::read_dir("/proc/driver/nvidia/gpus").ok()?;
    for entry in dir.flatten() {
        let text = std::fs::read_to_string(entry.path().join("information")).ok()?;
        for line in text.lines() {
            if let Some(model) = line.strip_prefix("Model:") {
                return Some(model.trim().to_string());
            }
        }
    }
    None
}

/// What the host allocator does with freed memory in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HostMemory {
    /// Freed blocks stay in the process and serve the next allocation
    /// (glibc: one arena, no `mmap` for large blocks, no trimming of the heap).
    Retained,
    /// The C library's defaults, because [`HOST_MEMORY_ENV`] asked for them.
    SystemDefault,
    /// The C library's defaults, because this platform has no glibc
    /// `mallopt`.
    Unsupported,
}

impl std::fmt::Display for HostMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HostMemory::Retained => "retained (freed blocks are reused, never unmapped)",
            HostMemory::SystemDefault => "system default (DPAUDIT_HOST_MEMORY=system)",
            HostMemory::Unsupported => "system default (no glibc mallopt on this platform)",
        })
    }
}

/// Set to `system` to keep the C library's allocator defaults.
pub const HOST_MEMORY_ENV: &str = "DPAUDIT_HOST_MEMORY";

/// Make the host allocator keep freed memory for reuse; call once, first
/// thing in `main`, before any other thread exists (later calls return the
/// first answer).
///
/// Why: glibc serves every block above its mmap threshold (at most 32 MiB)
/// with a fresh `mmap` and returns it with `munmap` when freed, so every large
/// CPU tensor of every step (an unfolded input, a per-sample gradient, a
/// batch of activations) costs one page fault per 4 KiB page while the kernel
/// zeroes it. Measured on LeNet-5 at B = 4096 on 2 cores
/// (`examples/dp_profile.rs`): 3.2 M minor faults and as much system time as
/// user time with the defaults; 0.35 M faults and a 2.6× faster non-private
/// step with blocks retained (`benches/RESULTS.md`). The cost is that the
/// resident size stays at its peak instead of shrinking between steps.
///
/// libtorch's CPU allocator calls `posix_memalign`, so the setting covers
/// tensors too. It does not touch device (CUDA) memory, which libtorch's
/// caching allocator already reuses.
pub fn retain_freed_host_memory() -> HostMemory {
    static CHOICE: std::sync::OnceLock<HostMemory> = std::sync::OnceLock::new();
    *CHOICE.get_or_init(|| {
        if std::env::var(HOST_MEMORY_ENV).is_ok_and(|v| v.trim() == "system") {
            return HostMemory::SystemDefault;
        }
        retain_with_mallopt()
    })
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn retain_with_mallopt() -> HostMemory {
    // SAFETY: `mallopt` only changes tuning parameters of glibc's
    // allocator; it takes plain integers, touches no Rust memory, and glibc
    // serialises it against concurrent allocations with the arena lock.
    // One arena: a thread's own arena would still map its large blocks
    // (glibc falls back to `mmap` when a block outgrows a 64 MiB thread heap).
    let ok = unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1) == 1
            && libc::mallopt(libc::M_MMAP_MAX, 0) == 1
            && libc::mallopt(libc::M_TRIM_THRESHOLD, libc::c_int::MAX) == 1
    };
    if ok {
        HostMemory::Retained
    } else {
        HostMemory::SystemDefault
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn retain_with_mallopt() -> HostMemory {
    HostMemory::Unsupported
}
