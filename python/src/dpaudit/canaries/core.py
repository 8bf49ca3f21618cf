"""Dirac gradient canaries for a hand-written DP-SGD loop: drawing, insertion, observation.

The package docstring (:mod:`dpaudit.canaries`) describes the protocol. torch
is imported inside the methods that build or read tensors, so this module (and
``import dpaudit``) loads without it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Optional

import numpy as np

from .. import accounting as _accounting
from .. import audit as _audit
from .._dpaudit import check_dp_field as _check_dp_field
from .result import CanaryAudit
from .scores import SCORES, StepScores

_INSERTIONS = ("sampled", "every")


def _leaves(params) -> tuple[list, Optional[list]]:
    """The tensors of a parameter collection, and its keys when it is a mapping."""
    if isinstance(params, Mapping):
        keys = list(params.keys())
        return [params[k] for k in keys], keys
    if hasattr(params, "shape"):
        return [params], None
    return list(params), None


def dirac_loss(params, index, value):
    """The loss whose gradient is one Dirac canary: ``value`` at the flat
    coordinate ``index`` of ``params`` (a sequence or mapping of tensors,
    flattened in the order :class:`DiracCanaries` uses), zero elsewhere.

    For libraries that form per-sample gradients from a per-example loss
    (``torch.func.vmap(grad(loss))``, opake's ``clipped_grad``): batch it over
    :meth:`CanaryStep.loss_inputs`, so that the library's own per-sample
    gradient, clipping and sum handle the canaries. ``index`` and ``value``
    are 0-dim tensors (one example under ``vmap``)."""
    import torch

    tensors, _ = _leaves(params)
    flat = torch.cat([t.reshape(-1) for t in tensors])
    return value * flat.gather(0, index.reshape(1)).sum()


class CanaryStep:
    """The canaries that enter one step (returned by :meth:`DiracCanaries.draw`).

    Attributes:
        index: the flat coordinates of the canaries present (int64, length k;
            empty when none enters).
        value: each one's per-sample gradient entry, ``norm_factor · C``.
    """

    def __init__(self, owner: "CanarySet", rows: np.ndarray, value: float):
        self._owner = owner
        self._positions = rows
        self.index = owner.coordinates[rows]
        self.value = float(value)

    def __len__(self) -> int:
        return int(self.index.size)

    def rows(self, like=None):
        """The canaries' per-sample gradient rows, one per present canary:
        per parameter a tensor ``(k, *shape)`` with ``value`` at the canary's
        coordinate and 0 elsewhere, in the structure of the parameters (a
        tuple, or a dict for a mapping). Append them to the records'
        per-sample gradients before clipping (``torch.cat`` along dim 0).
        ``like`` (default: the parameters given at construction) supplies
        dtype and device."""
        import torch

        owner = self._owner
        tensors, keys = _leaves(owner._params if like is None else like)
        k = self.index.size
        out = []
        param_of = owner._owner_of[self._positions]
        local = owner._local[self._positions]
        for j, t in enumerate(tensors):
            block = torch.zeros((k, t.numel()), dtype=t.dtype, device=t.device)
            mine = np.flatnonzero(param_of == j)
            if mine.size:
                r = torch.as_tensor(mine, dtype=torch.long, device=t.device)
                c = torch.as_tensor(local[mine], dtype=torch.long, device=t.device)
                block[r, c] = self.value
            out.append(block.view(k, *t.shape))
        return dict(zip(keys, out)) if keys is not None else tuple(out)

    def loss_inputs(self, device=None):
        """``(index, value)`` tensors (int64 and float32, length k) to batch
        :func:`dirac_loss` over, for loops that clip a per-example loss's
        gradients."""
        import torch

        index = torch.as_tensor(self.index, dtype=torch.long, device=device)
        value = torch.full((self.index.size,), self.value, dtype=torch.float32, device=device)
        return index, value


class CanarySet:
    """A set of m Dirac canaries over a model's parameters: what every harness shares.

    Their coordinates and inclusion coins, their presence at each step, what
    each step showed at their coordinates, their scores and the two one-run
    bounds. :class:`DiracCanaries` (a hand-written loop: ``draw`` and
    ``observe``) and ``dpaudit.opacus.DiracCanaries`` (inside Opacus's
    optimizer) build on it and differ only in how a step reaches them.

    Args:
        tensors: the parameters (a sequence of tensors), in the order of the
            flat coordinates; their values are ``w0`` of the ``"final"`` score.
        m, insertion, norm_factor, seed, coordinates, included: as
            :class:`DiracCanaries`.
        sample_rate: the presence rate q of an included ``"sampled"`` canary
            at one step.
        taken: flat coordinates that hold other canaries: drawn coordinates
            avoid them and given ones must not meet them.
    """

    def __init__(
        self,
        tensors,
        *,
        m: int,
        insertion: str,
        sample_rate: float,
        norm_factor: float,
        seed: int,
        coordinates=None,
        included=None,
        taken=None,
    ):
        if insertion not in _INSERTIONS:
            raise ValueError(f"insertion must be one of {', '.join(_INSERTIONS)}, got {insertion!r}")
        if isinstance(norm_factor, bool) or not isinstance(norm_factor, (int, float)) or not (
            math.isfinite(norm_factor) and norm_factor >= 1
        ):
            raise ValueError(
                f"norm_factor must be a finite number ≥ 1 (the canary's per-sample norm in units of C), "
                f"got {norm_factor!r}"
            )
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
            raise ValueError(f"m must be a positive integer, got {m!r}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        m = int(m)
        self.m = m
        self.insertion = insertion
        self.sample_rate = float(sample_rate)
        self.norm_factor = float(norm_factor)
        self.seed = int(seed)
        self._sizes = np.array([t.numel() for t in tensors], dtype=np.int64)
        total = int(self._sizes.sum())
        taken = np.zeros(0, dtype=np.int64) if taken is None else np.asarray(taken, dtype=np.int64)
        coord_seq, coin_seq, sample_seq = np.random.SeedSequence(self.seed).spawn(3)
        if coordinates is None:
            if m > total - taken.size:
                raise ValueError(
                    f"m must be in [1, {total - taken.size}]: m = {m} canaries need distinct coordinates, "
                    f"but the model has {total} trainable parameters"
                    + (f" of which {taken.size} hold other canaries" if taken.size else "")
                )
            draw = np.random.default_rng(coord_seq).choice(total, size=m + taken.size, replace=False)
            coords = draw[~np.isin(draw, taken)][:m]
        else:
            coords = np.asarray(coordinates, dtype=np.int64).reshape(-1)
            if coords.size != m:
                raise ValueError(f"coordinates has {coords.size} entries, m = {m}")
            if coords.min() < 0 or coords.max() >= total:
                raise ValueError(f"coordinates must lie in [0, {total})")
            if np.unique(coords).size != m:
                raise ValueError("coordinates must be distinct")
            if np.isin(coords, taken).any():
                raise ValueError("coordinates overlap those of another canary set on this optimizer")
        self.coordinates = coords.astype(np.int64)
        if included is None:
            self.included = np.random.default_rng(coin_seq).random(m) < 0.5
        else:
            self.included = np.asarray(included, dtype=bool).reshape(-1)
            if self.included.size != m:
                raise ValueError(f"included has {self.included.size} entries, m = {m}")
        self._fixed_inclusion = included is not None
        self._sampler = np.random.default_rng(sample_seq)
        # Each canary's parameter and index inside it; the canaries grouped by parameter.
        ends = np.cumsum(self._sizes)
        self._owner_of = np.searchsorted(ends, self.coordinates, side="right")
        self._local = self.coordinates - (ends - self._sizes)[self._owner_of]
        self._groups = [
            (int(j), np.flatnonzero(self._owner_of == j), self._local[self._owner_of == j])
            for j in np.unique(self._owner_of)
        ]
        self._w0 = self.gather(tensors)
        self.steps = 0
        self.insertions = np.zeros(m, dtype=np.int64)
        self._history: list = []  # (noise_multiplier, max_grad_norm) per step
        self._step_scores = StepScores(m, 1.0 if insertion == "every" else self.sample_rate)
        self._started = time.perf_counter()

    def _present(self) -> np.ndarray:
        """Which canaries enter the next step, before the inclusion bits: all
        of them with ``"every"``, else each with rate q."""
        if self.insertion == "every":
            return np.ones(self.m, dtype=bool)
        return self._sampler.random(self.m) < self.sample_rate

    def gather(self, tensors) -> np.ndarray:
        """The canaries' entries of a parameter-shaped collection (float64, length m)."""
        import torch

        leaves, _ = _leaves(tensors)
        if len(leaves) != self._sizes.size or any(t.numel() != s for t, s in zip(leaves, self._sizes)):
            raise ValueError(
                f"expected {self._sizes.size} tensors of sizes {self._sizes.tolist()} (the parameters' shapes), "
                f"got sizes {[int(t.numel()) for t in leaves]}"
            )
        out = np.empty(self.m, dtype=np.float64)
        with torch.no_grad():
            for j, positions, local in self._groups:
                flat = leaves[j].detach().reshape(-1)
                idx = torch.as_tensor(local, dtype=torch.long, device=flat.device)
                out[positions] = flat.index_select(0, idx).double().cpu().numpy()
        return out

    def _record(self, rows: np.ndarray, x: np.ndarray, noise_multiplier: float, max_grad_norm: float) -> None:
        """Books one step: the canaries ``rows`` entered it, ``x`` is what it
        added at the coordinates beyond the records (canary and noise, in
        units of sums), under the claimed σ and C (checked here, before any
        state changes: the Opacus harness books steps without ``observe``)."""
        _check_dp_field(noise_multiplier, field="noise_multiplier", context="training")
        _check_dp_field(max_grad_norm, field="max_grad_norm", context="training")
        self.insertions[rows] += 1
        self._history.append((float(noise_multiplier), float(max_grad_norm)))
        self._step_scores.update(x, float(noise_multiplier), float(max_grad_norm))
        self.steps += 1

    def _final_params(self, params):
        """The final parameters of the ``"final"`` score."""
        if params is None:
            raise ValueError("score 'final' needs the final parameters: pass params=")
        return params

    def scores(self, score: str = "steps-llr", llr_scale: float = 1.0, params=None) -> np.ndarray:
        """Each canary's score (higher: more likely included): ``"steps-llr"``
        (at ``llr_scale`` times the claimed σ), ``"steps-sum"``, or ``"final"``
        (``w0[j] − wT[j]`` from the final ``params``); see
        :mod:`dpaudit.canaries.scores`."""
        if score not in SCORES:
            raise ValueError(f"score must be one of {', '.join(SCORES)}, got {score!r}")
        if score == "final":
            return self._w0 - self.gather(self._final_params(params))
        return self._step_scores.get(score, llr_scale)

    def _bounds(self, delta, confidence, *, score, llr_scale, guesses, selection, seed, params=None):
        """The two one-run bounds from the scores, and the fields every canary
        audit reports with them; returns ``(fields, notes)``. The default score
        is ``"steps-llr"`` (``"steps-sum"`` when a step had σ = 0); the default
        guesses ``"with-one-sided"`` (``"symmetric"`` when the inclusion bits
        were given)."""
        train_seconds = time.perf_counter() - self._started
        notes = []
        if score is None:
            score = "steps-llr" if self._step_scores.llr_defined else "steps-sum"
            if score == "steps-sum":
                notes.append("a step ran without noise: score steps-sum (no likelihood ratio exists)")
        if guesses is None:
            guesses = "symmetric" if self._fixed_inclusion else "with-one-sided"
        scores = self.scores(score, llr_scale, params)
        members = self.included.copy()
        kwargs = dict(delta=delta, confidence=confidence, selection=selection, seed=seed, guesses=guesses)
        included = int(members.sum())
        fields = dict(
            one_run=_audit.one_run(scores, members, **kwargs),
            one_run_fdp=_audit.one_run_fdp(scores, members, family="eps-delta", **kwargs),
            score=score,
            llr_scale=float(llr_scale) if score == "steps-llr" else None,
            m=self.m,
            included=included,
            insertion=self.insertion,
            steps=self.steps,
            sample_rate=self.sample_rate,
            delta=float(delta),
            confidence=float(confidence),
            mean_insertions=float(self.insertions[members].mean()) if included else 0.0,
            train_seconds=train_seconds,
            scores=scores,
            members=members,
        )
        return fields, notes


def accountant_epsilons(history, *, sample_rate: float, delta: float) -> dict:
    """dpaudit's accountant ε for the steps a canary set saw.

    ``history`` holds one ``(noise_multiplier, max_grad_norm)`` per step.
    Returns the last step's ``noise_multiplier`` and ``max_grad_norm``,
    ``constant`` (whether both stayed the same), ``pld_epsilon`` (T
    Poisson-subsampled Gaussian steps at ``sample_rate``; ``None`` when σ or C
    changed, ∞ at σ = 0) and ``gdp_epsilon`` (T composed Gaussian mechanisms,
    μ = sqrt(Σ_t 1/σ_t²), the every-step canaries' claim, Cebere, Bellet &
    Papernot 2024; ∞ when a step had σ = 0)."""
    sigmas = np.array([s for s, _ in history])
    norms = np.array([c for _, c in history])
    sigma, norm = float(sigmas[-1]), float(norms[-1])
    constant = bool(np.all(sigmas == sigma) and np.all(norms == norm))
    T = len(history)
    pld = None
    if constant:
        pld = (
            math.inf
            if sigma == 0
            else _accounting.epsilon(
                sample_rate=sample_rate, noise_multiplier=sigma, steps=T, delta=delta, accountant="pld"
            )
        )
    if np.any(sigmas == 0):
        gdp = math.inf
    else:
        sigma_eff = math.sqrt(T / float(np.sum(1.0 / sigmas**2)))
        gdp = _accounting.epsilon(sample_rate=1.0, noise_multiplier=sigma_eff, steps=T, delta=delta, accountant="gdp")
    return dict(
        noise_multiplier=sigma, max_grad_norm=norm, constant=constant, pld_epsilon=pld, gdp_epsilon=gdp
    )


class DiracCanaries(CanarySet):
    """Dirac gradient canaries in any per-sample-gradient DP-SGD loop, audited in one run.

    Args:
        params: the trainable parameters (a tensor, a sequence of tensors, or
            a mapping of names to tensors, as ``dict(model.named_parameters())``
            or a ``torch.func`` parameter tuple). Their values at construction
            are ``w0`` of the ``"final"`` score. Canary coordinates are flat
            indices over them, each flattened row-major, in this order.
        m: the number of canaries (distinct coordinates, at most the number of
            parameters).
        sample_rate: the records' Poisson rate q. With ``insertion="sampled"``
            each included canary enters each step independently with rate q,
            as a Poisson-sampled record does.
        insertion: ``"sampled"`` (like a record, the default) or ``"every"``
            (each included canary at every step: T composed Gaussian
            mechanisms, Cebere, Bellet & Papernot 2024).
        norm_factor: each canary's per-sample norm in units of the clipping
            norm C (≥ 1): correct clipping lets exactly C through, a library
            that clips to k·C or not at all lets ``min(k, norm_factor)·C``.
        seed: the audit's randomness: the coordinates, the inclusion coins
            (fair, one per canary) and the per-step presence are three
            independent streams of ``numpy.random.SeedSequence(seed)``,
            never torch's RNG nor the library's. The same seed replays the
            same canaries; a seed must not be chosen after seeing results.
        coordinates: fix the flat coordinates instead of drawing them (tests,
            replays): distinct, in range.
        included: fix the inclusion bits (tests). The one-run theorems need
            fair coins drawn independently of the training; with fixed bits
            the audit uses the symmetric guesses.

    Attributes:
        coordinates: the flat coordinates (int64, length m).
        included: the inclusion bits (bool, length m).
        steps: the steps observed so far.
    """

    def __init__(
        self,
        params,
        *,
        m: int,
        sample_rate: Optional[float] = None,
        insertion: str = "sampled",
        norm_factor: float = 4.0,
        seed: int,
        coordinates=None,
        included=None,
    ):
        import torch

        tensors, self._keys = _leaves(params)
        if not tensors or not all(isinstance(t, torch.Tensor) for t in tensors):
            raise TypeError("params must be a tensor, or a non-empty sequence or mapping of tensors")
        rate = 1.0
        if insertion == "sampled":
            if sample_rate is None or not (0 < float(sample_rate) <= 1):
                raise ValueError(f"sample_rate must be in (0, 1] for insertion='sampled', got {sample_rate!r}")
            rate = float(sample_rate)
        self._params = params
        super().__init__(
            tensors, m=m, insertion=insertion, sample_rate=rate, norm_factor=norm_factor, seed=seed,
            coordinates=coordinates, included=included,
        )
        self._pending: Optional[CanaryStep] = None
        self._records_seen = 0

    # -- one step ---------------------------------------------------------------

    def draw(self, max_grad_norm: float) -> CanaryStep:
        """The canaries that enter the next step (included ones, each present
        with rate q, or all of them with ``"every"``), with per-sample value
        ``norm_factor · max_grad_norm``. Call once per step, before clipping;
        then :meth:`observe` once the step's noisy sum exists."""
        if self._pending is not None:
            raise RuntimeError("draw() called twice without observe(): each step draws once and observes once")
        max_grad_norm = _check_dp_field(max_grad_norm, field="max_grad_norm", context="training")
        rows = np.flatnonzero(self._present() & self.included)
        self._pending = CanaryStep(self, rows, self.norm_factor * float(max_grad_norm))
        self._pending_norm = float(max_grad_norm)
        return self._pending

    def observe(self, noisy_sum, records_sum=None, *, noise_multiplier: float, normalize_by: float = 1.0) -> None:
        """Records the step drawn last.

        Args:
            noisy_sum: the step's noisy gradient (records' clipped sum +
                canaries + noise), parameter-shaped, as the update uses it.
            records_sum: the records' clipped sum alone, before the canaries
                and the noise, in the same units (what a white-box auditor
                sees; ``None`` when the loop does not expose it: the per-step
                scores then carry the records' drift too).
            noise_multiplier: the σ the library claims for this step (noise
                std σ·C on the sum): the likelihood-ratio score uses it.
            normalize_by: what the loop divided the sums by (1 for sums, the
                expected batch size for mean gradients).
        """
        if self._pending is None:
            raise RuntimeError("observe() without draw(): draw the step's canaries before clipping")
        if not (math.isfinite(normalize_by) and normalize_by > 0):
            raise ValueError(f"normalize_by must be a finite number > 0, got {normalize_by!r}")
        _check_dp_field(noise_multiplier, field="noise_multiplier", context="training")
        x = self.gather(noisy_sum)
        if records_sum is not None:
            x = x - self.gather(records_sum)
            self._records_seen += 1
        step, self._pending = self._pending, None
        self._record(step._positions, x * float(normalize_by), noise_multiplier, self._pending_norm)

    # -- audit --------------------------------------------------------------------

    def audit(
        self,
        delta: float,
        confidence: float = 0.95,
        *,
        claimed_epsilon: Optional[float] = None,
        claim_source: Optional[str] = None,
        params=None,
        score: Optional[str] = None,
        llr_scale: float = 1.0,
        guesses: Optional[str] = None,
        selection: str = "auto",
        seed: int = 0,
    ) -> CanaryAudit:
        """Scores the canaries and bounds ε (one-run, Steinke, Nasr &
        Jagielski 2023, Thm 3.1; f-DP one-run in the (ε, δ) family,
        Mahloujifar, Melis & Chaudhuri 2024).

        Args:
            delta: the δ of the claim audited.
            claimed_epsilon: the library's own ε for (q, σ, T, δ) (its
                accountant); by default dpaudit's PLD ε (``"sampled"``) or GDP
                ε (``"every"``) of the steps observed.
            claim_source: where ``claimed_epsilon`` comes from (printed).
            params: the final parameters (for ``score="final"``).
            score: ``"steps-llr"`` (default; ``"steps-sum"`` when a step had
                σ = 0), ``"steps-sum"`` or ``"final"``; choose it and
                ``llr_scale`` before looking at results.
            guesses, selection, seed: as :meth:`dpaudit.opacus.DiracCanaries.audit`.
        """
        if self.steps == 0:
            raise ValueError("no step was observed: nothing to audit")
        if self._pending is not None:
            raise RuntimeError("a step was drawn but not observed: call observe() first")
        fields, notes = self._bounds(
            delta, confidence, score=score, llr_scale=llr_scale, guesses=guesses, selection=selection, seed=seed,
            params=params,
        )
        if fields["score"] != "final" and self._records_seen < self.steps:
            notes.append(
                f"the records' clipped sum was observed at {self._records_seen} of {self.steps} steps: "
                "the other steps' scores carry the records' drift"
            )
        accounted = accountant_epsilons(self._history, sample_rate=self.sample_rate, delta=delta)
        if self.insertion == "every" or any(s == 0 for s, _ in self._history):
            reference = accounted["gdp_epsilon"]  # ∞ when a step ran without noise
        else:
            reference = accounted["pld_epsilon"]
            if reference is None:
                notes.append("σ or C changed during training: dpaudit's PLD ε is not computed")
        if claimed_epsilon is None:
            if reference is None:
                raise ValueError("σ or C changed during training: pass claimed_epsilon (the library's accountant's ε)")
            claimed_epsilon = reference
            claim_source = (
                f"dpaudit {'gdp' if self.insertion == 'every' else 'pld'} accountant, {self.steps} "
                + ("Gaussian steps, every canary at each" if self.insertion == "every" else
                   f"Poisson-subsampled Gaussian steps (q = {self.sample_rate:.6g})")
            )
        elif claim_source is None:
            claim_source = "given by the caller"
        claim = float(claimed_epsilon)
        return CanaryAudit(
            claim_epsilon=claim,
            claim_source=claim_source,
            exceeds_claim={name: fields[name].epsilon > claim for name in ("one_run", "one_run_fdp")},
            dpaudit_epsilon=reference,
            norm_factor=self.norm_factor,
            noise_multiplier=accounted["noise_multiplier"],
            max_grad_norm=accounted["max_grad_norm"],
            notes=tuple(notes),
            **fields,
        )

    def __repr__(self) -> str:
        return (
            f"<dpaudit DiracCanaries: m = {self.m} ({int(self.included.sum())} included), insertion "
            f"{self.insertion} (q = {self.sample_rate:.6g}), norm {self.norm_factor:g}·C, {self.steps} steps so far>"
        )
