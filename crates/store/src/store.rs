//! One out-dir store, generic over the unit of work: claim (the manifest and
//! its fingerprint), plan (which units of a shard are done, which damaged,
//! which to compute), checksummed unit files, finalize (read every unit back)
//! and merge (copy the verified units of shard out-dirs into one).
//!
//! A workflow says what its manifest is ([`Manifest`]) and what a unit of
//! work is ([`Work`]: how many there are, where a unit's file lives, how it is
//! read back, verified and written); everything else — the lock
//! ([`OutDir`]), damaged files set aside, shards, duplicate and foreign
//! shards refused, missing units named with their owners — is done here once.
//! A manifest that keeps its fingerprint and shard as fields writes their
//! accessors with [`manifest_fields!`](crate::manifest_fields), and a `Work`
//! names its units' making and redoing only when the defaults ("computed",
//! "recompute") do not fit, so that each `impl` states only what differs.
//! Canary audits (`dpaudit_experiment::canary::runner`: a unit is a chunk of training runs) and
//! BGM audits (`dpaudit_experiment::bgm::runner`: a unit is a slice of a setting's
//! simulated runs) are its two users, and PANORAMIA (`dpaudit_panoramia`: a
//! unit is a stage's artifact).
//!
//! The traits' methods and the callbacks return the workflow's own error
//! ([`Manifest::Error`]), which every [`StoreError`] converts into, so that a
//! workflow's `?` works on both.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{invalid, read_text, Result, StoreError};
use crate::outdir::{read_checked, Checked, OutDir};
use crate::shard::Shard;

/// The manifest's file name.
pub const CONFIG_FILE: &str = "config.json";

/// The file of unit `c` with the extension `ext` (`csv`, `json`), relative to
/// the out-dir: `chunks/chunk-NNNNNN.ext`.
pub fn chunk_path(c: u64, ext: &str) -> PathBuf {
    Path::new("chunks").join(format!("chunk-{c:06}.{ext}"))
}

/// `config.json` of an out-dir: what identifies the work (its fingerprint)
/// and the shard that wrote it.
pub trait Manifest: Clone + Serialize + Sized {
    /// The workflow's error (the store's own errors convert into it).
    type Error: From<StoreError>;

    /// What a different fingerprint means, in words ("experiment",
    /// "experiment or engine").
    const WHAT: &'static str;

    /// Read and check `dir/config.json`.
    fn read(dir: &Path) -> Result<Self, Self::Error>;

    /// What the unit files depend on, hashed.
    fn fingerprint(&self) -> &str;

    /// The shard whose units the out-dir was created for.
    fn shard(&self) -> Shard;

    /// The same manifest for another shard.
    fn with_shard(self, shard: Shard) -> Self;

    /// Before the manifest is first written into `out` (e.g. the secret
    /// inclusion bits, fixed before any training).
    fn create(&self, _out: &OutDir) -> Result<(), Self::Error> {
        Ok(())
    }

    /// `out` already holds `mine`, of the same fingerprint as `self`: check
    /// what else must agree, and record what may change.
    fn reopen(&self, _out: &OutDir, _mine: Self) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Checks of a shard out-dir `dir` (manifest `self`) before it is merged.
    fn admit(&self, _dir: &Path) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// The [`Manifest`] methods `fingerprint`, `shard` and `with_shard` of a
/// manifest that keeps them as its fields `fingerprint: String` and
/// `shard: Shard`, written once for the workflows that do; invoke it inside
/// the `impl Manifest` block, which then states only what differs:
///
/// ```ignore
/// impl dpaudit_store::store::Manifest for MyManifest {
///     type Error = MyError;
///     const WHAT: &'static str = "experiment";
///     fn read(dir: &Path) -> Result<Self, MyError> { /* … */ }
///     dpaudit_store::manifest_fields!();
/// }
/// ```
#[macro_export]
macro_rules! manifest_fields {
    () => {
        fn fingerprint(&self) -> &str {
            &self.fingerprint
        }

        fn shard(&self) -> $crate::Shard {
            self.shard
        }

        fn with_shard(self, shard: $crate::Shard) -> Self {
            Self { shard, ..self }
        }
    };
}

/// What one unit's file holds once read back.
#[derive(Debug)]
pub enum UnitState<D> {
    /// No file.
    Missing,
    /// A file that fails its checksum or holds another unit, and why.
    Damaged(String),
    /// The unit, verified.
    Intact(D),
}

/// The units of work of an experiment.
pub trait Work {
    /// A unit's content, read back and verified.
    type Data;
    /// The workflow's error (the store's own errors convert into it).
    type Error: From<StoreError>;
    /// What redoing a unit is called ("retrain"; by default "recompute").
    const REDO: &'static str = "recompute";
    /// How units are made ("trained", "simulated"; by default "computed").
    const MADE: &'static str = "computed";

