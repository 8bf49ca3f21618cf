//! The score book: one row per canary of a run. The rows, their CSV and its
//! reader are `dpaudit_plan::canary::book` (re-exported here); this module
//! turns a trained chunk into rows.

use crate::canary::chunk::ChunkScores;

pub use dpaudit_plan::canary::book::*;

/// The rows of a trained chunk, by run then canary.
pub fn rows_of(chunk: &ChunkScores) -> Vec<ScoreRow> {
    let mut out = Vec::new();
    for (r, bits) in chunk.bits.iter().enumerate() {
        for (j, &member) in bits.iter().enumerate() {
            out.push(ScoreRow {
                run: chunk.first_run + r as u64,
                canary: j,
                member,
                test_accuracy: chunk.test_accuracy[r],
                scores: chunk.scores.iter().map(|k| k[r][j]).collect(),
            });
        }
    }
    out
}
