"""Dirac gradient canaries inside an Opacus 1.6 ``DPOptimizer``: insertion and observation.

The package docstring (``dpaudit.opacus``) describes the design; this module
holds the wiring. One wrapper replaces the optimizer's ``add_noise`` (which
Opacus calls once per logical step, after the records were clipped and summed
into ``p.summed_grad``). For every canary set attached it

1. reads the records' clipped sum at the set's coordinates;
2. inserts the canaries present at this step: ``insert_at="grad_sample"``
   hands Opacus's own ``clip_and_accumulate`` one per-sample gradient row per
   canary (norm ``norm_factor · C`` in its coordinate), which Opacus clips and
   adds to ``p.summed_grad``; ``insert_at="summed_grad"`` adds the clipped
   value to ``p.summed_grad`` directly (after clipping);
3. runs Opacus's ``add_noise``;
4. reads the noisy sum ``p.grad`` at the coordinates: minus step 1, that is the
   canary (if present) plus the noise, which feeds the per-step scores.
"""

from __future__ import annotations

import time
from typing import Optional

import numpy as np
import opacus
import torch
from opacus.data_loader import DPDataLoader
from opacus.optimizers import DistributedDPOptimizer, DPOptimizer, DPOptimizerFastGradientClipping

from ..canaries.core import CanarySet, CanaryStep
from .result import OpacusAudit, claims

#: The Opacus release whose internals (``DPOptimizer.add_noise``,
#: ``clip_and_accumulate``, ``p.grad_sample``, ``p.summed_grad``, the clip
#: factor's formula) the harness was checked against.
SUPPORTED_OPACUS = "1.6"

_INSERT_AT = ("grad_sample", "summed_grad")

# Optimizer classes the harness cannot audit, and why.
_REFUSED_REASONS = {
    "DPPerLayerOptimizer": "per-layer clipping: a Dirac canary would be clipped to its layer's norm, "
    "not to the mechanism's sensitivity",
    "AdaClipDPOptimizer": "adaptive clipping: the clipping norm and the noise change with the "
    "clipped fraction of the batch, which canaries would have to enter too",
    "DistributedDPOptimizer": "distributed training on more than one process: each rank sums its own gradients "
    "and only rank 0 adds noise, so no rank sees the mechanism's noisy sum",
    "DistributedDPOptimizerFastGradientClipping": "distributed training: each rank sums its own gradients",
    "FSDPOptimizerFastGradientClipping": "distributed training: each rank sums its own gradients",
    "SimpleDistributedPerLayerOptimizer": "distributed training with per-layer clipping",
}

# Attribute of the DPOptimizer holding the canary sets attached to it.
_REGISTRY = "_dpaudit_canary_sets"

# At most this many entries in one batch of canary per-sample gradients (rows × parameters).
_ROW_ENTRIES = 1 << 23


def _opacus_clip_factor(max_grad_norm: float, norm: "torch.Tensor") -> "torch.Tensor":
    # Opacus 1.6, DPOptimizer.clip_and_accumulate (and
    # GradSampleModuleFastGradientClipping.get_clipping_coef for ghost clipping).
    return (max_grad_norm / (norm + 1e-6)).clamp(max=1.0)


def _canary_entry(
    max_grad_norm: float, dtype: "torch.dtype", device: "torch.device", norm_factor: float = 1.0
) -> "torch.Tensor":
    """A canary's term in ``summed_grad``: a per-sample gradient of
    ``norm_factor · C`` in one entry, clipped the way ``clip_and_accumulate``
    clips a record's. Returns a 0-dim tensor."""
    # Opacus takes each parameter's per-sample norm, then the norm of those norms.
    grad_sample = torch.full((1, 1), float(norm_factor * max_grad_norm), dtype=dtype, device=device)
    per_param = grad_sample.reshape(1, -1).norm(2, dim=-1)
    per_sample_norm = torch.stack([per_param, torch.zeros_like(per_param)], dim=1).norm(2, dim=1)
    clip = _opacus_clip_factor(max_grad_norm, per_sample_norm)
    return torch.einsum("i,i...", clip.to(dtype), grad_sample)[0]


