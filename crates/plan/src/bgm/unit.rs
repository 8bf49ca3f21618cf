//! The units of work of a BGM experiment ([`crate::bgm::runner`]): how a
//! setting's runs are sliced into units ([`plan_units`]), and what a unit's
//! file holds (its scores, or in counts mode its histograms), read back and
//! verified as [`dpaudit_store::store::Work`] asks.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::bgm::audit::{GuessSearch, PreparedSetting, SimulationClock};
use crate::bgm::counts::ScoreHistogram;
use crate::bgm::engine::BgmEngine;
use crate::error::{PlanError, Result};
use dpaudit_store::store::{chunk_path, read_unit_file, UnitState};
use dpaudit_store::StoreError;

/// At most this many units per setting: enough to spread a setting over a
/// job array, few enough files for 10⁹ runs.
pub const MAX_SLICES_PER_SETTING: usize = 256;

/// At most this many units of threshold-selection runs per counts-mode
/// setting.
pub const MAX_SELECTION_SLICES: usize = 64;

/// The file of unit `c`, relative to the out-dir.
pub fn unit_file(c: u64) -> PathBuf {
    chunk_path(c, "json")
}

/// One unit of work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unit {
    /// The setting's position.
    pub setting: usize,
    /// The engine's runs per seeding chunk for this setting.
    pub chunk_runs: usize,
    /// The first engine chunk of the slice.
    pub first_chunk: u64,
    /// Its first run (`first_chunk · chunk_runs`).
    pub first_run: usize,
    /// Runs per hypothesis in the slice.
    pub runs: usize,
    /// Partial shuffling: the unit searches the guess k first (and holds
    /// every run of the setting).
    pub guess_search: bool,
    /// Counts mode: the unit holds threshold-selection runs (its chunks are
    /// the engine's selection chunks; `first_run` counts from the first
    /// selection run), not evaluation runs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub selection: bool,
}

/// Push the slices of `runs` runs from chunk `first_chunk` as units.
fn push_slices(
    units: &mut Vec<Unit>,
    setting: usize,
    chunk_runs: usize,
    first_chunk: u64,
    runs: usize,
    max_slices: usize,
    selection: bool,
) {
    let chunks = runs.div_ceil(chunk_runs);
    let per_slice = chunks.div_ceil(max_slices).max(1);
    let mut c = 0;
    while c < chunks {
        let first_run = c * chunk_runs;
        units.push(Unit {
            setting,
            chunk_runs,
            first_chunk: first_chunk + c as u64,
            first_run,
            runs: (per_slice * chunk_runs).min(runs - first_run),
            guess_search: false,
            selection,
        });
        c += per_slice;
    }
}

/// The units of `settings` on `engine`, in setting order.
pub fn plan_units(settings: &[PreparedSetting], engine: &dyn BgmEngine) -> Result<Vec<Unit>> {
    let mut units = Vec::new();
    for (i, p) in settings.iter().enumerate() {
        let runs = p.setting.runs;
        let chunk_runs = engine.chunk_runs(&p.config)?;
        if p.searches_guess() {
            units.push(Unit {
                setting: i,
                chunk_runs,
                first_chunk: 0,
                first_run: 0,
                runs,
                guess_search: true,
                selection: false,
            });
            continue;
        }
        if let Some(selection_runs) = p.selection_runs() {
            let first = p.threshold_selection_first_chunk(engine, chunk_runs);
            push_slices(
                &mut units,
                i,
                chunk_runs,
                first,
                selection_runs,
                MAX_SELECTION_SLICES,
                true,
            );
        }
        push_slices(
            &mut units,
            i,
            chunk_runs,
            0,
            runs,
            MAX_SLICES_PER_SETTING,
            false,
        );
    }
    Ok(units)
}

/// The content of a unit file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnitScores {
    /// The unit.
    pub unit: Unit,
    /// The columns the evaluation runs were scored on.
    pub score_columns: usize,
    /// The guess search (the partial-shuffle unit).
    pub guess_search: Option<GuessSearch>,
    /// Compute seconds of the unit (simulation and guess search).
    pub seconds: f64,
    /// The simulation's own time and observations.
    pub clock: SimulationClock,
    /// Scores of the runs with the target.
    pub with_target: Vec<f64>,
    /// Scores of the runs without it.
    pub without_target: Vec<f64>,
}

impl UnitScores {
    /// Everything but the timings.
    fn same_scores(&self, other: &UnitScores) -> bool {
        self.unit == other.unit
            && self.score_columns == other.score_columns
            && self.guess_search == other.guess_search
            && self.with_target == other.with_target
            && self.without_target == other.without_target
    }
}

/// The content of a counts-mode unit file: histograms, no scores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnitCounts {
    /// The unit.
    pub unit: Unit,
    /// The columns the runs were scored on.
    pub score_columns: usize,
    /// The guess search (the partial-shuffle unit).
    pub guess_search: Option<GuessSearch>,
    /// Compute seconds of the unit.
    pub seconds: f64,
    /// The simulation's own time and observations.
    pub clock: SimulationClock,
    /// Threshold-selection runs (selection units; the partial-shuffle unit).
    pub selection: Option<ScoreHistogram>,
    /// Evaluation runs (evaluation units; the partial-shuffle unit).
    pub evaluation: Option<ScoreHistogram>,
}

