"""The result of a one-run audit of an Opacus run, and the ε claimed for its canaries."""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np

from .._dpaudit import Bound
from ..canaries.core import accountant_epsilons
from ..canaries.result import ClaimAudit


@dataclasses.dataclass(frozen=True)
class OpacusAudit(ClaimAudit):
    """The one-run audit of an Opacus run, beside the ε claimed for its canaries.

    ``claim_epsilon`` is the ε upper bound that applies to each canary (see
    ``claim_source``); ``exceeds_claim`` says which lower bound is above it
    (which, at the bound's confidence, would mean a bug or a broken analysis).
    ``opacus_epsilon`` is Opacus's accountant ε for the records;
    ``opacus_applies`` whether it is also the canaries' claim. ``score`` names
    the canary score the bounds were computed from (``llr_scale`` is its scale
    for ``"steps-llr"``), ``insert_at`` where the canaries entered
    (``"grad_sample"``: before clipping, with norm ``norm_factor · C``;
    ``"summed_grad"``: after clipping).
    """

    one_run: Bound
    one_run_fdp: Bound
    claim_epsilon: float
    claim_source: str
    exceeds_claim: dict
    opacus_epsilon: Optional[float]
    opacus_accountant: Optional[str]
    opacus_applies: bool
    pld_epsilon: Optional[float]
    gdp_epsilon: Optional[float]
    score: str
    llr_scale: Optional[float]
    insert_at: str
    norm_factor: Optional[float]
    m: int
    included: int
    insertion: str
    sampling: str
    steps: int
    steps_per_epoch: int
    sample_rate: float
    noise_multiplier: float
    max_grad_norm: float
    expected_batch_size: Optional[float]
    loss_reduction: str
    delta: float
    confidence: float
    mean_insertions: float
    train_seconds: float
    audit_seconds: float
    notes: tuple

    def __repr__(self) -> str:
        def eps(x: Optional[float]) -> str:
            return "n/a" if x is None else f"{x:.4f}"

        entry = (
            f"per-sample gradients of norm {self.norm_factor:g}·C, before clipping"
            if self.insert_at == "grad_sample"
            else "the clipped sum, after clipping"
        )
        score = self.score + ("" if self.llr_scale is None else f" (scale {self.llr_scale:g})")
        lines = [
            f"<dpaudit OpacusAudit: {self.m} Dirac canaries ({self.included} included), insertion {self.insertion}, "
            f"{self.sampling} batches",
            f"  canaries   enter {entry}; score {score}",
            f"  mechanism  {self.steps} steps, q = {self.sample_rate:.6g}, σ = {self.noise_multiplier:g}, "
            f"C = {self.max_grad_norm:g}, δ = {self.delta:g}; an included canary entered "
            f"{self.mean_insertions:.2f} steps on average",
            f"  claim      ε ≤ {self.claim_epsilon:.4f}: {self.claim_source}",
            f"  opacus     ε ≤ {eps(self.opacus_epsilon)} ({self.opacus_accountant or 'no privacy_engine given'}"
            f"{'' if self.opacus_applies else '; does not apply to these canaries'})"
            f"   dpaudit pld ε ≤ {eps(self.pld_epsilon)}"
            + ("" if self.gdp_epsilon is None else f"   gdp (every step) ε ≤ {eps(self.gdp_epsilon)}"),
            f"  one-run    ε ≥ {self.one_run.epsilon:.4f} ({self.one_run.confidence:g} confidence, "
            f"{self.one_run.selection}){self._flag('one_run')}",
            f"  f-DP       ε ≥ {self.one_run_fdp.epsilon:.4f} ({self.one_run_fdp.confidence:g} confidence, "
            f"{self.one_run_fdp.selection}){self._flag('one_run_fdp')}",
            f"  time       training {self.train_seconds:.1f} s, audit {self.audit_seconds:.2f} s",
        ]
        lines += [f"  note       {note}" for note in self.notes]
        return "\n".join(lines) + ">"

    __str__ = __repr__


