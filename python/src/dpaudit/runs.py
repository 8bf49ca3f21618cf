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
  then ``scores.csv``, ``audit.json``, ``summary.md``;
- ``"panoramia"`` (:class:`PanoramiaRun`): ``config.json`` (``"format":
  "dpaudit-panoramia/1"``), ``quality.json``, ``baseline.json``,
  ``targets/<name>.json``, ``audit.json``, ``summary.md``, ``plots/``.

What is checked on reading, as dpaudit itself checks it:

- checksummed files (the chunk files) end in the line ``# sha256 <hex>``
  over every byte before it (:func:`read_checked`); a file that does not
  match raises :class:`ValueError` naming it;
- ``scores.csv`` of a canary run is not checksummed, but it is the
  concatenation of its checksummed chunks: it must equal them byte for byte
  (the unit files of a BGM run: value for value, see :class:`BgmRun`);
- ``inclusion.csv`` (not checksummed either) must hold the bits the
  experiment's seed gives (recomputed here from the documented ChaCha20 key
  tree, ``crates/data/src/seed.rs``), and the ``member`` column of the
  scores must equal them;
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

import hashlib
import io
import json
import os
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

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

PathLike = Union[str, "os.PathLike[str]"]

#: The out-dir layout version of ``dpaudit run`` and ``dpaudit bgm`` this
#: module reads (``crates/experiment/src/outdir.rs``, ``FORMAT_VERSION``).
FORMAT_VERSION: int = 2

#: The ``format`` tag of a PANORAMIA out-dir's JSON files
#: (``crates/panoramia/src/pipeline.rs``, ``FORMAT``).
PANORAMIA_FORMAT: str = "dpaudit-panoramia/1"

_TRAILER = "# sha256 "
_LOCK_FILE = ".dpaudit.lock"
# Rust's `char::is_whitespace` (Unicode White_Space), which `trim` uses.
_RUST_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)

_EXPECTED_LAYOUTS = (
    "expected the out-dir of `dpaudit run` (config.json, inclusion.csv, chunks/, scores.csv, audit.json, "
    "summary.md), of `dpaudit bgm` (config.json with \"kind\": \"bgm\", chunks/, scores.csv, audit.json, "
    "summary.md) or of `dpaudit panoramia` (config.json with \"format\": \"dpaudit-panoramia/1\", "
    "baseline.json, targets/, audit.json, summary.md)"
)


class IncompleteOutDirError(FileNotFoundError):
    """An out-dir whose experiment has not finished: some chunks (or, for
    PANORAMIA, stages) are missing, so the merged results are not there.

    The message says what is done, what is missing and which command
    finishes it; ``open(path, partial=True)`` reads what is done.

    Attributes: ``path`` (the out-dir), ``missing`` (the missing chunk or
    unit indices, or PANORAMIA's missing files).
    """

    def __init__(self, message: str, *, path: Path, missing: Sequence[Any]) -> None:
        super().__init__(message)
        self.path = path
        self.missing = list(missing)

    def __str__(self) -> str:  # FileNotFoundError would format errno and filename
        return str(self.args[0])


# ---------------------------------------------------------------------------
# Checksummed files (crates/experiment/src/outdir.rs)
# ---------------------------------------------------------------------------


def _rust_trim_end(text: str) -> str:
    return text.rstrip(_RUST_WHITESPACE)


def _check(data: bytes) -> Tuple[Optional[bytes], str]:
    """(body, "") when ``data`` matches its trailer, else (None, why)."""
    # The trailer is the last line: after the last "\n" before a final "\n".
    if data.endswith(b"\n"):
        i = data[:-1].rfind(b"\n")
        body_end = i + 1 if i >= 0 else 0
    else:
        body_end = 0
    last = _rust_trim_end(data[body_end:].decode("utf-8", "replace"))
    if not last.startswith(_TRAILER):
        return None, f"no checksum line at its end (truncated, or edited: {len(data)} bytes)"
    recorded = last[len(_TRAILER):].strip(_RUST_WHITESPACE)
    body = data[:body_end]
    actual = hashlib.sha256(body).hexdigest()
    if actual != recorded:
        return None, (
            f"its content does not match its checksum (edited or damaged): sha256 {actual}, recorded {recorded}"
        )
    return body, ""