    /// Units of the experiment (all shards').
    fn units(&self) -> u64;

    /// The file of unit `c`, relative to the out-dir.
    fn unit_file(&self, c: u64) -> PathBuf;

    /// Unit `c` of the out-dir `dir`.
    fn read_unit(&self, dir: &Path, c: u64) -> Result<UnitState<Self::Data>, Self::Error>;

    /// The bytes of a unit file (the checksum trailer is added on writing);
    /// `path` names it in errors.
    fn encode(&self, data: &Self::Data, path: &Path) -> Result<Vec<u8>, Self::Error>;

    /// Whether two copies of a unit hold the same results (timings aside).
    fn same(&self, a: &Self::Data, b: &Self::Data) -> bool;
}

/// Read the checksummed file `path` and verify its content with `parse`.
pub fn read_unit_file<D, E: From<StoreError>>(
    path: &Path,
    parse: impl FnOnce(Vec<u8>) -> Result<UnitState<D>, E>,
) -> Result<UnitState<D>, E> {
    Ok(match read_checked(path)? {
        Checked::Missing => UnitState::Missing,
        Checked::Damaged(why) => UnitState::Damaged(why),
        Checked::Intact(bytes) => parse(bytes)?,
    })
}

/// What an out-dir holds of the units a shard owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Units on disk and intact.
    pub done: Vec<u64>,
    /// Units to compute, in order (missing or damaged).
    pub todo: Vec<u64>,
    /// Damaged units (set aside and recomputed), with what is wrong.
    pub damaged: Vec<(u64, String)>,
}

/// How finalizing ended.
#[derive(Debug)]
pub enum Outcome<R> {
    /// Every unit was there: the files are written.
    Complete(Box<R>),
    /// These units are not in the out-dir (other shards own them).
    Incomplete(Vec<u64>),
}

/// What [`merge`] did.
#[derive(Debug)]
pub struct Merged<R> {
    /// Unit files copied into the out-dir.
    pub copied: usize,
    /// The report.
    pub report: Box<R>,
}

/// An experiment's work bound to its locked out-dir.
#[derive(Debug)]
pub struct Store<M, W> {
    out: OutDir,
    manifest: M,
    work: W,
}

impl<M: Manifest, W: Work<Error = M::Error>> Store<M, W> {
    /// Bind `work` to the locked out-dir `out` (take the lock with
    /// [`OutDir::open`] before computing anything): create its manifest, or
    /// check the one there.
    pub fn claim(out: OutDir, manifest: M, work: W) -> Result<Self, M::Error> {
        claim(&out, &manifest)?;
        Ok(Self {
            out,
            manifest,
            work,
        })
    }

    /// The locked out-dir.
    pub fn out_dir(&self) -> &OutDir {
        &self.out
    }

    /// The manifest.
    pub fn manifest(&self) -> &M {
        &self.manifest
    }

    /// The work.
    pub fn work(&self) -> &W {
        &self.work
    }

