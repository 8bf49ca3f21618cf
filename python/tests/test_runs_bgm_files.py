"""A `dpaudit bgm` out-dir's scores.csv and counts.csv written here byte by
byte: the binding's readers (`dpaudit_plan::bgm::reader`, which
`dpaudit.runs.BgmRun` uses) give their values bit for bit, and errors name
the file and line."""

import struct

import numpy as np
import pytest

from dpaudit import _dpaudit

# As the runner writes them (Rust's `{:?}` of f64).
VALUES = ["0.30000000000000004", "-1e-300", "1.7976931348623157e308", "-0.0", "1e16", "inf", "NaN", "5e-324"]


def test_bgm_scores_read_back_bit_for_bit(tmp_path):
    p = tmp_path / "scores.csv"
    rows = [(i // 4, i % 4, VALUES[i], VALUES[-1 - i]) for i in range(8)]
    p.write_text("setting,run,with_target,without_target\n" + "".join(f"{a},{b},{c},{d}\n" for a, b, c, d in rows))
    s = _dpaudit.read_bgm_scores(str(p))
    assert s["setting"].dtype == s["run"].dtype == np.int64
    assert s["setting"].tolist() == [r[0] for r in rows] and s["run"].tolist() == [r[1] for r in rows]
    for k, col in ((2, "with_target"), (3, "without_target")):
        assert s[col].dtype == np.float64
        assert s[col].tobytes() == b"".join(struct.pack("<d", float(r[k])) for r in rows), col
    p.write_text(p.read_text().replace("\n1,1,", "\n1,one,"))
    with pytest.raises(ValueError, match=r"scores.csv: line 7: run `one` is not a non-negative integer"):
        _dpaudit.read_bgm_scores(str(p))
    with pytest.raises(FileNotFoundError, match=r"nope.csv: missing \(the merged scores\)"):
        _dpaudit.read_bgm_scores(str(tmp_path / "nope.csv"))


def test_bgm_counts_read_back(tmp_path):
    p = tmp_path / "counts.csv"
    p.write_text(
        "setting,stream,bucket,cut,with_target,without_target\n"
        "1,selection,-40,-2.5,3,0\n1,selection,7,0.4375,0,3\n1,evaluation,0,0.0,5,5\n"
    )
    c = _dpaudit.read_bgm_counts(str(p))
    assert {k: v.dtype for k, v in c.items()} == {
        "setting": np.int64, "stream": np.int64, "bucket": np.int64, "cut": np.float64,
        "with_target": np.int64, "without_target": np.int64,
    }
    assert c["stream"].tolist() == [0, 0, 1] and c["bucket"].tolist() == [-40, 7, 0]
    assert c["cut"].tolist() == [-2.5, 0.4375, 0.0]
    assert c["with_target"].tolist() == [3, 0, 5] and c["without_target"].tolist() == [0, 3, 5]
    p.write_text(p.read_text().replace("evaluation", "evaluate"))
    with pytest.raises(ValueError, match=r"counts.csv: line 4: stream `evaluate` is not selection or evaluation"):
        _dpaudit.read_bgm_counts(str(p))
    p.write_text("setting,stream\n")
    with pytest.raises(ValueError, match=r"counts.csv: line 1: header `setting,stream`, expected"):
        _dpaudit.read_bgm_counts(str(p))
