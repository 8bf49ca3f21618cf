"""The typed results of :mod:`dpaudit.audit` and :mod:`dpaudit.accounting`
(private module; the classes are documented, and pickle, as members of those
modules).

Each is a frozen dataclass (a subclass of :class:`Result`) built from the
JSON object the Rust core writes for the CLI, and ``to_dict()`` gives that
object back key for key, so ``result.to_dict()`` equals the CLI's ``--json``
output on the same input.

Mapping access (``result["epsilon"]``, ``keys()``, iteration) is kept for one
release for code written when these functions returned dicts: it answers
from ``to_dict()`` and warns (``DeprecationWarning``); use the attributes.
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from typing import Any, Iterator, NamedTuple, Optional, Sequence, Tuple, Union, overload

if sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # type checkers read the branch above; at run time it only marks the class

    def dataclass_transform(**_: Any) -> Any:
        return lambda cls: cls

import numpy as np

from . import _dpaudit


def _field(key: Optional[str] = None, *, nested: Any = None, many: bool = False, omit_none: bool = False):
    """A field read from JSON key ``key`` (default: its name), holding a
    ``nested`` result (a tuple of them when ``many``), left out of
    ``to_dict()`` when None and ``omit_none``."""
    return dataclasses.field(metadata={"key": key, "nested": nested, "many": many, "omit_none": omit_none})


def _hidden():
    """A field that is not part of the JSON (the arrays a result was computed from)."""
    return dataclasses.field(repr=False, compare=False, metadata={"hidden": True})


def _plain(value: Any) -> Any:
    if isinstance(value, Result):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


@dataclass_transform(frozen_default=True)
class Result:
    """What every result class shares: each subclass is made a frozen
    dataclass (without a generated repr: the classes write their own),
    ``to_dict()``, building from the core's JSON, and the deprecated mapping
    access. A field is read from the JSON key of its name unless
    :func:`_field` says otherwise."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclasses.dataclass(frozen=True, repr=False)(cls)

    @classmethod
    def _from_json(cls, d: dict, **hidden: Any):
        kwargs = dict(hidden)
        for f in dataclasses.fields(cls):
            meta = f.metadata
            if meta.get("hidden"):
                continue
            value = d.get(meta.get("key") or f.name)
            nested = meta.get("nested")
            if nested is not None and value is not None:
                value = tuple(nested._from_json(v) for v in value) if meta["many"] else nested._from_json(value)
            elif isinstance(value, list):
                value = tuple(value)
            kwargs[f.name] = value
        return cls(**kwargs)

    def to_dict(self) -> dict:
        """The JSON object of the CLI's ``--json`` output, as Python objects."""
        out = {}
        for f in dataclasses.fields(self):
            meta = f.metadata
            value = getattr(self, f.name)
            if meta.get("hidden") or (meta.get("omit_none") and value is None):
                continue
            out[meta.get("key") or f.name] = _plain(value)
        return out

    # --- deprecated mapping access (one release) ---------------------------
    def _mapping(self) -> dict:
        warnings.warn(
            f"{type(self).__name__} is an object now: read its attributes (or to_dict()); "
            "mapping access is deprecated and will be removed in the next release",
            DeprecationWarning,
            stacklevel=3,
        )
        return self.to_dict()

    def __getitem__(self, key: str) -> Any:
        return self._mapping()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._mapping())

    def __len__(self) -> int:
        return len(self._mapping())

    def __bool__(self) -> bool:  # a result is always true (not "non-empty mapping")
        return True

    def __contains__(self, key: object) -> bool:
        return key in self._mapping()

    def keys(self):
        return self._mapping().keys()

    def items(self):
        return self._mapping().items()

    def values(self):
        return self._mapping().values()

    def get(self, key: str, default: Any = None) -> Any:
        return self._mapping().get(key, default)


def _g(x: float) -> str:
    """``x`` as Rust's ``{:e}``/``{}`` print it in ``Bound``'s repr: ``1e-5``, ``0.01``."""
    return f"{x:g}".replace("e-0", "e-").replace("e+0", "e+")


# --- accounting -------------------------------------------------------------