def _check_optimizer(optimizer, insert_at: str) -> None:
    if not isinstance(optimizer, DPOptimizer):
        raise TypeError(
            "DiracCanaries needs the DPOptimizer returned by PrivacyEngine.make_private, "
            f"got {type(optimizer).__module__}.{type(optimizer).__name__}"
        )
    name = type(optimizer).__name__
    # One process (world size 1): rank 0 adds the noise and the all-reduce of one
    # rank is the identity, so add_noise sees the whole noisy sum, as DPOptimizer's.
    one_process = type(optimizer) is DistributedDPOptimizer and optimizer.world_size == 1
    if name in _REFUSED_REASONS and not one_process:
        raise ValueError(f"cannot audit {name}: {_REFUSED_REASONS[name]}; use flat clipping on one process")
    if type(optimizer) not in (DPOptimizer, DPOptimizerFastGradientClipping) and not one_process:
        raise ValueError(
            f"cannot audit {type(optimizer).__name__}: only DPOptimizer and DPOptimizerFastGradientClipping "
            "(flat clipping, hooks, functorch, ew or ghost clipping, one process; DistributedDPOptimizer on "
            "one process) were checked"
        )
    if type(optimizer) is DPOptimizerFastGradientClipping and insert_at == "grad_sample":
        raise ValueError(
            "cannot insert canaries before clipping with ghost clipping (grad_sample_mode='ghost'): "
            "DPOptimizerFastGradientClipping clips inside the backward pass and never sees per-sample "
            "gradients, so there is no place for a canary's; pass insert_at='summed_grad' (canaries enter "
            "after clipping, so a clipping bug cannot reach them)"
        )
    inner = optimizer.original_optimizer
    if not isinstance(inner, torch.optim.SGD):
        raise ValueError(
            f"cannot audit a DP-{type(inner).__name__} run: the Dirac score w0 − wT assumes the update moves "
            "each coordinate against its noisy gradient, which torch.optim.SGD does (with or without momentum); "
            f"{type(inner).__name__} rescales each coordinate by its own history, so an included canary need not "
            "push its score up (the bound would stay valid, the score would lose its meaning). Use torch.optim.SGD"
        )
    for group in inner.param_groups:
        if group.get("maximize", False):
            raise ValueError("cannot audit SGD with maximize=True: the update follows the gradient, not against it")
        if group.get("lr", 0.0) <= 0:
            raise ValueError(f"cannot audit SGD with learning rate {group.get('lr')}: it must be > 0")
    if getattr(optimizer, "_adjusted_noise_multiplier", None) is not None:
        raise ValueError("cannot audit adaptive clipping (an adjusted noise multiplier is set)")
    if not isinstance(optimizer.max_grad_norm, (int, float)):
        raise ValueError("cannot audit per-layer clipping norms: max_grad_norm must be one number")


def _summed_ready(params) -> bool:
    """Whether every ``summed_grad`` holds this step's clipped sum (else
    Opacus's ``add_noise`` raises its own error)."""
    return all(getattr(p, "summed_grad", None) is not None and not hasattr(p.summed_grad, "_processed") for p in params)


