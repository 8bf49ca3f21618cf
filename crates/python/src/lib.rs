//! `dpaudit._dpaudit`: the audit statistics and accountants of the pure crates
//! (`dpaudit-audit`, `dpaudit-accounting`) for Python. A thin layer: every
//! number and every JSON object comes from the library crates, the same
//! functions the `dpaudit` CLI calls, so `Bound.to_dict()` equals `dpaudit
//! estimate --json` on the same input. The pure-Python package
//! (`python/src/dpaudit`) gives these functions their documented signatures.
//!
//! - NumPy in: scores are read where they lie when they are a contiguous
//!   float64 array (validated in place, then copied once into the audit's own
//!   storage, which sorts them); other numeric dtypes are converted. Member
//!   flags are read as bytes, non-zero = member, NumPy's own rule: a NumPy
//!   `bool` array may hold any byte (`u8_array.view(bool)`, `np.fromfile`),
//!   and a Rust `bool` may hold only 0 or 1, so no boolean array is ever
//!   reinterpreted as `[bool]`.
//! - Long computations release the GIL ([`Python::detach`]) and check for
//!   Ctrl-C through the audit crate's
//!   [`Interrupt`](dpaudit_audit::interrupt::Interrupt) hook (at most every
//!   50 ms): a signal's exception (`KeyboardInterrupt`) ends them.
//! - Bad input raises `ValueError` (or `TypeError` for a wrong kind of
//!   argument) with the library's message; library code does not panic on
//!   input, and nothing here unwraps one.
//! - A `Bound` pickles (and copies) as its bound's own JSON and the arrays
//!   it was computed from; equal bounds compare equal and hash alike.

mod dp_fields;
mod errors;
mod inputs;
mod interrupt;
mod runs;

use errors::{audit_error, value_error};
use inputs::{read_members, read_scores, Inputs};
use interrupt::interruptible;

use pyo3::prelude::*;

use dpaudit_accounting::report::{account_json, calibration_json};
use dpaudit_accounting::{
    calibrate_noise_multiplier, dpsgd_epsilon, shuffle_lower_bound, Accountant, MechanismEvent,
    NeighbouringRelation,
};
use dpaudit_audit::bound::{EpsilonLowerBound, Evidence};
use dpaudit_audit::design::inclusion_test;
use dpaudit_audit::estimate::lower_bound_interruptible;
use dpaudit_audit::estimate::options::{BoundOptions, Spelling};
use dpaudit_audit::figures::bound_plots::{one_run_plot, tradeoff_plot};
use dpaudit_audit::figures::plots::histogram_auto;
use dpaudit_audit::method::{Method, Observed, SelectionChoice};
use dpaudit_audit::metrics::{metrics as score_metrics, roc as roc_curve, tpr_at_fprs};
use dpaudit_audit::panoramia::{panoramia as panoramia_measure, PanoramiaConfig};
use dpaudit_audit::policy::DEFAULT_SPLITS;
use dpaudit_audit::report::{assumptions, bound_json, panoramia_json};
use numpy::PyArray1;

/// A JSON value as Python objects (dicts, lists, floats, ...).
fn to_python(py: Python<'_>, v: &serde_json::Value) -> PyResult<Py<PyAny>> {
    let text = serde_json::to_string(v).map_err(value_error)?;
    Ok(py.import("json")?.call_method1("loads", (text,))?.unbind())
}

/// A selection policy by its name, as Python passed it.
fn selection_choice(selection: &str) -> PyResult<SelectionChoice> {
    selection.parse::<SelectionChoice>().map_err(value_error)
}

/// The bounding methods, in the order of the documentation, as
/// `(name, listed, recorded_as, options, observes)`: `listed` is false for
/// the names of a family of another method (`one-run-fdp-gaussian`, recorded
/// as `one-run-fdp`); `options` are those it takes beyond `delta`,
/// `confidence`, `selection` and `seed`; `observes` is `"runs"` (one target
/// in each of many runs) or `"canaries-of-one-run"` (the one-run methods).
/// `dpaudit.audit.METHODS` and `LABELS`, and the rows `dpaudit.runs` bounds,
/// come from it.
#[pyfunction]
fn methods() -> Vec<(
    &'static str,
    bool,
    &'static str,
    Vec<&'static str>,
    &'static str,
)> {
    Method::ALL
        .into_iter()
        .filter(|m| m.bounds())
        .map(|m| {
            (
                m.name(),
                m.listed(),
                m.recorded_as().name(),
                m.options().iter().map(|o| o.key()).collect(),
                match m.observes() {
                    Observed::Runs => "runs",
                    Observed::CanariesOfOneRun => "canaries-of-one-run",
                    Observed::Measurement => "measurement",
                },
            )
        })
        .collect()
}

