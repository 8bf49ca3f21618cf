//! Slurm job arrays: one array task per shard, then one merge-and-finalize
//! job that runs only if every task succeeded (`--dependency=afterok`).
//!
//! Layout inside the out-dir `D`:
//!
//! ```text
//! D/slurm/shards.sbatch   the array: task i runs `dpaudit run EXP --out-dir D/shards/i --shard auto`
//!                         (`dpaudit bgm --config EXP …` for a BGM experiment)
//! D/slurm/merge.sbatch    `dpaudit merge --out-dir D D/shards/*`
//! D/slurm/shard-<i>.log   each task's output;  D/slurm/merge.log
//! ```
//!
//! Each array task has its own out-dir (an out-dir has one writer); the merge
//! copies their verified chunks into `D` and writes `scores.csv`, `audit.json`,
//! `summary.md` and the plots, which equal those of a single-process run.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{invalid, Result, StoreError};

/// What [`write_scripts`] needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmPlan {
    /// The `dpaudit` binary the jobs run (absolute).
    pub binary: PathBuf,
    /// The subcommand: `run` (canary experiments) or `bgm` (simulations).
    pub command: String,
    /// The experiment file (absolute).
    pub experiment: PathBuf,
    /// The out-dir (absolute).
    pub out_dir: PathBuf,
    /// Array tasks = shards.
    pub tasks: u64,
    /// `--partition`.
    pub partition: Option<String>,
    /// `--gres` (e.g. `gpu:1`).
    pub gres: Option<String>,
    /// `--time` (e.g. `04:00:00`).
    pub time: Option<String>,
    /// `--cpus-per-task`.
    pub cpus_per_task: Option<u32>,
    /// Extra arguments for every task's `dpaudit` call (e.g. `--quiet`).
    pub extra_args: Vec<String>,
}

/// Single-quote a word for bash.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn quote_path(p: &Path) -> String {
    quote(&p.display().to_string())
}

impl SlurmPlan {
    fn check(&self) -> Result<()> {
        if self.tasks == 0 {
            return Err(invalid("--tasks", "0", "at least 1 array task"));
        }
        for (name, p) in [
            ("the dpaudit binary", &self.binary),
            ("the experiment", &self.experiment),
            ("--out-dir", &self.out_dir),
        ] {
            if !p.is_absolute() {
                return Err(invalid(
                    name,
                    p.display().to_string(),
                    "an absolute path (jobs start in another directory)",
                ));
            }
        }
        for (name, value) in [
            ("--partition", &self.partition),
            ("--gres", &self.gres),
            ("--time", &self.time),
        ] {
            if let Some(v) = value {
                if v.is_empty()
                    || v.chars()
                        .any(|c| c.is_whitespace() || c == '\'' || c == '"')
                {
                    return Err(invalid(
                        name,
                        v.clone(),
                        "a Slurm value without spaces or quotes",
                    ));
                }
            }
        }
        Ok(())
    }

    /// The directory of shard `i`.
    pub fn shard_dir(&self, i: u64) -> PathBuf {
        self.out_dir.join("shards").join(format!("shard-{i:04}"))
    }

    fn header(&self, job: &str, log: &str) -> String {
        let mut s = String::from("#!/bin/bash\n");
        s.push_str(&format!("#SBATCH --job-name=dpaudit-{job}\n"));
        s.push_str(&format!(
            "#SBATCH --output={}\n",
            self.out_dir.join("slurm").join(log).display()
        ));
        if let Some(p) = &self.partition {
            s.push_str(&format!("#SBATCH --partition={p}\n"));
        }
        if let Some(g) = &self.gres {
            s.push_str(&format!("#SBATCH --gres={g}\n"));
        }
        if let Some(t) = &self.time {
            s.push_str(&format!("#SBATCH --time={t}\n"));
        }
        if let Some(c) = self.cpus_per_task {
            s.push_str(&format!("#SBATCH --cpus-per-task={c}\n"));
        }
        s
    }

    /// The array script.
    pub fn shards_script(&self) -> String {
        let mut s = self.header("shards", "shard-%a.log");
        s.push_str(&format!("#SBATCH --array=0-{}\n", self.tasks - 1));
        s.push_str("set -euo pipefail\n");
        s.push_str(&format!(
            "shard_dir={}/shard-$(printf %04d \"$SLURM_ARRAY_TASK_ID\")\n",
            quote_path(&self.out_dir.join("shards"))
        ));
        let extra: Vec<String> = self.extra_args.iter().map(|a| quote(a)).collect();
        // `dpaudit run EXP`, but `dpaudit bgm --config EXP`.
        let experiment_flag = if self.command == "bgm" {
            " --config"
        } else {
            ""
        };
        s.push_str(&format!(
            "exec {} {}{experiment_flag} {} --out-dir \"$shard_dir\" --shard auto/{}{}\n",
            quote_path(&self.binary),
            quote(&self.command),
            quote_path(&self.experiment),
            self.tasks,
            extra.iter().map(|a| format!(" {a}")).collect::<String>()
        ));
        s
    }

