"""One-run audit of an Opacus training run with Dirac gradient canaries.

Attach :class:`DiracCanaries` to the ``DPOptimizer`` that
``PrivacyEngine.make_private`` returned, train as usual, then call
:meth:`DiracCanaries.audit`: it scores each canary on the final model and
returns one-run ε lower bounds beside Opacus's own accountant ε::

    model, optimizer, train_loader = privacy_engine.make_private(...)
    canaries = dpaudit.opacus.DiracCanaries(
        optimizer, train_loader, privacy_engine=privacy_engine, m=1000, seed=0
    )
    for epoch in range(epochs):
        for x, y in train_loader:
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()
    result = canaries.audit(delta=1e-5)
    print(result)

**Canaries.** Canary i is the gradient ``C · e_{j_i}``: the clipping norm C
(``max_grad_norm``) in one coordinate ``j_i`` of the trainable parameters
(flattened over all of them, the ``j_i`` distinct and uniformly random), the
Dirac canary of Steinke, Nasr & Jagielski 2023, §4.1 (one-run audit, white box).
Each is included independently with probability ½, by coins of the harness's
own generator (``seed``; never the global torch RNG nor Opacus's noise or
sampling generator). An included canary enters a step

- ``insertion="sampled"``: as a record would. With Poisson sampling (Opacus's
  ``DPDataLoader``, ``poisson_sampling=True``) independently at each step with
  the loader's sample rate q; with shuffled batches (``poisson_sampling=False``)
  exactly once per epoch, at a uniformly random step of it — what shuffling
  does to a record.
- ``insertion="every"``: at every step, the hidden-state game of Cebere,
  Bellet & Papernot 2024 (final model only, a gradient canary at each step).

**Mechanics.** The harness wraps the optimizer's ``add_noise``, the step after
Opacus has clipped and summed the records' per-sample gradients into
``p.summed_grad`` (``clip_and_accumulate``, once per physical batch) and
before the noise. There each canary present adds ``C · clip`` to the one entry
of ``summed_grad`` it occupies, where ``clip`` is Opacus 1.6's clip factor
``(max_grad_norm / (norm + 1e-6)).clamp(max=1.0)`` evaluated on the canary's
per-sample norm C in the parameter's dtype, exactly as ``clip_and_accumulate``
evaluates it for a record of norm C. The canary then shares the records' noise
(``noise_multiplier · max_grad_norm`` on the sum) and normalisation
(``expected_batch_size``): to the optimizer it is one more sample of the batch.
Nothing else changes: no random number is drawn from torch, no other entry of
``summed_grad`` is touched, and the records' clip factors are computed before
the canaries exist. ``add_noise`` runs once per logical step, so virtual steps
(``BatchMemoryManager``) get each canary once per logical step; gradient
accumulation over several backward passes between steps
(``accumulated_iterations > 1``) is refused at the step.

**Scores.** ``score_i = w0[j_i] − wT[j_i]``, from the parameters when the
canaries were attached (``w0``) and the final ones (``wT``) only. Under SGD,
``w ← w − lr · g``: an included canary lowers its coordinate, so inclusion
pushes the score up. The bound's validity never depends on the score (any
function of the final model is allowed); the sign only makes it powerful.

**Bounds.** The one-run audit (Steinke et al. 2023, Thm 3.1) and its f-DP
version in the (ε, δ) family (Mahloujifar, Melis & Chaudhuri 2024), both valid
for any mechanism at the stated confidence; ``docs/audit-statistics.md`` §3–§4
gives the arguments.

**Claims.** What the bounds are compared with:

- ``"sampled"`` with Poisson sampling: each canary is sampled exactly as a
  record, so Opacus's accountant ε (``privacy_engine.get_epsilon(delta)``) is
  claimed for it as for a record. dpaudit's PLD ε for the same (q, σ, steps) is
  reported beside it.
- ``"sampled"`` with shuffled batches: Opacus accounts them as Poisson sampling
  with q = 1/len(data_loader); that ε is the claim, reported as Opacus's, but
  it is not a proven upper bound for shuffled batches (Chua et al. 2024;
  Annamalai et al. 2024).
- ``"every"``: a canary present at all T steps is T composed Gaussian
  mechanisms with noise σ, μ = √T/σ GDP; the claim is that ε (dpaudit's
  ``gdp`` accountant). Opacus's subsampled ε does **not** apply to such a
  canary and is reported only for reference.

Needs torch and Opacus 1.6 (``pip install 'dpaudit[opacus]'``); the rest of
``dpaudit`` needs neither.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Optional

import numpy as np

try:
    import opacus
    import torch
    from opacus.data_loader import DPDataLoader
    from opacus.optimizers import DPOptimizer, DPOptimizerFastGradientClipping
except ImportError as error:  # pragma: no cover - exercised only without torch/opacus
    raise ImportError(
        "dpaudit.opacus needs torch and opacus 1.6 (pip install 'dpaudit[opacus]'); "
        f"the rest of dpaudit works without them ({error})"
    ) from error

from . import accounting as _accounting
from . import audit as _audit
from ._dpaudit import Bound

__all__ = ["DiracCanaries", "OpacusAudit", "SUPPORTED_OPACUS"]

#: The Opacus release whose internals (``DPOptimizer.add_noise``,
#: ``p.summed_grad``, the clip factor's formula) the harness was checked against.
SUPPORTED_OPACUS = "1.6"

_INSERTIONS = ("sampled", "every")

# Optimizer classes the harness cannot audit, and why.
_REFUSED_REASONS = {
    "DPPerLayerOptimizer": "per-layer clipping: a Dirac canary would be clipped to its layer's norm, "
    "not to the mechanism's sensitivity",
    "AdaClipDPOptimizer": "adaptive clipping: the clipping norm and the noise change with the "
    "clipped fraction of the batch, which canaries would have to enter too",
    "DistributedDPOptimizer": "distributed training: each rank sums its own gradients",
    "DistributedDPOptimizerFastGradientClipping": "distributed training: each rank sums its own gradients",
    "FSDPOptimizerFastGradientClipping": "distributed training: each rank sums its own gradients",
    "SimpleDistributedPerLayerOptimizer": "distributed training with per-layer clipping",
}

# Attribute of the DPOptimizer holding the canary sets attached to it.
_REGISTRY = "_dpaudit_canary_sets"


def _opacus_clip_factor(max_grad_norm: float, norm: "torch.Tensor") -> "torch.Tensor":
    # Opacus 1.6, DPOptimizer.clip_and_accumulate (and
    # GradSampleModuleFastGradientClipping.get_clipping_coef for ghost clipping).
    return (max_grad_norm / (norm + 1e-6)).clamp(max=1.0)


def _canary_entry(max_grad_norm: float, dtype: "torch.dtype", device: "torch.device") -> "torch.Tensor":
    """The canary's term in ``summed_grad``: ``C · clip``, computed the way
    ``clip_and_accumulate`` computes a record's. Returns a 0-dim tensor."""
    # The per-sample gradient of the canary: C in one entry, 0 elsewhere. Opacus
    # takes each parameter's per-sample norm, then the norm of those norms.
    grad_sample = torch.full((1, 1), float(max_grad_norm), dtype=dtype, device=device)
    per_param = grad_sample.reshape(1, -1).norm(2, dim=-1)
    per_sample_norm = torch.stack([per_param, torch.zeros_like(per_param)], dim=1).norm(2, dim=1)
    clip = _opacus_clip_factor(max_grad_norm, per_sample_norm)
    return torch.einsum("i,i...", clip.to(dtype), grad_sample)[0]


