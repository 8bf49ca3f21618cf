"""dpaudit.opacus.suite: every Opacus configuration in one table, at the --quick setting.

The quick setting (``suite.QUICK``): MLP 24-24-4 (700 weights), 400 synthetic
records, Poisson q = 0.1, σ = 1.5, C = 1, 30 steps, 600 sampled and 100
every-step canaries. Opacus 1.6.0's PRV accountant claims ε = 2.0199 at
δ = 1e-5 for it (dpaudit's PLD: 2.0097); the every-step canaries' claim is
μ = √30/1.5 = 3.651 GDP, ε = 21.58 (dpaudit's gdp accountant).
"""

from __future__ import annotations

import dataclasses
import json
import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest

opacus = pytest.importorskip("opacus")
torch = pytest.importorskip("torch")
from dpaudit.opacus import suite  # noqa: E402

NAMES = ["hooks", "functorch", "ew", "ghost", "shuffle", "virtual-steps", "secure-mode", "secure-noise", "ddp"]
CLAIM = 2.0199  # Opacus 1.6.0 PRV accountant, q = 0.1, σ = 1.5, 30 steps, δ = 1e-5
EVERY_CLAIM = 21.580  # μ = √30 / 1.5 GDP at δ = 1e-5 (dpaudit gdp accountant)


@pytest.fixture(scope="module")
def quick():
    torch.set_num_threads(1)
    return suite.run_suite(seeds=(0,), setting=suite.QUICK)


def test_the_table_has_every_configuration_and_field(quick):
    assert [c.name for c in suite.CONFIGS] == NAMES
    assert [r["config"] for r in quick.rows] == NAMES
    assert quick.meta["opacus"] == opacus.__version__ and quick.meta["parameters"] == 700
    for row in quick.rows:
        if row["status"] != "ran":
            # Only secure mode may be missing, for want of torchcsprng, and it says so.
            assert row["config"] == "secure-mode" and "torchcsprng" in row["reason"]
            assert row["verdict"] == "not run"
            continue
        assert row["m"] == 600 and row["m_every"] == 100 and row["steps"] == 30
        assert row["claim_epsilon"] == row["opacus_epsilon"] == pytest.approx(CLAIM, abs=1e-3)
        assert row["pld_epsilon"] == pytest.approx(2.0097, abs=2e-3)
        assert row["score"] == "steps-llr"
        assert 0 <= row["one_run"] <= row["claim_epsilon"] and 0 <= row["one_run_fdp"] <= row["claim_epsilon"]
        assert 250 < row["included"] < 350  # Bin(600, ½): ±4 sd
        assert row["every"]["claim_epsilon"] == pytest.approx(EVERY_CLAIM, abs=0.01)
        assert row["every"]["order_assumes"] == "independent-gaussian-channels"
        assert row["wall_seconds"] > 0 and 0 <= row["train_accuracy"] <= 1
    ghost, ddp = quick.row("ghost"), quick.row("ddp")
    assert ghost["insert_at"] == "summed_grad" and "clipping bug cannot show" in " ".join(ghost["notes"])
    assert quick.row("hooks")["insert_at"] == "grad_sample"
    assert ddp["optimizer"] == "DistributedDPOptimizer"
    assert quick.row("shuffle")["sampling"] == "shuffle"
    assert "not a proven bound" in " ".join(quick.row("shuffle")["notes"])


def test_every_correct_configuration_is_consistent(quick):
    for row in quick.rows:
        if row["status"] == "ran":
            assert row["verdict"] == "consistent", row
            assert row["exceeds_claim"] == {"one_run": False, "one_run_fdp": False}
            assert row["every"]["verdict"] == "consistent"
            assert row["every"]["one_run_order_gaussian"] <= row["every"]["claim_epsilon"]


def test_json_svg_and_markdown(quick, tmp_path):
    paths = quick.write(str(tmp_path))
    data = json.loads(open(paths["json"], encoding="utf-8").read())
    assert [r["config"] for r in data["rows"]] == NAMES
    assert data["rows"][0]["one_run_fdp"] == pytest.approx(quick.rows[0]["one_run_fdp"], rel=1e-12)
    svg = ET.parse(paths["svg"]).getroot()
    texts = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert "configuration" in texts and "f-DP one-run" in texts
    assert sum(t.startswith("hooks (seed 0)") for t in texts) == 1
    assert not any(t == "exceeds the claim" for t in texts)  # no red cell in a correct run
    table = open(paths["md"], encoding="utf-8").read().splitlines()
    rows = [line for line in table if line.startswith("| ")]
    assert len(rows) == 1 + len(NAMES)  # the header and one row per configuration
    assert all(line.count("|") == rows[0].count("|") for line in rows)


