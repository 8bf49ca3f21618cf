"""The scores of Dirac canaries in an Opacus run.

They are the library-independent scores of :mod:`dpaudit.canaries.scores`
(moved there so that any PyTorch loop can use them; this module keeps the
names ``dpaudit.opacus`` has always exported). In an Opacus run, ``x_t`` is
the noisy sum ``p.grad`` after Opacus's ``add_noise`` minus the records'
clipped sum ``p.summed_grad`` before the canaries entered.
"""

from __future__ import annotations

from ..canaries.scores import LLR_SCALES, SCORES, StepScores

__all__ = ["LLR_SCALES", "SCORES", "StepScores"]
