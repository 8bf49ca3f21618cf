"""dpaudit.runs against out-dirs written, at test time, by the `dpaudit` binary
named in the environment variable DPAUDIT_BIN (tests that need it are skipped
without it): tiny `dpaudit run` experiments (threshold methods under three
selection policies, the one-run methods, two shards and their merge), a tiny
`dpaudit bgm` experiment and a tiny `dpaudit panoramia` run on a generated
IDX dataset. Every out-dir is built once per module (about 10 s in all on
2 cores)."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest

import dpaudit
from dpaudit import runs

BIN = os.environ.get("DPAUDIT_BIN")
needs_bin = pytest.mark.skipif(
    not BIN, reason="DPAUDIT_BIN is not set: the path of a built `dpaudit` binary (e.g. target/debug/dpaudit)"
)

# The experiment files the Rust tests share (tests/fixtures/, see its mod.rs).
FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"


def fixture(name: str, *edits: "tuple[str, str]") -> str:
    """tests/fixtures/NAME with each (old, new) edit applied to the first
    occurrence of old, which must be there."""
    text = (FIXTURES / name).read_text()
    for old, new in edits:
        assert old in text, f"fixture edit {old!r} does not match {name}"
        text = text.replace(old, new, 1)
    return text


# A 600 → 8 → 2 MLP on the synthetic Purchase-100 stand-in, 3 steps per run,
# 40 runs in chunks of 10.
EXPERIMENT = fixture("tiny-canary.toml")

# 4 runs of 60 canaries each, bounded by the one-run methods.
ONE_RUN = (
    EXPERIMENT.replace("runs = 40", "runs = 4")
    .replace("replicas = 10", "replicas = 2")
    .replace("count = 1", "count = 60")
    .replace('methods = ["eps_delta", "gdp"]', 'methods = ["one_run", "one_run_fdp", "one_run_fdp_gaussian"]')
)

# The two settings of the Rust tests' BGM audit (a full shuffle, a partial
# shuffle with K = B), at 2000 and 1000 runs.
BGM = fixture("tiny-bgm.toml", ("runs = 20000", "runs = 2000"), ("runs = 20000", "runs = 1000"))

# The BGM audit in counts mode (bounded memory, `evaluation = { counts = … }`,
# as the 10⁹-observation reproduction runs it) for its first setting: 2000
# evaluation and 1000 selection runs; the second setting keeps its scores.
BGM_COUNTS = fixture(
    "tiny-bgm.toml",
    ("runs = 20000", "runs = 2000\nevaluation = { counts = { selection_runs = 1000 } }"),
    ("runs = 20000", "runs = 1000"),
)

# A tiny PANORAMIA audit: the shared sections at fewer epochs, one target
# per model trained (tests/fixtures/panoramia-{head,target}.toml).
PANORAMIA_HEAD = fixture(
    "panoramia-head.toml",
    ('selection = "same-data"', 'selection = "bonferroni"'),
    ("[helper]\nmodel = { kind = \"lenet5\" }\nepochs = 2", "[helper]\nmodel = { kind = \"lenet5\" }\nepochs = 1"),
    ("[classifier]\nepochs = 4", "[classifier]\nepochs = 2"),
    ("[quality]\nepochs = 2", "[quality]\nepochs = 1"),
)


def panoramia_target(name: str, epochs: int, data: Path) -> str:
    return fixture(
        "panoramia-target.toml",
        ('name = "f"', f'name = "{name}"'),
        ("epochs = 3", f"epochs = {epochs}"),
        ("DATA_DIR", str(data)),
    )


# The fields an audit.json lower bound shares with Bound.to_dict().
SHARED = ("epsilon", "confidence", "selection", "valid_at_confidence", "assumes", "bounded_on", "metrics", "evidence")


def dpaudit_cli(*args: object) -> str:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run([BIN, *map(str, args)], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, f"dpaudit {args}: status {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out.stdout


def write_idx(path: Path, magic: int, dims: List[int], data: np.ndarray) -> None:
    path.write_bytes(struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + data.tobytes())


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Dict[str, Path]:
    """Every out-dir of this module, built once."""
    if not BIN:
        pytest.skip("DPAUDIT_BIN is not set: the path of a built `dpaudit` binary (e.g. target/debug/dpaudit)")
    if not os.path.isfile(BIN):
        pytest.fail(f"DPAUDIT_BIN={BIN} does not exist")
    d = tmp_path_factory.mktemp("outdirs")
    out: Dict[str, Path] = {}
    exps = {
        "auto": EXPERIMENT,
        "split": EXPERIMENT.replace('methods = ["eps_delta", "gdp"]', 'methods = ["eps_delta", "gdp"]\nselection = "split"'),
        "multi_split": EXPERIMENT.replace(
            'methods = ["eps_delta", "gdp"]', 'methods = ["eps_delta", "gdp"]\nselection = "multi_split"'
        ),
        "one_run": ONE_RUN,
    }
    for key, text in exps.items():
        cfg = d / f"{key}.toml"
        cfg.write_text(text)
        out[key] = d / key
        dpaudit_cli("run", cfg, "--out-dir", out[key], "--quiet")
    for i in range(2):
        out[f"shard{i}"] = d / f"shard{i}"
        dpaudit_cli("run", d / "auto.toml", "--out-dir", out[f"shard{i}"], "--shard", f"{i}/2", "--quiet")
    out["merged"] = d / "merged"
    dpaudit_cli("merge", "--out-dir", out["merged"], out["shard0"], out["shard1"])

    (d / "bgm.toml").write_text(BGM)
    out["bgm"] = d / "bgm"
    dpaudit_cli("bgm", "--config", d / "bgm.toml", "--out-dir", out["bgm"], "--threads", "2")
    (d / "bgm_counts.toml").write_text(BGM_COUNTS)
    out["bgm_counts"] = d / "bgm_counts"
    dpaudit_cli("bgm", "--config", d / "bgm_counts.toml", "--out-dir", out["bgm_counts"], "--threads", "2")

    # A tiny Fashion-MNIST-format dataset: 10 classes, 100 train and 120
    # test records each; random pixels with a class stripe.
    data = d / "idx"
    data.mkdir()
    rng = np.random.default_rng(0)
    for split, per in (("train", 100), ("t10k", 120)):
        y = np.repeat(np.arange(10, dtype=np.uint8), per)
        x = rng.integers(0, 256, size=(y.size, 28, 28), dtype=np.uint8)
        x[:, :4, :] = (y[:, None, None] * 25).astype(np.uint8)
        write_idx(data / f"{split}-images-idx3-ubyte", 0x0803, [y.size, 28, 28], x)
        write_idx(data / f"{split}-labels-idx1-ubyte", 0x0801, [y.size], y)
    text = PANORAMIA_HEAD + "".join(
        panoramia_target(n, e, data) for n, e in (("f", 1), ("g", 3))
    )
    (d / "panoramia.toml").write_text(text)
    out["panoramia"] = d / "panoramia"
    dpaudit_cli("panoramia", "--config", d / "panoramia.toml", "--out-dir", out["panoramia"])
    return out


@pytest.fixture
def copy_of(built, tmp_path):
    """A fresh copy of a built out-dir, to damage."""

    def copy(key: str) -> Path:
        dst = tmp_path / key
        shutil.copytree(built[key], dst)
        return dst

    return copy


def read_csv(path: Path) -> List[Dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def assert_same_bound(d: dict, entry: dict) -> None:
    """A Bound.to_dict() and an audit.json lower bound agree."""
    assert d["label"] == entry["method"]
    for k in SHARED:
        assert d[k] == entry[k], k


# ---------------------------------------------------------------------------
# Without the binary
# ---------------------------------------------------------------------------


def with_trailer(body: bytes) -> bytes:
    """outdir.rs `with_trailer`, written out independently."""
    if body and not body.endswith(b"\n"):
        body += b"\n"
    return body + f"# sha256 {hashlib.sha256(body).hexdigest()}\n".encode()


def test_checksummed_files_tell_missing_from_edited_and_truncated(tmp_path):
    p = tmp_path / "a.csv"
    with pytest.raises(FileNotFoundError, match="a.csv"):
        runs.read_checked(p)
    p.write_bytes(with_trailer(b"run,score\n0,1.5\n"))
    assert runs.read_checked(p) == b"run,score\n0,1.5\n"
    # A body without a final newline gets one before the trailer.
    p.write_bytes(with_trailer(b"x"))
    assert runs.read_checked(p) == b"x\n"
    p.write_bytes(with_trailer(b""))
    assert runs.read_checked(p) == b""
    full = with_trailer(b"run,score\n0,1.5\n")
    for damaged, why in (
        (full.replace(b"1.5", b"1.6"), "does not match its checksum"),
        (full[:-30], "no checksum line"),
        (full[:-1], "no checksum line"),  # the final newline lost
        (b"", "no checksum line"),
    ):
        p.write_bytes(damaged)
        with pytest.raises(ValueError, match=why) as e:
            runs.read_checked(p)
        assert "a.csv" in str(e.value) and "edited or damaged" in str(e.value)


# Seeds from dpaudit's seed key tree (crates/data/src/seed.rs) through the
# binding. The values below were printed by the NumPy re-implementation of
# ChaCha20 and the key tree that `dpaudit.runs` carried until it read the
# tree from Rust (python/src/dpaudit/runs/_seed.py at commit 7764b17); the
# Rust tree gives the same numbers, which is what these asserts check.
# (seed, stream, path) → RunSeed(seed).stream(stream).child(path…).to_u64().
OLD_NUMPY_SEEDS = [
    ((0, "membership", [0]), 5_836_998_831_134_228_109),
    ((7, "membership", [3]), 18_321_174_899_719_602_993),
    ((3, "membership", [0]), 5_511_640_276_912_690_183),
    ((2**63 + 1, "split", [0xA0D1]), 6_872_639_365_109_767_792),
    ((42, "noise", [1, 2, 3]), 2_888_258_502_259_345_042),
]


def test_seed_derivation_matches_dpaudits_pinned_values():
    from dpaudit import _dpaudit

    # crates/data/src/seed.rs, `derivation_is_pinned`:
    # RunSeed(0).stream(Sampler).child(0).child(0).to_u64().
    assert _dpaudit.seed_u64(0, "sampler", [0, 0]) == 12_901_373_742_220_054_924
    for args, value in OLD_NUMPY_SEEDS:
        assert _dpaudit.seed_u64(*args) == value, args
    # selection_seed(s) = RunSeed(s).stream(Split).child(0xA0D1).to_u64(), as printed by the old
    # NumPy code for these seeds.
    assert [runs.selection_seed(s) for s in (0, 5, 2**64 - 1)] == [
        7_835_243_526_813_267_130, 366_203_726_269_386_439, 15_385_030_311_686_353_702
    ]
    bits = runs.inclusion_bits(7, 50, 3)
    assert bits.shape == (50, 3) and bits.dtype == bool
    # The old NumPy code's bits, packed row-major (73 of 150 set).
    assert np.packbits(bits.ravel()).tobytes().hex() == "339d58f1eb8e328940876c2b7c02bff0871d28"
    # Batching does not change a run's bits.
    assert np.array_equal(runs.inclusion_bits(7, 5, 3), bits[:5])
    coins = runs.panoramia_coins(3, 200)
    assert coins.shape == (200,) and coins.dtype == bool
    assert np.packbits(coins).tobytes().hex() == "c6a3fb4f3acec7bd53f35ec287dda574a5e9393daec6f3021d"
    assert runs.panoramia_coins(0, 10).astype(int).tolist() == [1, 1, 1, 0, 0, 0, 0, 1, 1, 1]
    # A coin is the generator's word below 2^63 (rand's gen_bool(0.5)): the first coin of a
    # node is the top bit of its to_u64, cleared.
    assert bool(runs.panoramia_coins(3, 1)[0]) == (_dpaudit.seed_u64(3, "membership", [0]) < 2**63)
    with pytest.raises(ValueError, match="stream = \"memberships\": expected one of .*membership"):
        _dpaudit.seed_u64(0, "memberships", [])
    with pytest.raises(ValueError, match="coins: expected at most"):
        _dpaudit.seed_coins(0, "membership", [], 2**40, 2**40)


def test_a_damaged_chunk_is_named_without_the_binary(tmp_path):
    """An edited byte of a checksummed chunk, in an out-dir of its own:
    `open` raises naming the chunk (the Rust store's check)."""
    d = tmp_path / "bgm"
    (d / "chunks").mkdir(parents=True)
    unit = {"setting": 0, "chunk_runs": 4096, "first_chunk": 0, "first_run": 0, "runs": 2, "guess_search": False}
    manifest = {
        "kind": "bgm", "format_version": runs.FORMAT_VERSION, "dpaudit_version": "test", "fingerprint": "x",
        "shard": {"index": 0, "count": 1}, "config": "t.toml", "engine": "rust", "device": "cpu", "threads": 1,
        "engine_identity": "x", "units": [unit],
        "experiment": {"description": "t", "settings": [{"name": "s", "runs": 2, "delta": 1e-5,
                                                         "confidence": 0.95, "seed": 1}]},
    }
    (d / "config.json").write_text(json.dumps(manifest))
    body = json.dumps({"unit": unit, "score_columns": 1, "guess_search": None, "seconds": 0.0,
                       "clock": {"seconds": 0.0, "observations": 4},
                       "with_target": [1.5, 2.5], "without_target": [0.5, -1.0]}).encode()
    chunk = d / "chunks" / "chunk-000000.json"
    chunk.write_bytes(with_trailer(body))
    r = runs.open(d, partial=True)
    assert r.kind == "bgm" and not r.complete and r.settings[0].with_target.tolist() == [1.5, 2.5]
    good = chunk.read_bytes()
    i = good.index(b"2.5")
    chunk.write_bytes(good[:i] + b"3" + good[i + 1 :])
    with pytest.raises(ValueError, match="chunk-000000.json: damaged: its content does not match its checksum"):
        runs.open(d, partial=True)
    chunk.write_bytes(good[: good.rindex(b"# sha256")])
    with pytest.raises(ValueError, match="chunk-000000.json: damaged: no checksum line"):
        runs.open(d, partial=True)


def test_missing_and_non_out_dirs_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such directory"):
        runs.open(tmp_path / "nope")
    f = tmp_path / "file.txt"
    f.write_text("x")
    with pytest.raises(NotADirectoryError, match="not an out-dir"):
        runs.open(f)
    with pytest.raises(FileNotFoundError, match="not a dpaudit out-dir: it has no config.json") as e:
        runs.open(tmp_path)
    msg = str(e.value)
    assert "dpaudit run" in msg and "dpaudit bgm" in msg and "dpaudit panoramia" in msg
    (tmp_path / "config.json").write_text('{"name": "something else"}')
    with pytest.raises(ValueError, match="neither a `dpaudit run` manifest"):
        runs.open(tmp_path)
    (tmp_path / "config.json").write_text("not json")
    with pytest.raises(ValueError, match="not JSON"):
        runs.open(tmp_path)


# ---------------------------------------------------------------------------
# dpaudit run
# ---------------------------------------------------------------------------


@needs_bin
def test_canary_run_arrays_match_the_csv_files_row_for_row(built):
    r = runs.open(built["auto"])
    assert r.kind == "run" and r.complete and isinstance(r, runs.CanaryRun)
    assert r.config["name"] == "tiny canary" and r.manifest["experiment"] is r.config
    assert r.score_names == ["dirac", "iterates"]
    rows = read_csv(built["auto"] / "scores.csv")
    assert len(rows) == 40 == r.runs.size
    assert (r.runs.dtype, r.canaries.dtype, r.members.dtype, r.test_accuracy.dtype) == (
        np.int64,
        np.int64,
        np.bool_,
        np.float64,
    )
    assert r.runs.tolist() == [int(x["run"]) for x in rows]
    assert r.canaries.tolist() == [int(x["canary"]) for x in rows]
    assert r.members.tolist() == [x["member"] == "1" for x in rows]
    assert r.test_accuracy.tolist() == [float(x["test_accuracy"]) for x in rows]
    for name in r.score_names:
        assert r.scores[name].dtype == np.float64
        assert r.scores[name].tolist() == [float(x[name]) for x in rows]  # bit for bit
    inc = read_csv(built["auto"] / "inclusion.csv")
    assert r.inclusion.shape == (40, 1) and r.inclusion.dtype == np.bool_
    assert r.inclusion.ravel().tolist() == [x["included"] == "1" for x in inc]
    cols = r.columns()
    assert list(cols) == ["run", "canary", "member", "test_accuracy", "dirac", "iterates"]
    assert {len(v) for v in cols.values()} == {40}
    s, m = r.observations("iterates")
    assert s is r.scores["iterates"] and m is r.members
    assert r.observations()[0] is r.scores["dirac"]  # the first score by default
    assert r.audit["runs"] == 40 and "Audit" in r.summary
    assert "epsilon.svg" in r.plots and r.claimed_epsilon == r.manifest["claimed_epsilon"]


@needs_bin
@pytest.mark.parametrize("key", ["auto", "split", "multi_split"])
def test_observations_give_audit_jsons_threshold_bounds(built, key):
    r = runs.open(built[key])
    entries = r.audit["lower_bounds"]
    assert len(entries) == 4
    for e in entries:
        scores, members = r.observations(e["score"])
        args = r.audit_arguments(e["method"])
        # audit_report.rs: δ of training, [audit] confidence, selection_for()
        # with the seed RunSeed(seed).stream(Split).child(0xA0D1).
        assert args["delta"] == 1e-5 and args["confidence"] == 0.95
        assert args["selection"] == {"auto": "auto", "split": "split", "multi_split": "multi-split"}[key]
        fn = {"eps-delta": dpaudit.audit.eps_delta, "gdp": dpaudit.audit.gdp}[e["method"]]
        d = fn(scores, members, **args).to_dict()
        assert_same_bound(d, e)
        assert r.bound(e["method"], e["score"]).to_dict() == d
        assert r.audit_entry(e["method"].replace("-", "_"), e["score"]) is e
        if key == "split":
            assert e["bounded_on"] == {"data": "evaluation-half", "seed": runs.selection_seed(5)}
    with pytest.raises(KeyError, match="no one-run bound"):
        r.audit_entry("one-run")


@needs_bin
def test_canaries_of_run_give_audit_jsons_one_run_bounds(built):
    r = runs.open(built["one_run"])
    assert r.runs.size == 4 * 60 and r.inclusion.shape == (4, 60)
    rows = read_csv(built["one_run"] / "scores.csv")
    assert r.scores["dirac"].tolist() == [float(x["dirac"]) for x in rows]
    assert len(r.audit["lower_bounds"]) == 6
    for e in r.audit["lower_bounds"]:
        assert e["run"] == 0
        args = r.audit_arguments(e["method"])
        assert args["guesses"] == "with-one-sided"  # what `dpaudit run` searches
        fn = dpaudit.audit.one_run if e["method"] == "one-run" else dpaudit.audit.one_run_fdp
        s, m = r.canaries_of_run(0, e["score"])
        assert s.size == 60 and m.tolist() == r.inclusion[0].tolist()
        assert_same_bound(fn(s, m, **args).to_dict(), e)
        # per_run: every run's bound, in run order.
        assert e["per_run"] == [r.bound(e["method"], e["score"], run=k).epsilon for k in range(4)]


@needs_bin
def test_shards_are_unfinished_until_merged(built):
    with pytest.raises(runs.IncompleteOutDirError) as e:
        runs.open(built["shard0"])
    msg = str(e.value)
    assert isinstance(e.value, FileNotFoundError)
    assert "unfinished" in msg and "scores.csv is missing" in msg and "2 of 4 chunks" in msg
    assert "shard 0/2" in msg and "dpaudit merge" in msg and "partial=True" in msg
    assert e.value.missing == [1, 3]
    full = runs.open(built["auto"])
    p = runs.open(built["shard0"], partial=True)
    assert not p.complete and p.audit is None and p.missing_chunks == [1, 3]
    sel = np.isin(full.runs, list(range(0, 10)) + list(range(20, 30)))
    for k, v in p.columns().items():
        assert np.array_equal(v, full.columns()[k][sel]), k
    merged = runs.open(built["merged"])
    for k, v in merged.columns().items():
        assert np.array_equal(v, full.columns()[k]), k
    assert merged.audit == full.audit


@needs_bin
def test_an_unfinished_run_is_reported_and_partially_readable(copy_of):
    d = copy_of("auto")
    for f in ("scores.csv", "audit.json", "summary.md", "chunks/chunk-000001.csv"):
        (d / f).unlink()
    with pytest.raises(runs.IncompleteOutDirError, match=r"3 of 4 chunks are done \(missing: 1\)") as e:
        runs.open(d)
    assert "again" in str(e.value)
    p = runs.open(d, partial=True)
    assert p.runs.tolist() == list(range(0, 10)) + list(range(20, 40))
    # Every chunk there but not finalized: said so.
    (d / "chunks/chunk-000001.csv").write_bytes((copy_of("merged") / "chunks/chunk-000001.csv").read_bytes())
    with pytest.raises(runs.IncompleteOutDirError, match="finaliz"):
        runs.open(d)


@needs_bin
def test_damaged_files_raise_value_error_naming_them(copy_of):
    d = copy_of("auto")
    chunk = d / "chunks" / "chunk-000002.csv"
    good = chunk.read_bytes()
    # One digit of one score changed.
    i = good.index(b"\n", good.index(b"\n") + 1) - 3
    chunk.write_bytes(good[:i] + (b"1" if good[i : i + 1] != b"1" else b"2") + good[i + 1 :])
    with pytest.raises(ValueError, match="chunk-000002.csv: damaged: .*edited or damaged"):
        runs.open(d)
    chunk.write_bytes(good[: good.rindex(b"# sha256")])  # trailer lost
    with pytest.raises(ValueError, match="chunk-000002.csv: damaged: no checksum line"):
        runs.open(d)
    chunk.write_bytes(good)
    runs.open(d)

    # scores.csv has no checksum, but must equal its chunks.
    scores = d / "scores.csv"
    text = scores.read_text()
    first = text.split("\n")[1].split(",")
    edited = ",".join(first[:4] + [first[4] + "1"] + first[5:])
    scores.write_text(text.replace(text.split("\n")[1], edited))
    with pytest.raises(ValueError, match="scores.csv: differs from its checksummed chunk"):
        runs.open(d)
    assert runs.open(d, verify=False).scores["dirac"][0] == float(first[4] + "1")
    scores.write_text(text)

    # inclusion.csv has no checksum, but must be the experiment's bits.
    inc = d / "inclusion.csv"
    lines = inc.read_text().split("\n")
    run, canary, bit = lines[1].split(",")
    lines[1] = f"{run},{canary},{'-1' if bit == '1' else '1'}"
    inc.write_text("\n".join(lines))
    with pytest.raises(ValueError, match="inclusion.csv"):
        runs.open(d)


@needs_bin
def test_missing_required_files_raise_file_not_found_naming_them(copy_of):
    d = copy_of("auto")
    (d / "audit.json").unlink()
    with pytest.raises(FileNotFoundError, match="audit.json: missing"):
        runs.open(d)
    d = copy_of("split")
    (d / "inclusion.csv").unlink()
    with pytest.raises(FileNotFoundError, match="inclusion.csv: missing"):
        runs.open(d)
    d = copy_of("multi_split")
    cfg = json.loads((d / "config.json").read_text())
    cfg["format_version"] = 1
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="format 1 .*reads format 2"):
        runs.open(d)


