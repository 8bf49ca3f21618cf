"""Type stubs of the Rust extension `dpaudit._dpaudit` (crates/python).

The functions below return the core's JSON objects (`_Json`): the public
functions of `dpaudit.audit` and `dpaudit.accounting` turn them into the typed
result classes of `dpaudit._results`. `Bound` is the one result class defined
in Rust."""

from os import PathLike
from typing import Any, Literal, Optional, TypedDict, Union

import numpy as np
import numpy.typing as npt

from ._results import Metrics
from .audit import Label as _AuditLabel, Method as _AuditMethod

__version__: str
DEFAULT_SPLITS: int
DESIGN_LEVEL: float

_Scores = npt.NDArray[Any]
_Members = npt.NDArray[Any]
_Path = Union[str, PathLike[str]]
#: A JSON object of the core, typed by the result classes of `dpaudit._results`.
_Json = dict[str, Any]

# The method names are listed once, in `dpaudit.audit` (tested against `methods()`).
_MethodName = _AuditLabel
_Label = _AuditLabel
_Selection = Literal["auto", "bonferroni", "split", "multi-split", "fixed", "same-data"]
_ResolvedSelection = Literal["bonferroni", "split", "multi-split", "fixed", "same-data"]
_Assumes = Literal["nothing", "gaussian-tradeoff", "gaussian-scores", "independent-gaussian-channels"]
_Family = Literal["eps-delta", "gaussian"]
_Guesses = Literal["symmetric", "with-one-sided", "all-counts"]
_TieBreak = Literal["quantile", "seeded"]
_Accountant = Literal["pld", "rdp", "gdp", "gdp-clt"]

class Bound:
    """An ε lower bound with what produced it. Frozen; picklable and copyable
    (with the arrays it was computed from); equal to another bound, and
    hashed alike, when every field of `to_dict()` is equal."""

    @property
    def epsilon(self) -> float:
        """The lower bound on ε (at `delta`)."""
    @property
    def confidence(self) -> float:
        """The confidence it holds at, when `valid_at_confidence`."""
    @property
    def delta(self) -> float: ...
    @property
    def method(self) -> _AuditMethod:
        """The method (a key of `dpaudit.audit.METHODS`): never the name of a family (see `label`)."""
    @property
    def label(self) -> _Label:
        """The printed name, saying what it assumes (e.g. one-run-fdp-gaussian, one-run-order-gaussian)."""
    @property
    def valid_at_confidence(self) -> bool:
        """False for same-data selection (the papers' practice)."""
    @property
    def assumes(self) -> _Assumes:
        """`nothing`, `gaussian-tradeoff` for an ε that assumes a Gaussian trade-off curve, or
        `gaussian-scores` for a bound that assumes Gaussian canary scores, or
        `independent-gaussian-channels` (one-run-order-gaussian: canaries that do not interact, each
        channel μ-GDP, and a Gaussian trade-off curve)."""
    @property
    def selection(self) -> _ResolvedSelection: ...
    @property
    def evidence(self) -> dict[str, Any]:
        """Counts, threshold or guesses, and the test behind the number (its
        keys depend on the method: docs/audit-statistics.md)."""
    @property
    def metrics(self) -> Metrics:
        """AUC and TPR at FPR 1e-3 and 1e-2 with Clopper–Pearson intervals, over
        the arrays the bound was computed from (`tpr_at_fpr(x)`, `roc()` too)."""
    @property
    def assumptions(self) -> list[str]: ...
    @property
    def split_bounds(self) -> Optional[list[float]]: ...
    def to_dict(self) -> dict[str, Any]:
        """The JSON object of `dpaudit estimate --json`."""
    def to_json(self) -> str: ...
    def plot(
        self, path: Optional[_Path] = None, claimed_epsilon: Optional[float] = None, roc: bool = False
    ) -> Optional[str]:
        """The SVG of `--plot` (to `path`, or returned)."""
    def histogram(self, path: Optional[_Path] = None, title: str = "scores") -> Optional[str]: ...
    def __float__(self) -> float:
        """The lower bound on ε."""
    def _repr_svg_(self) -> Optional[str]:
        """What a notebook shows: `plot()`, or `histogram()` for one-run-gaussian-scores."""
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...
    def __reduce__(self) -> tuple[Any, tuple[str, _Scores, _Members, bool]]: ...
    @staticmethod
    def _from_state(state: str, scores: _Scores, members: _Members, by_default: bool) -> Bound: ...

def bound(
    method: _MethodName,
    scores: _Scores,
    members: _Members,
    delta: float,
    confidence: float = 0.95,
    selection: _Selection = "auto",
    seed: int = 0,
    splits: Optional[int] = None,
    family: Optional[_Family] = None,
    k_plus: Optional[int] = None,
    k_minus: Optional[int] = None,
    guesses: Optional[_Guesses] = None,
    tie_break: Optional[_TieBreak] = None,
) -> Bound:
    """The ε lower bound of `method` (a name of `methods()`). An option left None takes the
    method's default; one the method does not take is refused (ValueError naming it).

    `members`: booleans (any non-zero byte is a member, as NumPy reads them) or
    the numbers 0 and 1. Raises KeyboardInterrupt on Ctrl-C, and ValueError for
    a multi-split of more `splits` than the rows allow (with the estimate)."""