def _check_optimizer(optimizer) -> None:
    if not isinstance(optimizer, DPOptimizer):
        raise TypeError(
            "DiracCanaries needs the DPOptimizer returned by PrivacyEngine.make_private, "
            f"got {type(optimizer).__module__}.{type(optimizer).__name__}"
        )
    name = type(optimizer).__name__
    if name in _REFUSED_REASONS:
        raise ValueError(f"cannot audit {name}: {_REFUSED_REASONS[name]}; use flat clipping on one process")
    if type(optimizer) not in (DPOptimizer, DPOptimizerFastGradientClipping):
        raise ValueError(
            f"cannot audit {type(optimizer).__name__}: only DPOptimizer and DPOptimizerFastGradientClipping "
            "(flat clipping, hooks or ghost clipping, one process) were checked"
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


@dataclasses.dataclass(frozen=True)
class OpacusAudit:
    """The one-run audit of an Opacus run, beside the ε claimed for its canaries.

    ``claim_epsilon`` is the ε upper bound that applies to each canary (see
    ``claim_source``); ``exceeds_claim`` says which lower bound is above it
    (which, at the bound's confidence, would mean a bug or a broken analysis).
    ``opacus_epsilon`` is Opacus's accountant ε for the records;
    ``opacus_applies`` whether it is also the canaries' claim.
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
    scores: np.ndarray = dataclasses.field(repr=False, compare=False)
    members: np.ndarray = dataclasses.field(repr=False, compare=False)

    def to_dict(self) -> dict:
        """A JSON-serialisable dict (the bounds as ``Bound.to_dict()``; the
        scores and members are left out)."""
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

    def __repr__(self) -> str:
        def eps(x: Optional[float]) -> str:
            return "n/a" if x is None else f"{x:.4f}"

        def flag(name: str) -> str:
            return "  EXCEEDS THE CLAIM" if self.exceeds_claim[name] else ""

        lines = [
            f"<dpaudit OpacusAudit: {self.m} Dirac canaries ({self.included} included), insertion {self.insertion}, "
            f"{self.sampling} batches",
            f"  mechanism  {self.steps} steps, q = {self.sample_rate:.6g}, σ = {self.noise_multiplier:g}, "
            f"C = {self.max_grad_norm:g}, δ = {self.delta:g}; an included canary entered "
            f"{self.mean_insertions:.2f} steps on average",
            f"  claim      ε ≤ {self.claim_epsilon:.4f}: {self.claim_source}",
            f"  opacus     ε ≤ {eps(self.opacus_epsilon)} ({self.opacus_accountant or 'no privacy_engine given'}"
            f"{'' if self.opacus_applies else '; does not apply to these canaries'})"
            f"   dpaudit pld ε ≤ {eps(self.pld_epsilon)}"
            + ("" if self.gdp_epsilon is None else f"   gdp (every step) ε ≤ {eps(self.gdp_epsilon)}"),
            f"  one-run    ε ≥ {self.one_run.epsilon:.4f} ({self.one_run.confidence:g} confidence, "
            f"{self.one_run.selection}){flag('one_run')}",
            f"  f-DP       ε ≥ {self.one_run_fdp.epsilon:.4f} ({self.one_run_fdp.confidence:g} confidence, "
            f"{self.one_run_fdp.selection}){flag('one_run_fdp')}",
            f"  time       training {self.train_seconds:.1f} s, audit {self.audit_seconds:.2f} s",
        ]
        lines += [f"  note       {note}" for note in self.notes]
        return "\n".join(lines) + ">"

    __str__ = __repr__


class DiracCanaries:
    """Dirac gradient canaries in an Opacus training run, audited in one run.

    Attach before the first step, to the ``DPOptimizer`` and the data loader
    that ``PrivacyEngine.make_private`` returned (with a ``BatchMemoryManager``,
    still the loader from ``make_private``: it defines the logical steps).

    Args:
        optimizer: Opacus's ``DPOptimizer`` (flat clipping; hooks, functorch or
            ghost clipping; one process) over ``torch.optim.SGD``.
        data_loader: the training loader from ``make_private``: a
            ``DPDataLoader`` means Poisson sampling with its ``sample_rate``;
            any other loader means shuffled batches, ``len(data_loader)`` steps
            per epoch.
        privacy_engine: the ``PrivacyEngine``, for its accountant's ε.
        m: the number of canaries (distinct coordinates; at most the number
            of trainable parameters).
        insertion: ``"sampled"`` (like a record) or ``"every"`` (every step).
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
    ``w0``-dependent term to every score). Other optimizers are refused.
    """

    def __init__(
        self,
        optimizer,
        data_loader,
        *,
        privacy_engine=None,
        m: int = 1000,
        insertion: str = "sampled",
        seed: int = 0,
        coordinates=None,
        included=None,
    ):
        version = getattr(opacus, "__version__", "unknown")
        if not version.startswith(SUPPORTED_OPACUS + "."):
            raise ValueError(
                f"dpaudit.opacus was checked against Opacus {SUPPORTED_OPACUS}.x internals (add_noise, "
                f"summed_grad, the clip factor), found Opacus {version}"
            )
        _check_optimizer(optimizer)
        if insertion not in _INSERTIONS:
            raise ValueError(f"insertion must be one of {', '.join(_INSERTIONS)}, got {insertion!r}")
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
            raise ValueError(f"m must be a positive integer, got {m!r}")
        m = int(m)
        if privacy_engine is not None and len(privacy_engine.accountant) > 0:
            raise ValueError(
                "attach the canaries before the first step: the privacy engine's accountant has already "
                f"recorded {len(privacy_engine.accountant)} steps, so its ε would cover steps the canaries missed"
            )

        self._optimizer = optimizer
        self._privacy_engine = privacy_engine
        self.m = m
        self.insertion = insertion
        self.seed = seed

        # Sampling of the records, hence of the canaries.
        self.steps_per_epoch = len(data_loader)
        if self.steps_per_epoch < 1:
            raise ValueError("the data loader is empty")
        if isinstance(data_loader, DPDataLoader):
            self.sampling = "poisson"
            self.sample_rate = float(data_loader.sample_rate)
        else:
            self.sampling = "shuffle"
            # What Opacus accounts a shuffled loader as (make_private: 1 / len(data_loader)).
            self.sample_rate = 1.0 / self.steps_per_epoch

        # Coordinates over the flattened trainable parameters.
        params = list(optimizer.params)
        sizes = np.array([p.numel() for p in params], dtype=np.int64)
        self._sizes = sizes
        total = int(sizes.sum())
        others = getattr(optimizer, _REGISTRY, [])
        if included is None and any(c.seed == seed and not c._fixed_inclusion for c in others):
            raise ValueError(
                f"seed {seed} already seeds another canary set on this optimizer: the two sets would share their "
                "inclusion coins, and each audit needs coins independent of the rest of training; give another seed"
            )
        taken = np.concatenate([c.coordinates for c in others]) if others else np.zeros(0, dtype=np.int64)
        coord_seq, coin_seq, sample_seq = np.random.SeedSequence(seed).spawn(3)
        if coordinates is None:
            if m > total - taken.size:
                raise ValueError(
                    f"m = {m} canaries need distinct coordinates, but the model has {total} trainable parameters"
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
            inc = np.random.default_rng(coin_seq).random(m) < 0.5
        else:
            inc = np.asarray(included, dtype=bool).reshape(-1)
            if inc.size != m:
                raise ValueError(f"included has {inc.size} entries, m = {m}")
        self.included = inc
        self._fixed_inclusion = included is not None
        self._sampler = np.random.default_rng(sample_seq)

        # Canaries grouped by parameter: (parameter index, canary positions, local indices).
        owner = np.searchsorted(np.cumsum(sizes), self.coordinates, side="right")
        local = self.coordinates - (np.cumsum(sizes) - sizes)[owner]
        self._groups = [(int(k), np.flatnonzero(owner == k), local[owner == k]) for k in np.unique(owner)]
        self._w0 = self._read(params)

        self.steps = 0
        self.insertions = np.zeros(m, dtype=np.int64)
        self._slots: Optional[np.ndarray] = None
        self._history: list = []  # (noise_multiplier, max_grad_norm) per step
        self._entries: dict = {}
        self._started = time.perf_counter()
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
                for canary_set in list(getattr(optimizer, _REGISTRY)):
                    canary_set._insert()
                return original()

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

    def _read(self, params) -> np.ndarray:
        out = np.empty(self.m, dtype=np.float64)
        with torch.no_grad():
            for k, positions, local in self._groups:
                flat = params[k].detach().reshape(-1)
                idx = torch.as_tensor(local, dtype=torch.long, device=flat.device)
                out[positions] = flat.index_select(0, idx).double().cpu().numpy()
        return out

    def _present(self) -> np.ndarray:
        """Which canaries enter this step (before the inclusion bits)."""
        if self.insertion == "every":
            return np.ones(self.m, dtype=bool)
        if self.sampling == "poisson":
            return self._sampler.random(self.m) < self.sample_rate
        # Shuffled batches: once per epoch, at a uniformly random step of it.
        position = self.steps % self.steps_per_epoch
        if position == 0:
            self._slots = self._sampler.integers(0, self.steps_per_epoch, size=self.m)
        return self._slots == position

    def _insert(self) -> None:
        """Adds the canaries present at this step to ``summed_grad``; runs just
        before Opacus's ``add_noise``."""
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
        max_grad_norm = optimizer.max_grad_norm
        present = self._present() & self.included
        params = list(optimizer.params)
        if len(params) != self._sizes.size or any(p.numel() != s for p, s in zip(params, self._sizes)):
            raise RuntimeError("dpaudit.opacus: the optimizer's parameters changed since the canaries were attached")
        with torch.no_grad():
            for k, positions, local in self._groups:
                chosen = local[present[positions]]
                if chosen.size == 0:
                    continue
                p = params[k]
                summed = p.summed_grad
                if summed is None or hasattr(summed, "_processed"):
                    continue  # Opacus's add_noise raises its own error next
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
        self.insertions += present
        self._history.append((float(optimizer.noise_multiplier), float(max_grad_norm)))
        self.steps += 1

    # -- audit ------------------------------------------------------------------

    def scores(self) -> np.ndarray:
        """``w0[j_i] − wT[j_i]`` for each canary, from the current parameters."""
        return self._w0 - self._read(list(self._optimizer.params))

    def audit(
        self,
        delta: float,
        confidence: float = 0.95,
        *,
        guesses: Optional[str] = None,
        selection: str = "auto",
        seed: int = 0,
    ) -> OpacusAudit:
        """Scores the canaries on the current (final) model and bounds ε.

        Args:
            delta: the δ of the claim audited (and of Opacus's ε).
            confidence: of both lower bounds.
            guesses: the one-run guess family. By default
                ``"with-one-sided"`` (as ``dpaudit run``), valid because the
                harness draws each inclusion with a fair coin, and
                ``"symmetric"`` (which needs no exact ½) when the inclusion
                bits were passed in as ``included``.
            selection, seed: the selection policy of ``dpaudit.audit.one_run``.
        """
        if self.steps == 0:
            raise ValueError("no optimizer step has run since the canaries were attached: nothing to audit")
        train_seconds = time.perf_counter() - self._started
        started = time.perf_counter()
        notes = []
        if guesses is None:
            guesses = "symmetric" if self._fixed_inclusion else "with-one-sided"
        scores = self.scores()
        members = self.included.copy()
        one_run = _audit.one_run(
            scores, members, delta=delta, confidence=confidence, selection=selection, seed=seed, guesses=guesses
        )
        fdp = _audit.one_run_fdp(
            scores,
            members,
            delta=delta,
            confidence=confidence,
            family="eps-delta",
            selection=selection,
            seed=seed,
            guesses=guesses,
        )

        sigmas = np.array([s for s, _ in self._history])
        norms = np.array([c for _, c in self._history])
        sigma, norm = float(sigmas[-1]), float(norms[-1])
        constant = bool(np.all(sigmas == sigma) and np.all(norms == norm))
        if not constant:
            notes.append(
                f"noise multiplier or clipping norm changed during training (σ in [{sigmas.min():g}, "
                f"{sigmas.max():g}], C in [{norms.min():g}, {norms.max():g}]); the table shows the last step's; "
                "dpaudit's PLD ε is not computed"
            )
        T = self.steps

        opacus_epsilon = None
        opacus_accountant = None
        if self._privacy_engine is not None:
            accountant = self._privacy_engine.accountant
            opacus_accountant = f"opacus {accountant.mechanism()} accountant"
            accounted = sum(int(n) for _, _, n in getattr(accountant, "history", []))
            if accounted != T:
                notes.append(f"Opacus's accountant recorded {accounted} steps, the canaries saw {T}")
            if np.all(sigmas > 0):
                opacus_epsilon = float(self._privacy_engine.get_epsilon(delta))
            else:
                opacus_epsilon = math.inf

        pld_epsilon = None
        if constant:
            pld_epsilon = (
                math.inf
                if sigma == 0
                else float(_accounting.account(self.sample_rate, sigma, T, delta, accountant="pld")["epsilon"])
            )
        # μ = sqrt(Σ_t 1/σ_t²): T Gaussian mechanisms of sensitivity C_t, noise σ_t C_t.
        if np.any(sigmas == 0):
            gdp_epsilon = math.inf
        else:
            sigma_eff = math.sqrt(T / float(np.sum(1.0 / sigmas**2)))
            gdp_epsilon = float(_accounting.account(1.0, sigma_eff, T, delta, accountant="gdp")["epsilon"])

        if self.insertion == "every":
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
            if self.sampling == "poisson":
                source = (
                    f"{claimed_by}, {T} Poisson-subsampled Gaussian steps (q = {self.sample_rate:.6g}): each "
                    "canary is sampled at each step with rate q, exactly as a record"
                )
            else:
                source = (
                    f"{claimed_by}, shuffled batches accounted as Poisson sampling with q = 1/len(data_loader) = "
                    f"{self.sample_rate:.6g}, as Opacus does: each canary enters once per epoch at a uniformly "
                    "random step, as a shuffled record; Poisson accounting is not a proven upper bound for "
                    "shuffled batches (Chua et al. 2024)"
                )
            opacus_applies = True
        if self.sampling == "shuffle" and T % self.steps_per_epoch != 0:
            notes.append(
                f"training stopped inside an epoch ({T} steps, {self.steps_per_epoch} per epoch): in the last "
                "epoch only the canaries drawn for the steps run were inserted"
            )
        inner = self._optimizer.original_optimizer
        if any(g.get("weight_decay", 0) for g in inner.param_groups):
            notes.append("weight decay shrinks every coordinate toward 0, which adds w0-dependent noise to the scores")

        included = int(members.sum())
        mean_insertions = float(self.insertions[members].mean()) if included else 0.0
        reduction = self._optimizer.loss_reduction
        return OpacusAudit(
            one_run=one_run,
            one_run_fdp=fdp,
            claim_epsilon=float(claim),
            claim_source=source,
            exceeds_claim={"one_run": one_run.epsilon > claim, "one_run_fdp": fdp.epsilon > claim},
            opacus_epsilon=opacus_epsilon,
            opacus_accountant=opacus_accountant,
            opacus_applies=opacus_applies,
            pld_epsilon=pld_epsilon,
            gdp_epsilon=gdp_epsilon if self.insertion == "every" else None,
            m=self.m,
            included=included,
            insertion=self.insertion,
            sampling=self.sampling,
            steps=T,
            steps_per_epoch=self.steps_per_epoch,
            sample_rate=self.sample_rate,
            noise_multiplier=sigma,
            max_grad_norm=norm,
            expected_batch_size=self._optimizer.expected_batch_size if reduction == "mean" else None,
            loss_reduction=reduction,
            delta=float(delta),
            confidence=float(confidence),
            mean_insertions=mean_insertions,
            train_seconds=train_seconds,
            audit_seconds=time.perf_counter() - started,
            notes=tuple(notes),
            scores=scores,
            members=members,
        )

    def __repr__(self) -> str:
        return (
            f"<dpaudit DiracCanaries: m = {self.m} ({int(self.included.sum())} included), insertion "
            f"{self.insertion}, {self.sampling} batches (q = {self.sample_rate:.6g}), {self.steps} steps so far"
            f"{'' if self._attached else ', detached'}>"
        )