class ShuffleLowerBound(Result):
    """The Chua et al. 2024 lower bound on ε of DP-SGD with shuffled batches:
    the shuffled mechanism is not (ε′, ``delta``)-DP for any ε′ < ``epsilon``."""

    epsilon: float
    delta: float
    noise_multiplier: float
    steps_per_epoch: int
    epochs: int

    def __float__(self) -> float:
        return self.epsilon

    def __repr__(self) -> str:
        return (
            f"<dpaudit ShuffleLowerBound: ε ≥ {self.epsilon:.4f} at δ = {_g(self.delta)} for shuffled batches "
            f"(σ = {self.noise_multiplier:g}, {self.steps_per_epoch} steps × {self.epochs} epochs)>"
        )


class EpsilonUpperBound(Result):
    """An accountant's ε upper bound at ``delta``. ``epsilon`` is the number
    to report (for PLD the upper end of the numerical bracket
    ``epsilon_lower`` ≤ ``epsilon_estimate`` ≤ ``epsilon_upper``; None for
    the closed-form accountants). ``approximate`` is True for ``gdp-clt``,
    which is not a bound. ``rdp_order``: the Rényi order (RDP only); ``mu``:
    the μ of μ-GDP (GDP only)."""

    accountant: str
    relation: str
    delta: float
    epsilon: float
    epsilon_lower: Optional[float]
    epsilon_estimate: Optional[float]
    epsilon_upper: Optional[float]
    approximate: bool
    rdp_order: Optional[float]
    mu: Optional[float]

    def __float__(self) -> float:
        return self.epsilon

    def _details(self) -> str:
        parts = []
        if self.epsilon_lower is not None:
            parts.append(f"numerical bracket [{self.epsilon_lower:.4f}, {self.epsilon_upper:.4f}]")
        if self.rdp_order is not None:
            parts.append(f"Rényi order {self.rdp_order:g}")
        if self.mu is not None:
            parts.append(f"μ = {self.mu:.4g}")
        if self.approximate:
            parts.append("APPROXIMATE, not a bound")
        return "".join(f"; {p}" for p in parts)

    def __repr__(self) -> str:
        return (
            f"<dpaudit {type(self).__name__} {self.accountant}: ε ≤ {self.epsilon:.4f} at δ = {_g(self.delta)}"
            f"{self._details()}>"
        )


class Account(EpsilonUpperBound):
    """ε of DP-SGD (``dpaudit account --json``): the accountant's
    :class:`EpsilonUpperBound` for ``steps`` Poisson-subsampled Gaussian
    mechanisms, with the parameters, and with ``shuffle=True`` the
    :class:`ShuffleLowerBound` for shuffled batches (else None)."""

    sample_rate: float
    noise_multiplier: float
    steps: int
    shuffle_lower_bound: Optional[ShuffleLowerBound] = _field(nested=ShuffleLowerBound, omit_none=True)

    def __repr__(self) -> str:
        shuffled = (
            ""
            if self.shuffle_lower_bound is None
            else f"; shuffled batches: ε ≥ {self.shuffle_lower_bound.epsilon:.4f}"
        )
        return (
            f"<dpaudit Account {self.accountant}: ε ≤ {self.epsilon:.4f} at δ = {_g(self.delta)} "
            f"(q = {self.sample_rate:g}, σ = {self.noise_multiplier:g}, {self.steps} steps)"
            f"{self._details()}{shuffled}>"
        )


class DeltaUpperBound(Result):
    """An accountant's δ upper bound at ``epsilon`` (``delta_lower``: a lower
    bound on the true δ, PLD only)."""

    delta: float
    delta_lower: Optional[float]
    epsilon: float
    accountant: str
    relation: str
    approximate: bool

    def __float__(self) -> float:
        return self.delta

    def __repr__(self) -> str:
        lower = "" if self.delta_lower is None else f" (δ ≥ {self.delta_lower:.4g})"
        flag = "; APPROXIMATE, not a bound" if self.approximate else ""
        return f"<dpaudit DeltaUpperBound {self.accountant}: δ ≤ {self.delta:.4g}{lower} at ε = {self.epsilon:g}{flag}>"


