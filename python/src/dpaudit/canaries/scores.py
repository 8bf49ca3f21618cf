"""The scores of Dirac canaries: what the auditor computes from what it sees.

Library-independent (NumPy only): :mod:`dpaudit.canaries` and
:mod:`dpaudit.opacus` both score with it.

Three scores, each a function fixed before training (so each one-run bound is
valid whichever is used; Steinke, Nasr & Jagielski 2023, Thm 3.1 allows any
score computed from the mechanism's output):

- ``"final"``: ``w0[j] − wT[j]``, the first and the final model only. It
  carries the coordinate's whole drift from the training data, as large as a
  canary's shift in a real model (docs/library-audits.md).
- ``"steps-sum"``: ``Σ_t x_t / C_t``, where ``x_t`` is what the step added to
  coordinate j beyond the records: the noisy sum minus the records' clipped
  sum (in Opacus ``p.grad`` after ``add_noise`` and ``p.summed_grad`` before
  the canaries entered; in any other loop, the two sums given to
  :meth:`dpaudit.canaries.DiracCanaries.observe`). What remains is the canary (when it entered) and the
  noise; the drift is gone.
- ``"steps-llr"``: ``Σ_t log(1 − q + q · exp((u_t − ½) / s²))``, ``u_t = x_t / C_t``
  and ``s = scale · σ_t``: the log-likelihood ratio of one canary's
  observations under the claimed mechanism (present at each step with rate
  q, one more sample of clipped norm C, noise σC), the Neyman–Pearson test of
  the claim for a single canary. With ``q = 1`` (every-step canaries) it is
  ``Σ_t (u_t − ½)/s²``, the sum again. ``scale < 1`` sharpens the test
  towards rare large observations (a library that adds less noise than it
  claims); the scale is part of the score and must be chosen in advance.

The per-step scores need an auditor who sees every step: the noisy sum and the
records' clipped sum at the canary coordinates. That is still a function of
what DP-SGD's claim covers (every noisy sum, adaptively composed) together with
the records' batches, which are drawn independently of the canaries' coins; see
``docs/library-audits.md`` for the argument.
"""

from __future__ import annotations

import math

import numpy as np

#: The score names ``DiracCanaries.audit(score=...)`` accepts (in both harnesses), the default first.
SCORES = ("steps-llr", "steps-sum", "final")

#: The scales of the likelihood-ratio score kept during training (``s = scale · σ``).
LLR_SCALES = (1.0, 0.5, 0.25)


class StepScores:
    """Online accumulators of the per-step scores of m canaries.

    Args:
        m: the number of canaries.
        rate: the presence rate q of an included canary at one step (1 for
            every-step canaries; for shuffled batches ``1 / steps_per_epoch``,
            which the likelihood ratio then treats as Poisson).
    """

    def __init__(self, m: int, rate: float):
        self.rate = float(rate)
        self.sum = np.zeros(m, dtype=np.float64)
        self.llr = {scale: np.zeros(m, dtype=np.float64) for scale in LLR_SCALES}
        self.llr_defined = True  # False once a step had σ·C = 0 (no likelihood ratio)
        self.steps = 0

    def update(self, x: np.ndarray, noise_multiplier: float, max_grad_norm: float) -> None:
        """Adds one step's observations ``x`` (gradient units, one per canary)."""
        # σ and C passed the one validation of the DP fields in the training
        # context (CanarySet._record): C > 0, σ ≥ 0; the likelihood ratio
        # exists only where σ also passes the rule of a claimed ε (σ > 0).
        self.steps += 1
        u = np.asarray(x, dtype=np.float64) / max_grad_norm
        self.sum += u
        if noise_multiplier == 0:
            self.llr_defined = False
            return
        for scale, acc in self.llr.items():
            ell = (u - 0.5) / (scale * noise_multiplier) ** 2
            if self.rate >= 1.0:
                acc += ell
            else:
                acc += np.logaddexp(math.log1p(-self.rate), math.log(self.rate) + ell)

    def get(self, score: str, scale: float) -> np.ndarray:
        if score == "steps-sum":
            return self.sum.copy()
        if score == "steps-llr":
            if scale not in self.llr:
                raise ValueError(f"llr_scale must be one of {', '.join(map(str, LLR_SCALES))}, got {scale!r}")
            if not self.llr_defined:
                raise ValueError(
                    "score 'steps-llr' is undefined: a step ran with noise_multiplier 0 (no noise is claimed, "
                    "so no likelihood ratio exists); use score='steps-sum'"
                )
            return self.llr[scale].copy()
        raise ValueError(f"not a per-step score: {score!r}")