def methods() -> list[tuple[str, bool, str, list[str], str]]:
    """The bounding methods of the core, in the order of the documentation, as `(name, listed,
    recorded_as, options, observes)`: `listed` is False for the name of a family of another method
    (`one-run-fdp-gaussian`, recorded as `one-run-fdp`); `options` are those it takes beyond
    `delta`, `confidence`, `selection` and `seed`; `observes` is "runs" (one target in each of
    many runs) or "canaries-of-one-run" (the one-run methods)."""
def panoramia(
    baseline_scores: _Scores,
    baseline_members: _Members,
    scores: _Scores,
    members: _Members,
    confidence: float = 0.95,
    selection: _Selection = "auto",
    seed: int = 0,
) -> _Json: ...
def metrics(scores: _Scores, members: _Members, confidence: float = 0.95) -> _Json: ...
def tpr_at_fpr(scores: _Scores, members: _Members, fprs: list[float], confidence: float = 0.95) -> list[_Json]:
    """The `tpr_at_fpr` entry of `metrics` at each of `fprs`."""
def roc(
    scores: _Scores, members: _Members
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The empirical ROC: (fpr, tpr, thresholds)."""
def inclusion_check(canaries: int, included: int) -> _Json: ...
def account(
    sample_rate: float,
    noise_multiplier: float,
    steps: int,
    delta: float,
    accountant: _Accountant = "pld",
    shuffle: bool = False,
) -> _Json: ...
def delta_for_epsilon(
    sample_rate: float, noise_multiplier: float, steps: int, epsilon: float, accountant: _Accountant = "pld"
) -> _Json: ...
def calibrate(
    sample_rate: float,
    steps: int,
    delta: float,
    target_epsilon: float,
    accountant: _Accountant = "pld",
    tolerance: float = 1e-3,
) -> _Json: ...
def shuffle_epsilon_lower_bound(noise_multiplier: float, steps_per_epoch: int, epochs: int, delta: float) -> _Json: ...

# The one validation of the DP fields (crates/python/src/dp_fields.rs).
def check_dp_field(
    value: float,
    *,
    field: Literal[
        "noise_multiplier", "max_grad_norm", "sample_rate", "expected_batch_size", "steps", "delta", "target_epsilon"
    ],
    context: Literal["training", "claimed", "calibrated"],
    name: Optional[str] = None,
) -> float:
    """`value` if the DP field admits it in `context`; else ValueError naming `name` (default `field`)."""

# The out-dir reader of dpaudit.runs (crates/python/src/runs.rs).
OUTDIR_FORMAT_VERSION: int
def read_manifest(dir: str) -> tuple[Optional[Literal["canary", "bgm", "panoramia"]], Any]:
    """config.json of an out-dir: (its kind, or None, and the JSON as Python objects)."""
def read_checked(path: str) -> bytes:
    """A checksummed file's content without its `# sha256` trailer, verified."""
def seed_u64(seed: int, stream: str, path: list[int]) -> int:
    """RunSeed(seed).stream(stream).child(path…).to_u64()."""
def seed_coins(
    seed: int, stream: str, path: list[int], count: int, children: Optional[int] = None
) -> npt.NDArray[np.bool_]:
    """Fair coins of a seed-tree node, shape (count,), or of its children 0..n, shape (n, count)."""
class _CanaryResults(TypedDict):
    inclusion: npt.NDArray[np.bool_]
    run: npt.NDArray[np.int64]
    canary: npt.NDArray[np.int64]
    member: npt.NDArray[np.bool_]
    test_accuracy: npt.NDArray[np.float64]
    scores: list[npt.NDArray[np.float64]]
    finalized: bool
    chunks: list[int]
    missing_chunks: list[int]
def read_canary_results(
    dir: str, scores: list[str], runs: int, replicas: int, count: int, seed: int, verify: bool = True
) -> _CanaryResults:
    """A `dpaudit run` out-dir's inclusion bits (shape (runs, count)) and score rows (scores.csv's,
    or the chunks' when it is not there: `finalized` False), read and checked by
    dpaudit_plan::canary::reader; errors name the file and line."""
class _BgmScores(TypedDict):
    setting: npt.NDArray[np.int64]
    run: npt.NDArray[np.int64]
    with_target: npt.NDArray[np.float64]
    without_target: npt.NDArray[np.float64]
class _BgmCounts(TypedDict):
    setting: npt.NDArray[np.int64]
    stream: npt.NDArray[np.int64]
    bucket: npt.NDArray[np.int64]
    cut: npt.NDArray[np.float64]
    with_target: npt.NDArray[np.int64]
    without_target: npt.NDArray[np.int64]
def read_bgm_scores(path: str) -> _BgmScores:
    """A `dpaudit bgm` out-dir's scores.csv as columns (dpaudit_plan::bgm::reader); errors name the file and line."""
def read_bgm_counts(path: str) -> _BgmCounts:
    """A `dpaudit bgm` out-dir's counts.csv as columns (stream 0 = selection, 1 = evaluation)."""
