"""A `dpaudit run` out-dir written here byte by byte, without the binary:
`dpaudit.runs.open` gives its CSV values bit for bit (read by the Rust
reader, `dpaudit_plan::canary::reader`, through the binding), and its
errors name the file and line."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import numpy as np
import pytest

from dpaudit import runs

RUNS, REPLICAS, COUNT, SEED = 3, 2, 4, 9
HEADER = "run,canary,member,test_accuracy,dirac,loss"
# Values whose text needs every digit, the extremes, a signed zero and a NaN,
# as Rust's shortest round-trip form writes them.
SCORES = ["0.30000000000000004", "-0.3333333333333333", "1e300", "-0", "NaN", "5e-324", "inf", "-1.7976931348623157e308"]


def with_trailer(body: bytes) -> bytes:
    """outdir.rs `with_trailer`, written out independently."""
    return body + f"# sha256 {hashlib.sha256(body).hexdigest()}\n".encode()


def write_out_dir(d: Path) -> list:
    """config.json, inclusion.csv, the chunks and scores.csv of a finished
    run; returns the rows of scores.csv as lists of fields."""
    bits = runs.inclusion_bits(SEED, RUNS, COUNT)
    manifest = {
        "format_version": runs.FORMAT_VERSION,
        "dpaudit_version": "test",
        "fingerprint": "0",
        "shard": {"index": 0, "count": 1},
        "claimed_epsilon": 1.0,
        "experiment": {
            "name": "by hand",
            "runs": RUNS,
            "canary": {"count": COUNT},
            "train": {"replicas": REPLICAS, "seed": SEED, "delta": 1e-5},
            "audit": {"scores": ["dirac", "loss"]},
        },
    }
    (d / "chunks").mkdir(parents=True)
    (d / "config.json").write_text(json.dumps(manifest))
    inc = ["run,canary,included"] + [f"{r},{c},{1 if bits[r, c] else -1}" for r in range(RUNS) for c in range(COUNT)]
    (d / "inclusion.csv").write_text("\n".join(inc) + "\n")
    rows = [
        [str(r), str(c), "1" if bits[r, c] else "0", f"0.{r + 1}", SCORES[(r * COUNT + c) % 8], SCORES[(c + 3) % 8]]
        for r in range(RUNS)
        for c in range(COUNT)
    ]
    per_chunk = REPLICAS * COUNT
    for k in range(0, len(rows), per_chunk):
        body = "\n".join([HEADER] + [",".join(x) for x in rows[k : k + per_chunk]]) + "\n"
        (d / "chunks" / f"chunk-{k // per_chunk:06d}.csv").write_bytes(with_trailer(body.encode()))
    (d / "scores.csv").write_text("\n".join([HEADER] + [",".join(x) for x in rows]) + "\n")
    (d / "audit.json").write_text("{}")
    return rows


def float_bits(text: str) -> bytes:
    """The IEEE-754 bits of a CSV field, parsed by Python's float()."""
    return struct.pack("<d", float(text))


def test_a_written_canary_out_dir_reads_back_bit_for_bit(tmp_path):
    rows = write_out_dir(tmp_path)
    r = runs.open(tmp_path)
    assert r.complete and r.missing_chunks == [] and r.chunks == 2
    assert r.runs.dtype == np.int64 and r.runs.tolist() == [int(x[0]) for x in rows]
    assert r.canaries.dtype == np.int64 and r.canaries.tolist() == [int(x[1]) for x in rows]
    assert r.members.dtype == np.bool_ and r.members.tolist() == [x[2] == "1" for x in rows]
    assert r.inclusion.shape == (RUNS, COUNT) and r.inclusion.tolist() == runs.inclusion_bits(SEED, RUNS, COUNT).tolist()
    for k, col in enumerate(["test_accuracy", "dirac", "loss"]):
        arr = r.test_accuracy if col == "test_accuracy" else r.scores[col]
        assert arr.dtype == np.float64 and arr.shape == (len(rows),) and arr.flags.c_contiguous
        assert arr.tobytes() == b"".join(float_bits(x[3 + k]) for x in rows), col
    # A partial read of the chunks gives the same rows.
    (tmp_path / "scores.csv").rename(tmp_path / "merged.csv")
    p = runs.open(tmp_path, partial=True)
    assert not p.complete and p.scores["dirac"].tobytes() == r.scores["dirac"].tobytes()


def test_errors_name_the_file_and_line(tmp_path):
    rows = write_out_dir(tmp_path)
    scores = tmp_path / "scores.csv"
    good = scores.read_text()
    lines = good.split("\n")
    lines[3] = lines[3].replace(",0.", ",zero.", 1)
    scores.write_text("\n".join(lines))
    with pytest.raises(ValueError, match=r"scores.csv: line 4: `zero.1` is not a number"):
        runs.open(tmp_path, verify=False)
    scores.write_text(good.replace(",".join(rows[5]), ",".join(rows[5][:5])))
    with pytest.raises(ValueError, match=r"scores.csv: line 7: 5 fields, expected 6"):
        runs.open(tmp_path, verify=False)
    scores.write_text(good)
    inc = tmp_path / "inclusion.csv"
    lines = inc.read_text().split("\n")
    lines[6] = "7,7,1"
    inc.write_text("\n".join(lines))
    with pytest.raises(ValueError, match=r"inclusion.csv: line 7: `7,7,1`, expected `1,1,1` or `1,1,-1`"):
        runs.open(tmp_path)
    inc.unlink()
    with pytest.raises(FileNotFoundError, match="inclusion.csv: missing"):
        runs.open(tmp_path)