@needs_bin
def test_a_directory_of_out_dirs_is_named_as_such(built):
    with pytest.raises(FileNotFoundError, match="It contains out-dirs: .*auto"):
        runs.open(built["auto"].parent)


# ---------------------------------------------------------------------------
# dpaudit bgm
# ---------------------------------------------------------------------------


@needs_bin
def test_bgm_arrays_and_bounds_match_the_out_dir(built):
    r = runs.open(built["bgm"])
    assert r.kind == "bgm" and isinstance(r, runs.BgmRun) and r.complete
    assert r.engine == "rust" and r.config["description"] == "tiny"
    rows = read_csv(built["bgm"] / "scores.csv")
    assert len(rows) == 3000 == r.run.size
    assert r.setting.tolist() == [int(x["setting"]) for x in rows]
    assert r.run.tolist() == [int(x["run"]) for x in rows]
    assert r.with_target.dtype == np.float64
    assert r.with_target.tolist() == [float(x["with_target"]) for x in rows]
    assert r.without_target.tolist() == [float(x["without_target"]) for x in rows]
    assert list(r.scores) == ["shuffle T=100 σ=1", "no shuffling K=B"]
    assert [s.with_target.size for s in r.settings] == [2000, 1000]
    assert r.get_setting("no shuffling K=B") is r.settings[1] is r.get_setting(1)
    assert r.scores["no shuffling K=B"]["without_target"] is r.settings[1].without_target
    assert list(r.columns()) == ["setting", "setting_name", "run", "with_target", "without_target"]
    for s in r.settings:
        scores, members = s.observations()
        assert members.sum() == s.with_target.size == scores.size // 2
        args = s.audit_arguments()
        assert args == {"delta": 1e-5, "confidence": 0.95, "selection": "split", "seed": s.spec["seed"]}
        d = dpaudit.audit.eps_delta(scores, members, **args).to_dict()
        lb = s.report["lower_bound"]
        assert d["selection_detail"] == lb["selection"]
        for k in ("epsilon", "confidence", "delta", "method", "valid_at_confidence", "assumes", "bounded_on",
                  "metrics", "evidence"):
            assert d[k] == lb[k], k
    g = r.settings[1].guess_search
    assert [k for k, _ in g["per_guess"]] == [1, 100] and g["chosen_columns"] in (1, 100)
    assert r.settings[0].guess_search is None


