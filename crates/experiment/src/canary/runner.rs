//! A canary experiment trained into its out-dir, chunk by chunk, or in
//! memory. The out-dir itself — manifest, inclusion bits, chunk files,
//! finalization and merge — is `dpaudit_plan::canary::outdir` (no libtorch),
//! re-exported here.

use dpaudit_store::outdir::{OutDir, FORMAT_VERSION};
use dpaudit_store::shard::Shard;
use dpaudit_store::store::Store;
use dpaudit_train::engine::Fault;
use dpaudit_train::trainer::Observer;

use crate::canary::audit_report::{analyse, AuditReport, DataInfo};
use crate::canary::book::{rows_of, rows_to_csv};
use crate::canary::chunk::Prepared;
use crate::canary::settings::ExperimentConfig;
use crate::error::Result;

pub use dpaudit_plan::canary::outdir::*;

/// The manifest of `prepared` for `shard`.
pub fn manifest_of(prepared: &Prepared, shard: Shard) -> Result<Manifest> {
    let config = &prepared.config;
    Ok(Manifest {
        format_version: FORMAT_VERSION,
        dpaudit_version: env!("CARGO_PKG_VERSION").into(),
        fingerprint: fingerprint(config)?,
        shard,
        experiment: config.clone(),
        claimed_epsilon: prepared.claimed.bound.epsilon,
        claimed_assumption: prepared.claimed.assumption.clone(),
        claimed_valid_for_sampler: prepared.claimed.valid_for_sampler,
        num_parameters: prepared.num_parameters,
        dirac_coordinates: prepared.canaries.coordinates.clone(),
        input_canary_labels: prepared
            .canaries
            .records
            .as_ref()
            .map(|r| r.labels().to_vec())
            .unwrap_or_default(),
        input_canary_true_labels: prepared.canaries.true_labels.clone(),
        data: DataInfo::of(prepared.train.source()),
    })
}

/// An experiment bound to its locked out-dir.
#[derive(Debug)]
pub struct ExperimentDir<'a> {
    store: Store<Manifest, CanaryWork>,
    prepared: &'a Prepared,
}

impl<'a> ExperimentDir<'a> {
    /// Bind `prepared` to the locked out-dir `out` (take the lock with
    /// [`OutDir::open`] before preparing, so that an unwritable out-dir fails
    /// before anything is computed): create or check its manifest and
    /// inclusion bits.
    pub fn claim(out: OutDir, prepared: &'a Prepared, shard: Shard) -> Result<Self> {
        check_results_memory(&prepared.config, holder_of(shard))?;
        let manifest = manifest_of(prepared, shard)?;
        let work = CanaryWork {
            config: prepared.config.clone(),
        };
        Ok(Self {
            store: Store::claim(out, manifest, work)?,
            prepared,
        })
    }

    /// The locked out-dir.
    pub fn out_dir(&self) -> &OutDir {
        self.store.out_dir()
    }

    /// Which of this shard's chunks are done and which to train. Damaged
    /// chunk files are renamed to `*.damaged` (kept for inspection) so that
    /// they are retrained.
    pub fn plan(&self) -> Result<Plan> {
        Ok(self.store.plan()?)
    }

    /// Train chunk `c` and write its scores; returns the runs trained.
    pub fn train_chunk(&self, c: u64, observer: &mut dyn Observer) -> Result<u64> {
        let scores = self.prepared.run_chunk(c, observer)?;
        let rows = rows_of(&scores);
        let kinds = &self.prepared.config.audit.scores;
        self.store
            .write_unit(c, rows_to_csv(kinds, &rows).as_bytes())?;
        Ok(scores.bits.len() as u64)
    }

    /// If every chunk is in the out-dir, write the results.
    pub fn finalize(&self) -> Result<Finalized> {
        Ok(finalize(&self.store)?)
    }
}

/// An experiment trained in memory, chunk by chunk (no files): for
/// `selftest`, `demo` and library users.
pub fn run_in_memory(
    config: &ExperimentConfig,
    fault: Option<Fault>,
    observer: &mut dyn Observer,
) -> Result<AuditReport> {
    config.validate_static()?;
    check_results_memory(config, ResultsHolder::Memory)?;
    let prepared = Prepared::new(config, fault)?;
    let mut rows = Vec::new();
    for c in 0..config.chunks() {
        rows.extend(rows_of(&prepared.run_chunk(c, observer)?));
    }
    Ok(analyse(
        config,
        (&prepared.claimed).into(),
        &DataInfo::of(prepared.train.source()),
        &rows,
    )?)
}
