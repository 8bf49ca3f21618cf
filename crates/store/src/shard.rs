//! Shards: which chunks of an experiment one process trains.
//!
//! Shard `i/n` owns the chunks `c` with `c mod n = i`. A scheduler's array
//! task finds its shard with `auto`:
//!
//! * Slurm job arrays set `SLURM_ARRAY_TASK_ID`, `SLURM_ARRAY_TASK_MIN` and
//!   `SLURM_ARRAY_TASK_COUNT`: the shard is `(ID − MIN) / COUNT` (an array
//!   `--array=1-8` gives shards 0/8 … 7/8).
//! * Kubernetes Indexed Jobs set `JOB_COMPLETION_INDEX` only; the count comes
//!   from `auto/N` (the Job's `completions`).
//!
//! `auto/N` under Slurm checks that `N` is the array's task count.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{invalid, Result};

/// Shard `index` of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Shard {
    /// `0 ≤ index < count`.
    pub index: u64,
    /// At least 1.
    pub count: u64,
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// The whole experiment in one process.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Whether this shard trains chunk `chunk`.
    pub fn owns(&self, chunk: u64) -> bool {
        chunk % self.count == self.index
    }

    /// `i/n`, `auto` or `auto/n`, reading the scheduler's variables through
    /// `env` (pass `|k| std::env::var(k).ok()`).
    pub fn parse(text: &str, env: impl Fn(&str) -> Option<String>) -> Result<Shard> {
        let text = text.trim();
        let expected =
            "i/n with 0 ≤ i < n (e.g. 0/4), `auto` inside a Slurm job array, or `auto/n` \
                        (a Kubernetes Indexed Job with n completions)";
        let (first, count) = match text.split_once('/') {
            Some((a, b)) => {
                let n: u64 = b
                    .trim()
                    .parse()
                    .map_err(|_| invalid("--shard", text, expected))?;
                (a.trim(), Some(n))
            }
            None => (text, None),
        };
        if count == Some(0) {
            return Err(invalid("--shard", text, expected));
        }
        if first != "auto" {
            let index: u64 = first
                .parse()
                .map_err(|_| invalid("--shard", text, expected))?;
            let count = count.ok_or_else(|| invalid("--shard", text, expected))?;
            if index >= count {
                return Err(invalid("--shard", text, expected));
            }
            return Ok(Shard { index, count });
        }
        let var = |name: &str| -> Result<Option<u64>> {
            match env(name) {
                None => Ok(None),
                Some(v) => v
                    .trim()
                    .parse()
                    .map(Some)
                    .map_err(|_| invalid(name, v, "a non-negative integer")),
            }
        };
        if let Some(id) = var("SLURM_ARRAY_TASK_ID")? {
            let min = var("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
            let slurm_count = var("SLURM_ARRAY_TASK_COUNT")?.ok_or_else(|| {
                invalid(
                    "SLURM_ARRAY_TASK_COUNT",
                    "unset",
                    "the job array's task count (Slurm sets it in every array task)",
                )
            })?;
            if let Some(n) = count {
                if n != slurm_count {
                    return Err(invalid(
                        "--shard",
                        text,
                        format!("auto/{slurm_count}: this job array has {slurm_count} tasks"),
                    ));
                }
            }
            let index = id.checked_sub(min).filter(|&i| i < slurm_count).ok_or_else(|| {
                invalid(
                    "SLURM_ARRAY_TASK_ID",
                    id.to_string(),
                    format!(
                        "a task of a contiguous array: MIN = {min} ≤ ID < MIN + COUNT = {} (dpaudit slurm writes \
                         --array=0-{})",
                        min + slurm_count,
                        slurm_count.saturating_sub(1)
                    ),
                )
            })?;
            return Ok(Shard {
                index,
                count: slurm_count,
            });
        }
        if let Some(index) = var("JOB_COMPLETION_INDEX")? {
            let count = count.ok_or_else(|| {
                invalid(
                    "--shard",
                    text,
                    "auto/n in a Kubernetes Indexed Job (n = the Job's completions; Kubernetes does not export it)",
                )
            })?;
            if index >= count {
                return Err(invalid(
                    "JOB_COMPLETION_INDEX",
                    index.to_string(),
                    format!("an index below the shard count {count}"),
                ));
            }
            return Ok(Shard { index, count });
        }
        Err(invalid(
            "--shard",
            text,
            "`auto` only inside a Slurm job array (SLURM_ARRAY_TASK_ID) or a Kubernetes Indexed Job \
             (JOB_COMPLETION_INDEX); neither variable is set",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn explicit_shards() {
        assert_eq!(
            Shard::parse("1/4", env(&[])).unwrap(),
            Shard { index: 1, count: 4 }
        );
        for bad in ["4/4", "1/0", "x/2", "1", "", "1/2/3"] {
            assert!(Shard::parse(bad, env(&[])).is_err(), "{bad}");
        }
        let s = Shard { index: 1, count: 3 };
        assert_eq!((0..7).filter(|&c| s.owns(c)).collect::<Vec<_>>(), [1, 4]);
    }

    #[test]
    fn auto_in_a_slurm_array() {
        let vars = [
            ("SLURM_ARRAY_TASK_ID", "6"),
            ("SLURM_ARRAY_TASK_MIN", "5"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ];
        assert_eq!(
            Shard::parse("auto", env(&vars)).unwrap(),
            Shard { index: 1, count: 4 }
        );
        assert_eq!(
            Shard::parse("auto/4", env(&vars)).unwrap(),
            Shard { index: 1, count: 4 }
        );
        let e = Shard::parse("auto/8", env(&vars)).unwrap_err().to_string();
        assert!(e.contains("4 tasks"), "{e}");
        // A task outside a contiguous array.
        let gap = [
            ("SLURM_ARRAY_TASK_ID", "9"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ];
        let e = Shard::parse("auto", env(&gap)).unwrap_err().to_string();
        assert!(e.contains("SLURM_ARRAY_TASK_ID"), "{e}");
        let no_count = [("SLURM_ARRAY_TASK_ID", "0")];
        assert!(Shard::parse("auto", env(&no_count))
            .unwrap_err()
            .to_string()
            .contains("SLURM_ARRAY_TASK_COUNT"));
    }

    #[test]
    fn auto_in_a_kubernetes_indexed_job() {
        let vars = [("JOB_COMPLETION_INDEX", "2")];
        assert_eq!(
            Shard::parse("auto/3", env(&vars)).unwrap(),
            Shard { index: 2, count: 3 }
        );
        assert!(Shard::parse("auto", env(&vars))
            .unwrap_err()
            .to_string()
            .contains("completions"));
        assert!(Shard::parse("auto/2", env(&vars)).is_err());
    }

    #[test]
    fn auto_outside_a_scheduler_says_what_is_missing() {
        let e = Shard::parse("auto", env(&[])).unwrap_err().to_string();
        assert!(
            e.contains("SLURM_ARRAY_TASK_ID") && e.contains("JOB_COMPLETION_INDEX"),
            "{e}"
        );
        let e = Shard::parse("auto", env(&[("SLURM_ARRAY_TASK_ID", "x")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("non-negative integer"), "{e}");
    }
}