def test_a_seeded_bug_flips_the_verdict(monkeypatch):
    # test_opacus.seed_bug patches opacus.optimizers.optimizer; ghost clipping's optimizer
    # imported _generate_noise into its own module, so noise-off is seeded there too.
    import opacus.optimizers.optimizer_fast_gradient_clipping as fast
    from test_opacus import seed_bug

    torch.set_num_threads(1)
    setting = dataclasses.replace(suite.QUICK, m_every=0)
    seed_bug(monkeypatch, "noise-off")
    monkeypatch.setattr(fast, "_generate_noise", lambda std, reference, *a, **k: torch.zeros_like(reference))
    result = suite.run_suite(["hooks", "ghost"], seeds=(0,), setting=setting)
    for row in result.rows:
        assert row["claim_epsilon"] == pytest.approx(CLAIM, abs=1e-3)  # the accountant still believes σ
        assert row["verdict"] == "exceeds the claim", row
        assert row["one_run_fdp"] > 3.0  # measured 3.59 on both at this seed
        assert "every" not in row
    assert "exceeds the claim" in result.svg() and 'class="warning"' in result.svg()


def test_clipping_bypassed_flips_hooks_not_ghost(monkeypatch):
    # The patch replaces DPOptimizer.clip_and_accumulate; ghost clipping neither calls it nor
    # lets canaries enter before its own clipping, so that row cannot show the bug.
    from test_opacus import seed_bug

    torch.set_num_threads(1)
    setting = dataclasses.replace(suite.QUICK, m_every=0)
    seed_bug(monkeypatch, "clipping-bypassed")
    result = suite.run_suite(["hooks", "ghost"], seeds=(0,), setting=setting)
    assert result.row("hooks")["verdict"] == "exceeds the claim"  # measured 2.88 against 2.02
    assert result.row("ghost")["verdict"] == "consistent"  # ghost clips elsewhere; canaries enter after it


@pytest.mark.parametrize("name", NAMES)
def test_excluded_canaries_change_nothing_in_any_configuration(name):
    # Canaries whose coins all came up "excluded": the records' training is bit-identical to the
    # run without the harness, in every configuration (the harness draws no random number from
    # torch or Opacus and never touches the records' rows).
    torch.set_num_threads(1)
    setting = dataclasses.replace(suite.QUICK, steps=8)
    config = next(c for c in suite.CONFIGS if c.name == name)
    try:
        base = suite.train(config, setting, 3, canaries=False)
    except suite.Unavailable as why:
        assert name == "secure-mode" and "torchcsprng" in str(why)
        pytest.skip(str(why))
    got = suite.train(
        config,
        setting,
        3,
        included=np.zeros(setting.m, dtype=bool),
        included_every=np.zeros(setting.m_every, dtype=bool),
    )
    assert got.sampled.steps == got.every.steps == 8
    assert sum(n for _, _, n in got.engine.accountant.history) == 8
    assert torch.equal(base.params, got.params)
    # And the included ones do move the model (the comparison can fail).
    moved = suite.train(config, setting, 3)
    assert not torch.equal(base.params, moved.params)


def test_the_command(tmp_path, capsys):
    code = suite.main(["--quick", "--configs", "hooks", "--steps", "5", "--m", "50", "--m-every", "0",
                       "--seeds", "1,2", "--out-dir", str(tmp_path), "--json"])  # fmt: skip
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert [(r["config"], r["seed"], r["steps"], r["m"]) for r in data["rows"]] == [
        ("hooks", 1, 5, 50),
        ("hooks", 2, 5, 50),
    ]
    assert {p.name for p in tmp_path.iterdir()} == {"opacus-suite.json", "opacus-suite.svg", "opacus-suite.md"}
    assert suite.main(["--quick", "--m", "0"]) == 2
    assert suite.main(["--quick", "--configs", "nope"]) == 2
    assert "unknown configuration(s) nope" in capsys.readouterr().err
    assert suite.main(["--quick", "--m", "700"]) == 2  # 700 + 100 canaries, 700 weights
    assert math.isfinite(data["meta"]["wall_seconds"])


def test_a_configuration_that_fails_is_a_row(monkeypatch, capsys):
    from opacus.utils.batch_memory_manager import BatchMemoryManager

    def broken(self):
        raise RuntimeError("no memory today")

    monkeypatch.setattr(BatchMemoryManager, "__enter__", broken)
    args = ["--quick", "--configs", "hooks,virtual-steps", "--seeds", "0", "--steps", "3", "--m", "20"]
    args += ["--m-every", "0"]
    assert suite.main(args) == 1
    out, err = capsys.readouterr()
    assert "virtual-steps (seed 0) failed" in err
    row = next(line for line in out.splitlines() if line.startswith("| virtual-steps"))
    assert "| failed |" in row and "RuntimeError: no memory today" in row
    assert "| consistent |" in next(line for line in out.splitlines() if line.startswith("| hooks"))


def test_the_callers_generator_is_left_alone():
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    suite.train(suite.CONFIGS[0], dataclasses.replace(suite.QUICK, steps=2), 0)
    assert torch.equal(torch.random.get_rng_state(), before)


def test_ddp_is_audited_on_one_process_only():
    from dpaudit.opacus import DiracCanaries

    ddp = next(c for c in suite.CONFIGS if c.name == "ddp")
    trained = suite.train(ddp, dataclasses.replace(suite.QUICK, steps=1), 0, canaries=False)
    assert type(trained.optimizer).__name__ == "DistributedDPOptimizer" and trained.optimizer.world_size == 1
    trained.optimizer.world_size = 2  # what a second rank would make it
    with pytest.raises(ValueError, match="more than one process"):
        DiracCanaries(trained.optimizer, [0], m=1)
