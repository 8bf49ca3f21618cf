"""Dirac gradient canaries in any PyTorch DP-SGD loop, audited in one run.

For code that forms per-sample gradients itself (``torch.func.vmap(grad(...))``,
a functional DP library such as opake, a custom trainer): the library-independent
core of :mod:`dpaudit.opacus`. Per step the loop

1. calls :meth:`DiracCanaries.draw` before clipping: the canaries present at
   this step (each included canary with the records' Poisson rate q, or at every
   step);
2. appends their per-sample gradient rows (:meth:`CanaryStep.rows`: one row per
   canary, ``norm_factor · C`` (default 4C) in its coordinate) to the records'
   per-sample gradients, or batches :func:`dirac_loss` over
   :meth:`CanaryStep.loss_inputs` when the library clips a per-example loss's
   gradients; the loop's own clipping then clips them, so a clipping bug reaches
   them;
3. after the noise, calls :meth:`DiracCanaries.observe` with the noisy sum and,
   when the loop exposes it, the records' clipped sum (without canaries and
   noise).

Then :meth:`DiracCanaries.audit` scores the canaries and returns one-run ε lower
bounds (:class:`CanaryAudit`, holding the package's ``Bound`` objects) beside the
claimed ε. A hand-written DP-SGD loop, audited (``python/tests/torch/test_canaries.py``
runs this very loop)::

    import torch, dpaudit
    from torch.func import functional_call, grad, vmap

    model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
    params = {k: v.detach() for k, v in model.named_parameters()}
    loss = lambda p, x, y: torch.nn.functional.cross_entropy(functional_call(model, p, (x[None],)), y[None])
    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))
    X, Y = torch.randn(1000, 20), torch.randint(0, 2, (1000,))
    q, sigma, C, lr, T = 0.1, 1.0, 1.0, 0.5, 100
    canaries = dpaudit.canaries.DiracCanaries(params, m=1000, sample_rate=q, seed=0)
    gen = torch.Generator().manual_seed(1)
    for t in range(T):
        batch = torch.rand(len(X), generator=gen) < q  # Poisson sampling
        g = per_sample(params, X[batch], Y[batch])
        rows = canaries.draw(C).rows()  # canary rows enter before clipping
        g = {k: torch.cat([g[k], rows[k]]) for k in g}
        norms = torch.cat([v.flatten(1) for v in g.values()], 1).norm(dim=1)
        clip = (C / (norms + 1e-6)).clamp(max=1.0)
        clipped = {k: clip.view(-1, *[1] * (v.dim() - 1)) * v for k, v in g.items()}
        records = {k: v[: int(batch.sum())].sum(0) for k, v in clipped.items()}
        noisy = {k: v.sum(0) + sigma * C * torch.randn(v.shape[1:], generator=gen) for k, v in clipped.items()}
        canaries.observe(noisy, records, noise_multiplier=sigma)
        params = {k: params[k] - lr / (q * len(X)) * noisy[k] for k in params}
    print(canaries.audit(delta=1e-5))

**The audit's randomness** is the ``seed``: coordinates, inclusion coins and
per-step presence come from ``numpy.random.SeedSequence(seed)``, independent of
the training's generators; the same seed replays the same canary set.

**Scores and claims** are those of :mod:`dpaudit.opacus` (:mod:`dpaudit.canaries.scores`;
``docs/library-audits.md`` says what each assumes the auditor sees): the
default ``"steps-llr"`` and ``"steps-sum"`` use, per step, the noisy sum minus
the records' clipped sum at each canary coordinate; ``"final"`` uses
``w0 − wT``. Sampled canaries are claimed the records' subsampled-Gaussian ε
(pass the library's own accountant's ε as ``claimed_epsilon``, else dpaudit's
PLD ε is used); every-step canaries the GDP ε of T Gaussian mechanisms.

Needs torch only when a ``DiracCanaries`` is built (``import dpaudit.canaries``
does not import it).
"""

from __future__ import annotations

from .core import CanaryStep, DiracCanaries, dirac_loss
from .result import CanaryAudit
from .scores import LLR_SCALES, SCORES

__all__ = ["DiracCanaries", "CanaryStep", "CanaryAudit", "dirac_loss", "SCORES", "LLR_SCALES"]
