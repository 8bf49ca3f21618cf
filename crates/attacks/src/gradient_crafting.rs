//! A_GC-S: choose the Dirac canary's coordinate as the least-updated one in
//! simulated training runs (Cebere et al. 2024 App. C, Algorithm 3).
//!
//! The adversary runs r simulations of training without the canary (`train`
//! does the simulation; this module only ranks coordinates from the host
//! parameter vectors it hands over) and crafts ∇* = C·e_d at
//! `d = argmin_i S_i`:
//! - [`CoordinateRanking::PerStep`]: S = sqrt(Σ_runs Σ_t (θ_{t+1} − θ_t)²), the
//!   accumulated per-step update norm of each coordinate ("Noiseless-PS", the
//!   best variant in Cebere et al. 2024 Fig. 4);
//! - [`CoordinateRanking::FinalModel`]: S = Σ_runs |θ_T − θ₀|, the distance of
//!   each coordinate from its initialisation at the end of training.
//!
//! Errata handled as docs/canary-games.md records (Cebere et al. 2024 App. C, Algorithm 3): the square root is
//! applied once at the end (it does not change the argmin), and FinalModel
//! accumulates over runs instead of overwriting.

use crate::error::{check_finite, check_len, AttacksError, Result};
use serde::{Deserialize, Serialize};

/// How coordinates are ranked (Cebere et al. 2024 App. C, Algorithm 3 `rank ∈ {PerStep, FinalModel}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CoordinateRanking {
    /// Accumulate squared per-step updates.
    PerStep,
    /// Accumulate the absolute distance from θ₀ at the end of each run.
    FinalModel,
}

/// Accumulates per-coordinate update magnitudes over simulated runs and
/// returns the least-updated coordinate(s).
#[derive(Debug, Clone)]
pub struct LeastUpdatedCoordinate {
    ranking: CoordinateRanking,
    magnitudes: Vec<f64>,
    observations: usize,
}

impl LeastUpdatedCoordinate {
    /// A ranking over `dim` trainable parameters.
    pub fn new(dim: usize, ranking: CoordinateRanking) -> Result<Self> {
        if dim == 0 {
            return Err(AttacksError::InvalidParameter {
                parameter: "dim",
                value: "0".to_owned(),
                expected: "the number of trainable parameters, > 0".to_owned(),
            });
        }
        Ok(Self {
            ranking,
            magnitudes: vec![0.0; dim],
            observations: 0,
        })
    }

    /// The ranking rule in use.
    pub fn ranking(&self) -> CoordinateRanking {
        self.ranking
    }

    /// Feeds one simulated step (PerStep ranking) or one simulated run's
    /// (θ₀, θ_T) pair (FinalModel ranking).
    pub fn observe(&mut self, before: &[f32], after: &[f32]) -> Result<()> {
        check_len("before", self.magnitudes.len(), before.len())?;
        check_len("after", self.magnitudes.len(), after.len())?;
        check_finite("before", before)?;
        check_finite("after", after)?;
        for ((m, &b), &a) in self.magnitudes.iter_mut().zip(before).zip(after) {
            let d = f64::from(a) - f64::from(b);
            *m += match self.ranking {
                CoordinateRanking::PerStep => d * d,
                CoordinateRanking::FinalModel => d.abs(),
            };
        }
        self.observations += 1;
        Ok(())
    }

    /// Feeds one step's (or one run's) update vector `after − before` directly.
    pub fn observe_update(&mut self, update: &[f32]) -> Result<()> {
        check_len("update", self.magnitudes.len(), update.len())?;
        check_finite("update", update)?;
        for (m, &u) in self.magnitudes.iter_mut().zip(update) {
            let d = f64::from(u);
            *m += match self.ranking {
                CoordinateRanking::PerStep => d * d,
                CoordinateRanking::FinalModel => d.abs(),
            };
        }
        self.observations += 1;
        Ok(())
    }

    /// Per-coordinate scores S (sqrt applied for PerStep), lower = less updated.
    pub fn magnitudes(&self) -> Vec<f64> {
        match self.ranking {
            CoordinateRanking::PerStep => self.magnitudes.iter().map(|m| m.sqrt()).collect(),
            CoordinateRanking::FinalModel => self.magnitudes.clone(),
        }
    }

