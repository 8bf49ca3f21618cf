//! Memory estimates: what a run will hold, estimated before anything large
//! is allocated, and refused with the estimate when it cannot fit. The
//! training crate's `preflight` estimates training runs with these.
//!
//! Available memory is `MemAvailable` of `/proc/meminfo`, capped by the
//! cgroup (v2) limit when there is one. On other systems nothing is refused.

use std::fmt;

use crate::error::{PlanError, Result};

/// A lower bound on the peak memory of a run, by part.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryEstimate {
    /// `(what, bytes)` for each part, largest first.
    pub parts: Vec<(String, u64)>,
}

impl MemoryEstimate {
    /// The estimate with one more part.
    pub fn with(mut self, what: impl Into<String>, bytes: u64) -> Self {
        self.parts.push((what.into(), bytes));
        self.parts.sort_by_key(|p| std::cmp::Reverse(p.1));
        self
    }

    /// The sum of the parts.
    pub fn total(&self) -> u64 {
        self.parts
            .iter()
            .map(|(_, b)| *b)
            .fold(0, u64::saturating_add)
    }
}

/// Bytes as GiB with two decimals.
pub fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

impl fmt::Display for MemoryEstimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at least {}", gib(self.total()))?;
        let parts: Vec<String> = self
            .parts
            .iter()
            .map(|(what, b)| format!("{what} {}", gib(*b)))
            .collect();
        write!(f, " ({})", parts.join(", "))
    }
}

/// Memory available to this process, if the system says.
pub fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    let mut bytes = kib.saturating_mul(1024);
    if let Ok(limit) = std::fs::read_to_string("/sys/fs/cgroup/memory.max") {
        if let Ok(limit) = limit.trim().parse::<u64>() {
            let used = std::fs::read_to_string("/sys/fs/cgroup/memory.current")
                .ok()
                .and_then(|u| u.trim().parse::<u64>().ok())
                .unwrap_or(0);
            bytes = bytes.min(limit.saturating_sub(used));
        }
    }
    Some(bytes)
}

/// Refuse `estimate` for `what` when it exceeds the available memory; `fields`
/// names the settings that drive it, for the message.
pub fn check(what: &str, fields: &str, estimate: &MemoryEstimate) -> Result<()> {
    check_against(what, fields, estimate, available_memory())
}

/// [`check`] against a given amount of available memory (`None`: unknown,
/// nothing is refused).
pub fn check_against(
    what: &str,
    fields: &str,
    estimate: &MemoryEstimate,
    available: Option<u64>,
) -> Result<()> {
    match available {
        Some(avail) if estimate.total() > avail => Err(PlanError::InsufficientMemory {
            what: what.into(),
            needs: estimate.to_string(),
            available: gib(avail),
            fields: fields.into(),
        }),
        _ => Ok(()),
    }
}
