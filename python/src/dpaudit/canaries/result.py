"""The result of a one-run audit with :class:`dpaudit.canaries.DiracCanaries`."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import numpy as np

from .._dpaudit import Bound


@dataclasses.dataclass(frozen=True)
class ClaimAudit:
    """What the canary audits of a training loop share (this module's
    :class:`CanaryAudit` and ``dpaudit.opacus.OpacusAudit``): the scores and
    membership flags the bounds were computed from (kept out of the repr, the
    comparison and ``to_dict()``), the JSON form, and the flag of a bound
    above the claim. The subclasses' fields come after these two."""

    scores: np.ndarray = dataclasses.field(repr=False, compare=False)
    members: np.ndarray = dataclasses.field(repr=False, compare=False)

    def to_dict(self) -> dict:
        """A JSON-serialisable dict (the bounds as ``Bound.to_dict()``, tuples
        as lists; the scores and members left out)."""
        out: dict[str, Any] = {}
        for field in dataclasses.fields(self):
            if field.name in ("scores", "members"):
                continue
            value = getattr(self, field.name)
            if isinstance(value, Bound):
                value = value.to_dict()
            elif isinstance(value, tuple):
                value = list(value)
            out[field.name] = value
        return out

    def _flag(self, name: str) -> str:
        """The repr's mark of bound ``name`` when it exceeds the claim."""
        exceeds: dict = getattr(self, "exceeds_claim")
        return "  EXCEEDS THE CLAIM" if exceeds[name] else ""


@dataclasses.dataclass(frozen=True)
class CanaryAudit(ClaimAudit):
    """One-run ε lower bounds of a DP-SGD loop beside the ε claimed for it.

    ``claim_epsilon`` is the library's ε (or dpaudit's, ``claim_source`` says
    which); ``exceeds_claim`` says which lower bound is above it (at the
    bound's confidence: a bug, or a broken analysis). ``dpaudit_epsilon`` is
    dpaudit's own accountant ε for the steps observed (PLD for sampled
    canaries, GDP for every-step ones; ``None`` when σ or C changed).
    """

    one_run: Bound
    one_run_fdp: Bound
    claim_epsilon: float
    claim_source: str
    exceeds_claim: dict
    dpaudit_epsilon: Optional[float]
    score: str
    llr_scale: Optional[float]
    norm_factor: float
    m: int
    included: int
    insertion: str
    steps: int
    sample_rate: float
    noise_multiplier: float
    max_grad_norm: float
    delta: float
    confidence: float
    mean_insertions: float
    train_seconds: float
    notes: tuple

    def __repr__(self) -> str:
        score = self.score + ("" if self.llr_scale is None else f" (scale {self.llr_scale:g})")
        reference = "n/a" if self.dpaudit_epsilon is None else f"{self.dpaudit_epsilon:.4f}"
        lines = [
            f"<dpaudit CanaryAudit: {self.m} Dirac canaries ({self.included} included), insertion {self.insertion}",
            f"  canaries   per-sample gradients of norm {self.norm_factor:g}·C before clipping; score {score}",
            f"  mechanism  {self.steps} steps, q = {self.sample_rate:.6g}, σ = {self.noise_multiplier:g}, "
            f"C = {self.max_grad_norm:g}, δ = {self.delta:g}; an included canary entered "
            f"{self.mean_insertions:.2f} steps on average",
            f"  claim      ε ≤ {self.claim_epsilon:.4f}: {self.claim_source}   (dpaudit ε ≤ {reference})",
            f"  one-run    ε ≥ {self.one_run.epsilon:.4f} ({self.one_run.confidence:g} confidence, "
            f"{self.one_run.selection}){self._flag('one_run')}",
            f"  f-DP       ε ≥ {self.one_run_fdp.epsilon:.4f} ({self.one_run_fdp.confidence:g} confidence, "
            f"{self.one_run_fdp.selection}){self._flag('one_run_fdp')}",
        ]
        lines += [f"  note       {note}" for note in self.notes]
        return "\n".join(lines) + ">"

    __str__ = __repr__

