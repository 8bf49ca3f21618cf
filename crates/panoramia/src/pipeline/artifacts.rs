//! The out-dir's JSON artifacts as types: `quality.json` ([`Quality`]),
//! `baseline.json` (`ScoresFile`), `targets/<name>.json` ([`TargetResult`])
//! and `audit.json` ([`AuditReport`]), with their format tag ([`FORMAT`]).
//! The stages that write them and the store that reads them back both
//! depend on this file; it depends on no stage.

use dpaudit_data::seed::Mode;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::classifier::FitReport;
use crate::filter::FilterReport;

/// The format tag of the out-dir's JSON files.
pub const FORMAT: &str = "dpaudit-panoramia/1";

/// The generator's quality check: a classifier separating real `D_G`
/// records from generated ones, accuracy on held-out records of both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Quality {
    /// Held-out accuracy (0.5: indistinguishable; 1: always told apart).
    pub accuracy: f64,
    /// Real and generated records it was trained on (each).
    pub train_per_class: usize,
    /// Real and generated held-out records (each).
    pub test_per_class: usize,
    /// Held-out accuracy after every epoch.
    pub accuracy_per_epoch: Vec<f64>,
}

/// One more training of a membership classifier (seeds 1, 2, …; seed 0 is
/// the file's own `fit` and `scores`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassifierRun {
    /// The seed's index (sub-key of the classifier's streams).
    pub seed: u32,
    /// Its training report.
    pub fit: FitReport,
    /// Its scores on the audit set.
    pub scores: Vec<f64>,
    /// Its scores on the validation set (members first; kept for the
    /// baseline, which the stacked MIA is fitted on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub validation_scores: Vec<f64>,
}

/// Scores of the baseline on the audit set (`baseline.json`): seed 0, and
/// the other seeds when `classifier.seeds` > 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct ScoresFile {
    pub format: String,
    pub fingerprint: String,
    pub fit: FitReport,
    pub scores: Vec<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub validation_scores: Vec<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_seeds: Vec<ClassifierRun>,
}

impl ScoresFile {
    /// Every seed, seed 0 first.
    pub fn runs(&self) -> Vec<ClassifierRun> {
        std::iter::once(ClassifierRun {
            seed: 0,
            fit: self.fit.clone(),
            scores: self.scores.clone(),
            validation_scores: self.validation_scores.clone(),
        })
        .chain(self.more_seeds.iter().cloned())
        .collect()
    }
}

/// The measurement with the baseline and the MIA of one seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeedMeasurement {
    /// The seed's index.
    pub seed: u32,
    /// The baseline's best validation accuracy at this seed.
    pub baseline_validation_accuracy: f64,
    /// The MIA's.
    pub mia_validation_accuracy: f64,
    /// `c_lb` from this seed's baseline.
    pub c_lb: f64,
    /// `{c+ε}_lb` from this seed's MIA.
    pub c_plus_epsilon_lb: f64,
    /// `max(0, {c+ε}_lb − c_lb)`.
    pub epsilon_tilde: f64,
    /// The MIA's mean excess over the baseline at the fixed thresholds of
    /// the band (`pipeline/band.rs`).
    #[serde(default)]
    pub band_excess: f64,
}

/// The paper's choice among seeds (Kazmi et al. 2024, Appendix C.1: the
/// classifier with the best validation accuracy over seeds), for the
/// baseline and the MIA separately.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaperChoice {
    /// The baseline's seed with the best validation accuracy (first on ties).
    pub baseline_seed: u32,
    /// The MIA's.
    pub mia_seed: u32,
    /// `c_lb` of that baseline.
    pub c_lb: f64,
    /// `{c+ε}_lb` of that MIA.
    pub c_plus_epsilon_lb: f64,
    /// `max(0, {c+ε}_lb − c_lb)`.
    pub epsilon_tilde: f64,
}