    /// Which of this shard's units are done and which to compute. Damaged
    /// unit files are renamed to `*.damaged` (kept for inspection) so that
    /// they are computed again.
    pub fn plan(&self) -> Result<Plan, M::Error> {
        let shard = self.manifest.shard();
        let mut plan = Plan {
            done: Vec::new(),
            todo: Vec::new(),
            damaged: Vec::new(),
        };
        for c in (0..self.work.units()).filter(|&c| shard.owns(c)) {
            match self.work.read_unit(self.out.root(), c)? {
                UnitState::Intact(_) => plan.done.push(c),
                UnitState::Missing => plan.todo.push(c),
                UnitState::Damaged(why) => {
                    let path = self.out.path(self.work.unit_file(c));
                    let mut aside = path.clone().into_os_string();
                    aside.push(".damaged");
                    std::fs::rename(&path, &aside).map_err(|source| StoreError::Io {
                        path: path.clone(),
                        action: "setting a damaged chunk aside",
                        source,
                    })?;
                    plan.damaged.push((c, why));
                    plan.todo.push(c);
                }
            }
        }
        Ok(plan)
    }

    /// Write unit `c` (checksummed, atomically).
    pub fn write_unit(&self, c: u64, bytes: &[u8]) -> Result<(), M::Error> {
        Ok(self.out.write_checked(self.work.unit_file(c), bytes)?)
    }

    /// Read every unit in order, handing each to `fold` until one is missing
    /// (then only the missing ones are looked for); a damaged unit is an
    /// error. Returns the missing units.
    pub fn read_all(
        &self,
        fold: impl FnMut(u64, W::Data) -> Result<(), M::Error>,
    ) -> Result<Vec<u64>, M::Error> {
        read_all(&self.out, &self.work, fold)
    }
}

/// Create or check the manifest of `out`.
fn claim<M: Manifest>(out: &OutDir, manifest: &M) -> Result<(), M::Error> {
    let path = out.path(CONFIG_FILE);
    if path.exists() {
        let mine = M::read(out.root())?;
        if mine.fingerprint() != manifest.fingerprint() {
            return Err(StoreError::Inconsistent {
                path,
                reason: format!(
                    "belongs to a different {} (fingerprint {} vs {}); use another --out-dir",
                    M::WHAT,
                    mine.fingerprint(),
                    manifest.fingerprint()
                ),
            }
            .into());
        }
        return manifest.reopen(out, mine);
    }
    manifest.create(out)?;
    Ok(out.write_json(CONFIG_FILE, manifest)?)
}

/// [`Store::read_all`] of the out-dir `out`.
pub fn read_all<W: Work>(
    out: &OutDir,
    work: &W,
    mut fold: impl FnMut(u64, W::Data) -> Result<(), W::Error>,
) -> Result<Vec<u64>, W::Error> {
    let mut missing = Vec::new();
    for c in 0..work.units() {
        match work.read_unit(out.root(), c)? {
            UnitState::Missing => missing.push(c),
            UnitState::Damaged(why) => {
                return Err(StoreError::Inconsistent {
                    path: out.path(work.unit_file(c)),
                    reason: format!(
                        "damaged: {why}; run the experiment on this out-dir again to {} this chunk",
                        W::REDO
                    ),
                }
                .into())
            }
            // The results cannot be written; only look for what else is missing.
            UnitState::Intact(_) if !missing.is_empty() => {}
            UnitState::Intact(data) => fold(c, data)?,
        }
    }
    Ok(missing)
}