    /// `argmin S`; ties go to the lowest index. Fails before any observation.
    pub fn choose(&self) -> Result<usize> {
        Ok(self.choose_many(1)?[0])
    }

    /// The `m` least-updated distinct coordinates, least-updated first (for
    /// `m` Dirac canaries at distinct coordinates, Steinke, Nasr & Jagielski 2023 §4).
    pub fn choose_many(&self, m: usize) -> Result<Vec<usize>> {
        if self.observations == 0 {
            return Err(AttacksError::Empty {
                what: "simulated updates (call observe first)",
            });
        }
        least_updated_coordinates(&self.magnitudes, m)
    }
}

/// The `m` coordinates with the smallest `magnitudes`, smallest first, ties to
/// the lowest index (Cebere et al. 2024 App. C, Algorithm 3 `d ← argmin S`). `magnitudes` are host
/// per-coordinate update magnitudes, e.g. from a simulation done elsewhere.
pub fn least_updated_coordinates(magnitudes: &[f64], m: usize) -> Result<Vec<usize>> {
    if magnitudes.is_empty() {
        return Err(AttacksError::Empty { what: "magnitudes" });
    }
    check_finite("magnitudes", magnitudes)?;
    if m == 0 || m > magnitudes.len() {
        return Err(AttacksError::InvalidParameter {
            parameter: "m",
            value: m.to_string(),
            expected: format!("1 ..= {} (the number of coordinates)", magnitudes.len()),
        });
    }
    let mut order: Vec<usize> = (0..magnitudes.len()).collect();
    order.sort_by(|&a, &b| magnitudes[a].total_cmp(&magnitudes[b]).then(a.cmp(&b)));
    order.truncate(m);
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_step_picks_the_coordinate_with_smallest_accumulated_update() {
        let mut r = LeastUpdatedCoordinate::new(3, CoordinateRanking::PerStep).unwrap();
        assert!(matches!(r.choose(), Err(AttacksError::Empty { .. })));
        // Coordinate 1 moves by ±0.5 twice (sum of squares 0.5); coordinate 2
        // moves once by 0.8 (0.64); coordinate 0 by 1.0 (1.0).
        r.observe(&[0.0, 0.0, 0.0], &[1.0, 0.5, 0.8]).unwrap();
        r.observe(&[1.0, 0.5, 0.8], &[1.0, 0.0, 0.8]).unwrap();
        assert_eq!(r.choose().unwrap(), 1);
        let s = r.magnitudes();
        assert!((s[1] - 0.5f64.sqrt()).abs() < 1e-7);
        assert_eq!(r.choose_many(3).unwrap(), vec![1, 2, 0]);
    }

    #[test]
    fn final_model_uses_distance_from_initialisation() {
        // Coordinate 1 oscillates a lot per step but ends where it started:
        // FinalModel prefers it, PerStep does not.
        let mut fm = LeastUpdatedCoordinate::new(2, CoordinateRanking::FinalModel).unwrap();
        fm.observe(&[0.0, 0.0], &[0.3, 0.0]).unwrap();
        assert_eq!(fm.choose().unwrap(), 1);
        let mut ps = LeastUpdatedCoordinate::new(2, CoordinateRanking::PerStep).unwrap();
        ps.observe_update(&[0.3, 1.0]).unwrap();
        ps.observe_update(&[0.0, -1.0]).unwrap();
        assert_eq!(ps.choose().unwrap(), 0);
    }

    #[test]
    fn bad_inputs_are_refused() {
        assert!(matches!(
            least_updated_coordinates(&[1.0, 2.0], 3),
            Err(AttacksError::InvalidParameter { parameter: "m", .. })
        ));
        assert!(matches!(
            least_updated_coordinates(&[1.0, f64::NAN], 1),
            Err(AttacksError::NonFinite {
                what: "magnitudes",
                index: 1,
                ..
            })
        ));
        assert_eq!(
            least_updated_coordinates(&[2.0, 1.0, 1.0], 2).unwrap(),
            vec![1, 2]
        );
    }
}
