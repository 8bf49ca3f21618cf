"""The out-dir format this reader reads: its version tags, the error of an
unfinished experiment, and the checksummed files (``# sha256`` trailers),
read and verified by the Rust store (``crates/store``) through the binding
(``crates/python/src/runs.rs``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from .. import _dpaudit

PathLike = Union[str, "os.PathLike[str]"]

#: The out-dir layout version of ``dpaudit run`` and ``dpaudit bgm`` this
#: module reads (``crates/store/src/outdir.rs``, ``FORMAT_VERSION``, from the
#: binding).
FORMAT_VERSION: int = _dpaudit.OUTDIR_FORMAT_VERSION

#: The ``format`` tag of a PANORAMIA out-dir's JSON files
#: (``crates/panoramia/src/pipeline/artifacts.rs``, ``FORMAT``).
PANORAMIA_FORMAT: str = "dpaudit-panoramia/1"

_LOCK_FILE = ".dpaudit.lock"

_EXPECTED_LAYOUTS = (
    "expected the out-dir of `dpaudit run` (config.json, inclusion.csv, chunks/, scores.csv, audit.json, "
    "summary.md), of `dpaudit bgm` (config.json with \"kind\": \"bgm\", chunks/, scores.csv and/or "
    "counts.csv, audit.json, summary.md) or of `dpaudit panoramia` (config.json with \"format\": \"dpaudit-panoramia/1\", "
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
# Checksummed files (crates/store/src/outdir.rs, through the binding)
# ---------------------------------------------------------------------------


def read_checked(path: PathLike) -> bytes:
    """The content of a checksummed out-dir file, without its trailer.

    dpaudit writes chunk files with a last line ``# sha256 <hex>``: the
    SHA-256 of every byte before that line (a newline is added first if the
    content does not end in one). The file is read and verified by dpaudit's
    own store (``dpaudit_store::outdir::read_checked``). Raises
    :class:`FileNotFoundError` when the file does not exist and
    :class:`ValueError`, naming the file, when it does not match its checksum
    (edited, truncated, or its trailer lost).
    """
    return _dpaudit.read_checked(os.fspath(path))


def _read_checked_or_none(p: Path) -> Optional[bytes]:
    """:func:`read_checked`, with ``None`` for a missing file."""
    try:
        return read_checked(p)
    except FileNotFoundError:
        return None
