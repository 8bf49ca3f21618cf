"""The out-dir of ``dpaudit bgm`` (:class:`BgmRun`, :class:`BgmSetting`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from ._format import IncompleteOutDirError, _read_checked_or_none
from ._readers import (
    _as_index,
    _format_indices,
    _lines,
    _lock_note,
    _numeric_rows,
    _optional_text,
    OutDir,
    _read_json,
    _read_text,
)


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
    chosen k, else ``None``), ``score_columns`` (the batches scored).
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
    ) -> None:
        self.index = index
        self.spec = spec
        self.name: str = str(spec.get("name", index))
        self.run = run
        self.with_target = with_target
        self.without_target = without_target
        self.report = report
        self.guess_search = guess_search
        self.score_columns = score_columns

    def observations(self) -> Tuple[np.ndarray, np.ndarray]:
        """``(scores, members)``: the runs with the target, then those
        without, as the reported bound uses them
        (``Observations::from_classes``)."""
        scores = np.concatenate([self.with_target, self.without_target])
        members = np.zeros(scores.size, dtype=bool)
        members[: self.with_target.size] = True
        return scores, members

    def audit_arguments(self) -> Dict[str, Any]:
        """The keyword arguments of ``dpaudit.audit.eps_delta`` that give the
        reported bound: the setting's δ and confidence, ``selection="split"``
        seeded by the setting's ``seed``."""
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
        detail, ``to_dict()["selection_detail"]``)."""
        from .. import audit as _audit

        return _audit.eps_delta(*self.observations(), **self.audit_arguments())

    def __repr__(self) -> str:
        return f"<BGM setting {self.index} {self.name!r}: {self.with_target.size} runs per hypothesis>"


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
            if (
                not isinstance(u, dict)
                or u.get("unit") != unit
                or len(u.get("with_target", ())) != unit.get("runs")
                or len(u.get("without_target", ())) != unit.get("runs")
            ):
                raise ValueError(
                    f"{p}: its checksum matches but it holds another unit than the manifest's {unit} "
                    "(written by another experiment)"
                )
            found[c] = u
        self.missing_units: List[int] = [c for c in range(len(units)) if c not in found]

        guess: Dict[int, Any] = {}
        columns: Dict[int, int] = {}
        for u in found.values():
            s = int(u["unit"]["setting"])
            if u.get("guess_search") is not None:
                guess[s] = u["guess_search"]
            columns[s] = int(u.get("score_columns", 0))

        scores_path = path / "scores.csv"
        if scores_path.exists():
            lines = _lines(_read_text(scores_path, "the merged scores"))
            header = "setting,run,with_target,without_target"
            if not lines or lines[0] != header:
                raise ValueError(f"{scores_path}: header `{(lines[0] if lines else '')[:100]}`, expected `{header}`")
            data = _numeric_rows(lines[1:], 4, scores_path, 2)
            self.setting: np.ndarray = _as_index(data[:, 0], scores_path, "setting")
            self.run: np.ndarray = _as_index(data[:, 1], scores_path, "run")
            self.with_target: np.ndarray = np.ascontiguousarray(data[:, 2])
            self.without_target: np.ndarray = np.ascontiguousarray(data[:, 3])
            want_setting = np.repeat(np.arange(len(specs), dtype=np.int64), runs_of)
            want_run = np.concatenate([np.arange(n, dtype=np.int64) for n in runs_of] or [np.zeros(0, np.int64)])
            if not (np.array_equal(self.setting, want_setting) and np.array_equal(self.run, want_run)):
                raise ValueError(
                    f"{scores_path}: the rows are not every setting's runs in order (expected {runs_of} runs); "
                    "the file was edited or damaged"
                )
            if verify:
                starts = np.concatenate([[0], np.cumsum(runs_of)]).astype(np.int64)
                for c, u in found.items():
                    unit = u["unit"]
                    lo = int(starts[unit["setting"]]) + int(unit["first_run"])
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
                        "their rows of scores.csv could not be checked against checksums"
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
            message = (
                f"{path}: unfinished `dpaudit bgm` experiment: scores.csv is missing; {len(found)} of "
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
                )
            )
        self.scores: Dict[str, Dict[str, np.ndarray]] = {}
        for s in self.settings:
            key = s.name if s.name not in self.scores else f"{s.name} [{s.index}]"
            self.scores[key] = {"with_target": s.with_target, "without_target": s.without_target}

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