/// Half-width of the 95 % confidence interval of a mean of `n` values with
/// sample standard deviation `sd`: `t · sd / √n`, `t` the 0.975 quantile of
/// Student's t with `n − 1` degrees of freedom. This is how Kazmi et al.
/// (2024, Appendix C.1) report their repetitions ("repeated ten times … over a
/// 95 % confidence interval"). `None` for fewer than two values.
pub fn ci95_half_width(sd: f64, n: usize) -> Option<f64> {
    if n < 2 {
        return None;
    }
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
        .ok()?
        .inverse_cdf(0.975);
    Some(t * sd / (n as f64).sqrt())
}

/// Mean and sample standard deviation (0 for one value).
pub fn mean_sd(values: &[f64]) -> (f64, f64) {
    let n = values.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return (mean, 0.0);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    (mean, var.sqrt())
}

/// Everything measured for one target.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TargetResult {
    /// The target's name.
    pub name: String,
    /// `trained here` or the checkpoint path.
    pub source: String,
    /// The architecture.
    pub model: String,
    /// Secure or replayable, from the target's own training.
    pub target_mode: String,
    /// DP-SGD noise multiplier (0: not private).
    pub noise_multiplier: f64,
    /// The ε it was calibrated to, if any.
    pub requested_epsilon: Option<f64>,
    /// The accountant's ε at `delta` (None: no DP).
    pub accountant_epsilon: Option<f64>,
    /// δ of the accountant's ε.
    pub delta: f64,
    /// What the accountant assumed.
    pub accounting: Option<String>,
    /// Accuracy on its training records.
    pub train_accuracy: f64,
    /// Accuracy on the test split.
    pub test_accuracy: f64,
    /// The MIA's training report (seed 0).
    pub mia_fit: FitReport,
    /// MIA scores on the audit set (seed 0).
    pub mia_scores: Vec<f64>,
    /// The MIA's other seeds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mia_more_seeds: Vec<ClassifierRun>,
    /// `c_lb`, `{c+ε}_lb`, ε̃ and their evidence, at seed 0.
    pub measurement: serde_json::Value,
    /// The measurement at every seed (baseline seed `k` against MIA seed `k`).
    #[serde(default)]
    pub per_seed: Vec<SeedMeasurement>,
    /// ε̃: the mean over seeds of each seed's ε̃.
    pub epsilon_tilde: f64,
    /// Its sample standard deviation over seeds (0 with one seed).
    #[serde(default)]
    pub epsilon_tilde_sd: f64,
    /// Half-width of the 95 % confidence interval of that mean over seeds
    /// (`t · sd / √n`, Student's t: the paper's reporting); `None` with one seed.
    #[serde(default)]
    pub epsilon_tilde_ci95: Option<f64>,
    /// `c_lb`: the mean over seeds.
    pub c_lb: f64,
    /// Its standard deviation over seeds.
    #[serde(default)]
    pub c_lb_sd: f64,
    /// `{c+ε}_lb`: the mean over seeds.
    pub c_plus_epsilon_lb: f64,
    /// Its standard deviation over seeds.
    #[serde(default)]
    pub c_plus_epsilon_lb_sd: f64,
    /// The fixed-threshold excess (mean over seeds), a lower-variance
    /// companion of ε̃ for comparing targets; not a bound.
    #[serde(default)]
    pub band_excess: f64,
    /// Its standard deviation over seeds.
    #[serde(default)]
    pub band_excess_sd: f64,
    /// The paper's estimator: the best-validation seed of each classifier.
    #[serde(default)]
    pub paper_choice: Option<PaperChoice>,
    /// The one-run audit on real members vs real non-members (δ = 0).
    pub o1: serde_json::Value,
    /// Its ε lower bound.
    pub o1_epsilon: f64,
    /// Audit pairs of the one-run audit.
    pub o1_pairs: usize,
    /// Fingerprint of the config it belongs to.
    pub fingerprint: String,
}