/// What a pickled `Bound` holds: the bound's own JSON, the scores and
/// members it was computed from, and whether its selection was the default.
type PickledBound = (String, Py<PyAny>, Py<PyAny>, bool);

/// An ε lower bound with what produced it (see `dpaudit.audit.Bound`).
#[pyclass(frozen, name = "Bound", module = "dpaudit._dpaudit")]
struct LowerBound {
    bound: EpsilonLowerBound,
    /// The arrays the bound was computed from, for the plots (read again,
    /// in place, when a plot is drawn).
    scores: Py<PyAny>,
    members: Py<PyAny>,
    /// Whether the selection policy was the default (`selection="auto"`).
    by_default: bool,
    json: serde_json::Value,
    /// `json` as compact text: what equality and the hash compare.
    text: String,
}

impl LowerBound {
    fn new(
        bound: EpsilonLowerBound,
        scores: &Bound<'_, PyAny>,
        members: &Bound<'_, PyAny>,
        by_default: bool,
    ) -> PyResult<Self> {
        if !bound.epsilon.is_finite() {
            return Err(value_error(format!(
                "the bound is not a finite number ({}); please report this input",
                bound.epsilon
            )));
        }
        let json = bound_json(&bound, by_default).map_err(audit_error)?;
        let text = serde_json::to_string(&json).map_err(value_error)?;
        Ok(Self {
            bound,
            scores: scores.clone().unbind(),
            members: members.clone().unbind(),
            by_default,
            json,
            text,
        })
    }
}

fn write_or_return(path: Option<std::path::PathBuf>, svg: String) -> PyResult<Option<String>> {
    match path {
        Some(p) => {
            std::fs::write(&p, svg).map_err(|e| {
                pyo3::exceptions::PyOSError::new_err(format!("writing {}: {e}", p.display()))
            })?;
            Ok(None)
        }
        None => Ok(Some(svg)),
    }
}