class Calibration(Result):
    """The smallest noise multiplier reaching (``target_epsilon``, δ)
    (``dpaudit calibrate --json``): ``noise_multiplier`` reaches it,
    ``noise_multiplier_lower`` does not; ``result`` is the accountant's ε at
    ``noise_multiplier``. ``float(c)`` is ``noise_multiplier``."""

    noise_multiplier: float
    noise_multiplier_lower: float
    tolerance: float
    target_epsilon: float
    sample_rate: float
    steps: int
    evaluations: int
    result: EpsilonUpperBound = _field(nested=EpsilonUpperBound)

    def __float__(self) -> float:
        return self.noise_multiplier

    def __repr__(self) -> str:
        return (
            f"<dpaudit Calibration {self.result.accountant}: σ = {self.noise_multiplier:.6g} reaches "
            f"ε ≤ {self.result.epsilon:.4f} (target {self.target_epsilon:g}) at δ = {_g(self.result.delta)}; "
            f"σ = {self.noise_multiplier_lower:.6g} does not (q = {self.sample_rate:g}, {self.steps} steps)>"
        )


# --- audit: metrics, PANORAMIA, the design check -----------------------------


class Interval(Result):
    """A two-sided Clopper–Pearson interval."""

    lower: float
    upper: float

    def __repr__(self) -> str:
        return f"[{self.lower:.4g}, {self.upper:.4g}]"


class TprAtFpr(Result):
    """The TPR of the rule "member iff score > ``threshold``", the threshold
    being the (k+1)-th largest non-member score, k = ⌊``target_fpr`` · n₀⌋
    (``resolvable`` False when n₀ < 1/``target_fpr``: no false positive
    allowed). Same-data empirical rates, descriptive, not bounds; the
    intervals are exact given the threshold. ``float(t)`` is ``tpr``."""

    target_fpr: float
    resolvable: bool
    threshold: float
    false_positives: int
    fpr: float
    fpr_interval: Interval = _field(nested=Interval)
    true_positives: int
    tpr: float
    tpr_interval: Interval = _field(nested=Interval)

    def __float__(self) -> float:
        return self.tpr

    def __repr__(self) -> str:
        note = "" if self.resolvable else ", not resolvable"
        return (
            f"<dpaudit TprAtFpr: TPR {self.tpr:.4g} {self.tpr_interval!r} at FPR {self.fpr:.4g} "
            f"(target {self.target_fpr:g}{note})>"
        )


class Roc(NamedTuple):
    """The empirical ROC curve of "member iff score > threshold":
    ``thresholds`` decreasing (every distinct score, then −∞), ``fpr`` and
    ``tpr`` non-decreasing from 0 to 1. Same-data and descriptive."""

    fpr: np.ndarray
    tpr: np.ndarray
    thresholds: np.ndarray


class Metrics(Result):
    """AUC (ties count ½) and the TPR at FPR 10⁻³ and 10⁻² (``at_low_fpr``,
    the JSON's ``tpr_at_fpr``) with Clopper–Pearson intervals at
    ``interval_confidence`` (Carlini et al. 2022, §III-C).

    Every number is a **same-data empirical rate**: it describes these
    scores, it is not a bound (only the intervals account for sampling, given
    the threshold). :meth:`tpr_at_fpr` and :meth:`roc` compute the same
    rule at any FPR and the whole curve from the scores kept with the result.
    """

    members: int
    nonmembers: int
    auc: float
    interval_confidence: float
    at_low_fpr: Tuple[TprAtFpr, ...] = _field("tpr_at_fpr", nested=TprAtFpr, many=True)
    scores: np.ndarray = _hidden()
    member_flags: np.ndarray = _hidden()

    @overload
    def tpr_at_fpr(self, fpr: float, *, confidence: Optional[float] = None) -> TprAtFpr: ...
    @overload
    def tpr_at_fpr(self, fpr: Sequence[float], *, confidence: Optional[float] = None) -> Tuple[TprAtFpr, ...]: ...

    def tpr_at_fpr(self, fpr, *, confidence=None):
        """The TPR at false-positive rate ``fpr`` (any value in [0, 1]; or a
        sequence of them), by the rule of ``at_low_fpr``.

        Parameters
        ----------
        fpr : float or sequence of float
            Target false-positive rate(s).
        confidence : float, optional
            Of the intervals; default ``interval_confidence``.

        Returns
        -------
        TprAtFpr or tuple of TprAtFpr
            A same-data empirical rate with its interval (not a bound).

        Raises
        ------
        ValueError
            An ``fpr`` outside [0, 1] or a confidence outside (0, 1).
        """
        many = np.ndim(fpr) != 0
        targets = [float(x) for x in (fpr if many else [fpr])]
        level = self.interval_confidence if confidence is None else float(confidence)
        got = tuple(
            TprAtFpr._from_json(t) for t in _dpaudit.tpr_at_fpr(self.scores, self.member_flags, targets, level)
        )
        return got if many else got[0]

    def roc(self) -> Roc:
        """The empirical ROC curve ``(fpr, tpr, thresholds)`` as float64
        arrays (its trapezoid area is ``auc``).

        Returns
        -------
        Roc
            A named tuple; same-data and descriptive, not a bound.
        """
        return Roc(*_dpaudit.roc(self.scores, self.member_flags))

    def __repr__(self) -> str:
        rates = ", ".join(f"TPR {t.tpr:.4g} at FPR {t.target_fpr:g}" for t in self.at_low_fpr)
        return (
            f"<dpaudit Metrics: AUC {self.auc:.4f}, {rates} (same-data empirical rates, not bounds), "
            f"{self.members} members + {self.nonmembers} non-members>"
        )