def read_checked(path: PathLike) -> bytes:
    """The content of a checksummed out-dir file, without its trailer.

    dpaudit writes chunk files with a last line ``# sha256 <hex>``: the
    SHA-256 of every byte before that line (a newline is added first if the
    content does not end in one). Raises :class:`FileNotFoundError` when the
    file does not exist and :class:`ValueError`, naming the file, when it
    does not match its checksum (edited, truncated, or its trailer lost).
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{p}: missing (expected a checksummed file written by dpaudit)") from None
    body, why = _check(data)
    if body is None:
        raise ValueError(f"{p}: damaged: {why}; the file was edited or damaged after dpaudit wrote it")
    return body


def _read_checked_or_none(p: Path) -> Optional[bytes]:
    """:func:`read_checked`, with ``None`` for a missing file."""
    if not p.exists():
        return None
    return read_checked(p)


# ---------------------------------------------------------------------------
# The seed key tree (crates/data/src/seed.rs), for the values dpaudit derives
# from a config's seed and does not write: inclusion bits (checked against
# inclusion.csv), the selection seed of `dpaudit run` audits, PANORAMIA's
# audit-game coins.
# ---------------------------------------------------------------------------

_SIGMA = np.array([0x61707865, 0x3320646E, 0x79622D32, 0x6B206574], dtype=np.uint32)
_ROOT_TAG = b"dpaudit/seed/v1\x00"
_BATCH = 1 << 16
_U32 = np.uint64(0xFFFFFFFF)


def _rotl(x: np.ndarray, n: int) -> np.ndarray:
    return (x << np.uint32(n)) | (x >> np.uint32(32 - n))


def _chacha20_batch(keys: np.ndarray, counters: np.ndarray, nonces: np.ndarray) -> np.ndarray:
    n = keys.shape[0]
    s = np.empty((16, n), dtype=np.uint32)
    s[0:4] = _SIGMA[:, None]
    s[4:12] = keys.T
    s[12] = (counters & _U32).astype(np.uint32)
    s[13] = (counters >> np.uint64(32)).astype(np.uint32)
    s[14] = (nonces & _U32).astype(np.uint32)
    s[15] = (nonces >> np.uint64(32)).astype(np.uint32)
    x = [s[i].copy() for i in range(16)]

    def quarter(a: int, b: int, c: int, d: int) -> None:
        x[a] += x[b]
        x[d] = _rotl(x[d] ^ x[a], 16)
        x[c] += x[d]
        x[b] = _rotl(x[b] ^ x[c], 12)
        x[a] += x[b]
        x[d] = _rotl(x[d] ^ x[a], 8)
        x[c] += x[d]
        x[b] = _rotl(x[b] ^ x[c], 7)

    for _ in range(10):
        quarter(0, 4, 8, 12)
        quarter(1, 5, 9, 13)
        quarter(2, 6, 10, 14)
        quarter(3, 7, 11, 15)
        quarter(0, 5, 10, 15)
        quarter(1, 6, 11, 12)
        quarter(2, 7, 8, 13)
        quarter(3, 4, 9, 14)
    return (np.stack(x) + s).T


def _chacha20(keys: np.ndarray, counters: Any, nonces: Any) -> np.ndarray:
    """ChaCha20 blocks (original layout: 64-bit counter in words 12–13,
    64-bit nonce in words 14–15) as ``(N, 16)`` little-endian words, one per
    row of ``keys`` (``(N, 8)`` uint32)."""
    keys = np.ascontiguousarray(keys, dtype=np.uint32)
    n = keys.shape[0]
    counters = np.broadcast_to(np.asarray(counters, dtype=np.uint64), (n,))
    nonces = np.broadcast_to(np.asarray(nonces, dtype=np.uint64), (n,))
    out = np.empty((n, 16), dtype=np.uint32)
    for lo in range(0, n, _BATCH):
        hi = min(n, lo + _BATCH)
        out[lo:hi] = _chacha20_batch(keys[lo:hi], counters[lo:hi], nonces[lo:hi])
    return out


def _absorb(keys: np.ndarray, depth: int, words: Any) -> np.ndarray:
    """``K_{d+1} = F(K_d, d, w)``: the first 32 bytes of block ``2^63 + d``
    of nonce ``w``."""
    counter = np.uint64((1 << 63) + depth)
    return _chacha20(keys, counter, words)[:, :8]


def _stream_key(seed: int, stream: str) -> Tuple[np.ndarray, int]:
    """``RunSeed(seed).stream(stream)``: the key (``(1, 8)``) and its depth."""
    raw = _ROOT_TAG + int(seed).to_bytes(8, "little") + bytes(8)
    key = np.frombuffer(raw, dtype="<u4").astype(np.uint32)[None, :]
    name = stream.encode()
    key = _absorb(key, 0, np.uint64(len(name)))
    depth = 1
    for i in range(0, len(name), 8):
        word = int.from_bytes(name[i : i + 8].ljust(8, b"\x00"), "little")
        key = _absorb(key, depth, np.uint64(word))
        depth += 1
    return key, depth


def _seed_key(seed: int, stream: str, *path: int) -> np.ndarray:
    key, depth = _stream_key(seed, stream)
    for index in path:
        key = _absorb(key, depth, np.uint64(index))
        depth += 1
    return key


def _next_u64(keys: np.ndarray, count: int) -> np.ndarray:
    """The first ``count`` ``next_u64()`` of ``ChaCha20Rng::from_seed(key)``
    (nonce 0, counter from 0) for each key: ``(N, count)`` uint64."""
    n = keys.shape[0]
    blocks = max(1, -(-2 * count // 16))
    reps = np.repeat(keys, blocks, axis=0)
    counters = np.tile(np.arange(blocks, dtype=np.uint64), n)
    words = _chacha20(reps, counters, 0).reshape(n, blocks * 16)[:, : 2 * count]
    lo = words[:, 0::2].astype(np.uint64)
    hi = words[:, 1::2].astype(np.uint64)
    return lo | (hi << np.uint64(32))


def _fair_coins(keys: np.ndarray, count: int) -> np.ndarray:
    """``count`` draws of rand 0.8's ``gen_bool(0.5)`` (``next_u64() < 2^63``)
    from each key's generator: ``(N, count)`` bool."""
    if count == 0:
        return np.zeros((keys.shape[0], 0), dtype=bool)
    return _next_u64(keys, count) < np.uint64(1 << 63)