#[pymethods]
impl LowerBound {
    /// The lower bound on ε.
    #[getter]
    fn epsilon(&self) -> f64 {
        self.bound.epsilon
    }
    /// The confidence it holds at (when `valid_at_confidence`).
    #[getter]
    fn confidence(&self) -> f64 {
        self.bound.confidence
    }
    /// The δ at which ε is bounded.
    #[getter]
    fn delta(&self) -> f64 {
        self.bound.delta
    }
    /// The method: eps-delta, gdp, one-run, one-run-fdp or one-run-gaussian-scores.
    #[getter]
    fn method(&self) -> &'static str {
        self.bound.method.name()
    }
    /// The method's printed name, saying what it assumes (one-run-fdp-gaussian).
    #[getter]
    fn label(&self) -> &'static str {
        self.bound.label()
    }
    /// False for same-data selection (the papers' practice).
    #[getter]
    fn valid_at_confidence(&self) -> bool {
        self.bound.valid_at_confidence
    }
    /// `nothing`, `gaussian-tradeoff` (an ε that assumes a Gaussian trade-off curve),
    /// `gaussian-scores` or `independent-gaussian-channels` (see the stubs).
    #[getter]
    fn assumes(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_python(py, &self.json["assumes"])
    }
    /// The selection policy's name.
    #[getter]
    fn selection(&self) -> &'static str {
        self.bound.selection.name()
    }
    /// What produced the number (counts, threshold or guesses, the test).
    #[getter]
    fn evidence(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_python(py, &self.json["evidence"])
    }
    /// AUC and TPR at FPR 1e-3 and 1e-2 with Clopper–Pearson intervals: a
    /// `dpaudit.audit.Metrics` over the arrays the bound was computed from
    /// (so its `tpr_at_fpr(x)` and `roc()` work too).
    #[getter]
    fn metrics(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let json = to_python(py, &self.json["metrics"])?;
        let arrays = pyo3::types::PyDict::new(py);
        arrays.set_item("scores", self.scores.bind(py))?;
        arrays.set_item("member_flags", self.members.bind(py))?;
        Ok(py
            .import("dpaudit._results")?
            .getattr("Metrics")?
            .call_method("_from_json", (json,), Some(&arrays))?
            .unbind())
    }
    /// What the bound assumes, in words.
    #[getter]
    fn assumptions(&self) -> Vec<&'static str> {
        assumptions(&self.bound)
    }
    /// multi-split: every split's bound.
    #[getter]
    fn split_bounds(&self) -> Option<Vec<f64>> {
        self.bound.split_bounds.clone()
    }
    /// The JSON object of `dpaudit estimate --json`, as Python objects.
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_python(py, &self.json)
    }
    /// The same object as a JSON string (pretty-printed as the CLI prints it).
    fn to_json(&self) -> PyResult<String> {
        serde_json::to_string_pretty(&self.json).map_err(value_error)
    }
    /// The bound's plot as SVG, as `--plot` draws it: the trade-off plot of a
    /// threshold bound (`roc=True`: its log–log ROC view) or the one-run plot.
    /// Written to `path` when given, else returned.
    #[pyo3(signature = (path=None, claimed_epsilon=None, roc=false))]
    fn plot(
        &self,
        py: Python<'_>,
        path: Option<std::path::PathBuf>,
        claimed_epsilon: Option<f64>,
        roc: bool,
    ) -> PyResult<Option<String>> {
        let inputs = Inputs::read(self.scores.bind(py), self.members.bind(py))?;
        let obs = inputs.observations()?;
        let svg = match &self.bound.evidence {
            Evidence::Threshold(_) => {
                let p =
                    tradeoff_plot(&obs, &self.bound, claimed_epsilon, None).map_err(audit_error)?;
                if roc {
                    p.to_roc_svg()
                } else {
                    p.to_svg()
                }
            }
            Evidence::OneRun(_) => {
                if roc {
                    return Err(value_error(
                        "a one-run bound has no ROC view; call plot() without roc",
                    ));
                }
                one_run_plot(&obs, &self.bound, None)
                    .map_err(audit_error)?
                    .to_svg()
            }
            Evidence::GaussianScores(_) => {
                return Err(value_error(
                    "a one-run-gaussian-scores bound has no threshold or guesses to plot; \
                     call histogram() for its scores",
                ))
            }
        };
        write_or_return(path, svg)
    }
    /// `float(bound)`: the lower bound on ε.
    fn __float__(&self) -> f64 {
        self.bound.epsilon
    }
    /// The SVG a notebook shows: `plot()` (the trade-off or one-run plot),
    /// or the score histogram for a bound without a threshold or guesses.
    fn _repr_svg_(&self, py: Python<'_>) -> PyResult<Option<String>> {
        match self.bound.evidence {
            Evidence::GaussianScores(_) => self.histogram(py, None, "scores"),
            Evidence::Threshold(_) | Evidence::OneRun(_) => self.plot(py, None, None, false),
        }
    }
    /// The score histogram (`FILE-hist.svg` of `--plot`), to `path` or returned.
    #[pyo3(signature = (path=None, title="scores"))]
    fn histogram(
        &self,
        py: Python<'_>,
        path: Option<std::path::PathBuf>,
        title: &str,
    ) -> PyResult<Option<String>> {
        let inputs = Inputs::read(self.scores.bind(py), self.members.bind(py))?;
        let (members, nonmembers) = inputs.observations()?.classes();
        let h = histogram_auto(&members, &nonmembers).map_err(audit_error)?;
        write_or_return(path, h.to_svg(title, "score (higher = member)"))
    }
    /// Pickling and `copy`: the bound's own fields as JSON (every float read
    /// back to the bit), the arrays it was computed from (for the plots),
    /// and whether the selection was the default.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, PickledBound)> {
        let py = slf.py();
        let me = slf.get();
        let state = serde_json::to_string(&me.bound).map_err(value_error)?;
        let rebuild = slf.get_type().getattr("_from_state")?;
        Ok((
            rebuild,
            (
                state,
                me.scores.clone_ref(py),
                me.members.clone_ref(py),
                me.by_default,
            ),
        ))
    }
    /// The inverse of `__reduce__` (not for direct use).
    #[staticmethod]
    fn _from_state(
        state: &str,
        scores: &Bound<'_, PyAny>,
        members: &Bound<'_, PyAny>,
        by_default: bool,
    ) -> PyResult<Self> {
        let bound: EpsilonLowerBound = serde_json::from_str(state)
            .map_err(|e| value_error(format!("not the state of a pickled Bound: {e}")))?;
        LowerBound::new(bound, scores, members, by_default)
    }
    /// Equal when every field of the bound (its `to_dict()`) is equal.
    fn __eq__(&self, other: &Self) -> bool {
        self.text == other.text
    }
    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.text.hash(&mut h);
        h.finish()
    }
    fn __repr__(&self) -> String {
        let b = &self.bound;
        format!(
            "<dpaudit Bound {}: ε ≥ {:.4} at δ = {:e}, confidence {} ({}{}), selection {}, {} members + {} non-members>",
            b.label(),
            b.epsilon,
            b.delta,
            b.confidence,
            if b.valid_at_confidence { "valid" } else { "NOT valid" },
            match b.assumes {
                dpaudit_audit::bound::MechanismAssumption::Nothing => "",
                dpaudit_audit::bound::MechanismAssumption::GaussianTradeoff =>
                    "; assumes a Gaussian trade-off curve",
                dpaudit_audit::bound::MechanismAssumption::IndependentGaussianChannels =>
                    "; assumes independent Gaussian canary channels and a Gaussian trade-off curve",
                dpaudit_audit::bound::MechanismAssumption::GaussianScores =>
                    "; assumes Gaussian canary scores (asymptotic, DP-SGD white box)",
            },
            b.selection.name(),
            b.metrics.members,
            b.metrics.nonmembers
        )
    }
}