class EpsilonTilde(Result):
    """PANORAMIA's ε̃ with what it means (``is_lower_bound`` is always False)."""

    value: float
    is_lower_bound: bool
    meaning: str


class PrecisionEvidence(Result):
    """One side of PANORAMIA (baseline: ``c_lb``; MIA: ``{c+ε}_lb``): the
    ``lower_bound`` at the ``threshold`` with ``predictions`` guesses of
    which ``true_positives`` were right, tested at ``level``; ``ceiling`` is
    the largest value the audit set could show. ``threshold`` is None when
    no threshold had a true positive."""

    lower_bound: float
    threshold: Optional[float]
    predictions: int
    true_positives: int
    level: float
    ceiling: float
    members: int

    def __repr__(self) -> str:
        return f"<dpaudit PrecisionEvidence: {self.lower_bound:.4f} ({self.true_positives}/{self.predictions})>"


class Panoramia(Result):
    """PANORAMIA's ε̃ (Kazmi et al. 2024, §4.2): ``epsilon`` =
    max(0, ``c_plus_epsilon_lb`` − ``c_lb``), a **measurement** relative to
    the baseline classifier, not a lower bound on ε (``bound`` says so).
    ``baseline`` and ``mia`` hold each side's test; ``seed`` is that of a
    ``split`` selection (else None). ``dpaudit estimate --method panoramia
    --json`` is ``to_dict()``."""

    epsilon: float
    epsilon_tilde: EpsilonTilde = _field(nested=EpsilonTilde)
    c_lb: float
    c_plus_epsilon_lb: float
    confidence: float
    selection: str
    baseline: PrecisionEvidence = _field(nested=PrecisionEvidence)
    mia: PrecisionEvidence = _field(nested=PrecisionEvidence)
    bound: str
    method: str
    assumptions: Tuple[str, ...]
    seed: Optional[int] = _field(omit_none=True)

    def __repr__(self) -> str:
        return (
            f"<dpaudit Panoramia: ε̃ = {self.epsilon:.4f} (a measurement, NOT a lower bound on ε): "
            f"c+ε ≥ {self.c_plus_epsilon_lb:.4f}, c ≥ {self.c_lb:.4f}, confidence {self.confidence:g}, "
            f"selection {self.selection}>"
        )


class InclusionCheck(Result):
    """The one-run design check: the exact two-sided binomial test of
    ``included`` of ``canaries`` against inclusion with probability ½;
    ``plausible`` is False when ``p_value`` < ``level`` (the one-run methods
    then refuse)."""

    canaries: int
    included: int
    p_value: float
    level: float
    plausible: bool

    def __repr__(self) -> str:
        verdict = "plausible" if self.plausible else "IMPLAUSIBLE (the one-run methods refuse)"
        return (
            f"<dpaudit InclusionCheck: {self.included} of {self.canaries} included, p = {self.p_value:.4g} "
            f"({verdict} at level {self.level:g})>"
        )


AnyResult = Union[Account, Calibration, DeltaUpperBound, ShuffleLowerBound, Metrics, Panoramia, InclusionCheck]

# Pickled and documented under the public modules that return them.
for _cls in (ShuffleLowerBound, EpsilonUpperBound, Account, DeltaUpperBound, Calibration):
    _cls.__module__ = "dpaudit.accounting"
for _cls in (Interval, TprAtFpr, Roc, Metrics, EpsilonTilde, PrecisionEvidence, Panoramia, InclusionCheck):
    _cls.__module__ = "dpaudit.audit"
