"""One-run audit of an Opacus training run with Dirac gradient canaries.

Attach :class:`DiracCanaries` to the ``DPOptimizer`` that
``PrivacyEngine.make_private`` returned, train as usual, then call
:meth:`DiracCanaries.audit`: it scores each canary and returns one-run ε lower
bounds beside Opacus's own accountant ε::

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

**Canaries.** Canary i is a gradient in one coordinate ``j_i`` of the
trainable parameters (flattened over all of them, the ``j_i`` distinct and
uniformly random), the Dirac canary of Steinke, Nasr & Jagielski 2023, §4.1
(one-run audit, white box). Each is included independently with probability
½, by coins of the harness's own generator (``seed``; never the global torch
RNG nor Opacus's noise or sampling generator). An included canary enters a step

- ``insertion="sampled"``: as a record would. With Poisson sampling (Opacus's
  ``DPDataLoader``, ``poisson_sampling=True``) independently at each step with
  the loader's sample rate q; with shuffled batches (``poisson_sampling=False``)
  exactly once per epoch, at a uniformly random step of it — what shuffling
  does to a record.
- ``insertion="every"``: at every step, the hidden-state game of Cebere,
  Bellet & Papernot 2024 (a gradient canary at each step).

**Where a canary enters.** The harness wraps the optimizer's ``add_noise``,
which Opacus calls once per logical step, after it has clipped and summed the
records' per-sample gradients into ``p.summed_grad`` and before the noise.

- ``insert_at="grad_sample"`` (the default): each canary present is one
  per-sample gradient row of norm ``norm_factor · C`` (default 4C) in its
  coordinate, handed to Opacus's own ``clip_and_accumulate`` in a call of its
  own after the records'. Opacus clips it and adds it to ``p.summed_grad``,
  so a bug in clipping changes the canary's contribution (with correct
  clipping it is ``C · clip``, as for any record of norm above C). The
  records' sum is computed before, by Opacus's unchanged call, so it is
  bit-identical to the run without canaries. Modes that fill
  ``p.grad_sample`` (``hooks``, ``functorch``, ``ew``) are supported; ghost
  clipping has no per-sample gradients and is refused here.
- ``insert_at="summed_grad"``: the canary's clipped value is added to
  ``p.summed_grad`` directly (after clipping; the only way with ghost clipping).

Either way the canary then shares the records' noise (``noise_multiplier ·
max_grad_norm`` on the sum) and normalisation (``expected_batch_size``): to the
optimizer it is one more sample of the batch. No random number is drawn from
torch, no other entry of ``summed_grad`` is touched, and the records' clip
factors are computed before the canaries exist. ``add_noise`` runs once per
logical step, so virtual steps (``BatchMemoryManager``) get each canary once
per logical step; gradient accumulation over several backward passes between
steps (``accumulated_iterations > 1``) is refused at the step.

**Scores** (``dpaudit.opacus.scores``; ``docs/library-audits.md`` says what
each assumes the auditor sees). ``"steps-llr"`` (default) and ``"steps-sum"``
use, at each step, the noisy sum minus the records' clipped sum at the canary's
coordinate: the canary and the noise, without the training's drift.
``"final"`` is ``w0[j] − wT[j]`` from the first and final models only. The
bound's validity never depends on the score (any function fixed in advance of
what the auditor sees is allowed); the score only makes it powerful.

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

**The suite.** ``python -m dpaudit.opacus.suite`` (:mod:`dpaudit.opacus.suite`)
runs this audit under each Opacus configuration (grad-sample modes, shuffled
batches, virtual steps, secure mode, one-process DDP) and prints one table.

Needs torch and Opacus 1.6 (``pip install opacus==1.6.0``, which brings torch); the rest of
``dpaudit`` needs neither.
"""

from __future__ import annotations

try:
    import opacus  # noqa: F401
    import torch  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised only without torch/opacus
    raise ImportError(
        "dpaudit.opacus needs torch and opacus 1.6 (pip install opacus==1.6.0); "
        f"the rest of dpaudit works without them ({error})"
    ) from error

from .canaries import SUPPORTED_OPACUS, DiracCanaries
from .result import OpacusAudit
from .scores import LLR_SCALES, SCORES

__all__ = ["DiracCanaries", "OpacusAudit", "SUPPORTED_OPACUS", "SCORES", "LLR_SCALES"]
