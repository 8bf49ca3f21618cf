"""The out-dir format this reader reads: its version tags, the error of an
unfinished experiment, and the checksummed files (``# sha256`` trailers).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Optional, Sequence, Tuple, Union

PathLike = Union[str, "os.PathLike[str]"]

#: The out-dir layout version of ``dpaudit run`` and ``dpaudit bgm`` this
#: module reads (``crates/store/src/outdir.rs``, ``FORMAT_VERSION``).
FORMAT_VERSION: int = 2

#: The ``format`` tag of a PANORAMIA out-dir's JSON files
#: (``crates/panoramia/src/pipeline/artifacts.rs``, ``FORMAT``).
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
# Checksummed files (crates/store/src/outdir.rs)
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