/// The ε lower bound of `method` (a name of [`methods`]; snake case too) on
/// the arrays, through the same [`BoundOptions::resolve`] and
/// [`lower_bound_interruptible`] as `dpaudit estimate`. An option left `None`
/// takes the method's default; one the method does not take is refused
/// before the arrays are read.
#[pyfunction]
#[pyo3(signature = (method, scores, members, delta, confidence=0.95, selection="auto", seed=0, splits=None, family=None, k_plus=None, k_minus=None, guesses=None, tie_break=None))]
#[allow(clippy::too_many_arguments)]
fn bound(
    py: Python<'_>,
    method: &str,
    scores: &Bound<'_, PyAny>,
    members: &Bound<'_, PyAny>,
    delta: f64,
    confidence: f64,
    selection: &str,
    seed: u64,
    splits: Option<u32>,
    family: Option<&str>,
    k_plus: Option<u64>,
    k_minus: Option<u64>,
    guesses: Option<&str>,
    tie_break: Option<&str>,
) -> PyResult<LowerBound> {
    let method = method.parse::<Method>().map_err(value_error)?;
    // The options as Python passed them (`None` = not given); names parsed
    // by the audit crate, which also refuses what the method does not take.
    let options = BoundOptions {
        confidence: Some(confidence),
        delta: Some(delta),
        selection: selection_choice(selection)?,
        seed,
        splits,
        family: family.map(str::parse).transpose().map_err(audit_error)?,
        guesses: guesses.map(str::parse).transpose().map_err(audit_error)?,
        k_plus,
        k_minus,
        tie_break: tie_break.map(str::parse).transpose().map_err(audit_error)?,
    };
    options
        .check(method, Spelling::Keywords)
        .map_err(audit_error)?;
    let inputs = Inputs::read(scores, members)?;
    let obs = inputs.observations()?;
    let settings = options
        .resolve(method, obs.len(), Spelling::Keywords)
        .map_err(audit_error)?;
    let bound = interruptible(py, |stop| {
        lower_bound_interruptible(method, &obs, &settings, stop)
    })?;
    LowerBound::new(
        bound,
        scores,
        members,
        options.selection == SelectionChoice::Auto,
    )
}