@needs_bin
def test_bgm_damaged_and_unfinished(copy_of, built):
    d = copy_of("bgm")
    unit = d / "chunks" / "chunk-000001.json"
    good = unit.read_bytes()
    unit.write_bytes(good.replace(b'"with_target":[', b'"with_target":[1', 1))
    with pytest.raises(ValueError, match="chunk-000001.json: damaged"):
        runs.open(d)
    unit.unlink()
    (d / "scores.csv").unlink()
    with pytest.raises(runs.IncompleteOutDirError, match=r"1 of 2 units .*\(missing: 1\)"):
        runs.open(d)
    p = runs.open(d, partial=True)
    full = runs.open(built["bgm"])
    assert p.settings[1].with_target.size == 0 and p.settings[1].report is None
    # From the unit files: the same runs, within an ulp (see BgmRun).
    a, b = p.settings[0].with_target, full.settings[0].with_target
    assert a.shape == b.shape and np.all(np.abs(a - b) <= np.spacing(np.abs(b)))


@needs_bin
def test_bgm_counts_mode_is_read_from_counts_csv(built):
    r = runs.open(built["bgm_counts"])
    assert r.kind == "bgm" and r.complete
    counted, scored = r.settings
    assert (counted.mode, scored.mode) == ("counts", "scores")
    assert scored.counts is None and scored.with_target.size == 1000
    # scores.csv holds the scores-mode setting only.
    assert r.setting.tolist() == [1] * 1000 and r.run.tolist() == list(range(1000))
    assert counted.with_target.size == 0
    rows = read_csv(built["bgm_counts"] / "counts.csv")
    for stream, n in (("selection", 1000), ("evaluation", 2000)):
        h = counted.counts[stream]
        want = [x for x in rows if x["stream"] == stream]
        assert all(x["setting"] == "0" for x in want)
        assert h["bucket"].tolist() == [int(x["bucket"]) for x in want]
        assert h["cut"].tolist() == [float(x["cut"]) for x in want]
        assert h["with_target"].tolist() == [int(x["with_target"]) for x in want]
        assert h["without_target"].tolist() == [int(x["without_target"]) for x in want]
        assert h["with_target"].sum() == n == h["without_target"].sum()
        assert np.all(np.diff(h["bucket"]) > 0)
    cb = counted.report["counted_bound"]
    assert counted.report.get("lower_bound") is None and cb["evaluation"]["with_target"] == 2000
    # The histograms are those the bound counted: at the chosen cut ("member iff above bucket
    # b"), the non-members above it and the members at or below it are its error counts.
    for stream, key in (("evaluation", "evaluation"), ("selection", "choice")):
        h, c = counted.counts[stream], cb[key]
        above = h["bucket"] > c["above_bucket"]
        fp = "false_positives" if stream == "evaluation" else "selection_false_positives"
        fn = "false_negatives" if stream == "evaluation" else "selection_false_negatives"
        assert h["without_target"][above].sum() == c[fp]
        assert h["with_target"][~above].sum() == c[fn]
    assert "counts of 2000 runs" in repr(counted)
    with pytest.raises(ValueError, match="keeps counts .*counted_bound"):
        counted.observations()
    # The scores-mode setting is bounded as before.
    d = scored.bound().to_dict()
    assert d["epsilon"] == scored.report["lower_bound"]["epsilon"]


