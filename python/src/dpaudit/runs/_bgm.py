"""The out-dir of ``dpaudit bgm`` (:class:`BgmRun`, :class:`BgmSetting`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from .. import _dpaudit
from ._format import IncompleteOutDirError, _read_checked_or_none
from ._readers import _format_indices, _lock_note, _optional_text, OutDir, _read_json


class BgmSetting:
    """One setting of a BGM audit (``[[settings]]`` of the experiment file).

    Attributes: ``index``, ``name``, ``spec`` (the setting as in the
    experiment: steps, epochs, σ or ε, sampler, dataset, runs, δ,
    confidence, seed, …), ``run`` (int64: the run indices held),
    ``with_target`` and ``without_target`` (float64: log Λ of each run on D
    and on D′, in run order), ``report`` (its entry of ``audit.json``'s
    ``settings``: Poisson ε, Chua et al. bound, the empirical bound and its
    evidence, timings; ``None`` for a partial read), ``guess_search``
    (partial shuffling: the guesses' same-data ε on selection runs and the
    chosen k, else ``None``), ``score_columns`` (the batches scored),
    ``mode`` (``"scores"``, or ``"counts"`` for a setting with ``evaluation =
    { counts = … }``) and ``counts``.

    A counts-mode setting (bounded memory, for 10⁸–10⁹ observations) keeps
    no scores: ``run``, ``with_target`` and ``without_target`` are empty and
    ``counts`` holds its histograms on dpaudit's fixed grid (``counts.csv``):
    ``{"selection": {...}, "evaluation": {...}}``, each with the arrays
    ``bucket`` (int64), ``cut`` (float64: the score at which "member iff
    above this bucket" cuts), ``with_target`` and ``without_target`` (int64:
    runs per bucket; a partial read sums the finished units' histograms and
    has no ``cut``). ``counts`` is ``None`` for a scores-mode setting.
    """

    def __init__(
        self,
        index: int,
        spec: Dict[str, Any],
        run: np.ndarray,
        with_target: np.ndarray,
        without_target: np.ndarray,
        report: Optional[Dict[str, Any]],
        guess_search: Optional[Dict[str, Any]],
        score_columns: Optional[int],
        counts: Optional[Dict[str, Dict[str, np.ndarray]]] = None,
    ) -> None:
        self.index = index
        self.spec = spec
        self.name: str = str(spec.get("name", index))
        self.mode: str = _mode(spec)
        self.counts = counts
        self.run = run
        self.with_target = with_target
        self.without_target = without_target
        self.report = report
        self.guess_search = guess_search
        self.score_columns = score_columns

    def _scores_mode(self, what: str) -> None:
        if self.mode == "counts":
            raise ValueError(
                f"setting {self.index} {self.name!r} keeps counts (evaluation = counts), not scores, so it has no "
                f"{what}: its histograms are `counts` and its bound is `report['counted_bound']`"
            )

    def observations(self) -> Tuple[np.ndarray, np.ndarray]:
        """``(scores, members)``: the runs with the target, then those
        without, as the reported bound uses them
        (``Observations::from_classes``). Scores-mode settings only."""
        self._scores_mode("observations")
        scores = np.concatenate([self.with_target, self.without_target])
        members = np.zeros(scores.size, dtype=bool)
        members[: self.with_target.size] = True
        return scores, members

    def audit_arguments(self) -> Dict[str, Any]:
        """The keyword arguments of ``dpaudit.audit.eps_delta`` that give the
        reported bound: the setting's δ and confidence, ``selection="split"``
        seeded by the setting's ``seed``. Scores-mode settings only."""
        self._scores_mode("eps_delta arguments")
        return {
            "delta": float(self.spec["delta"]),
            "confidence": float(self.spec["confidence"]),
            "selection": "split",
            "seed": int(self.spec["seed"]),
        }

    def bound(self) -> Any:
        """The setting's empirical bound recomputed with
        ``dpaudit.audit.eps_delta``; its ``to_dict()`` agrees with
        ``report["lower_bound"]`` (whose ``selection`` is the policy in
        detail, ``to_dict()["selection_detail"]``). Scores-mode settings
        only."""
        from .. import audit as _audit

        self._scores_mode("scores to bound")

        return _audit.eps_delta(*self.observations(), **self.audit_arguments())

    def __repr__(self) -> str:
        if self.mode == "counts":
            n = int(self.counts["evaluation"]["with_target"].sum()) if self.counts else 0
            return f"<BGM setting {self.index} {self.name!r}: counts of {n} runs per hypothesis>"
        return f"<BGM setting {self.index} {self.name!r}: {self.with_target.size} runs per hypothesis>"