/// PANORAMIA's ε̃ (Kazmi et al. 2024): a measurement, not a lower bound.
/// Returns the JSON object of `dpaudit estimate --method panoramia --json`.
#[pyfunction]
#[pyo3(signature = (baseline_scores, baseline_members, scores, members, confidence=0.95, selection="auto", seed=0))]
#[allow(clippy::too_many_arguments)]
fn panoramia(
    py: Python<'_>,
    baseline_scores: &Bound<'_, PyAny>,
    baseline_members: &Bound<'_, PyAny>,
    scores: &Bound<'_, PyAny>,
    members: &Bound<'_, PyAny>,
    confidence: f64,
    selection: &str,
    seed: u64,
) -> PyResult<Py<PyAny>> {
    let baseline_inputs = Inputs {
        scores: read_scores("baseline_scores", baseline_scores)?,
        members: read_members("baseline_members", baseline_members)?,
    };
    let baseline = baseline_inputs.observations()?;
    let mia_inputs = Inputs::read(scores, members)?;
    let mia = mia_inputs.observations()?;
    let options = BoundOptions {
        confidence: Some(confidence),
        selection: selection_choice(selection)?,
        seed,
        ..BoundOptions::default()
    };
    let cfg = PanoramiaConfig {
        confidence,
        selection: options.selection(Method::Panoramia, mia.len()),
    };
    let m = py
        .detach(|| panoramia_measure(&baseline, &mia, &cfg))
        .map_err(audit_error)?;
    to_python(py, &panoramia_json(&m).map_err(audit_error)?)
}

/// AUC and TPR at FPR 1e-3 and 1e-2, with Clopper–Pearson intervals.
#[pyfunction]
#[pyo3(signature = (scores, members, confidence=0.95))]
fn metrics(
    py: Python<'_>,
    scores: &Bound<'_, PyAny>,
    members: &Bound<'_, PyAny>,
    confidence: f64,
) -> PyResult<Py<PyAny>> {
    let inputs = Inputs::read(scores, members)?;
    let obs = inputs.observations()?;
    let m = py
        .detach(|| score_metrics(&obs, confidence))
        .map_err(audit_error)?;
    to_python(py, &serde_json::to_value(m).map_err(value_error)?)
}

/// The TPR entry of `metrics` at each FPR of `fprs` (a list of JSON objects).
#[pyfunction]
#[pyo3(signature = (scores, members, fprs, confidence=0.95))]
fn tpr_at_fpr(
    py: Python<'_>,
    scores: &Bound<'_, PyAny>,
    members: &Bound<'_, PyAny>,
    fprs: Vec<f64>,
    confidence: f64,
) -> PyResult<Py<PyAny>> {
    let inputs = Inputs::read(scores, members)?;
    let obs = inputs.observations()?;
    let t = py
        .detach(|| tpr_at_fprs(&obs, &fprs, confidence))
        .map_err(audit_error)?;
    to_python(py, &serde_json::to_value(t).map_err(value_error)?)
}

/// The empirical ROC: `(fpr, tpr, thresholds)` as float64 arrays.
#[pyfunction]
fn roc<'py>(
    py: Python<'py>,
    scores: &Bound<'py, PyAny>,
    members: &Bound<'py, PyAny>,
) -> PyResult<RocArrays<'py>> {
    let inputs = Inputs::read(scores, members)?;
    let obs = inputs.observations()?;
    let r = py.detach(|| roc_curve(&obs)).map_err(audit_error)?;
    Ok((
        PyArray1::from_vec(py, r.fpr),
        PyArray1::from_vec(py, r.tpr),
        PyArray1::from_vec(py, r.thresholds),
    ))
}

type RocArrays<'py> = (
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
);

/// The one-run methods' design check: the exact two-sided binomial test of
/// `included` of `canaries` against inclusion with probability ½.
#[pyfunction]
fn inclusion_check(py: Python<'_>, canaries: u64, included: u64) -> PyResult<Py<PyAny>> {
    if included > canaries {
        return Err(value_error(format!(
            "included = {included} exceeds canaries = {canaries}"
        )));
    }
    let d = inclusion_test(canaries, included);
    let mut v = serde_json::to_value(d).map_err(value_error)?;
    v["plausible"] = serde_json::Value::from(d.plausible());
    to_python(py, &v)
}

fn accountant(name: &str) -> PyResult<Accountant> {
    name.parse::<Accountant>().map_err(value_error)
}