def claims(*, history, insertion, sampling, sample_rate, steps_per_epoch, privacy_engine, delta) -> dict:
    """The ε claimed for the canaries and the accountants' ε beside it.

    ``history`` holds one ``(noise_multiplier, max_grad_norm)`` per step the
    canaries saw. Returns the keyword fields of :class:`OpacusAudit` from
    ``claim_epsilon`` to ``gdp_epsilon``, and ``notes`` (a list)."""
    notes = []
    ours = accountant_epsilons(history, sample_rate=sample_rate, delta=delta)
    sigmas = np.array([s for s, _ in history])
    norms = np.array([c for _, c in history])
    if not ours["constant"]:
        notes.append(
            f"noise multiplier or clipping norm changed during training (σ in [{sigmas.min():g}, "
            f"{sigmas.max():g}], C in [{norms.min():g}, {norms.max():g}]); the table shows the last step's; "
            "dpaudit's PLD ε is not computed"
        )
    T = len(history)

    opacus_epsilon = None
    opacus_accountant = None
    if privacy_engine is not None:
        accountant = privacy_engine.accountant
        opacus_accountant = f"opacus {accountant.mechanism()} accountant"
        accounted = sum(int(n) for _, _, n in getattr(accountant, "history", []))
        if accounted != T:
            notes.append(f"Opacus's accountant recorded {accounted} steps, the canaries saw {T}")
        opacus_epsilon = float(privacy_engine.get_epsilon(delta)) if np.all(sigmas > 0) else math.inf

    pld_epsilon, gdp_epsilon = ours["pld_epsilon"], ours["gdp_epsilon"]
    if insertion == "every":
        claim = gdp_epsilon
        mu = math.inf if np.any(sigmas == 0) else math.sqrt(float(np.sum(1.0 / sigmas**2)))
        source = (
            f"each included canary enters all {T} steps without subsampling: {T} composed Gaussian mechanisms, "
            f"μ = √T/σ = {mu:.4g} GDP (dpaudit gdp accountant; Cebere et al. 2024); Opacus's subsampled ε "
            "does not apply"
        )
        opacus_applies = False
    else:
        if opacus_epsilon is not None:
            claim, claimed_by = opacus_epsilon, opacus_accountant
        else:
            claim, claimed_by = pld_epsilon, "dpaudit pld accountant"
            if claim is None:
                raise ValueError(
                    "σ or C changed during training and no privacy_engine was given: pass privacy_engine "
                    "so that its accountant supplies the claim"
                )
        if sampling == "poisson":
            source = (
                f"{claimed_by}, {T} Poisson-subsampled Gaussian steps (q = {sample_rate:.6g}): each "
                "canary is sampled at each step with rate q, exactly as a record"
            )
        else:
            source = (
                f"{claimed_by}, shuffled batches accounted as Poisson sampling with q = 1/len(data_loader) = "
                f"{sample_rate:.6g}, as Opacus does: each canary enters once per epoch at a uniformly "
                "random step, as a shuffled record; Poisson accounting is not a proven upper bound for "
                "shuffled batches (Chua et al. 2024)"
            )
        opacus_applies = True
    if sampling == "shuffle" and T % steps_per_epoch != 0:
        notes.append(
            f"training stopped inside an epoch ({T} steps, {steps_per_epoch} per epoch): in the last "
            "epoch only the canaries drawn for the steps run were inserted"
        )
    return dict(
        claim_epsilon=float(claim),
        claim_source=source,
        opacus_epsilon=opacus_epsilon,
        opacus_accountant=opacus_accountant,
        opacus_applies=opacus_applies,
        pld_epsilon=pld_epsilon,
        gdp_epsilon=gdp_epsilon if insertion == "every" else None,
        noise_multiplier=ours["noise_multiplier"],
        max_grad_norm=ours["max_grad_norm"],
        notes=notes,
    )
