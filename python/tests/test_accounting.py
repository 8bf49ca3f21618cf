"""dpaudit.accounting equals `dpaudit account/calibrate --json` to the last digit."""

import pytest

import dpaudit
from conftest import cli_json, run_cli


@pytest.mark.parametrize("accountant,q", [("pld", 0.01), ("rdp", 0.01), ("gdp", 1.0), ("gdp-clt", 0.01)])
def test_account_equals_the_cli(dpaudit_bin, accountant, q):
    ours = dpaudit.accounting.account(q, 1.1, 1000, 1e-5, accountant=accountant)
    cli = cli_json(dpaudit_bin, "account", "--accountant", accountant, "--sample-rate", str(q),
                   "--noise-multiplier", "1.1", "--steps", "1000", "--delta", "1e-5")
    assert ours == cli
    assert dpaudit.accounting.epsilon(q, 1.1, 1000, 1e-5, accountant) == cli["epsilon"]


def test_shuffle_lower_bound_equals_the_cli(dpaudit_bin):
    ours = dpaudit.accounting.account(0.01, 1.0, 200, 1e-5, shuffle=True)
    cli = cli_json(dpaudit_bin, "account", "--sample-rate", "0.01", "--noise-multiplier", "1.0",
                   "--steps", "200", "--delta", "1e-5", "--shuffle")
    assert ours == cli
    direct = dpaudit.accounting.shuffle_lower_bound(1.0, 100, 2, 1e-5)
    assert direct == cli["shuffle_lower_bound"]
    assert direct["epsilon"] > ours["epsilon"]


@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_calibrate_equals_the_cli(dpaudit_bin, accountant):
    ours = dpaudit.accounting.calibrate(0.01, 1000, 1e-5, 2.0, accountant=accountant)
    cli = cli_json(dpaudit_bin, "calibrate", "--accountant", accountant, "--sample-rate", "0.01",
                   "--steps", "1000", "--delta", "1e-5", "--target-epsilon", "2")
    assert ours == cli
    assert ours["result"]["epsilon"] <= 2.0


def test_delta_inverts_epsilon():
    eps = dpaudit.accounting.epsilon(0.01, 1.0, 1000, 1e-5, "pld")
    d = dpaudit.accounting.delta(0.01, 1.0, 1000, eps, "pld")
    # ε is the upper end of the PLD's bracket, so δ(ε) is at most 1e-5.
    assert d["delta_lower"] <= d["delta"] <= 1e-5 * (1 + 1e-6)
    assert d["delta"] > 0.5e-5


def test_bad_parameters_raise_the_library_message(dpaudit_bin):
    out = run_cli(dpaudit_bin, "account", "--sample-rate", "2", "--noise-multiplier", "1", "--steps", "10",
                  "--delta", "1e-5")
    with pytest.raises(ValueError) as e:
        dpaudit.accounting.account(2.0, 1.0, 10, 1e-5)
    assert str(e.value) in out.stderr
    with pytest.raises(ValueError, match="unknown accountant"):
        dpaudit.accounting.account(0.1, 1.0, 10, 1e-5, accountant="moments")
    with pytest.raises(ValueError, match="gdp"):
        dpaudit.accounting.account(0.1, 1.0, 10, 1e-5, accountant="gdp")
    with pytest.raises(ValueError, match="whole number of epochs"):
        dpaudit.accounting.account(0.01, 1.0, 150, 1e-5, shuffle=True)
    with pytest.raises(ValueError, match="target_epsilon"):
        dpaudit.accounting.calibrate(0.01, 100, 1e-5, -1.0)
    with pytest.raises(ValueError, match="steps"):
        dpaudit.accounting.delta(0.01, 1.0, 0, 1.0)
    with pytest.raises(ValueError, match="steps = -5"):
        dpaudit.accounting.account(0.01, 1.0, -5, 1e-5)
    with pytest.raises(TypeError, match="steps must be an integer"):
        dpaudit.accounting.account(0.01, 1.0, 10.5, 1e-5)
