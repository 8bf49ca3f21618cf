"""The out-dir of ``dpaudit run`` (:class:`CanaryRun`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .. import _dpaudit
from ._format import IncompleteOutDirError
from ._readers import (
    _format_indices,
    _lock_note,
    _method_label,
    _METHODS,
    _ONE_RUN,
    _optional_text,
    OutDir,
    _read_json,
    _SELECTIONS,
)
from ._seed import selection_seed


class CanaryRun(OutDir):
    """The out-dir of ``dpaudit run``: a canary audit over many trained models.

    One row per canary of each run, as in ``scores.csv`` (sorted by run,
    then canary), in these arrays:

    - ``runs`` (int64): the run (trained model) of each row;
    - ``canaries`` (int64): the canary's index within its run;
    - ``members`` (bool): whether the canary was included (the ``member``
      column; equal to ``inclusion.csv``, checked);
    - ``test_accuracy`` (float64): the run's test accuracy;
    - ``scores``: score name → float64 array (one column per score of the
      experiment's ``[audit] scores``, in that order, higher = member);

    and ``inclusion``: ``inclusion.csv`` (rows ``run,canary,±1`` for every
    run and canary, in order) as a ``(runs, canaries per run)`` bool array,
    ``inclusion[run, canary]`` True when included. ``columns()`` gives every
    column as a dict for ``pandas.DataFrame``.

    Also: ``score_names``, ``claimed_epsilon`` (the accountant's ε of one
    canary, from the manifest), ``delta``, ``confidence``, ``selection`` (the
    experiment's ``[audit]`` settings), ``shard`` (``(index, count)``),
    ``chunks`` (the number of chunks), ``missing_chunks`` (a partial read's).

    The arrays are this object's own (``observations()`` returns them, not
    copies): copy one before changing it in place.
    """

    kind = "run"

    def __init__(self, path: Path, manifest: Dict[str, Any], *, partial: bool, verify: bool) -> None:
        super().__init__(path, manifest)
        try:
            exp = manifest["experiment"]
            self.config = exp
            n_runs = int(exp["runs"])
            count = int(exp["canary"]["count"])
            replicas = int(exp["train"]["replicas"])
            seed = int(exp["train"]["seed"])
            self.score_names: List[str] = [str(s) for s in exp["audit"]["scores"]]
            self.delta: float = float(exp["train"]["delta"])
            self.confidence: float = float(exp["audit"].get("confidence", 0.95))
            self.selection: str = str(exp["audit"].get("selection", "auto"))
            self.claimed_epsilon: float = float(manifest["claimed_epsilon"])
            shard = manifest.get("shard") or {"index": 0, "count": 1}
            self.shard: Tuple[int, int] = (int(shard["index"]), int(shard["count"]))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(
                f"{path / 'config.json'}: not a `dpaudit run` manifest ({type(e).__name__}: {e}); "
                "the file was edited or damaged"
            ) from None
        if replicas < 1 or n_runs < 0 or count < 0:
            raise ValueError(f"{path / 'config.json'}: runs {n_runs}, replicas {replicas}, count {count}")
        self._seed = seed
        self._replicas = replicas
        self._count = count
        self.chunks: int = -(-n_runs // replicas)

        # inclusion.csv, the chunks and scores.csv, read and checked by the
        # Rust reader (dpaudit_plan::canary::reader) through the binding.
        read = _dpaudit.read_canary_results(
            os.fspath(path), self.score_names, n_runs, replicas, count, seed, verify
        )
        self.inclusion: np.ndarray = read["inclusion"]
        self.missing_chunks: List[int] = read["missing_chunks"]
        if read["finalized"]:
            if verify and self.missing_chunks:
                self.notes.append(
                    f"chunks {_format_indices(self.missing_chunks)} are not in the out-dir: "
                    "their rows of scores.csv could not be checked against checksums"
                )
            self.audit = _read_json(path / "audit.json", "the audit report, written with scores.csv")
            self.summary = _optional_text(path / "summary.md")
        else:
            shard_note = ""
            if self.shard != (0, 1):
                shard_note = (
                    f" It is the out-dir of shard {self.shard[0]}/{self.shard[1]}, which trains chunks "
                    f"c ≡ {self.shard[0]} (mod {self.shard[1]}): combine the shards' out-dirs with "
                    "`dpaudit merge --out-dir DIR SHARD_DIR…`."
                )
            elif self.missing_chunks:
                shard_note = (
                    " Run the same `dpaudit run CONFIG --out-dir DIR` again to train the missing chunks "
                    "(it resumes)."
                )
            else:
                shard_note = (
                    " Every chunk is there but the results were not written (killed while finalizing?): "
                    "run the same `dpaudit run CONFIG --out-dir DIR` again to finalize it."
                )
            message = (
                f"{path}: unfinished `dpaudit run` experiment: scores.csv is missing; "
                f"{len(read['chunks'])} of {self.chunks} chunks are done"
                + (f" (missing: {_format_indices(self.missing_chunks)})" if self.missing_chunks else "")
                + "."
                + shard_note
                + _lock_note(path)
            )
            if not partial:
                raise IncompleteOutDirError(
                    message + " `dpaudit.runs.open(path, partial=True)` reads the finished chunks.",
                    path=path,
                    missing=self.missing_chunks,
                )
            self.complete = False
            self.notes.append(message)
        self.runs: np.ndarray = read["run"]
        self.canaries: np.ndarray = read["canary"]
        self.members: np.ndarray = read["member"]
        self.test_accuracy: np.ndarray = read["test_accuracy"]
        self.scores: Dict[str, np.ndarray] = dict(zip(self.score_names, read["scores"]))

    # -- arrays ------------------------------------------------------------

    def columns(self) -> Dict[str, np.ndarray]:
        """Every column of ``scores.csv`` (``run``, ``canary``, ``member``,
        ``test_accuracy``, then the scores), as arrays of one length:
        ``pandas.DataFrame(run.columns())``."""
        cols: Dict[str, np.ndarray] = {
            "run": self.runs,
            "canary": self.canaries,
            "member": self.members,
            "test_accuracy": self.test_accuracy,
        }
        cols.update(self.scores)
        return cols

    def _score(self, score: Optional[str]) -> np.ndarray:
        if score is None:
            if not self.score_names:
                raise ValueError(f"{self.path}: the experiment has no scores")
            score = self.score_names[0]
        if score not in self.scores:
            raise KeyError(f"score `{score}` is not in this out-dir; it has {', '.join(self.score_names)}")
        return self.scores[score]

    def observations(self, score: Optional[str] = None) -> Tuple[np.ndarray, np.ndarray]:
        """``(scores, members)`` over every row, as ``audit.json``'s
        ``eps-delta`` and ``gdp`` bounds use them (one canary per run):
        ``dpaudit.audit.eps_delta(*run.observations("dirac"),
        **run.audit_arguments("eps-delta"))``. ``score`` defaults to the
        experiment's first score."""
        return self._score(score), self.members

    def canaries_of_run(self, run: int, score: Optional[str] = None) -> Tuple[np.ndarray, np.ndarray]:
        """``(scores, members)`` of the canaries of one run (in canary order),
        as the one-run methods use them: ``dpaudit.audit.one_run(
        *r.canaries_of_run(0), **r.audit_arguments("one-run"))``."""
        values = self._score(score)
        sel = self.runs == int(run)
        if not sel.any():
            raise KeyError(f"run {run} is not in this out-dir (runs {self.runs.min() if self.runs.size else '-'}…)")
        return values[sel], self.members[sel]

    # -- the report ----------------------------------------------------------

    def audit_arguments(self, method: str) -> Dict[str, Any]:
        """The keyword arguments of the ``dpaudit.audit`` function of
        ``method`` (``eps-delta``, ``gdp``, ``one-run``, ``one-run-fdp``,
        ``one-run-fdp-gaussian``) that reproduce ``audit.json``'s bound on the
        rows of :meth:`observations` / :meth:`canaries_of_run`: the
        experiment's δ, confidence and selection policy, the selection seed
        dpaudit derives from the training seed (:func:`selection_seed`), and
        for the one-run methods ``guesses="with-one-sided"`` (what ``dpaudit
        run`` uses) and the f-DP family."""
        label = _method_label(method)
        _, extra = _METHODS[label]
        if self.selection not in _SELECTIONS:
            raise ValueError(f"{self.path / 'config.json'}: unknown audit.selection `{self.selection}`")
        return {
            "delta": self.delta,
            "confidence": self.confidence,
            "selection": _SELECTIONS[self.selection],
            "seed": selection_seed(self._seed),
            **extra,
        }

    def bound(self, method: str, score: Optional[str] = None, run: Optional[int] = None) -> Any:
        """Recompute one of ``audit.json``'s bounds with ``dpaudit.audit``:
        a :class:`dpaudit.audit.Bound` whose ``to_dict()`` agrees with
        :meth:`audit_entry` on every field the two share (``epsilon``,
        ``selection``, ``bounded_on``, ``metrics``, ``evidence``, …). One-run
        methods bound the canaries of ``run`` (default: the first run, which
        ``audit.json`` reports).

        One difference: when the canary is sampled (``insertion =
        "sampled"``), ``audit.json`` marks the ε of ``gdp`` and
        ``one-run-fdp-gaussian`` not valid (the mechanism's trade-off curve is
        not Gaussian); the recomputed Bound does not know the mechanism and
        keeps ``valid_at_confidence`` True, with ``assumes ==
        "gaussian-tradeoff"``."""
        from .. import audit as _audit

        label = _method_label(method)
        if label in _ONE_RUN:
            if run is None:
                if not self.runs.size:
                    raise ValueError(f"{self.path}: no rows")
                run = int(self.runs.min())
            s, m = self.canaries_of_run(run, score)
        else:
            if run is not None:
                raise ValueError(f"`run` applies to the one-run methods only, not {label}")
            s, m = self.observations(score)
        return _audit.estimate(s, m, method=_METHODS[label][0], **self.audit_arguments(label))

    def audit_entry(self, method: str, score: Optional[str] = None) -> Dict[str, Any]:
        """The entry of ``audit.json``'s ``lower_bounds`` for ``method`` and
        ``score`` (default: the first score). Raises :class:`KeyError` with
        ``audit.json``'s notes when the bound was not computed."""
        if self.audit is None:
            raise ValueError(f"{self.path}: a partial read has no audit.json")
        label = _method_label(method)
        name = score if score is not None else (self.score_names[0] if self.score_names else None)
        for entry in self.audit.get("lower_bounds", []):
            if entry.get("method") == label and entry.get("score") == name:
                return entry
        have = [f"{e.get('score')}/{e.get('method')}" for e in self.audit.get("lower_bounds", [])]
        notes = "; ".join(self.audit.get("notes", []))
        raise KeyError(
            f"audit.json has no {label} bound for score {name} (it has: {', '.join(have) or 'none'})"
            + (f"; its notes: {notes}" if notes else "")
        )