def _mode(spec: Dict[str, Any]) -> str:
    """``"counts"`` for a setting with ``evaluation = { counts = … }``, else
    ``"scores"``."""
    ev = spec.get("evaluation")
    return "counts" if isinstance(ev, dict) and "counts" in ev else "scores"


_STREAMS = ("selection", "evaluation")


def _histogram(rows: Dict[int, List[int]]) -> Dict[str, np.ndarray]:
    """bucket → [with, without] as the arrays of :attr:`BgmSetting.counts`
    (``cut`` from the grid is filled in by the caller when known)."""
    buckets = np.array(sorted(rows), dtype=np.int64)
    return {
        "bucket": buckets,
        "with_target": np.array([rows[b][0] for b in buckets], dtype=np.int64),
        "without_target": np.array([rows[b][1] for b in buckets], dtype=np.int64),
    }


class BgmRun(OutDir):
    """The out-dir of ``dpaudit bgm``: shuffling audits of the Batched
    Gaussian Mechanism, setting by setting.

    - ``settings``: a :class:`BgmSetting` per setting, in the file's order;
      ``get_setting(key)`` finds one by index or name;
    - ``scores``: setting name → ``{"with_target": array, "without_target":
      array}`` (a name used twice gets ``" [index]"`` appended);
    - the long form of ``scores.csv``, one row per run and setting:
      ``setting`` and ``run`` (int64), ``with_target`` and
      ``without_target`` (float64); ``columns()`` for ``pandas``;
    - ``engine``, ``device``, ``threads``, ``units`` (the manifest's plan),
      ``shard``, ``missing_units`` (a partial read's).

    Settings with ``evaluation = { counts = … }`` keep histograms instead of
    scores (``counts.csv``, :attr:`BgmSetting.counts`); ``scores.csv`` holds
    the scores-mode settings only, and an out-dir of counts-mode settings
    alone has no ``scores.csv``.

    ``scores.csv`` holds the values dpaudit bounded. The checksummed unit
    files hold the same numbers as JSON, which dpaudit reads back with
    ``serde_json``'s default float parser (not correctly rounded); so
    ``scores.csv`` is checked against them within 4 ulps, and a partial read
    (from the units) may differ from a finished one in the last bit.
    """

    kind = "bgm"

    def __init__(self, path: Path, manifest: Dict[str, Any], *, partial: bool, verify: bool) -> None:
        super().__init__(path, manifest)
        try:
            exp = manifest["experiment"]
            self.config = exp
            specs = list(exp["settings"])
            units = list(manifest["units"])
            self.engine: str = str(manifest.get("engine", ""))
            self.device: str = str(manifest.get("device", ""))
            self.threads: int = int(manifest.get("threads", 0))
            shard = manifest.get("shard") or {"index": 0, "count": 1}
            self.shard: Tuple[int, int] = (int(shard["index"]), int(shard["count"]))
            runs_of = [int(s["runs"]) for s in specs]
            modes = [_mode(s) for s in specs]
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(
                f"{path / 'config.json'}: not a `dpaudit bgm` manifest ({type(e).__name__}: {e}); "
                "the file was edited or damaged"
            ) from None
        self.units: List[Dict[str, Any]] = units

        # The unit files: checksummed, each the unit the manifest plans.
        found: Dict[int, Dict[str, Any]] = {}
        for c, unit in enumerate(units):
            p = path / "chunks" / f"chunk-{c:06d}.json"
            body = _read_checked_or_none(p)
            if body is None:
                continue
            try:
                u = json.loads(body)
            except ValueError as e:
                raise ValueError(f"{p}: its checksum matches but it is not a unit file ({e})") from None
            counts_unit = 0 <= int(unit.get("setting", -1)) < len(specs) and modes[int(unit["setting"])] == "counts"
            if counts_unit:
                holds = isinstance(u, dict) and all(
                    isinstance((u.get(k) or {}).get("buckets", []), list) for k in _STREAMS
                )
            else:
                holds = (
                    isinstance(u, dict)
                    and len(u.get("with_target", ())) == unit.get("runs")
                    and len(u.get("without_target", ())) == unit.get("runs")
                )
            if not holds or u.get("unit") != unit:
                raise ValueError(
                    f"{p}: its checksum matches but it holds another unit than the manifest's {unit} "
                    "(written by another experiment)"
                )
            found[c] = u
        self.missing_units: List[int] = [c for c in range(len(units)) if c not in found]

        guess: Dict[int, Any] = {}
        columns: Dict[int, int] = {}
        # Counts mode: the units' histograms, summed per setting and stream.
        unit_counts: Dict[Tuple[int, str], Dict[int, List[int]]] = {}
        for u in found.values():
            s = int(u["unit"]["setting"])
            if u.get("guess_search") is not None:
                guess[s] = u["guess_search"]
            columns[s] = int(u.get("score_columns", 0))
            if modes[s] == "counts":
                for stream in _STREAMS:
                    rows = unit_counts.setdefault((s, stream), {})
                    for b, w, wo in (u.get(stream) or {}).get("buckets", []):
                        row = rows.setdefault(int(b), [0, 0])
                        row[0] += int(w)
                        row[1] += int(wo)
        scored = [i for i, m in enumerate(modes) if m == "scores"]
        counted = [i for i, m in enumerate(modes) if m == "counts"]

        scores_path = path / "scores.csv"
        counts_path = path / "counts.csv"
        merged = [p for p, needed in ((scores_path, scored), (counts_path, counted)) if needed]
        self.counts_by_setting: Dict[int, Dict[str, Dict[str, np.ndarray]]] = {}
        if all(p.exists() for p in merged) and (merged or (path / "audit.json").exists()):
            if counted:
                self.counts_by_setting = self._read_counts(counts_path, counted, specs)
                if verify:
                    self._check_counts(counts_path, unit_counts, counted)
            # scores.csv, parsed by the Rust reader (dpaudit_plan::bgm::reader).
            cols = (
                _dpaudit.read_bgm_scores(os.fspath(scores_path))
                if scored
                else {
                    "setting": np.zeros(0, dtype=np.int64),
                    "run": np.zeros(0, dtype=np.int64),
                    "with_target": np.zeros(0, dtype=np.float64),
                    "without_target": np.zeros(0, dtype=np.float64),
                }
            )
            self.setting: np.ndarray = cols["setting"]
            self.run: np.ndarray = cols["run"]
            self.with_target: np.ndarray = cols["with_target"]
            self.without_target: np.ndarray = cols["without_target"]
            scored_runs = [runs_of[i] for i in scored]
            want_setting = np.repeat(np.asarray(scored, dtype=np.int64), scored_runs)
            want_run = np.concatenate([np.arange(n, dtype=np.int64) for n in scored_runs] or [np.zeros(0, np.int64)])
            if not (np.array_equal(self.setting, want_setting) and np.array_equal(self.run, want_run)):
                raise ValueError(
                    f"{scores_path}: the rows are not every scores-mode setting's runs in order (expected "
                    f"{scored_runs} runs of settings {scored}); the file was edited or damaged"
                )
            if verify:
                starts = dict(zip(scored, np.concatenate([[0], np.cumsum(scored_runs)]).astype(np.int64).tolist()))
                for c, u in found.items():
                    unit = u["unit"]
                    if modes[int(unit["setting"])] == "counts":
                        continue
                    lo = int(starts[int(unit["setting"])]) + int(unit["first_run"])
                    for col, key in ((self.with_target, "with_target"), (self.without_target, "without_target")):
                        a = col[lo : lo + int(unit["runs"])]
                        b = np.asarray(u[key], dtype=np.float64)
                        if a.shape != b.shape or not np.all(np.abs(a - b) <= 4 * np.spacing(np.abs(b))):
                            raise ValueError(
                                f"{scores_path}: differs from its checksummed unit {path / 'chunks' / f'chunk-{c:06d}.json'} "
                                f"({key}): scores.csv was edited or damaged after dpaudit wrote it"
                            )
                if self.missing_units:
                    self.notes.append(
                        f"units {_format_indices(self.missing_units)} are not in the out-dir: "
                        "their rows of scores.csv (or counts.csv) could not be checked against checksums"
                    )
            self.audit = _read_json(path / "audit.json", "the audit report, written with scores.csv")
            self.summary = _optional_text(path / "summary.md")
        else:
            if self.shard != (0, 1):
                todo = (
                    f" It is the out-dir of shard {self.shard[0]}/{self.shard[1]}: combine the shards' "
                    "out-dirs with `dpaudit merge --out-dir DIR SHARD_DIR…`."
                )
            elif self.missing_units:
                todo = " Run the same `dpaudit bgm --config FILE --out-dir DIR` again to simulate the rest (it resumes)."
            else:
                todo = (
                    " Every unit is there but the results were not written: run the same "
                    "`dpaudit bgm --config FILE --out-dir DIR` again to finalize it."
                )
            absent = " and ".join(p.name for p in merged if not p.exists()) or "scores.csv"
            message = (
                f"{path}: unfinished `dpaudit bgm` experiment: {absent} {'is' if ' and ' not in absent else 'are'} "
                f"missing; {len(found)} of "
                f"{len(units)} units (chunks/chunk-NNNNNN.json) are done"
                + (f" (missing: {_format_indices(self.missing_units)})" if self.missing_units else "")
                + "."
                + todo
                + _lock_note(path)
            )
            if not partial:
                raise IncompleteOutDirError(
                    message + " `dpaudit.runs.open(path, partial=True)` reads the finished units.",
                    path=path,
                    missing=self.missing_units,
                )
            self.complete = False
            self.notes.append(message)
            rows_s, rows_r, rows_w, rows_wo = [], [], [], []
            for c in sorted(found, key=lambda c: (units[c]["setting"], units[c]["first_run"])):
                u = found[c]
                if modes[int(u["unit"]["setting"])] == "counts":
                    continue
                n = int(u["unit"]["runs"])
                first = int(u["unit"]["first_run"])
                rows_s.append(np.full(n, int(u["unit"]["setting"]), dtype=np.int64))
                rows_r.append(np.arange(first, first + n, dtype=np.int64))
                rows_w.append(np.asarray(u["with_target"], dtype=np.float64))
                rows_wo.append(np.asarray(u["without_target"], dtype=np.float64))
            cat = lambda xs, dt: np.concatenate(xs) if xs else np.zeros(0, dtype=dt)  # noqa: E731
            self.setting = cat(rows_s, np.int64)
            self.run = cat(rows_r, np.int64)
            self.with_target = cat(rows_w, np.float64)
            self.without_target = cat(rows_wo, np.float64)
            for i in counted:
                self.counts_by_setting[i] = {
                    stream: _histogram(unit_counts.get((i, stream), {})) for stream in _STREAMS
                }

        reports = (self.audit or {}).get("settings") or [None] * len(specs)
        if len(reports) != len(specs):
            raise ValueError(f"{path / 'audit.json'}: {len(reports)} settings, the manifest has {len(specs)}")
        self.settings: List[BgmSetting] = []
        for i, spec in enumerate(specs):
            sel = self.setting == i
            rep = reports[i]
            self.settings.append(
                BgmSetting(
                    i,
                    spec,
                    self.run[sel],
                    self.with_target[sel],
                    self.without_target[sel],
                    rep,
                    (rep or {}).get("guess_search", guess.get(i)),
                    columns.get(i),
                    self.counts_by_setting.get(i),
                )
            )
        self.scores: Dict[str, Dict[str, np.ndarray]] = {}
        for s in self.settings:
            key = s.name if s.name not in self.scores else f"{s.name} [{s.index}]"
            self.scores[key] = {"with_target": s.with_target, "without_target": s.without_target}

    @staticmethod
    def _read_counts(
        p: Path, counted: List[int], specs: List[Dict[str, Any]]
    ) -> Dict[int, Dict[str, Dict[str, np.ndarray]]]:
        """``counts.csv``: every counts-mode setting's histograms, checked to
        be in order (settings, then streams) and to hold the setting's runs."""
        # counts.csv, parsed by the Rust reader (dpaudit_plan::bgm::reader).
        c = _dpaudit.read_bgm_counts(os.fspath(p))
        setting, stream, bucket = c["setting"], c["stream"], c["bucket"]
        cut, w, wo = c["cut"], c["with_target"], c["without_target"]
        order = np.lexsort((bucket, stream, setting))
        if not np.array_equal(order, np.arange(order.size)) or not np.isin(setting, counted).all():
            raise ValueError(
                f"{p}: the rows are not the counts-mode settings {counted} in order (setting, stream, bucket); "
                "the file was edited or damaged"
            )
        out: Dict[int, Dict[str, Dict[str, np.ndarray]]] = {}
        for i in counted:
            out[i] = {}
            for k, name in enumerate(_STREAMS):
                sel = (setting == i) & (stream == k)
                out[i][name] = {
                    "bucket": bucket[sel],
                    "cut": cut[sel],
                    "with_target": w[sel],
                    "without_target": wo[sel],
                }
            ev = specs[i].get("evaluation", {}).get("counts", {})
            want = {"selection": int(ev.get("selection_runs", 0)), "evaluation": int(specs[i]["runs"])}
            for name, n in want.items():
                h = out[i][name]
                if int(h["with_target"].sum()) != n or int(h["without_target"].sum()) != n:
                    raise ValueError(
                        f"{p}: setting {i}'s {name} histogram holds {int(h['with_target'].sum())} and "
                        f"{int(h['without_target'].sum())} runs, the setting has {n} per hypothesis; "
                        "the file was edited or damaged"
                    )
        return out

    def _check_counts(
        self, p: Path, unit_counts: Dict[Tuple[int, str], Dict[int, List[int]]], counted: List[int]
    ) -> None:
        """``counts.csv`` is the sum of its checksummed units' histograms."""
        if self.missing_units:
            return  # noted with the scores' check below
        for i in counted:
            for stream in _STREAMS:
                want = _histogram(unit_counts.get((i, stream), {}))
                have = self.counts_by_setting[i][stream]
                if not all(np.array_equal(want[k], have[k]) for k in ("bucket", "with_target", "without_target")):
                    raise ValueError(
                        f"{p}: setting {i}'s {stream} histogram differs from the sum of its checksummed units "
                        f"(chunks/chunk-NNNNNN.json): counts.csv was edited or damaged after dpaudit wrote it"
                    )

    def columns(self) -> Dict[str, np.ndarray]:
        """The columns of ``scores.csv`` (``setting``, ``run``,
        ``with_target``, ``without_target``) plus ``setting_name``, for
        ``pandas.DataFrame(bgm.columns())``."""
        names = np.array([s.name for s in self.settings] or [""], dtype=object)
        return {
            "setting": self.setting,
            "setting_name": names[self.setting] if self.setting.size else np.zeros(0, dtype=object),
            "run": self.run,
            "with_target": self.with_target,
            "without_target": self.without_target,
        }

    def get_setting(self, key: Union[int, str]) -> BgmSetting:
        """The setting at index ``key``, or named ``key``."""
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            return self.settings[int(key)]
        matches = [s for s in self.settings if s.name == key]
        if len(matches) != 1:
            raise KeyError(
                f"setting {key!r}: {'no' if not matches else len(matches)} settings have that name; "
                f"the settings are {[s.name for s in self.settings]}"
            )
        return matches[0]

    def observations(self, setting: Union[int, str] = 0) -> Tuple[np.ndarray, np.ndarray]:
        """``(scores, members)`` of a setting (:meth:`BgmSetting.observations`)."""
        return self.get_setting(setting).observations()

    def audit_arguments(self, setting: Union[int, str] = 0) -> Dict[str, Any]:
        """The ``dpaudit.audit.eps_delta`` arguments of a setting's bound
        (:meth:`BgmSetting.audit_arguments`)."""
        return self.get_setting(setting).audit_arguments()

    def bound(self, setting: Union[int, str] = 0) -> Any:
        """A setting's bound recomputed (:meth:`BgmSetting.bound`)."""
        return self.get_setting(setting).bound()