/// The report of a whole run (`audit.json`).
#[derive(Debug, Clone, Serialize)]
pub struct AuditReport {
    /// [`FORMAT`].
    pub format: String,
    /// The pipeline's randomness mode.
    pub mode: Mode,
    /// What the mode means.
    pub mode_meaning: String,
    /// What ε̃ means.
    pub epsilon_tilde_meaning: String,
    /// The config's fingerprint.
    pub fingerprint: String,
    /// Where the data came from.
    pub data_source: String,
    /// Whether the data is the synthetic stand-in.
    pub synthetic_data: bool,
    /// Records in `D_f` (the target's training set).
    pub target_training_records: usize,
    /// Sizes used.
    pub split: crate::config::SplitConfig,
    /// Members among the `m` audit points (coins that came up 1).
    pub audit_members: usize,
    /// Overall confidence; each test at `(1 − confidence)/2`.
    pub confidence: f64,
    /// Threshold selection.
    pub selection: String,
    /// Whether the selection makes the two bounds valid at `confidence`.
    pub selection_valid: bool,
    /// The generator in words.
    pub generator: String,
    /// The real-vs-generated check.
    pub quality: Quality,
    /// The real-vs-generated filter: its training and, per pool, the
    /// candidates drawn and kept (None: no filter).
    pub filter: Option<FilterReport>,
    /// Share of generated records (helper, classifier and audit pools) the labeler
    /// gives the class the conditional generator drew them for (None: the
    /// generator draws no classes).
    pub generator_label_agreement: Option<f64>,
    /// Where the generated records' labels come from.
    pub generated_labels: String,
    /// Accuracy of the labeler on held-out real records (None: no labeler).
    pub labeler_accuracy: Option<f64>,
    /// The baseline's training report (seed 0).
    pub baseline_fit: FitReport,
    /// Trainings of the baseline and of each MIA.
    pub classifier_seeds: u32,
    /// What the MIA and the baseline read beside the image, in words.
    pub mia_losses: String,
    /// `c_lb`: the mean over seeds.
    pub c_lb: f64,
    /// Its standard deviation over seeds.
    pub c_lb_sd: f64,
    /// The O(1) reference audit in words ([`crate::reference`]).
    pub reference: String,
    /// Whether the reference is a lower bound valid at `confidence`.
    pub reference_valid: bool,
    /// How well ε̃ orders the targets like the one-run audit on real
    /// non-members (None: fewer than two targets).
    pub ordering: Option<Ordering>,
    /// The largest `c_lb` the audit set can show at this level (all
    /// members found without error): a `c_lb` near it leaves no room for ε̃.
    pub c_lb_ceiling: Option<f64>,
    /// One entry per target.
    pub targets: Vec<TargetResult>,
}

/// How ε̃ orders the targets, against the one-run audit on real members and
/// real non-members as the reference ordering.
#[derive(Debug, Clone, Serialize)]
pub struct Ordering {
    /// Spearman's rank correlation of the mean ε̃ with the O(1) ε over the
    /// targets (ties get average ranks; NaN when either is constant).
    pub spearman_rho: f64,
    /// The targets with the largest O(1) ε (more than one when the
    /// reference ties them), and those with the smallest.
    pub most_leaky: Vec<String>,
    /// See `most_leaky`.
    pub least_leaky: Vec<String>,
    /// `(ε̃ of the most leaky − ε̃ of the least leaky) / the larger of their
    /// standard deviations over seeds` (∞ when both are 0); where the
    /// reference ties, the smallest over every tied pair (the verdict must
    /// hold whichever of them the reference would rank first).
    pub separation_in_sd: f64,
    /// The same gap over the larger half-width of their 95 % confidence
    /// intervals of the mean over seeds (the paper's reporting); `None`
    /// with one seed.
    pub separation_in_ci95: Option<f64>,
    /// The same two for the fixed-threshold excess.
    pub band_spearman_rho: f64,
    /// See `band_spearman_rho`.
    pub band_separation_in_sd: f64,
}

