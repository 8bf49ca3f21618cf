"""dpaudit: empirical privacy auditing from Python.

- :mod:`dpaudit.audit` — valid ε lower bounds from membership scores;
- :mod:`dpaudit.accounting` — ε upper bounds of DP-SGD and calibration;
- :mod:`dpaudit.runs` — the out-dirs of ``dpaudit run``, ``bgm`` and
  ``panoramia`` as NumPy arrays and dicts;
- :mod:`dpaudit.opacus` — a one-run audit of an Opacus training run (needs
  torch and opacus 1.6: ``pip install opacus==1.6.0``; imported on first use,
  and not part of ``from dpaudit import *``);
- :mod:`dpaudit.canaries` — the same Dirac canaries in any hand-written
  per-sample-gradient loop (needs torch when canaries are built).

Five lines::

    import numpy as np, dpaudit
    rng = np.random.default_rng(0)
    scores = np.concatenate([rng.normal(1, 1, 10_000), rng.normal(0, 1, 10_000)])
    members = np.arange(20_000) < 10_000
    print(dpaudit.audit.eps_delta(scores, members, delta=1e-5))
"""

from . import accounting, audit, canaries, runs
from ._dpaudit import __version__

# `opacus` is left out: `from dpaudit import *` must work without torch.
__all__ = ["audit", "accounting", "canaries", "runs", "__version__"]


def __getattr__(name):
    # torch is heavy and optional: `dpaudit.opacus` loads when first used.
    if name == "opacus":
        import importlib

        return importlib.import_module(".opacus", __name__)
    raise AttributeError(f"module 'dpaudit' has no attribute {name!r}")
