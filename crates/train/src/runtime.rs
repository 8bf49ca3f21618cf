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
