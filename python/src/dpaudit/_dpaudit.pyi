"""Type stubs of the Rust extension `dpaudit._dpaudit` (crates/python)."""

from os import PathLike
from typing import Any, Optional, Union

import numpy as np
import numpy.typing as npt

__version__: str
DEFAULT_SPLITS: int
DESIGN_LEVEL: float

_Scores = npt.NDArray[Any]
_Members = npt.NDArray[Any]
_Path = Union[str, PathLike[str]]

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
    def method(self) -> str:
        """eps-delta, gdp, one-run, one-run-fdp, one-run-order or one-run-gaussian-scores."""
    @property
    def label(self) -> str:
        """The printed name, saying what it assumes (e.g. one-run-fdp-gaussian, one-run-order-gaussian)."""
    @property
    def valid_at_confidence(self) -> bool:
        """False for same-data selection (the papers' practice)."""
    @property
    def assumes(self) -> str:
        """`nothing`, `gaussian-tradeoff` for an ε that assumes a Gaussian trade-off curve, or
        `gaussian-scores` for a bound that assumes Gaussian canary scores, or
        `independent-gaussian-channels` (one-run-order-gaussian: canaries that do not interact, each
        channel μ-GDP, and a Gaussian trade-off curve)."""
    @property
    def selection(self) -> str: ...
    @property
    def evidence(self) -> dict[str, Any]:
        """Counts, threshold or guesses, and the test behind the number."""
    @property
    def metrics(self) -> dict[str, Any]:
        """AUC and TPR at FPR 1e-3 and 1e-2 with Clopper–Pearson intervals."""
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
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...
    def __reduce__(self) -> tuple[Any, tuple[str, _Scores, _Members, bool]]: ...
    @staticmethod
    def _from_state(state: str, scores: _Scores, members: _Members, by_default: bool) -> Bound: ...

def bound(
    method: str,
    scores: _Scores,
    members: _Members,
    delta: float,
    confidence: float = 0.95,
    selection: str = "auto",
    seed: int = 0,
    splits: Optional[int] = None,
    family: str = "eps-delta",
    k_plus: Optional[int] = None,
    k_minus: Optional[int] = None,
    guesses: str = "symmetric",
    tie_break: str = "quantile",
) -> Bound:
    """The ε lower bound of `method` (eps-delta, gdp, one-run, one-run-fdp, one-run-fdp-gaussian,
    one-run-order, one-run-order-gaussian or one-run-gaussian-scores).

    `members`: booleans (any non-zero byte is a member, as NumPy reads them) or
    the numbers 0 and 1. Raises KeyboardInterrupt on Ctrl-C, and ValueError for
    a multi-split of more `splits` than the rows allow (with the estimate)."""
def panoramia(
    baseline_scores: _Scores,
    baseline_members: _Members,
    scores: _Scores,
    members: _Members,
    confidence: float = 0.95,
    selection: str = "auto",
    seed: int = 0,
) -> dict[str, Any]: ...
def metrics(scores: _Scores, members: _Members, confidence: float = 0.95) -> dict[str, Any]: ...
def inclusion_check(canaries: int, included: int) -> dict[str, Any]: ...
def account(
    sample_rate: float,
    noise_multiplier: float,
    steps: int,
    delta: float,
    accountant: str = "pld",
    shuffle: bool = False,
) -> dict[str, Any]: ...
def delta_for_epsilon(
    sample_rate: float, noise_multiplier: float, steps: int, epsilon: float, accountant: str = "pld"
) -> dict[str, Any]: ...
def calibrate(
    sample_rate: float,
    steps: int,
    delta: float,
    target_epsilon: float,
    accountant: str = "pld",
    tolerance: float = 1e-3,
) -> dict[str, Any]: ...
def shuffle_epsilon_lower_bound(
    noise_multiplier: float, steps_per_epoch: int, epochs: int, delta: float
) -> dict[str, Any]: ...