/// Average ranks (1-based) of `v`, ties sharing the mean of their ranks.
pub fn average_ranks(v: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut ranks = vec![0.0; v.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
            j += 1;
        }
        let r = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            ranks[k] = r;
        }
        i = j + 1;
    }
    ranks
}

/// Spearman's ρ: Pearson's correlation of the average ranks.
pub fn spearman(a: &[f64], b: &[f64]) -> f64 {
    let (ra, rb) = (average_ranks(a), average_ranks(b));
    let n = ra.len() as f64;
    let (ma, mb) = (ra.iter().sum::<f64>() / n, rb.iter().sum::<f64>() / n);
    let cov: f64 = ra.iter().zip(&rb).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = ra.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = rb.iter().map(|y| (y - mb).powi(2)).sum();
    cov / (va * vb).sqrt()
}

/// The indices of the largest and of the smallest `reference` values, every
/// tied one included: a reference that ties cannot say which is first.
pub fn extremes(reference: &[f64]) -> (Vec<usize>, Vec<usize>) {
    let top = reference.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let bottom = reference.iter().copied().fold(f64::INFINITY, f64::min);
    let at = |x: f64| {
        (0..reference.len())
            .filter(|&i| reference[i] == x)
            .collect()
    };
    (at(top), at(bottom))
}

/// `(v[h] − v[l]) / max(sd[h], sd[l])` for `h` in `hi`, `l` in `lo` (∞ for a
/// positive gap over no spread, 0 for none), the smallest over
/// every pair: under a tied reference the separation must hold whichever
/// tied target it would rank first (the conservative verdict).
pub fn separation(v: &[f64], sd: &[f64], hi: &[usize], lo: &[usize]) -> f64 {
    let pair = |h: usize, l: usize| {
        let (gap, spread) = (v[h] - v[l], sd[h].max(sd[l]));
        if spread > 0.0 {
            gap / spread
        } else if gap > 0.0 {
            f64::INFINITY
        } else {
            0.0
        }
    };
    hi.iter()
        .flat_map(|&h| lo.iter().map(move |&l| pair(h, l)))
        .fold(f64::INFINITY, f64::min)
}

