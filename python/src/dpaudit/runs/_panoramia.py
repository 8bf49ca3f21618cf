"""The out-dir of ``dpaudit panoramia`` (:class:`PanoramiaRun`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import numpy as np

from ._format import IncompleteOutDirError
from ._readers import _lock_note, _optional_text, OutDir, _read_json
from ._seed import panoramia_coins

if TYPE_CHECKING:
    from .._results import Panoramia


class PanoramiaRun(OutDir):
    """The out-dir of ``dpaudit panoramia`` (Kazmi et al. 2024).

    - ``members`` (bool): the audit game's coins, one per audit record
      (True = a real member, False = a generated non-member). The out-dir
      does not store them; they are recomputed from the config's seed
      (:func:`panoramia_coins`) and checked against ``audit.json``'s counts;
    - ``baseline_scores`` (float64): the baseline classifier's scores on the
      audit records (``baseline.json``), at classifier seed 0;
    - ``mia_scores``: target name → float64 array (the MIA's scores at
      classifier seed 0);
    - ``baseline_scores_by_seed`` (classifier seed → float64 array) and
      ``mia_scores_by_seed`` (target → classifier seed → array): every seed's
      scores when the config trains the classifiers with ``classifier.seeds``
      > 1 (seed 0 alone otherwise); ``classifier_seeds`` lists them;
    - ``results``: target name → its result (``targets/<name>.json``, also
      in ``audit.json``'s ``targets``): accountant ε, accuracies,
      ``measurement`` (``c_lb``, ``{c+ε}_lb``, ε̃ and their evidence), the
      one-run audit ``o1`` on real members vs real non-members;
    - ``target_names``, ``quality`` (``quality.json``), ``seed``,
      ``confidence``, ``selection``.

    ``panoramia_arguments(target)`` gives the arguments of
    ``dpaudit.audit.panoramia`` that reproduce the target's measurement
    (``classifier_seed=k``: the measurement at seed ``k``, baseline seed
    ``k`` against MIA seed ``k``, as ``results[target]["per_seed"]``).
    ε̃ is a measurement, not a lower bound.
    """

    kind = "panoramia"

    def __init__(self, path: Path, manifest: Dict[str, Any], *, partial: bool, verify: bool) -> None:
        super().__init__(path, manifest)
        try:
            cfg = manifest["config"]
            self.config = cfg
            self.fingerprint: str = str(manifest["fingerprint"])
            self.seed: int = int(cfg["seed"])
            self.confidence: float = float(cfg["confidence"])
            self.selection: str = str(cfg["selection"])
            m = int(cfg["split"]["audit"])
            self.target_names: List[str] = [str(t["name"]) for t in cfg["target"]]
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(
                f"{path / 'config.json'}: not a `dpaudit panoramia` manifest ({type(e).__name__}: {e}); "
                "the file was edited or damaged"
            ) from None
        self.members: np.ndarray = panoramia_coins(self.seed, m)

        audit_path = path / "audit.json"
        missing: List[str] = []
        if audit_path.exists():
            self.audit = _read_json(audit_path, "the audit report")
            self.summary = _optional_text(path / "summary.md")
            if self.audit.get("fingerprint") != self.fingerprint:
                raise ValueError(
                    f"{audit_path}: fingerprint {self.audit.get('fingerprint')!r}, config.json's is "
                    f"{self.fingerprint!r}: it belongs to another config"
                )
            results = {str(t["name"]): t for t in self.audit.get("targets", [])}
        else:
            results = {}
            for name in self.target_names:
                p = path / "targets" / f"{name}.json"
                if p.exists():
                    r = _read_json(p, f"target {name}'s result")
                    if r.get("fingerprint") == self.fingerprint and len(r.get("mia_scores", ())) == m:
                        results[name] = r
                        continue
                missing.append(f"targets/{name}.json")
        baseline_path = path / "baseline.json"
        if baseline_path.exists():
            b = _read_json(baseline_path, "the baseline's scores")
            if b.get("fingerprint") != self.fingerprint:
                raise ValueError(
                    f"{baseline_path}: fingerprint {b.get('fingerprint')!r}, config.json's is {self.fingerprint!r}: "
                    "it belongs to another config"
                )
            self.baseline_scores: Optional[np.ndarray] = np.asarray(b["scores"], dtype=np.float64)
            self.baseline_fit: Optional[Dict[str, Any]] = b.get("fit")
            self.baseline_scores_by_seed = _by_seed(self.baseline_scores, b.get("more_seeds"), m, baseline_path)
        elif self.audit is not None:
            raise FileNotFoundError(f"{baseline_path}: missing (the baseline's scores on the audit records)")
        else:
            self.baseline_scores = None
            self.baseline_fit = None
            self.baseline_scores_by_seed: Dict[int, np.ndarray] = {}
            missing.insert(0, "baseline.json")
        quality = path / "quality.json"
        self.quality: Optional[Dict[str, Any]] = _read_json(quality, "") if quality.exists() else None

        if self.audit is None:
            message = (
                f"{path}: unfinished `dpaudit panoramia` run: audit.json is missing"
                + (f"; not done yet: {', '.join(missing)}" if missing else "; every stage's file is there")
                + ". Run the same `dpaudit panoramia --config FILE --out-dir DIR` again to finish it (finished "
                "stages are kept)."
                + _lock_note(path)
            )
            if not partial:
                raise IncompleteOutDirError(
                    message + " `dpaudit.runs.open(path, partial=True)` reads the finished stages.",
                    path=path,
                    missing=missing,
                )
            self.complete = False
            self.notes.append(message)

        self.results: Dict[str, Dict[str, Any]] = results
        self.mia_scores: Dict[str, np.ndarray] = {}
        self.mia_scores_by_seed: Dict[str, Dict[int, np.ndarray]] = {}
        for name, r in results.items():
            s = np.asarray(r.get("mia_scores", []), dtype=np.float64)
            self.mia_scores_by_seed[name] = _by_seed(s, r.get("mia_more_seeds"), m, path / f"target {name}")
            self.mia_scores[name] = s
        self.classifier_seeds: List[int] = sorted(self.baseline_scores_by_seed) or [0]

        # The recomputed coins must give the counts dpaudit reported.
        n_members = int(self.members.sum())
        counts = []
        if self.audit is not None:
            counts.append(("audit.json audit_members", self.audit.get("audit_members")))
        for name, r in results.items():
            meas = r.get("measurement") or {}
            for side in ("baseline", "mia"):
                if isinstance(meas.get(side), dict) and "members" in meas[side]:
                    counts.append((f"target {name}'s {side} members", meas[side]["members"]))
        for what, value in counts:
            if value is not None and int(value) != n_members:
                raise ValueError(
                    f"{path}: {what} = {value}, but the audit game's coins from seed {self.seed} give "
                    f"{n_members}: the out-dir does not belong to this config.json (edited?)"
                )

    def _target(self, target: Optional[str]) -> str:
        if target is None:
            if not self.mia_scores:
                raise ValueError(f"{self.path}: no target has finished")
            return next(n for n in self.target_names if n in self.mia_scores)
        if target not in self.mia_scores:
            raise KeyError(
                f"target {target!r} has no results here; finished targets: {', '.join(self.mia_scores) or 'none'}"
            )
        return target

    def observations(
        self, target: Optional[str] = None, *, classifier_seed: int = 0
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(baseline_scores, members, mia_scores, members)`` of a target
        (default: the first finished one) at a classifier seed (default 0),
        the positional arguments of ``dpaudit.audit.panoramia``."""
        name = self._target(target)
        if self.baseline_scores is None:
            raise ValueError(f"{self.path}: baseline.json is not there yet")
        k = int(classifier_seed)
        if k not in self.baseline_scores_by_seed or k not in self.mia_scores_by_seed[name]:
            raise KeyError(
                f"classifier seed {k} is not in this out-dir: the baseline has seeds "
                f"{sorted(self.baseline_scores_by_seed)}, target {name!r} {sorted(self.mia_scores_by_seed[name])}"
            )
        return self.baseline_scores_by_seed[k], self.members, self.mia_scores_by_seed[name][k], self.members

    def panoramia_arguments(self, target: Optional[str] = None, *, classifier_seed: int = 0) -> Dict[str, Any]:
        """Every argument of ``dpaudit.audit.panoramia`` for a target's
        measurement: the four arrays of :meth:`observations`, the config's
        confidence and selection, and its seed (which keys a ``split``)."""
        b, bm, s, m = self.observations(target, classifier_seed=classifier_seed)
        return {
            "baseline_scores": b,
            "baseline_members": bm,
            "scores": s,
            "members": m,
            "confidence": self.confidence,
            "selection": self.selection,
            "seed": self.seed,
        }

    def measure(self, target: Optional[str] = None, *, classifier_seed: int = 0) -> Panoramia:
        """A target's measurement recomputed with ``dpaudit.audit.panoramia``
        (a :class:`dpaudit.audit.Panoramia`; its ``to_dict()`` is ``dpaudit
        estimate --method panoramia --json`` and agrees with
        ``results[target]["measurement"]`` on the keys both have:
        ``selection`` is a name here, the policy in detail there)."""
        from .. import audit as _audit

        return _audit.panoramia(**self.panoramia_arguments(target, classifier_seed=classifier_seed))


def _by_seed(seed0: np.ndarray, more: Any, m: int, where: Path) -> Dict[int, np.ndarray]:
    """Classifier seed → scores on the audit records: seed 0's, then each of
    ``more_seeds`` (``ClassifierRun``: ``seed``, ``scores``)."""
    out = {0: seed0}
    for run in more or []:
        out[int(run["seed"])] = np.asarray(run["scores"], dtype=np.float64)
    for k, s in out.items():
        if s.shape != (m,):
            raise ValueError(f"{where}: classifier seed {k}: {s.size} scores, expected {m} (split.audit)")
    return out
