"""Read the out-dirs of ``dpaudit run``, ``dpaudit bgm`` and ``dpaudit panoramia``.

An experiment run from the command line leaves everything in its out-dir;
:func:`open` reads one into NumPy arrays and dicts, so that the analysis
continues in a notebook::

    import dpaudit
    r = dpaudit.runs.open("runs/k1")          # a `dpaudit run` out-dir
    r.kind                                     # "run"
    scores, members = r.observations("dirac")
    b = dpaudit.audit.eps_delta(scores, members, **r.audit_arguments("eps-delta"))
    b.epsilon == r.audit_entry("eps-delta", "dirac")["epsilon"]   # True
    import pandas as pd; df = pd.DataFrame(r.columns())            # one row per scores.csv row

The three kinds (detected from ``config.json``):

- ``"run"`` (:class:`CanaryRun`): ``config.json`` (the manifest, with the
  experiment), ``inclusion.csv`` (every canary's ±1 inclusion bit),
  ``chunks/chunk-NNNNNN.csv`` (the score rows of one chunk of runs,
  checksummed), then ``scores.csv``, ``audit.json``, ``summary.md`` and
  ``plots/*.svg``;
- ``"bgm"`` (:class:`BgmRun`): ``config.json`` (``"kind": "bgm"``),
  ``chunks/chunk-NNNNNN.json`` (one unit of simulated runs, checksummed),
  then ``scores.csv`` (scores-mode settings) and/or ``counts.csv``
  (counts-mode settings' histograms), ``audit.json``, ``summary.md``;
- ``"panoramia"`` (:class:`PanoramiaRun`): ``config.json`` (``"format":
  "dpaudit-panoramia/1"``), ``quality.json``, ``baseline.json``,
  ``targets/<name>.json``, ``audit.json``, ``summary.md``, ``plots/``.

The manifest, its kind, the checksums, the seed key tree, a canary run's
``inclusion.csv``, chunks and ``scores.csv`` (``dpaudit_plan::canary::reader``)
and a BGM run's ``scores.csv`` and ``counts.csv`` (``dpaudit_plan::bgm::reader``)
are read by dpaudit's Rust crates through the binding
(``crates/python/src/runs.rs``); this package adds NumPy arrays and classes. What is checked on reading, as
dpaudit itself checks it:

- checksummed files (the chunk files) end in the line ``# sha256 <hex>``
  over every byte before it (:func:`read_checked`); a file that does not
  match raises :class:`ValueError` naming it;
- ``scores.csv`` of a canary run is not checksummed, but it is the
  concatenation of its checksummed chunks: it must equal them byte for byte
  (the unit files of a BGM run: value for value, see :class:`BgmRun`;
  ``counts.csv`` is the sum of its units' histograms);
- ``inclusion.csv`` (not checksummed either) must hold the bits the
  experiment's seed gives (drawn again by dpaudit's seed key tree,
  ``crates/data/src/seed.rs``, through the binding), and the ``member``
  column of the scores must equal them;
- a missing required file raises :class:`FileNotFoundError` naming it; an
  experiment that has not finished (chunks present, no merged
  ``scores.csv``) raises :class:`IncompleteOutDirError` (a
  ``FileNotFoundError``) saying what is done and what to run; pass
  ``partial=True`` to read its finished chunks.

``verify=False`` skips the recomputation of the inclusion bits and the
comparison of ``scores.csv`` with the chunks (for very large out-dirs);
checksums of the files that are read are always verified.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Union

from ._bgm import BgmRun, BgmSetting
from ._canary import CanaryRun
from ._format import (
    _EXPECTED_LAYOUTS,
    FORMAT_VERSION,
    PANORAMIA_FORMAT,
    IncompleteOutDirError,
    PathLike,
    read_checked,
)
from ._panoramia import PanoramiaRun
from ._readers import OutDir
from ._seed import inclusion_bits, panoramia_coins, selection_seed
from .. import _dpaudit

__all__ = [
    "open",
    "OutDir",
    "CanaryRun",
    "BgmRun",
    "BgmSetting",
    "PanoramiaRun",
    "IncompleteOutDirError",
    "read_checked",
    "selection_seed",
    "inclusion_bits",
    "panoramia_coins",
    "FORMAT_VERSION",
    "PANORAMIA_FORMAT",
]

# The classes are documented, and pickle, as `dpaudit.runs.X`; the files of this package are
# its parts: `_format` (version tags, checksummed files), `_seed` (the values derived from a
# seed), `_readers` (small readers, the method table, `OutDir`), `_canary`, `_bgm`,
# `_panoramia` (one out-dir kind each). The format itself (manifests and their kinds, the
# checksums, the seed key tree, the CSV files) is read by the Rust crates that write it, through
# the binding (crates/python/src/runs.rs).
for _cls in (OutDir, CanaryRun, BgmRun, BgmSetting, PanoramiaRun, IncompleteOutDirError):
    _cls.__module__ = __name__
del _cls

# ---------------------------------------------------------------------------
# open()
# ---------------------------------------------------------------------------


def _not_an_out_dir(root: Path, why: str) -> str:
    hint = ""
    if (root / "compare.md").exists():
        hint = " It looks like the output of `dpaudit compare`, which holds no scores."
    else:
        try:
            inner = sorted(p.name for p in root.iterdir() if (p / "config.json").is_file())
        except OSError:
            inner = []
        if inner:
            hint = f" It contains out-dirs: {', '.join(inner[:10])}{' …' if len(inner) > 10 else ''}."
    return f"{root} is not a dpaudit out-dir: {why}; {_EXPECTED_LAYOUTS}.{hint}"


def open(path: PathLike, *, partial: bool = False, verify: bool = True) -> Union[CanaryRun, BgmRun, PanoramiaRun]:  # noqa: A001
    """Read the out-dir ``path`` of ``dpaudit run``, ``dpaudit bgm`` or
    ``dpaudit panoramia``.

    Returns a :class:`CanaryRun` (``.kind == "run"``), :class:`BgmRun`
    (``"bgm"``) or :class:`PanoramiaRun` (``"panoramia"``), told apart by
    ``config.json``. Raises:

    - :class:`FileNotFoundError` when ``path`` does not exist, has no
      ``config.json`` (the message says what each kind of out-dir holds), or
      lacks a required file (named);
    - :class:`IncompleteOutDirError` (a ``FileNotFoundError``) for an
      experiment that has not finished; ``partial=True`` reads what is done
      instead (``.complete`` is then False and ``.audit`` None);
    - :class:`ValueError` naming the file when a file is damaged: a chunk
      that does not match its checksum, a ``scores.csv`` that differs from
      its chunks, an ``inclusion.csv`` that is not the experiment's, a
      ``config.json`` of another out-dir format.

    ``verify=False`` skips the checks that recompute or re-read data
    (inclusion bits from the seed, ``scores.csv`` against the chunks). A
    PANORAMIA out-dir's member flags are always recomputed from its seed:
    the out-dir holds no other record of them.
    """
    root = Path(os.fspath(path))
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such directory ({_EXPECTED_LAYOUTS})")
    if not root.is_dir():
        raise NotADirectoryError(f"{root} is a file, not an out-dir; {_EXPECTED_LAYOUTS}")
    cfg_path = root / "config.json"
    if not cfg_path.exists():
        raise FileNotFoundError(_not_an_out_dir(root, "it has no config.json"))
    kind, manifest = _dpaudit.read_manifest(os.fspath(root))
    if not isinstance(manifest, dict):
        raise ValueError(_not_an_out_dir(root, "its config.json is not a JSON object"))
    if kind == "panoramia":
        fmt = manifest.get("format")
        if fmt != PANORAMIA_FORMAT:
            raise ValueError(
                f"{cfg_path}: PANORAMIA out-dir format {fmt!r}; this reader reads {PANORAMIA_FORMAT!r}"
            )
        return PanoramiaRun(root, manifest, partial=partial, verify=verify)
    if kind == "bgm":
        return BgmRun(root, manifest, partial=partial, verify=verify)
    if kind == "canary":
        return CanaryRun(root, manifest, partial=partial, verify=verify)
    if "kind" in manifest:
        raise ValueError(_not_an_out_dir(root, f"its config.json says \"kind\": {manifest['kind']!r}"))
    raise ValueError(
        _not_an_out_dir(
            root,
            "its config.json is neither a `dpaudit run` manifest (format_version, experiment), a `dpaudit bgm` "
            "one (\"kind\": \"bgm\") nor a PANORAMIA one (\"format\": \"dpaudit-panoramia/1\")",
        )
    )