@needs_bin
def test_bgm_counts_damaged_and_unfinished(copy_of):
    d = copy_of("bgm_counts")
    counts = d / "counts.csv"
    text = counts.read_text()
    # One run with the target moved from one selection bucket to another: the totals still
    # hold, but the histogram is no longer the sum of its checksummed units.
    lines = text.split("\n")
    j = next(i for i in range(2, len(lines)) if lines[i].split(",")[1] == "selection" and lines[i].split(",")[4] != "0")
    for i, step in ((1, 1), (j, -1)):
        f = lines[i].split(",")
        f[4] = str(int(f[4]) + step)
        lines[i] = ",".join(f)
    counts.write_text("\n".join(lines))
    with pytest.raises(ValueError, match="counts.csv: setting 0's selection histogram differs from the sum"):
        runs.open(d)
    assert runs.open(d, verify=False).complete
    lines = text.split("\n")
    f = lines[1].split(",")
    f[4] = str(int(f[4]) + 1)
    lines[1] = ",".join(f)
    counts.write_text("\n".join(lines))
    with pytest.raises(ValueError, match="counts.csv: setting 0's selection histogram holds 1001"):
        runs.open(d, verify=False)
    counts.unlink()
    with pytest.raises(runs.IncompleteOutDirError, match="counts.csv is missing"):
        runs.open(d)
    # A partial read sums the units' histograms (without the cuts, which counts.csv carries).
    p = runs.open(d, partial=True)
    h = p.settings[0].counts["evaluation"]
    assert h["with_target"].sum() == 2000 and "cut" not in h