impl UnitCounts {
    /// Everything but the timings.
    fn same_counts(&self, other: &UnitCounts) -> bool {
        self.unit == other.unit
            && self.score_columns == other.score_columns
            && self.guess_search == other.guess_search
            && self.selection == other.selection
            && self.evaluation == other.evaluation
    }

    /// Whether the histograms hold what the unit says: `runs` of each
    /// hypothesis in the stream the unit simulates (`selection_runs` of the
    /// partial-shuffle unit's selection histogram).
    fn consistent(&self, selection_runs: usize) -> bool {
        let holds = |h: &Option<ScoreHistogram>, n: usize| {
            h.as_ref().is_some_and(|h| {
                h.is_well_formed() && h.with_target() == n as u64 && h.without_target() == n as u64
            })
        };
        let u = &self.unit;
        if u.guess_search {
            holds(&self.selection, selection_runs) && holds(&self.evaluation, u.runs)
        } else if u.selection {
            holds(&self.selection, u.runs) && self.evaluation.is_none()
        } else {
            holds(&self.evaluation, u.runs) && self.selection.is_none()
        }
    }
}

/// A unit file read back.
#[derive(Debug, Clone, PartialEq)]
pub enum UnitData {
    /// A scores-mode unit.
    Scores(Box<UnitScores>),
    /// A counts-mode unit.
    Counts(Box<UnitCounts>),
}

impl UnitData {
    /// Whether two copies hold the same results (timings aside).
    pub fn same(&self, other: &UnitData) -> bool {
        match (self, other) {
            (UnitData::Scores(a), UnitData::Scores(b)) => a.same_scores(b),
            (UnitData::Counts(a), UnitData::Counts(b)) => a.same_counts(b),
            _ => false,
        }
    }

    /// The unit file's JSON (before its checksum trailer).
    pub fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        match self {
            UnitData::Scores(u) => serde_json::to_vec(u),
            UnitData::Counts(u) => serde_json::to_vec(u),
        }
    }
}

/// Read unit `c` of `dir`, which the plan says is `unit` of setting `p`.
pub(crate) fn read_unit(
    dir: &Path,
    c: u64,
    unit: &Unit,
    p: &PreparedSetting,
) -> Result<UnitState<UnitData>> {
    let path = dir.join(unit_file(c));
    let other = || {
        UnitState::Damaged(format!(
            "its checksum matches but it holds another unit than {unit:?} (written by another experiment)"
        ))
    };
    let not_unit = |e: serde_json::Error| {
        UnitState::Damaged(format!(
            "its checksum matches but it is not a unit file: {e}"
        ))
    };
    read_unit_file(&path, |bytes| {
        Ok(match p.selection_runs() {
            None => match serde_json::from_slice::<UnitScores>(&bytes) {
                Ok(u)
                    if u.unit == *unit
                        && u.with_target.len() == unit.runs
                        && u.without_target.len() == unit.runs =>
                {
                    UnitState::Intact(UnitData::Scores(Box::new(u)))
                }
                Ok(_) => other(),
                Err(e) => not_unit(e),
            },
            Some(selection_runs) => match serde_json::from_slice::<UnitCounts>(&bytes) {
                Ok(u) if u.unit == *unit && u.consistent(selection_runs) => {
                    UnitState::Intact(UnitData::Counts(Box::new(u)))
                }
                Ok(_) => other(),
                Err(e) => not_unit(e),
            },
        })
    })
}

/// The prepared setting of `unit`, or an error naming the manifest.
pub(crate) fn setting_of<'s>(
    settings: &'s [PreparedSetting],
    unit: &Unit,
    c: u64,
    manifest: &Path,
) -> Result<&'s PreparedSetting> {
    settings.get(unit.setting).ok_or_else(|| {
        PlanError::Store(StoreError::Inconsistent {
            path: manifest.to_path_buf(),
            reason: format!(
                "unit {c} names setting {}, which does not exist",
                unit.setting
            ),
        })
    })
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};

    #[test]
    fn unit_scores_read_back_bit_for_bit() {
        // A unit's scores go through JSON between simulation and the report:
        // every f64 must come back as the same bits (serde_json's
        // float_roundtrip; without it about one value in nine came back
        // one ulp off).
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let values: Vec<f64> = (0..10_000)
            .map(|i| {
                let x: f64 = rng.gen::<f64>() * 40.0 - 20.0;
                if i % 3 == 0 {
                    x.exp()
                } else {
                    x
                }
            })
            .collect();
        let text = serde_json::to_string(&values).unwrap();
        let back: Vec<f64> = serde_json::from_str(&text).unwrap();
        let off = values
            .iter()
            .zip(&back)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        assert_eq!(off, 0, "{off} of {} values changed", values.len());
    }
}