class DiracCanaries(CanarySet):
    """Dirac gradient canaries in an Opacus training run, audited in one run.

    The canary set itself (coordinates, coins, scores, bounds) is the core's
    :class:`dpaudit.canaries.core.CanarySet`; this class wires it into
    Opacus's optimizer and adds shuffled batches and Opacus's claims.

    Attach before the first step, to the ``DPOptimizer`` and the data loader
    that ``PrivacyEngine.make_private`` returned (with a ``BatchMemoryManager``,
    still the loader from ``make_private``: it defines the logical steps).

    Args:
        optimizer: Opacus's ``DPOptimizer`` (flat clipping, one process) over
            ``torch.optim.SGD``: per-sample gradients from ``hooks``,
            ``functorch`` or ``ew``; ghost clipping only with
            ``insert_at="summed_grad"``; ``DistributedDPOptimizer`` (``DPDDP``)
            only with world size 1, where rank 0's noisy sum is the whole one.
        data_loader: the training loader from ``make_private``: a
            ``DPDataLoader`` means Poisson sampling with its ``sample_rate``;
            any other loader means shuffled batches, ``len(data_loader)`` steps
            per epoch.
        privacy_engine: the ``PrivacyEngine``, for its accountant's ε.
        m: the number of canaries (distinct coordinates; at most the number
            of trainable parameters).
        insertion: ``"sampled"`` (like a record) or ``"every"`` (every step).
        insert_at: ``"grad_sample"`` (the default): each canary enters as a
            per-sample gradient of norm ``norm_factor · C`` through Opacus's
            own ``clip_and_accumulate``, so a clipping bug changes its
            contribution. ``"summed_grad"``: its clipped value is added to the
            clipped sum (after clipping; needed for ghost clipping).
        norm_factor: the canary's per-sample norm in units of C (≥ 1; with
            correct clipping it contributes C whatever the factor, while a
            library that clips to k·C or not at all lets min(k, norm_factor)·C
            through).
        seed: seeds the canaries' coordinates, inclusion coins and sampling
            (three independent streams of ``numpy.random.SeedSequence(seed)``);
            one seed per canary set on an optimizer.
        coordinates: fix the flat coordinates instead of drawing them (tests,
            replays); distinct, in range, disjoint from other canary sets.
        included: fix the inclusion bits instead of drawing them (tests). The
            one-run theorems need independent fair coins, drawn independently
            of the training; the audit checks the count.

    Several canary sets may share one optimizer (say one ``"sampled"`` and one
    ``"every"``); their coordinates are kept disjoint, and each is audited
    separately (the others are then part of the training data).

    Attributes:
        coordinates: the flat coordinates ``j_i`` (int64, length m), in the
            order of ``optimizer.params``, each flattened row-major.
        included: the inclusion bits (bool, length m).
        insertions: the number of steps each canary entered (0 when excluded).
        steps: optimizer steps seen (logical steps: one per ``add_noise``).
        sampling, sample_rate, steps_per_epoch: ``"poisson"`` or
            ``"shuffle"``, the q Opacus accounts, and ``len(data_loader)``.

    SGD with momentum or Nesterov is fine (the update is a positive
    combination of past noisy gradients, so an included canary still lowers
    its coordinate); weight decay is allowed and noted (it adds a
    ``w0``-dependent term to every ``"final"`` score). Other optimizers are
    refused.
    """

    def __init__(
        self,
        optimizer,
        data_loader,
        *,
        privacy_engine=None,
        m: int = 1000,
        insertion: str = "sampled",
        insert_at: str = "grad_sample",
        norm_factor: float = 4.0,
        seed: int = 0,
        coordinates=None,
        included=None,
    ):
        version = getattr(opacus, "__version__", "unknown")
        if not version.startswith(SUPPORTED_OPACUS + "."):
            raise ValueError(
                f"dpaudit.opacus was checked against Opacus {SUPPORTED_OPACUS}.x internals (add_noise, "
                f"clip_and_accumulate, grad_sample, summed_grad, the clip factor), found Opacus {version}"
            )
        if insert_at not in _INSERT_AT:
            raise ValueError(f"insert_at must be one of {', '.join(_INSERT_AT)}, got {insert_at!r}")
        _check_optimizer(optimizer, insert_at)
        if privacy_engine is not None and len(privacy_engine.accountant) > 0:
            raise ValueError(
                "attach the canaries before the first step: the privacy engine's accountant has already "
                f"recorded {len(privacy_engine.accountant)} steps, so its ε would cover steps the canaries missed"
            )
        self._optimizer = optimizer
        self._privacy_engine = privacy_engine
        self.insert_at = insert_at

        # Sampling of the records, hence of the canaries.
        self.steps_per_epoch = len(data_loader)
        if self.steps_per_epoch < 1:
            raise ValueError("the data loader is empty")
        if isinstance(data_loader, DPDataLoader):
            self.sampling = "poisson"
            sample_rate = float(data_loader.sample_rate)
        else:
            self.sampling = "shuffle"
            # What Opacus accounts a shuffled loader as (make_private: 1 / len(data_loader)).
            sample_rate = 1.0 / self.steps_per_epoch

        # Coordinates over the flattened trainable parameters, apart from other canary sets'.
        others = getattr(optimizer, _REGISTRY, [])
        if included is None and any(c.seed == seed and not c._fixed_inclusion for c in others):
            raise ValueError(
                f"seed {seed} already seeds another canary set on this optimizer: the two sets would share their "
                "inclusion coins, and each audit needs coins independent of the rest of training; give another seed"
            )
        taken = np.concatenate([c.coordinates for c in others]) if others else None
        super().__init__(
            [p.detach() for p in optimizer.params], m=m, insertion=insertion, sample_rate=sample_rate,
            norm_factor=norm_factor, seed=seed, coordinates=coordinates, included=included, taken=taken,
        )
        self._slots: Optional[np.ndarray] = None
        self._pending: Optional[np.ndarray] = None  # the rows inserted at the step under way
        self._entries: dict = {}
        self._attached = False
        self._attach()

    # -- wiring ---------------------------------------------------------------

    def _attach(self) -> None:
        optimizer = self._optimizer
        sets = getattr(optimizer, _REGISTRY, None)
        if sets is None:
            sets = []
            setattr(optimizer, _REGISTRY, sets)
            original = optimizer.add_noise  # the bound method of Opacus's class

            def add_noise_with_canaries():
                canary_sets = list(getattr(optimizer, _REGISTRY))
                params = list(optimizer.params)
                if not _summed_ready(params):
                    return original()
                for canary_set in canary_sets:
                    canary_set._check_step(params)
                records = [canary_set.gather([p.summed_grad for p in params]) for canary_set in canary_sets]
                for canary_set in canary_sets:
                    canary_set._insert(params)
                out = original()
                for canary_set, before in zip(canary_sets, records):
                    canary_set._observe(params, before)
                return out

            optimizer.add_noise = add_noise_with_canaries
        sets.append(self)
        self._attached = True

    def detach(self) -> None:
        """Stop inserting these canaries (later steps go on without them).
        The audit still uses the steps seen so far."""
        if not self._attached:
            return
        sets = getattr(self._optimizer, _REGISTRY)
        sets.remove(self)
        if not sets:
            del self._optimizer.add_noise  # back to the class's method
            delattr(self._optimizer, _REGISTRY)
        self._attached = False

    def _present(self) -> np.ndarray:
        """Which canaries enter this step (before the inclusion bits)."""
        if self.insertion == "every" or self.sampling == "poisson":
            return super()._present()
        # Shuffled batches: once per epoch, at a uniformly random step of it.
        position = self.steps % self.steps_per_epoch
        if position == 0:
            self._slots = self._sampler.integers(0, self.steps_per_epoch, size=self.m)
        return self._slots == position

    def _check_step(self, params) -> None:
        optimizer = self._optimizer
        accumulated = optimizer.accumulated_iterations
        if accumulated != 1:
            raise RuntimeError(
                f"dpaudit.opacus: this step accumulates {accumulated} backward passes (no zero_grad between "
                "them); canaries are inserted once per optimizer step and cannot follow the accountant's "
                "q × accumulated_iterations. Use BatchMemoryManager for virtual steps instead"
            )
        if getattr(optimizer, "_adjusted_noise_multiplier", None) is not None:
            raise RuntimeError("dpaudit.opacus: adaptive clipping is not supported")
        if len(params) != self._sizes.size or any(p.numel() != s for p, s in zip(params, self._sizes)):
            raise RuntimeError("dpaudit.opacus: the optimizer's parameters changed since the canaries were attached")

    def _insert(self, params) -> None:
        """Adds the canaries present at this step to ``summed_grad``; runs just
        before Opacus's ``add_noise``."""
        present = self._present() & self.included
        self._pending = np.flatnonzero(present)
        if self.insert_at == "grad_sample":
            self._insert_before_clipping(params, self._pending)
        else:
            self._insert_after_clipping(params, present)

    def _insert_before_clipping(self, params, rows: np.ndarray) -> None:
        """One per-sample gradient per present canary (``norm_factor · C`` in its
        coordinate, 0 elsewhere) through Opacus's ``clip_and_accumulate``, in
        batches of rows; the records' ``grad_sample`` is put back afterwards."""
        if rows.size == 0:
            return
        optimizer = self._optimizer
        value = self.norm_factor * float(optimizer.max_grad_norm)
        chunk = max(1, _ROW_ENTRIES // int(self._sizes.sum()))
        saved = [getattr(p, "grad_sample", None) for p in params]
        try:
            with torch.no_grad():
                for start in range(0, rows.size, chunk):
                    samples = CanaryStep(self, rows[start : start + chunk], value).rows(like=params)
                    for p, sample in zip(params, samples):
                        p.grad_sample = sample
                    optimizer.clip_and_accumulate()
        finally:
            for p, grad_sample in zip(params, saved):
                p.grad_sample = grad_sample

    def _insert_after_clipping(self, params, present: np.ndarray) -> None:
        """Adds ``C · clip(C)`` to each present canary's entry of ``summed_grad``."""
        max_grad_norm = self._optimizer.max_grad_norm
        with torch.no_grad():
            for k, positions, local in self._groups:
                chosen = local[present[positions]]
                if chosen.size == 0:
                    continue
                p = params[k]
                summed = p.summed_grad
                if not summed.is_contiguous():
                    summed = summed.contiguous()
                    p.summed_grad = summed
                key = (float(max_grad_norm), summed.dtype, summed.device)
                entry = self._entries.get(key)
                if entry is None:
                    entry = _canary_entry(max_grad_norm, summed.dtype, summed.device)
                    self._entries[key] = entry
                idx = torch.as_tensor(chosen, dtype=torch.long).to(summed.device)
                summed.view(-1).index_add_(0, idx, entry.expand(idx.numel()))

    def _observe(self, params, records: np.ndarray) -> None:
        """After ``add_noise``: the noisy sum minus the records' clipped sum, at
        each canary coordinate, into the per-step scores."""
        rows, self._pending = self._pending, None
        noisy = self.gather([p.grad for p in params])
        self._record(rows, noisy - records, self._optimizer.noise_multiplier, self._optimizer.max_grad_norm)

    # -- audit ------------------------------------------------------------------

    def _final_params(self, params):
        """The ``"final"`` score's final parameters: the optimizer's current ones by default."""
        return list(self._optimizer.params) if params is None else params

    def audit(
        self,
        delta: float,
        confidence: float = 0.95,
        *,
        score: Optional[str] = None,
        llr_scale: float = 1.0,
        guesses: Optional[str] = None,
        selection: str = "auto",
        seed: int = 0,
    ) -> OpacusAudit:
        """Scores the canaries and bounds ε.

        Args:
            delta: the δ of the claim audited (and of Opacus's ε).
            confidence: of both lower bounds.
            score: ``"steps-llr"`` (the default; ``"steps-sum"`` when a step
                ran without noise, where no likelihood ratio exists),
                ``"steps-sum"`` or ``"final"``; docs/library-audits.md says
                what each assumes the auditor sees. Choose it, and
                ``llr_scale``, before looking at the results: the bound of
                the best of several scores is not valid at the stated confidence.
            llr_scale: the scale of ``"steps-llr"`` (1, 0.5 or 0.25 times
                the claimed σ; below 1 the test hunts for too little noise).
            guesses: the one-run guess family. By default
                ``"with-one-sided"`` (as ``dpaudit run``), valid because the
                harness draws each inclusion with a fair coin, and
                ``"symmetric"`` (which needs no exact ½) when the inclusion
                bits were passed in as ``included``.
            selection, seed: the selection policy of ``dpaudit.audit.one_run``.
        """
        if self.steps == 0:
            raise ValueError("no optimizer step has run since the canaries were attached: nothing to audit")
        started = time.perf_counter()
        fields, notes = self._bounds(
            delta, confidence, score=score, llr_scale=llr_scale, guesses=guesses, selection=selection, seed=seed
        )
        claimed = claims(
            history=self._history, insertion=self.insertion, sampling=self.sampling, sample_rate=self.sample_rate,
            steps_per_epoch=self.steps_per_epoch, privacy_engine=self._privacy_engine, delta=delta,
        )
        notes += claimed.pop("notes")
        inner = self._optimizer.original_optimizer
        if fields["score"] == "final" and any(g.get("weight_decay", 0) for g in inner.param_groups):
            notes.append("weight decay shrinks every coordinate toward 0, which adds w0-dependent noise to the scores")

        claim = claimed["claim_epsilon"]
        reduction = self._optimizer.loss_reduction
        return OpacusAudit(
            exceeds_claim={name: fields[name].epsilon > claim for name in ("one_run", "one_run_fdp")},
            insert_at=self.insert_at,
            norm_factor=self.norm_factor if self.insert_at == "grad_sample" else None,
            sampling=self.sampling,
            steps_per_epoch=self.steps_per_epoch,
            expected_batch_size=self._optimizer.expected_batch_size if reduction == "mean" else None,
            loss_reduction=reduction,
            audit_seconds=time.perf_counter() - started,
            notes=tuple(notes),
            **fields,
            **claimed,
        )

    def __repr__(self) -> str:
        return (
            f"<dpaudit DiracCanaries: m = {self.m} ({int(self.included.sum())} included), insertion "
            f"{self.insertion}, {self.sampling} batches (q = {self.sample_rate:.6g}), enter at {self.insert_at}, "
            f"{self.steps} steps so far{'' if self._attached else ', detached'}>"
        )