impl Ordering {
    /// The ordering of `targets` (None: fewer than two).
    pub fn of(targets: &[TargetResult]) -> Option<Self> {
        if targets.len() < 2 {
            return None;
        }
        let tilde: Vec<f64> = targets.iter().map(|t| t.epsilon_tilde).collect();
        let o1: Vec<f64> = targets.iter().map(|t| t.o1_epsilon).collect();
        let (hi, lo) = extremes(&o1);
        let names = |idx: &[usize]| idx.iter().map(|&i| targets[i].name.clone()).collect();
        let sd = |f: fn(&TargetResult) -> f64| targets.iter().map(f).collect::<Vec<_>>();
        let band: Vec<f64> = targets.iter().map(|t| t.band_excess).collect();
        Some(Self {
            spearman_rho: spearman(&tilde, &o1),
            most_leaky: names(&hi),
            least_leaky: names(&lo),
            separation_in_sd: separation(&tilde, &sd(|t| t.epsilon_tilde_sd), &hi, &lo),
            separation_in_ci95: targets
                .iter()
                .map(|t| t.epsilon_tilde_ci95)
                .collect::<Option<Vec<f64>>>()
                .map(|ci| separation(&tilde, &ci, &hi, &lo)),
            band_spearman_rho: spearman(&band, &o1),
            band_separation_in_sd: separation(&band, &sd(|t| t.band_excess_sd), &hi, &lo),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn average_ranks_share_ties() {
        assert_eq!(
            average_ranks(&[0.3, 0.0, 0.0, 1.0]),
            vec![3.0, 1.5, 1.5, 4.0]
        );
    }

    /// Reference values: Spearman's ρ = 1 − 6 Σd² / (n(n² − 1)) without
    /// ties; one adjacent swap in five gives 1 − 12/120 = 0.9.
    #[test]
    fn spearman_matches_the_formula_without_ties() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert!((spearman(&a, &a) - 1.0).abs() < 1e-12);
        assert!((spearman(&a, &[2.0, 1.0, 3.0, 4.0, 5.0]) - 0.9).abs() < 1e-12);
        assert!((spearman(&a, &[5.0, 4.0, 3.0, 2.0, 1.0]) + 1.0).abs() < 1e-12);
    }

    /// With ties ρ is Pearson's r of the average ranks: ranks (1.5, 1.5, 3)
    /// against (1, 2, 3) give r = 1.5 / sqrt(1.5 · 2) = 0.8660.
    #[test]
    fn spearman_with_ties_is_pearson_of_average_ranks() {
        let r = spearman(&[0.0, 0.0, 1.0], &[0.1, 0.2, 0.3]);
        assert!((r - 1.5 / (1.5f64 * 2.0).sqrt()).abs() < 1e-12, "{r}");
    }

    /// The run of docs/panoramia.md before the all-counts reference: the
    /// O(1) grid tied the 60- and 200-epoch targets at 4.585; ε̃ 0.304 ±
    /// 0.075 and 0.246 ± 0.101 against 0.000 ± 0.001 at ε = 1. Separations
    /// (0.304 − 0.000)/0.075 = 4.05 and (0.246 − 0.000)/0.101 = 2.44: the
    /// tie gives the smaller.
    #[test]
    fn a_tied_reference_gets_the_conservative_separation() {
        let o1 = [0.0, 0.027, 0.421, 1.732, 4.585, 4.585];
        let tilde = [0.000, 0.022, 0.047, 0.133, 0.304, 0.246];
        let sd = [0.001, 0.020, 0.050, 0.088, 0.075, 0.101];
        let (hi, lo) = extremes(&o1);
        assert_eq!((hi.clone(), lo.clone()), (vec![4, 5], vec![0]));
        let s = separation(&tilde, &sd, &hi, &lo);
        assert!((s - 0.246 / 0.101).abs() < 1e-12, "{s}");
        // Untied, the same numbers give the one pair's separation.
        let s = separation(&tilde, &sd, &[4], &lo);
        assert!((s - 0.304 / 0.075).abs() < 1e-12, "{s}");
        // A constant reference ties every target at both ends, so each
        // order counts: the worst is (0.1 − 0.5)/0.1 = −4.
        let (hi, lo) = extremes(&[1.0, 1.0]);
        let s = separation(&[0.5, 0.1], &[0.1, 0.1], &hi, &lo);
        assert!((s + 4.0).abs() < 1e-12, "{s}");
    }

    #[test]
    fn ci95_is_students_t_over_root_n() {
        // t quantiles at 0.975 (NIST/SEMATECH e-Handbook of Statistical
        // Methods, Table 1.3.6.7.2, three decimals): 2.776 for 4 degrees of
        // freedom, 2.262 for 9, 12.706 for 1.
        let at = |n: usize| ci95_half_width(1.0, n).unwrap() * (n as f64).sqrt();
        assert!((at(5) - 2.776).abs() < 5e-4, "{}", at(5));
        assert!((at(10) - 2.262).abs() < 5e-4, "{}", at(10));
        assert!((at(2) - 12.706).abs() < 5e-4, "{}", at(2));
        // Linear in the standard deviation; none for one seed.
        let h = ci95_half_width(0.1, 10).unwrap();
        assert!((h - 0.2262 / 10f64.sqrt()).abs() < 5e-5, "{h}");
        assert_eq!(ci95_half_width(0.3, 1), None);
    }

    #[test]
    fn mean_sd_is_the_sample_standard_deviation() {
        let (m, sd) = mean_sd(&[1.0, 2.0, 3.0, 4.0]);
        assert!((m - 2.5).abs() < 1e-12);
        // Σ(x − 2.5)² = 5, / 3.
        assert!((sd - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(mean_sd(&[7.0]), (7.0, 0.0));
    }
}