/// ε of DP-SGD (`dpaudit account --json`).
#[pyfunction]
#[pyo3(signature = (sample_rate, noise_multiplier, steps, delta, accountant="pld", shuffle=false))]
fn account(
    py: Python<'_>,
    sample_rate: f64,
    noise_multiplier: f64,
    steps: u64,
    delta: f64,
    accountant: &str,
    shuffle: bool,
) -> PyResult<Py<PyAny>> {
    let acc = self::accountant(accountant)?;
    let (e, chua) = py.detach(move || {
        let e = dpsgd_epsilon(sample_rate, noise_multiplier, steps, delta, acc)
            .map_err(|e| e.to_string())?;
        let chua = if shuffle {
            let batches = (1.0 / sample_rate).round();
            let per_epoch = batches as u64;
            if per_epoch == 0 || steps % per_epoch != 0 {
                return Err(format!(
                    "shuffle needs steps ({steps}) to be a whole number of epochs of 1/sample_rate = {batches} batches"
                ));
            }
            Some(
                shuffle_lower_bound(noise_multiplier, per_epoch, steps / per_epoch, delta)
                    .map_err(|e| e.to_string())?,
            )
        } else {
            None
        };
        Ok((e, chua))
    })
    .map_err(value_error)?;
    to_python(
        py,
        &account_json(&e, sample_rate, noise_multiplier, steps, chua.as_ref()),
    )
}

/// δ of DP-SGD at `epsilon` (add/remove adjacency).
#[pyfunction]
#[pyo3(signature = (sample_rate, noise_multiplier, steps, epsilon, accountant="pld"))]
fn delta_for_epsilon(
    py: Python<'_>,
    sample_rate: f64,
    noise_multiplier: f64,
    steps: u64,
    epsilon: f64,
    accountant: &str,
) -> PyResult<Py<PyAny>> {
    let acc = self::accountant(accountant)?;
    // The same checks as `dpsgd_epsilon`, at a harmless δ.
    dpsgd_epsilon(sample_rate, noise_multiplier, 1, 0.5, Accountant::Rdp).map_err(value_error)?;
    if steps == 0 {
        return Err(value_error("steps = 0 is invalid; expected at least 1"));
    }
    let d = py
        .detach(move || {
            dpaudit_accounting::delta(
                &MechanismEvent::dpsgd(sample_rate, noise_multiplier, steps),
                epsilon,
                acc,
                NeighbouringRelation::AddOrRemove,
            )
        })
        .map_err(value_error)?;
    to_python(py, &serde_json::to_value(d).map_err(value_error)?)
}

/// The noise multiplier reaching (target_epsilon, delta) (`dpaudit calibrate --json`).
#[pyfunction]
#[pyo3(signature = (sample_rate, steps, delta, target_epsilon, accountant="pld", tolerance=1e-3))]
fn calibrate(
    py: Python<'_>,
    sample_rate: f64,
    steps: u64,
    delta: f64,
    target_epsilon: f64,
    accountant: &str,
    tolerance: f64,
) -> PyResult<Py<PyAny>> {
    let acc = self::accountant(accountant)?;
    let c = py
        .detach(move || {
            calibrate_noise_multiplier(sample_rate, steps, delta, target_epsilon, acc, tolerance)
        })
        .map_err(value_error)?;
    to_python(py, &calibration_json(&c, sample_rate, steps))
}

/// The Chua et al. 2024 ε lower bound for shuffled batches.
#[pyfunction]
fn shuffle_epsilon_lower_bound(
    py: Python<'_>,
    noise_multiplier: f64,
    steps_per_epoch: u64,
    epochs: u64,
    delta: f64,
) -> PyResult<Py<PyAny>> {
    let s = py
        .detach(move || shuffle_lower_bound(noise_multiplier, steps_per_epoch, epochs, delta))
        .map_err(value_error)?;
    to_python(py, &serde_json::to_value(s).map_err(value_error)?)
}

#[pymodule]
fn _dpaudit(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DEFAULT_SPLITS", DEFAULT_SPLITS)?;
    m.add("DESIGN_LEVEL", dpaudit_audit::design::DESIGN_LEVEL)?;
    m.add_class::<LowerBound>()?;
    runs::register(m)?;
    dp_fields::register(m)?;
    m.add_function(wrap_pyfunction!(bound, m)?)?;
    m.add_function(wrap_pyfunction!(methods, m)?)?;
    m.add_function(wrap_pyfunction!(panoramia, m)?)?;
    m.add_function(wrap_pyfunction!(metrics, m)?)?;
    m.add_function(wrap_pyfunction!(tpr_at_fpr, m)?)?;
    m.add_function(wrap_pyfunction!(roc, m)?)?;
    m.add_function(wrap_pyfunction!(inclusion_check, m)?)?;
    m.add_function(wrap_pyfunction!(account, m)?)?;
    m.add_function(wrap_pyfunction!(delta_for_epsilon, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate, m)?)?;
    m.add_function(wrap_pyfunction!(shuffle_epsilon_lower_bound, m)?)?;
    Ok(())
}