# ---------------------------------------------------------------------------
# dpaudit panoramia
# ---------------------------------------------------------------------------


@needs_bin
def test_panoramia_scores_members_and_measurement(built):
    r = runs.open(built["panoramia"])
    assert r.kind == "panoramia" and isinstance(r, runs.PanoramiaRun) and r.complete
    assert r.target_names == ["f", "g"] and r.config["seed"] == 3
    assert r.members.dtype == np.bool_ and r.members.shape == (400,)
    assert r.members.sum() == r.audit["audit_members"]
    baseline = json.loads((built["panoramia"] / "baseline.json").read_text())
    assert r.baseline_scores.tolist() == baseline["scores"]
    for name in ("f", "g"):
        result = json.loads((built["panoramia"] / "targets" / f"{name}.json").read_text())
        assert r.mia_scores[name].tolist() == result["mia_scores"]
        bs, bm, s, m = r.observations(name)
        meas = r.results[name]["measurement"]
        measured = dpaudit.audit.panoramia(bs, bm, s, m, confidence=0.95, selection="bonferroni", seed=3)
        assert measured == r.measure(name)
        got = measured.to_dict()
        assert got["selection"] == measured.selection == meas["selection"]["policy"]
        shared = set(got) & set(meas) - {"selection"}
        assert {"baseline", "mia", "c_lb", "c_plus_epsilon_lb", "epsilon_tilde"} <= shared
        for k in shared:
            assert got[k] == meas[k], k
    assert "not a lower bound" in r.summary
    # One classifier seed in this config: seed 0 is the whole story.
    assert r.classifier_seeds == [0] and r.baseline_scores_by_seed[0] is r.baseline_scores
    assert r.mia_scores_by_seed["f"][0] is r.mia_scores["f"]
    with pytest.raises(KeyError, match="classifier seed 1"):
        r.observations("f", classifier_seed=1)


