//! The gradient overrides of a batch as one table of tensors, in rank-major
//! order, checked against the model.

use tch::{TchError, Tensor};

#[cfg(doc)]
use super::batch::GradientRows;
use super::batch::{Batch, Override, SlotOverride};
use crate::error::{torch, Result, TrainError};
use crate::models::Model;

/// Every gradient override of a batch, from [`Batch::overrides`] or
/// [`Batch::gradient_rows`], as tensors: `rows` `[K, P]` in rank-major order
/// (see [`GradientRows`]), their slots and replicas `[K]`, and the row ranges
/// of each rank.
#[derive(Debug)]
pub struct OverrideTable {
    pub(super) slots: Tensor,
    pub(super) replicas: Tensor,
    pub(super) rows: Tensor,
    pub(super) ranks: Vec<(i64, i64)>,
}

/// Row ranges `(start, length)` of each rank of a rank-major list of
/// replicas, or `None` if the list is not rank-major.
fn rank_ranges(replicas: &[usize]) -> Option<Vec<(i64, i64)>> {
    // Rows seen so far per replica, indexed by replica: one row per replica
    // and step in the training loops, so no hashing.
    let mut seen = vec![0usize; replicas.iter().max().map_or(0, |&r| r + 1)];
    let mut ranges: Vec<(i64, i64)> = Vec::new();
    for (k, &r) in replicas.iter().enumerate() {
        let rank = seen[r];
        seen[r] += 1;
        match rank.cmp(&ranges.len()) {
            std::cmp::Ordering::Equal => ranges.push((k as i64, 1)),
            std::cmp::Ordering::Less if rank + 1 == ranges.len() => {
                if let Some(last) = ranges.last_mut() {
                    last.1 += 1;
                }
            }
            _ => return None,
        }
    }
    Some(ranges)
}

/// The override table of `batch`, checked against the model's parameter
/// count (built once per step, by [`forward_backward`]).
pub(super) fn override_table(model: &dyn Model, batch: &Batch) -> Result<Option<OverrideTable>> {
    let p = model.num_parameters();
    if let Some(g) = &batch.gradient_rows {
        if !batch.overrides.is_empty() {
            return Err(TrainError::Override {
                slot: 0,
                replica: 0,
                reason: "per-slot overrides and gradient rows in one batch".into(),
            });
        }
        let k = g.host.len() as i64;
        if g.rows.size() != [k, p] || g.slots.size() != [k] || g.replicas.size() != [k] {
            return Err(TrainError::Shape {
                what: "gradient rows".into(),
                got: g.rows.size(),
                expected: format!("[{k}, {p}] rows with [{k}] slots and replicas"),
            });
        }
        let reps: Vec<usize> = g.host.iter().map(|&(_, r)| r).collect();
        let ranks = rank_ranges(&reps).ok_or_else(|| TrainError::Override {
            slot: g.host.first().map_or(0, |h| h.0),
            replica: g.host.first().map_or(0, |h| h.1),
            reason: "gradient rows are not in rank-major order".into(),
        })?;
        return Ok(Some(OverrideTable {
            slots: g.slots.shallow_clone(),
            replicas: g.replicas.shallow_clone(),
            rows: g.rows.shallow_clone(),
            ranks,
        }));
    }
    let listed = override_gradients(model, batch)?;
    if listed.is_empty() {
        return Ok(None);
    }
    // Rank-major order: a stable sort by each entry's rank within its replica.
    let mut seen = std::collections::HashMap::<usize, usize>::new();
    let mut order: Vec<(usize, usize)> = listed
        .iter()
        .enumerate()
        .map(|(k, (o, _))| {
            let rank = *seen.entry(o.replica).and_modify(|c| *c += 1).or_insert(0);
            (rank, k)
        })
        .collect();
    order.sort();
    let sorted: Vec<&(&SlotOverride, &Tensor)> = order.iter().map(|&(_, k)| &listed[k]).collect();
    let reps: Vec<usize> = sorted.iter().map(|(o, _)| o.replica).collect();
    let ranks = rank_ranges(&reps).unwrap_or_default();
    let device = listed[0].1.device();
    torch("stacking the overriding gradients", || {
        let ints = |f: &dyn Fn(&SlotOverride) -> usize| -> Result<Tensor, TchError> {
            let host: Vec<i64> = sorted.iter().map(|(o, _)| f(o) as i64).collect();
            Tensor::f_from_slice(&host)?.f_to_device(device)
        };
        let rows: Vec<&Tensor> = sorted.iter().map(|(_, v)| *v).collect();
        Ok(Some(OverrideTable {
            slots: ints(&|o| o.slot)?,
            replicas: ints(&|o| o.replica)?,
            rows: Tensor::f_stack(&rows, 0)?,
            ranks,
        }))
    })
}

/// Sizes of the replica's parameters, for splitting flat override vectors.
pub(super) fn param_sizes(model: &dyn Model) -> Vec<(Vec<i64>, i64)> {
    model
        .named_parameters()
        .iter()
        .map(|(_, t)| {
            let s = t.size()[1..].to_vec();
            let n = s.iter().product();
            (s, n)
        })
        .collect()
}

fn override_gradients<'a>(
    model: &dyn Model,
    batch: &'a Batch,
) -> Result<Vec<(&'a SlotOverride, &'a Tensor)>> {
    let p = model.num_parameters();
    let mut out = Vec::new();
    for o in &batch.overrides {
        if let Override::Gradient(v) = &o.kind {
            if v.size() != [p] {
                return Err(TrainError::Override {
                    slot: o.slot,
                    replica: o.replica,
                    reason: format!(
                        "gradient has shape {:?}, expected [{p}] (all parameters of one replica)",
                        v.size()
                    ),
                });
            }
            out.push((o, v));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::rank_ranges;

    /// Rank-major lists give one range per rank; a replica's second row
    /// before another replica's first is not rank-major.
    #[test]
    fn rank_ranges_of_rank_major_lists() {
        assert_eq!(rank_ranges(&[]), Some(vec![]));
        assert_eq!(rank_ranges(&[0, 1, 2, 0, 2]), Some(vec![(0, 3), (3, 2)]));
        assert_eq!(rank_ranges(&[1, 0, 1]), Some(vec![(0, 2), (2, 1)]));
        assert_eq!(rank_ranges(&[0, 0, 1]), None);
        assert_eq!(rank_ranges(&[3, 3, 3]), Some(vec![(0, 1), (1, 1), (2, 1)]));
    }
}