def selection_seed(train_seed: int) -> int:
    """The seed of the ``split``/``multi-split`` selection policies of a
    ``dpaudit run`` audit: ``RunSeed(train.seed).stream(Split).child(0xA0D1)
    .to_u64()`` (``crates/experiment/src/audit_report.rs``, ``selection_for``).
    ``auto`` passes it on too, but the default policies of the threshold
    methods (``bonferroni``) do not use it."""
    return int(_next_u64(_seed_key(train_seed, "split", 0xA0D1), 1)[0, 0])


def inclusion_bits(train_seed: int, runs: int, count: int) -> np.ndarray:
    """The inclusion bits of a canary experiment, ``(runs, count)`` bool
    (True = the canary was included): ``count`` fair coins per run from the
    ``membership`` stream's child ``run`` (``crates/experiment/src/canaries.rs``,
    ``inclusion_bits``). ``inclusion.csv`` must hold exactly these."""
    base, depth = _stream_key(train_seed, "membership")
    if runs == 0:
        return np.zeros((0, count), dtype=bool)
    out = np.empty((runs, count), dtype=bool)
    step = max(1, _BATCH // max(1, -(-count // 8)))
    for lo in range(0, runs, step):
        hi = min(runs, lo + step)
        keys = _absorb(np.repeat(base, hi - lo, axis=0), depth, np.arange(lo, hi, dtype=np.uint64))
        out[lo:hi] = _fair_coins(keys, count)
    return out


def panoramia_coins(seed: int, m: int) -> np.ndarray:
    """The fair coins of PANORAMIA's audit game (True = the audit record is
    a real member, False = a generated non-member): ``coins(m,
    membership.child(0))`` of the pipeline's seed
    (``crates/panoramia/src/pipeline.rs``). The out-dir does not store them."""
    return _fair_coins(_seed_key(seed, "membership", 0), m)[0]


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


def _read_text(p: Path, what: str) -> str:
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{p}: missing ({what})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{p}: not UTF-8 text ({e}); the file was edited or damaged") from None


def _optional_text(p: Path) -> Optional[str]:
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _lines(text: str) -> List[str]:
    """The lines of a file dpaudit wrote (``\\n`` line ends, a final one)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _numeric_rows(body: List[str], ncol: int, path: Path, first_line: int) -> np.ndarray:
    """``body`` (comma-separated numbers, ``ncol`` per line) as ``(n, ncol)``
    float64; errors name the file and line."""
    if not body:
        return np.zeros((0, ncol), dtype=np.float64)
    joined = "\n".join(body)
    for i, line in enumerate(body if joined.count(",") != len(body) * (ncol - 1) else ()):
        if line.count(",") != ncol - 1:
            raise ValueError(
                f"{path}: line {first_line + i}: {line.count(',') + 1} fields, expected {ncol}; "
                "the file was edited or damaged"
            )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arr = np.loadtxt(io.StringIO(joined), delimiter=",", dtype=np.float64, comments=None, ndmin=2)
    except ValueError:
        for i, line in enumerate(body):
            for field in line.split(","):
                try:
                    float(field)
                except ValueError:
                    raise ValueError(
                        f"{path}: line {first_line + i}: `{field[:100]}` is not a number; "
                        "the file was edited or damaged"
                    ) from None
        raise
    if arr.shape != (len(body), ncol):
        raise ValueError(f"{path}: expected {len(body)} rows of {ncol} numbers, read shape {arr.shape}")
    return arr


def _as_index(col: np.ndarray, path: Path, what: str) -> np.ndarray:
    ok = np.isfinite(col) & (col >= 0) & (col == np.floor(col)) & (col < 2.0**53)
    if not ok.all():
        i = int(np.argmin(ok))
        raise ValueError(f"{path}: row {i + 1}: {what} {col[i]!r} is not a non-negative integer")
    return col.astype(np.int64)


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


# label → (function in dpaudit.audit, extra keyword arguments)
_METHODS: Dict[str, Tuple[str, Dict[str, Any]]] = {
    "eps-delta": ("eps_delta", {}),
    "gdp": ("gdp", {}),
    "one-run": ("one_run", {"guesses": "with-one-sided"}),
    "one-run-fdp": ("one_run_fdp", {"family": "eps-delta", "guesses": "with-one-sided"}),
    "one-run-fdp-gaussian": ("one_run_fdp", {"family": "gaussian", "guesses": "with-one-sided"}),
    "one-run-order": ("one_run_order", {"family": "eps-delta", "guesses": "with-one-sided"}),
    "one-run-order-gaussian": ("one_run_order", {"family": "gaussian", "guesses": "with-one-sided"}),
    "one-run-gaussian-scores": ("one_run_gaussian_scores", {}),
}
_ONE_RUN = (
    "one-run", "one-run-fdp", "one-run-fdp-gaussian", "one-run-order", "one-run-order-gaussian",
    "one-run-gaussian-scores",
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
        header = ",".join(["run", "canary", "member", "test_accuracy"] + self.score_names)
        ncol = 4 + len(self.score_names)

        # inclusion.csv: the secret bits, fixed before training.
        inc_path = path / "inclusion.csv"
        self.inclusion: np.ndarray = self._read_inclusion(inc_path, n_runs, count)
        if verify:
            expected = inclusion_bits(seed, n_runs, count)
            if not np.array_equal(expected, self.inclusion):
                r, c = (int(v[0]) for v in np.nonzero(expected != self.inclusion))
                raise ValueError(
                    f"{inc_path}: the inclusion bits differ from those of this experiment's seed {seed} "
                    f"(first at run {r}, canary {c}): the file was edited or belongs to another experiment; "
                    "the audit's secret bits cannot be trusted"
                )

        # The chunks: checksummed, verified when present.
        chunk_rows: Dict[int, List[str]] = {}
        for c in range(self.chunks):
            p = path / "chunks" / f"chunk-{c:06d}.csv"
            body = _read_checked_or_none(p)
            if body is None:
                continue
            try:
                lines = _lines(body.decode("utf-8"))
            except UnicodeDecodeError:
                raise ValueError(f"{p}: its checksum matches but it is not UTF-8 text") from None
            if not lines or lines[0] != header:
                raise ValueError(
                    f"{p}: header `{(lines[0] if lines else '')[:100]}` does not match this experiment's `{header}`"
                )
            chunk_rows[c] = lines[1:]
        self.missing_chunks: List[int] = [c for c in range(self.chunks) if c not in chunk_rows]

        scores_path = path / "scores.csv"
        if scores_path.exists():
            lines = _lines(_read_text(scores_path, "the merged scores"))
            if not lines or lines[0] != header:
                raise ValueError(
                    f"{scores_path}: header `{(lines[0] if lines else '')[:100]}` does not match this "
                    f"experiment's `{header}`; the file was edited or damaged"
                )
            body = lines[1:]
            if len(body) != n_runs * count:
                raise ValueError(
                    f"{scores_path}: {len(body)} rows, expected {n_runs * count} (runs × canaries); "
                    "the file was edited or damaged"
                )
            if verify:
                per_chunk = replicas * count
                for c, rows in chunk_rows.items():
                    if body[c * per_chunk : c * per_chunk + len(rows)] != rows or (
                        len(rows) != min(per_chunk, len(body) - c * per_chunk)
                    ):
                        raise ValueError(
                            f"{scores_path}: differs from its checksummed chunk {path / 'chunks' / f'chunk-{c:06d}.csv'}: "
                            "scores.csv was edited or damaged after dpaudit wrote it (it is the concatenation of "
                            "the chunks)"
                        )
                if self.missing_chunks:
                    self.notes.append(
                        f"chunks {_format_indices(self.missing_chunks)} are not in the out-dir: "
                        "their rows of scores.csv could not be checked against checksums"
                    )
            data = _numeric_rows(body, ncol, scores_path, 2)
            self.audit = _read_json(path / "audit.json", "the audit report, written with scores.csv")
            self.summary = _optional_text(path / "summary.md")
            source = scores_path
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
                f"{len(chunk_rows)} of {self.chunks} chunks are done"
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
            body = [row for c in sorted(chunk_rows) for row in chunk_rows[c]]
            data = _numeric_rows(body, ncol, path / "chunks", 2)
            source = path / "chunks"

        self.runs: np.ndarray = _as_index(data[:, 0], source, "run")
        self.canaries: np.ndarray = _as_index(data[:, 1], source, "canary")
        member = data[:, 2]
        if not np.isin(member, (0.0, 1.0)).all():
            i = int(np.argmin(np.isin(member, (0.0, 1.0))))
            raise ValueError(f"{source}: row {i + 1}: member {member[i]!r}, expected 1 or 0")
        self.members: np.ndarray = member == 1.0
        self.test_accuracy: np.ndarray = np.ascontiguousarray(data[:, 3])
        self.scores: Dict[str, np.ndarray] = {
            name: np.ascontiguousarray(data[:, 4 + k]) for k, name in enumerate(self.score_names)
        }
        # Rows are every run × canary in order (of the chunks read), and the
        # member column is the inclusion bits (as finalize checks).
        if self.complete:
            want_runs = np.repeat(np.arange(n_runs, dtype=np.int64), count)
        else:
            done = [
                r
                for c in sorted(chunk_rows)
                for r in range(c * replicas, min((c + 1) * replicas, n_runs))
            ]
            want_runs = np.repeat(np.asarray(done, dtype=np.int64), count)
        want_canaries = np.tile(np.arange(count, dtype=np.int64), want_runs.size // max(count, 1))
        if not (np.array_equal(self.runs, want_runs) and np.array_equal(self.canaries, want_canaries)):
            raise ValueError(
                f"{source}: the rows are not every run and canary in order (run, canary): "
                "edited, or written by another experiment"
            )
        if self.runs.size and not np.array_equal(self.members, self.inclusion[self.runs, self.canaries]):
            i = int(np.argmax(self.members != self.inclusion[self.runs, self.canaries]))
            raise ValueError(
                f"{source}: the member column differs from inclusion.csv at run {self.runs[i]}, canary "
                f"{self.canaries[i]}: edited, or written by another experiment"
            )

    @staticmethod
    def _read_inclusion(p: Path, n_runs: int, count: int) -> np.ndarray:
        text = _read_text(p, "every canary's inclusion bit, written before training")
        lines = _lines(text)
        if not lines or lines[0] != "run,canary,included":
            raise ValueError(f"{p}: header `{(lines[0] if lines else '')[:100]}`, expected `run,canary,included`")
        body = lines[1:]
        if len(body) != n_runs * count:
            raise ValueError(
                f"{p}: {len(body)} rows, expected {n_runs * count} (runs × canaries); the file was edited or damaged"
            )
        bits = np.empty(len(body), dtype=bool)
        for i, line in enumerate(body):
            r, c = divmod(i, count) if count else (0, 0)
            if line == f"{r},{c},1":
                bits[i] = True
            elif line == f"{r},{c},-1":
                bits[i] = False
            else:
                raise ValueError(
                    f"{p}: line {i + 2}: `{line[:100]}`, expected `{r},{c},1` or `{r},{c},-1`; "
                    "the file was edited or damaged"
                )
        return bits.reshape(n_runs, count)

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
        from . import audit as _audit

        label = _method_label(method)
        fn = getattr(_audit, _METHODS[label][0])
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
        return fn(s, m, **self.audit_arguments(label))

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
        from . import audit as _audit

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


class PanoramiaRun(OutDir):
    """The out-dir of ``dpaudit panoramia`` (Kazmi et al. 2024).

    - ``members`` (bool): the audit game's coins, one per audit record
      (True = a real member, False = a generated non-member). The out-dir
      does not store them; they are recomputed from the config's seed
      (:func:`panoramia_coins`) and checked against ``audit.json``'s counts;
    - ``baseline_scores`` (float64): the baseline classifier's scores on the
      audit records (``baseline.json``);
    - ``mia_scores``: target name → float64 array (the MIA's scores);
    - ``results``: target name → its result (``targets/<name>.json``, also
      in ``audit.json``'s ``targets``): accountant ε, accuracies,
      ``measurement`` (``c_lb``, ``{c+ε}_lb``, ε̃ and their evidence), the
      one-run audit ``o1`` on real members vs real non-members;
    - ``target_names``, ``quality`` (``quality.json``), ``seed``,
      ``confidence``, ``selection``.

    ``panoramia_arguments(target)`` gives the arguments of
    ``dpaudit.audit.panoramia`` that reproduce the target's measurement.
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
            if self.baseline_scores.shape != (m,):
                raise ValueError(f"{baseline_path}: {self.baseline_scores.size} scores, expected {m} (split.audit)")
        elif self.audit is not None:
            raise FileNotFoundError(f"{baseline_path}: missing (the baseline's scores on the audit records)")
        else:
            self.baseline_scores = None
            self.baseline_fit = None
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
        for name, r in results.items():
            s = np.asarray(r.get("mia_scores", []), dtype=np.float64)
            if s.shape != (m,):
                raise ValueError(f"{path}: target {name}: {s.size} MIA scores, expected {m} (split.audit)")
            self.mia_scores[name] = s

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
        self, target: Optional[str] = None
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(baseline_scores, members, mia_scores, members)`` of a target
        (default: the first finished one), the positional arguments of
        ``dpaudit.audit.panoramia``."""
        name = self._target(target)
        if self.baseline_scores is None:
            raise ValueError(f"{self.path}: baseline.json is not there yet")
        return self.baseline_scores, self.members, self.mia_scores[name], self.members

    def panoramia_arguments(self, target: Optional[str] = None) -> Dict[str, Any]:
        """Every argument of ``dpaudit.audit.panoramia`` for a target's
        measurement: the four arrays of :meth:`observations`, the config's
        confidence and selection, and its seed (which keys a ``split``)."""
        b, bm, s, m = self.observations(target)
        return {
            "baseline_scores": b,
            "baseline_members": bm,
            "scores": s,
            "members": m,
            "confidence": self.confidence,
            "selection": self.selection,
            "seed": self.seed,
        }

    def measure(self, target: Optional[str] = None) -> Dict[str, Any]:
        """A target's measurement recomputed with ``dpaudit.audit.panoramia``
        (the dict of ``dpaudit estimate --method panoramia --json``); it
        agrees with ``results[target]["measurement"]`` on the keys both have
        (``selection`` is a name here, the policy in detail there)."""
        from . import audit as _audit

        return _audit.panoramia(**self.panoramia_arguments(target))


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
    manifest = _read_json(cfg_path, "the out-dir's manifest")
    if not isinstance(manifest, dict):
        raise ValueError(_not_an_out_dir(root, "its config.json is not a JSON object"))
    kind = manifest.get("kind")
    fmt = manifest.get("format")
    if isinstance(fmt, str) and fmt.startswith("dpaudit-panoramia/"):
        if fmt != PANORAMIA_FORMAT:
            raise ValueError(
                f"{cfg_path}: PANORAMIA out-dir format {fmt!r}; this reader reads {PANORAMIA_FORMAT!r}"
            )
        return PanoramiaRun(root, manifest, partial=partial, verify=verify)
    if kind is not None and kind != "bgm":
        raise ValueError(_not_an_out_dir(root, f"its config.json says \"kind\": {kind!r}"))
    if kind == "bgm" or ("experiment" in manifest and "format_version" in manifest):
        version = manifest.get("format_version")
        if version != FORMAT_VERSION:
            raise ValueError(
                f"{cfg_path}: written by out-dir format {version if version is not None else 1} "
                f"(dpaudit {manifest.get('dpaudit_version', 'unknown')}); this reader reads format {FORMAT_VERSION}"
            )
        cls = BgmRun if kind == "bgm" else CanaryRun
        return cls(root, manifest, partial=partial, verify=verify)
    raise ValueError(
        _not_an_out_dir(
            root,
            "its config.json is neither a `dpaudit run` manifest (format_version, experiment), a `dpaudit bgm` "
            "one (\"kind\": \"bgm\") nor a PANORAMIA one (\"format\": \"dpaudit-panoramia/1\")",
        )
    )

