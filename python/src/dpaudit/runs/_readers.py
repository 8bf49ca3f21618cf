"""Small readers shared by the out-dir kinds (JSON and text files; the CSV
files are parsed by the Rust readers through the binding), the method table
of ``audit.json``, and :class:`OutDir`, what every kind has.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import _dpaudit
from .. import audit as _audit
from ._format import _LOCK_FILE


# ---------------------------------------------------------------------------
# Small readers
# ---------------------------------------------------------------------------


def _read_json(p: Path, what: str) -> Any:
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"{p}: missing ({what})") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{p}: not UTF-8 text ({e}); the file was edited or damaged") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{p}: not JSON ({e}); the file was edited or damaged") from None


def _optional_text(p: Path) -> Optional[str]:
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _lock_note(root: Path) -> str:
    """A sentence on the out-dir's lock, if one is there."""
    try:
        text = (root / _LOCK_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    fields = dict(line.split(" ", 1) for line in text.splitlines() if " " in line)
    who = f"pid {fields.get('pid', '?')} on host {fields.get('host', '?')}"
    if fields.get("command"):
        who += f" ({fields['command']})"
    return f" The out-dir is locked by {who}: that process may still be writing it."


def _format_indices(idx: Sequence[int], limit: int = 12) -> str:
    shown = ", ".join(str(i) for i in idx[:limit])
    return shown + (f", … ({len(idx)} in all)" if len(idx) > limit else "")


def _method_label(method: str) -> str:
    """``eps_delta`` or ``eps-delta`` → ``eps-delta`` (audit.json's labels)."""
    label = str(method).strip().lower().replace("_", "-")
    if label not in _METHODS:
        raise ValueError(
            f"method `{method}` is unknown; expected one of {', '.join(_METHODS)} (or their snake_case config names)"
        )
    return label


# label → (the method dpaudit.audit.estimate computes it with, extra keyword
# arguments), from the method table of dpaudit.audit; the one-run methods as
# `dpaudit run` audits them (its coins are fair, so it adds the one-sided
# guesses).
_METHODS: Dict[str, Tuple[str, Dict[str, Any]]] = {
    label: (
        method,
        {**fixed, **({"guesses": "with-one-sided"} if "guesses" in _audit.METHODS[method] else {})},
    )
    for label, (method, fixed) in _audit.LABELS.items()
}
# The labels whose bound reads the canaries of one run (the core's list).
_ONE_RUN = tuple(
    name for name, _, _, _, observes in _dpaudit.methods() if observes == "canaries-of-one-run"
)


# audit.selection of an experiment file → dpaudit.audit's `selection=`
_SELECTIONS = {
    "auto": "auto",
    "split": "split",
    "multi_split": "multi-split",
    "same_data": "same-data",
    "bonferroni": "bonferroni",
}


# ---------------------------------------------------------------------------
# The out-dir kinds
# ---------------------------------------------------------------------------


class OutDir:
    """What every out-dir has (see :func:`open`).

    Attributes:

    - ``path`` (:class:`pathlib.Path`), ``kind`` (``"run"``, ``"bgm"`` or
      ``"panoramia"``);
    - ``manifest``: ``config.json`` as a dict;
    - ``config``: the experiment as stored there (``manifest["experiment"]``
      for ``run`` and ``bgm``, ``manifest["config"]`` for ``panoramia``);
    - ``audit``: ``audit.json`` as a dict (``None`` for a partial read);
    - ``summary``: ``summary.md`` as text (``None`` when absent);
    - ``complete``: False for a partial read of an unfinished experiment;
    - ``plots``: the files in ``plots/`` by name (``{"epsilon.svg": Path}``);
    - ``notes``: what this reader noticed and could not check.
    """

    kind: str = ""

    def __init__(self, path: Path, manifest: Dict[str, Any]) -> None:
        self.path: Path = path
        self.manifest: Dict[str, Any] = manifest
        self.config: Dict[str, Any] = {}
        self.audit: Optional[Dict[str, Any]] = None
        self.summary: Optional[str] = None
        self.complete: bool = True
        self.notes: List[str] = []
        plots = path / "plots"
        self.plots: Dict[str, Path] = (
            {p.name: p for p in sorted(plots.iterdir()) if p.is_file() and not p.name.startswith(".")}
            if plots.is_dir()
            else {}
        )

    def __repr__(self) -> str:
        state = "complete" if self.complete else "PARTIAL (unfinished experiment)"
        return f"<dpaudit {self.kind} out-dir {str(self.path)!r}, {state}>"
