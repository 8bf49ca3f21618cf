"""dpaudit.accounting equals `dpaudit account/calibrate --json` to the last digit
(`to_dict()` of its typed results)."""

import pytest

import dpaudit
from conftest import cli_json, run_cli


@pytest.mark.parametrize("accountant,q", [("pld", 0.01), ("rdp", 0.01), ("gdp", 1.0), ("gdp-clt", 0.01)])
def test_account_equals_the_cli(dpaudit_bin, accountant, q):
    ours = dpaudit.accounting.account(sample_rate=q, noise_multiplier=1.1, steps=1000, delta=1e-5,
                                      accountant=accountant)
    cli = cli_json(dpaudit_bin, "account", "--accountant", accountant, "--sample-rate", str(q),
                   "--noise-multiplier", "1.1", "--steps", "1000", "--delta", "1e-5")
    assert ours.to_dict() == cli
    assert isinstance(ours, dpaudit.accounting.Account) and ours.epsilon == cli["epsilon"]
    assert ours.approximate == (accountant == "gdp-clt") and ours.accountant == accountant
    eps = dpaudit.accounting.epsilon(sample_rate=q, noise_multiplier=1.1, steps=1000, delta=1e-5,
                                     accountant=accountant)
    assert type(eps) is float and eps == cli["epsilon"] == float(ours)


def test_shuffle_lower_bound_equals_the_cli(dpaudit_bin):
    ours = dpaudit.accounting.account(sample_rate=0.01, noise_multiplier=1.0, steps=200, delta=1e-5, shuffle=True)
    cli = cli_json(dpaudit_bin, "account", "--sample-rate", "0.01", "--noise-multiplier", "1.0",
                   "--steps", "200", "--delta", "1e-5", "--shuffle")
    assert ours.to_dict() == cli
    direct = dpaudit.accounting.shuffle_lower_bound(noise_multiplier=1.0, steps_per_epoch=100, epochs=2, delta=1e-5)
    assert direct.to_dict() == cli["shuffle_lower_bound"] and direct == ours.shuffle_lower_bound
    assert direct.epsilon > ours.epsilon


@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_calibrate_equals_the_cli(dpaudit_bin, accountant):
    ours = dpaudit.accounting.calibrate(sample_rate=0.01, steps=1000, delta=1e-5, target_epsilon=2.0,
                                        accountant=accountant)
    cli = cli_json(dpaudit_bin, "calibrate", "--accountant", accountant, "--sample-rate", "0.01",
                   "--steps", "1000", "--delta", "1e-5", "--target-epsilon", "2")
    assert ours.to_dict() == cli
    assert ours.result.epsilon <= 2.0 and float(ours) == ours.noise_multiplier == cli["noise_multiplier"]


def test_delta_inverts_epsilon():
    dpsgd = dict(sample_rate=0.01, noise_multiplier=1.0, steps=1000)
    eps = dpaudit.accounting.epsilon(**dpsgd, delta=1e-5)
    d = dpaudit.accounting.account_delta(**dpsgd, epsilon=eps)
    # ε is the upper end of the PLD's bracket, so δ(ε) is at most 1e-5.
    assert d.delta_lower <= d.delta <= 1e-5 * (1 + 1e-6)
    assert d.delta > 0.5e-5
    # delta() is that number, a float like epsilon().
    assert dpaudit.accounting.delta(**dpsgd, epsilon=eps) == d.delta == float(d)


def test_bad_parameters_raise_the_library_message(dpaudit_bin):
    out = run_cli(dpaudit_bin, "account", "--sample-rate", "2", "--noise-multiplier", "1", "--steps", "10",
                  "--delta", "1e-5")
    with pytest.raises(ValueError) as e:
        acc(2.0, 1.0, 10, 1e-5)
    assert str(e.value) in out.stderr
    with pytest.raises(ValueError, match="unknown accountant"):
        acc(0.1, 1.0, 10, 1e-5, accountant="moments")
    with pytest.raises(ValueError, match="gdp"):
        acc(0.1, 1.0, 10, 1e-5, accountant="gdp")
    with pytest.raises(ValueError, match="whole number of epochs"):
        acc(0.01, 1.0, 150, 1e-5, shuffle=True)
    with pytest.raises(ValueError, match="target_epsilon"):
        dpaudit.accounting.calibrate(sample_rate=0.01, steps=100, delta=1e-5, target_epsilon=-1.0)
    with pytest.raises(ValueError, match="steps"):
        dpaudit.accounting.delta(sample_rate=0.01, noise_multiplier=1.0, steps=0, epsilon=1.0)
    with pytest.raises(ValueError, match="steps = -5"):
        acc(0.01, 1.0, -5, 1e-5)
    with pytest.raises(TypeError, match="steps must be an integer"):
        acc(0.01, 1.0, 10.5, 1e-5)
    with pytest.raises(ValueError, match=r"steps = 1180591620717411303424 is invalid; expected an integer in \[0, "):
        acc(0.01, 1.0, 2**70, 1e-5)
    with pytest.raises(TypeError, match="noise_multiplier must be a number"):
        acc(0.01, "1", 10, 1e-5)
    with pytest.raises(ValueError, match="noise_multiplier = 1000+ is too large for a float64"):
        acc(0.01, 10**400, 10, 1e-5)


def acc(q, sigma, steps, delta, **kw):
    return dpaudit.accounting.account(sample_rate=q, noise_multiplier=sigma, steps=steps, delta=delta, **kw)


def test_numbers_are_keyword_only():
    with pytest.raises(TypeError) as e:
        dpaudit.accounting.account(0.01, 1.0, 100, 1e-5)
    msg = str(e.value)
    assert "account() takes no positional arguments, got 4" in msg
    assert "account(sample_rate=…, noise_multiplier=…, steps=…, delta=…)" in msg
    for call in (dpaudit.accounting.epsilon, dpaudit.accounting.delta, dpaudit.accounting.calibrate,
                 dpaudit.accounting.shuffle_lower_bound, dpaudit.accounting.account_delta):
        with pytest.raises(TypeError, match="keyword-only"):
            call(0.01)
