//! The out-dir store on a toy unit of work (a unit is one number, its file
//! the number as text): what every user of `dpaudit_store::store` gets
//! without writing it — plan, damaged units set aside, shards, merge with
//! duplicates and missing owners named, another experiment refused.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use dpaudit_store::error::Result;
use dpaudit_store::store::{
    self, chunk_path, read_manifest_json, read_unit_file, Outcome, Store, UnitState, Work,
};
use dpaudit_store::{OutDir, Shard, StoreError};

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Toy {
    fingerprint: String,
    shard: Shard,
    units: u64,
}

impl store::Manifest for Toy {
    type Error = StoreError;
    const WHAT: &'static str = "toy";

    fn read(dir: &Path) -> Result<Self> {
        let (path, value) = read_manifest_json(dir)?;
        serde_json::from_value(value).map_err(|e| StoreError::Inconsistent {
            path,
            reason: e.to_string(),
        })
    }

    dpaudit_store::manifest_fields!();
}

/// Unit `c` holds `c²`.
#[derive(Debug)]
struct Squares(u64);

impl Work for Squares {
    type Data = u64;
    type Error = StoreError;

    fn units(&self) -> u64 {
        self.0
    }

    fn unit_file(&self, c: u64) -> PathBuf {
        chunk_path(c, "txt")
    }

    fn read_unit(&self, dir: &Path, c: u64) -> Result<UnitState<u64>> {
        read_unit_file(&dir.join(self.unit_file(c)), |bytes| {
            Ok(match String::from_utf8_lossy(&bytes).trim().parse() {
                Ok(v) if v == c * c => UnitState::Intact(v),
                _ => UnitState::Damaged("not this unit's square".into()),
            })
        })
    }

    fn encode(&self, data: &u64, _path: &Path) -> Result<Vec<u8>> {
        Ok(format!("{data}\n").into_bytes())
    }

    fn same(&self, a: &u64, b: &u64) -> bool {
        a == b
    }
}

fn toy(fingerprint: &str, shard: Shard) -> Toy {
    Toy {
        fingerprint: fingerprint.into(),
        shard,
        units: 5,
    }
}

/// Claim `dir` for `shard` and compute what its plan says.
fn run(dir: &Path, shard: Shard) -> Store<Toy, Squares> {
    let out = OutDir::open(dir, "test").unwrap();
    let s = Store::claim(out, toy("f1", shard), Squares(5)).unwrap();
    for c in s.plan().unwrap().todo {
        s.write_unit(c, format!("{}\n", c * c).as_bytes()).unwrap();
    }
    s
}

fn sum(s: &Store<Toy, Squares>) -> Result<Outcome<u64>> {
    let mut total = 0;
    let missing = s.read_all(|_, v| {
        total += v;
        Ok(())
    })?;
    Ok(if missing.is_empty() {
        Outcome::Complete(Box::new(total))
    } else {
        Outcome::Incomplete(missing)
    })
}

#[test]
fn units_are_planned_resumed_and_damaged_ones_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    let s = run(dir.path(), Shard::ALL);
    assert!(matches!(sum(&s).unwrap(), Outcome::Complete(t) if *t == 30));
    std::fs::write(dir.path().join(chunk_path(3, "txt")), "9\n# sha256 0\n").unwrap();
    std::fs::remove_file(dir.path().join(chunk_path(1, "txt"))).unwrap();
    let plan = s.plan().unwrap();
    assert_eq!((plan.done, plan.todo), (vec![0, 2, 4], vec![1, 3]));
    assert_eq!(plan.damaged.len(), 1);
    assert!(dir.path().join("chunks/chunk-000003.txt.damaged").exists());
    drop(s);
    // Another experiment in the same out-dir is refused.
    let out = OutDir::open(dir.path(), "test").unwrap();
    let e = Store::claim(out, toy("f2", Shard::ALL), Squares(5)).unwrap_err();
    assert!(
        e.to_string()
            .contains("a different toy (fingerprint f1 vs f2)"),
        "{e}"
    );
}

#[test]
fn shards_merge_to_the_single_run_and_missing_ones_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let shard = |i| {
        let p = dir.path().join(format!("s{i}"));
        run(&p, Shard { index: i, count: 3 });
        p
    };
    let shards: Vec<PathBuf> = (0..3).map(shard).collect();
    let merged = dir.path().join("merged");
    let m = store::merge(
        &merged,
        &shards,
        "test",
        |t: &Toy| Ok(Squares(t.units)),
        sum,
    )
    .unwrap();
    assert_eq!((m.copied, *m.report), (5, 30));
    let e = store::merge(
        &dir.path().join("m2"),
        &shards[..1],
        "test",
        |_: &Toy| Ok(Squares(5)),
        sum,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("missing: [1, 2, 4], owned by shard(s) 1/3, 2/3"),
        "{e}"
    );
    let twice = [shards[0].clone(), shards[0].clone()];
    let e = store::merge(
        &dir.path().join("m3"),
        &twice,
        "test",
        |_: &Toy| Ok(Squares(5)),
        sum,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("duplicate: shard 0/3"), "{e}");
}