/// Copy the verified units of the shard out-dirs `shards` into `out_dir` and
/// finalize it. Every shard must be of the same experiment and format; a
/// shard given twice is refused as a duplicate; units still missing are
/// named with the shards that own them. `work` makes the work of the merged
/// manifest (checking what the merge needs in memory first); `finalize`
/// writes the results.
pub fn merge<M: Manifest, W: Work<Error = M::Error>, R>(
    out_dir: &Path,
    shards: &[PathBuf],
    command: &str,
    work: impl FnOnce(&M) -> Result<W, M::Error>,
    finalize: impl FnOnce(&Store<M, W>) -> Result<Outcome<R>, M::Error>,
) -> Result<Merged<R>, M::Error> {
    if shards.is_empty() {
        return Err(invalid("shards", "none", "at least one shard out-dir").into());
    }
    // Locked, and known to be writable, before anything is read or computed.
    let out = OutDir::open(out_dir, command)?;
    let mut manifests: Vec<(PathBuf, M)> = Vec::new();
    for s in shards {
        let m = M::read(s)?;
        admit_shard(&manifests, s, &m)?;
        m.admit(s)?;
        manifests.push((s.clone(), m));
    }
    let manifest = manifests[0].1.clone().with_shard(Shard::ALL);
    let work = work(&manifest)?;
    let store = Store::claim(out, manifest, work)?;
    let (out, work) = (&store.out, &store.work);
    let mut copied = 0;
    for (dir, _) in &manifests {
        for c in 0..work.units() {
            let data = match work.read_unit(dir, c)? {
                UnitState::Missing => continue,
                UnitState::Damaged(why) => {
                    return Err(StoreError::Inconsistent {
                        path: dir.join(work.unit_file(c)),
                        reason: format!(
                            "damaged: {why}; run that shard again to {} it, then merge",
                            W::REDO
                        ),
                    }
                    .into())
                }
                UnitState::Intact(data) => data,
            };
            match work.read_unit(out.root(), c)? {
                UnitState::Intact(existing) if !work.same(&existing, &data) => {
                    return Err(StoreError::Inconsistent {
                        path: dir.join(work.unit_file(c)),
                        reason: format!(
                            "chunk {c} differs from the one in {}: the shards were not {} from the same experiment",
                            out_dir.display(),
                            W::MADE
                        ),
                    }.into())
                }
                UnitState::Intact(_) => {}
                UnitState::Missing | UnitState::Damaged(_) => {
                    let path = out.path(work.unit_file(c));
                    store.write_unit(c, &work.encode(&data, &path)?)?;
                    copied += 1;
                }
            }
        }
    }
    match finalize(&store)? {
        Outcome::Complete(report) => Ok(Merged { copied, report }),
        Outcome::Incomplete(missing) => {
            let counts: BTreeSet<u64> = manifests.iter().map(|(_, m)| m.shard().count).collect();
            let owners: Vec<String> = counts
                .iter()
                .flat_map(|&n| {
                    let idx: BTreeSet<u64> = missing.iter().map(|c| c % n).collect();
                    idx.into_iter().map(move |i| format!("{i}/{n}"))
                })
                .collect();
            Err(StoreError::Inconsistent {
                path: out_dir.to_path_buf(),
                reason: format!(
                    "merged {copied} chunk(s), but {} chunk(s) are missing: {missing:?}, owned by shard(s) {}; run them and \
                     merge again",
                    missing.len(),
                    owners.join(", ")
                ),
            }.into())
        }
    }
}

/// Refuse shard `s` (manifest `m`) for a merge that already holds
/// `manifests`: another experiment, or a shard given twice ("duplicate",
/// never "missing").
fn admit_shard<M: Manifest>(manifests: &[(PathBuf, M)], s: &Path, m: &M) -> Result<()> {
    let (fingerprint, shard) = (m.fingerprint(), m.shard());
    if let Some((first, m0)) = manifests.first() {
        let f0 = m0.fingerprint();
        if fingerprint != f0 {
            return Err(StoreError::Inconsistent {
                path: s.join(CONFIG_FILE),
                reason: format!(
                    "a different {} than {} (fingerprint {fingerprint} vs {f0})",
                    M::WHAT,
                    first.display(),
                ),
            });
        }
    }
    let canonical = s.canonicalize().unwrap_or_else(|_| s.to_path_buf());
    if let Some((other, _)) = manifests.iter().find(|(p, o)| {
        p.canonicalize().unwrap_or_else(|_| p.clone()) == canonical
            || (o.shard() == shard && shard != Shard::ALL)
    }) {
        return Err(StoreError::Inconsistent {
            path: s.join(CONFIG_FILE),
            reason: format!(
                "duplicate: shard {shard} is given twice ({} and {}); give each shard's out-dir once",
                other.display(),
                s.display()
            ),
        });
    }
    Ok(())
}

/// Read `dir/config.json` as JSON, for a manifest's `read`: the text and the
/// value, or an error naming the file.
pub fn read_manifest_json(dir: &Path) -> Result<(PathBuf, serde_json::Value)> {
    let path = dir.join(CONFIG_FILE);
    let text = read_text(&path)?;
    let value = serde_json::from_str(&text).map_err(|e| StoreError::Inconsistent {
        path: path.clone(),
        reason: format!("not JSON ({e})"),
    })?;
    Ok((path, value))
}