def test_panoramia_every_classifier_seed_is_read(tmp_path):
    """A PANORAMIA out-dir of a config with `classifier.seeds = 2`, written
    in its documented form (crates/panoramia/src/pipeline/artifacts.rs:
    seed 0 in `scores`/`mia_scores`, the others in `more_seeds` and
    `mia_more_seeds`)."""
    m = 8
    coins = runs.panoramia_coins(3, m)
    cfg = {"seed": 3, "confidence": 0.95, "selection": "bonferroni", "split": {"audit": m}, "target": [{"name": "t"}]}
    (tmp_path / "config.json").write_text(
        json.dumps({"format": runs.PANORAMIA_FORMAT, "fingerprint": "fp", "config": cfg})
    )
    seeds = {k: [float(10 * k + i) for i in range(m)] for k in range(4)}
    (tmp_path / "baseline.json").write_text(json.dumps(
        {"format": runs.PANORAMIA_FORMAT, "fingerprint": "fp", "scores": seeds[0],
         "more_seeds": [{"seed": 1, "scores": seeds[1]}]}
    ))
    target = {"name": "t", "fingerprint": "fp", "mia_scores": seeds[2], "measurement": {},
              "mia_more_seeds": [{"seed": 1, "scores": seeds[3]}]}
    audit = {"fingerprint": "fp", "audit_members": int(coins.sum()), "targets": [target]}
    (tmp_path / "audit.json").write_text(json.dumps(audit))
    r = runs.open(tmp_path)
    assert r.classifier_seeds == [0, 1] and r.members.tolist() == coins.tolist()
    assert r.observations("t")[0].tolist() == seeds[0] and r.observations("t")[2].tolist() == seeds[2]
    b, bm, s, mm = r.observations("t", classifier_seed=1)
    assert b.tolist() == seeds[1] and s.tolist() == seeds[3] and bm is mm is r.members
    assert r.panoramia_arguments("t", classifier_seed=1)["scores"] is s
    with pytest.raises(KeyError, match="classifier seed 2"):
        r.observations("t", classifier_seed=2)
    target["mia_more_seeds"][0]["scores"] = seeds[3][:-1]
    (tmp_path / "audit.json").write_text(json.dumps(audit))
    with pytest.raises(ValueError, match="target t: classifier seed 1: 7 scores, expected 8"):
        runs.open(tmp_path)


@needs_bin
def test_panoramia_unfinished(copy_of):
    d = copy_of("panoramia")
    (d / "audit.json").unlink()
    (d / "targets" / "g.json").unlink()
    with pytest.raises(runs.IncompleteOutDirError, match="audit.json is missing; not done yet: targets/g.json"):
        runs.open(d)
    p = runs.open(d, partial=True)
    assert list(p.mia_scores) == ["f"] and p.baseline_scores.size == 400
    # Another config's seed gives other coins, which contradict the counts.
    cfg = json.loads((d / "config.json").read_text())
    cfg["config"]["seed"] = 4
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="coins from seed 4"):
        runs.open(d, partial=True)