    /// The merge-and-finalize script.
    pub fn merge_script(&self) -> String {
        let mut s = self.header("merge", "merge.log");
        s.push_str("set -euo pipefail\n");
        let shards: Vec<String> = (0..self.tasks)
            .map(|i| quote_path(&self.shard_dir(i)))
            .collect();
        s.push_str(&format!(
            "exec {} merge --out-dir {} {}\n",
            quote_path(&self.binary),
            quote_path(&self.out_dir),
            shards.join(" ")
        ));
        s
    }
}

/// Write both scripts into `out_dir/slurm/`; returns their paths (array,
/// merge).
pub fn write_scripts(plan: &SlurmPlan) -> Result<(PathBuf, PathBuf)> {
    plan.check()?;
    let dir = plan.out_dir.join("slurm");
    let shards = dir.join("shards.sbatch");
    let merge = dir.join("merge.sbatch");
    crate::outdir::write_atomic(&shards, plan.shards_script().as_bytes())?;
    crate::outdir::write_atomic(&merge, plan.merge_script().as_bytes())?;
    Ok((shards, merge))
}

/// The job ids `sbatch` gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    /// The array job.
    pub shards: String,
    /// The merge job, held until every array task succeeded.
    pub merge: String,
}

/// `sbatch --parsable` of the array, then of the merge with
/// `--dependency=afterok:<array job>`.
pub fn submit(shards: &Path, merge: &Path) -> Result<Submitted> {
    let array = sbatch(&[shards.display().to_string()])?;
    let merge = sbatch(&[
        format!("--dependency=afterok:{array}"),
        "--kill-on-invalid-dep=yes".into(),
        merge.display().to_string(),
    ])?;
    Ok(Submitted {
        shards: array,
        merge,
    })
}

fn sbatch(args: &[String]) -> Result<String> {
    let line = format!("sbatch --parsable {}", args.join(" "));
    let out = Command::new("sbatch")
        .arg("--parsable")
        .args(args)
        .output()
        .map_err(|e| StoreError::Cluster {
            command: line.clone(),
            reason: format!("{e} (is Slurm installed and `sbatch` on PATH?)"),
        })?;
    if !out.status.success() {
        return Err(StoreError::Cluster {
            command: line,
            reason: format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    // `--parsable` prints `jobid` or `jobid;cluster`.
    let text = String::from_utf8_lossy(&out.stdout);
    let id = text.trim().split(';').next().unwrap_or("").to_string();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        return Err(StoreError::Cluster {
            command: line,
            reason: format!("unexpected output {:?}: expected a job id", text.trim()),
        });
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> SlurmPlan {
        SlurmPlan {
            binary: "/opt/dpaudit/bin/dpaudit".into(),
            command: "run".into(),
            experiment: "/home/me/it's here/exp.toml".into(),
            out_dir: "/scratch/audit".into(),
            tasks: 4,
            partition: Some("gpu".into()),
            gres: Some("gpu:1".into()),
            time: None,
            cpus_per_task: Some(8),
            extra_args: vec!["--quiet".into()],
        }
    }

    #[test]
    fn the_array_script_runs_one_shard_per_task() {
        let s = plan().shards_script();
        assert!(s.starts_with("#!/bin/bash\n"));
        for line in [
            "#SBATCH --array=0-3\n",
            "#SBATCH --partition=gpu\n",
            "#SBATCH --gres=gpu:1\n",
            "#SBATCH --cpus-per-task=8\n",
            "#SBATCH --output=/scratch/audit/slurm/shard-%a.log\n",
        ] {
            assert!(s.contains(line), "{line:?} missing from\n{s}");
        }
        assert!(!s.contains("--time"));
        // The quote in the path is escaped for bash.
        assert!(s.contains(r#"'/home/me/it'\''s here/exp.toml'"#), "{s}");
        assert!(s.contains("--shard auto/4 '--quiet'"), "{s}");
        assert!(s.contains("'run' '/home/me/"), "{s}");
        // A BGM experiment is `dpaudit bgm --config FILE`.
        let bgm = SlurmPlan {
            command: "bgm".into(),
            extra_args: Vec::new(),
            ..plan()
        };
        let s = bgm.shards_script();
        assert!(s.contains("'bgm' --config '/home/me/"), "{s}");
        assert!(s.contains("--shard auto/4\n"), "{s}");
    }

    #[test]
    fn the_merge_script_lists_every_shard() {
        let s = plan().merge_script();
        assert!(s.contains("merge --out-dir '/scratch/audit'"), "{s}");
        for i in 0..4 {
            assert!(
                s.contains(&format!("'/scratch/audit/shards/shard-{i:04}'")),
                "{s}"
            );
        }
    }

    #[test]
    fn bad_plans_are_refused() {
        let mut p = plan();
        p.tasks = 0;
        assert!(write_scripts(&p).is_err());
        let mut p = plan();
        p.experiment = "relative.toml".into();
        assert!(write_scripts(&p)
            .unwrap_err()
            .to_string()
            .contains("absolute"));
        let mut p = plan();
        p.partition = Some("a b".into());
        assert!(write_scripts(&p)
            .unwrap_err()
            .to_string()
            .contains("--partition"));
    }
}
