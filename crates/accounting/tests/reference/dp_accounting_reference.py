"""Reference values for dpaudit's accounting tests, from Google's dp_accounting.

Run:  python3 -m venv /tmp/dpacc && /tmp/dpacc/bin/pip install dp-accounting
      /tmp/dpacc/bin/python crates/accounting/tests/reference/dp_accounting_reference.py
The numbers printed are pasted (with the version) into crates/accounting/tests/*.rs.
"""
import importlib.metadata

import dp_accounting
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant

DELTA = 1e-5
SETTINGS = [
    # (sample_rate, noise_multiplier, steps)
    (0.01, 0.5, 100),
    (0.01, 1.0, 100),
    (0.01, 1.5, 100),
    (1.0 / 11.0, 3.0, 1848),
    (0.01, 1.0, 10_000),
    (1.0, 4.0, 250),
    (1.0, 1.0, 1),
    (0.001, 1.0, 100_000),
]


def event(q, sigma, steps):
    gaussian = dp_event.GaussianDpEvent(sigma)
    single = gaussian if q == 1.0 else dp_event.PoissonSampledDpEvent(q, gaussian)
    return dp_event.SelfComposedDpEvent(single, steps)


print("dp_accounting", importlib.metadata.version("dp-accounting"))
for q, sigma, steps in SETTINGS:
    pld = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    pld.compose(event(q, sigma, steps))
    rdp = rdp_privacy_accountant.RdpAccountant()
    rdp.compose(event(q, sigma, steps))
    print(
        f"q={q!r} sigma={sigma} steps={steps} delta={DELTA}: "
        f"pld_eps={pld.get_epsilon(DELTA):.6f} rdp_eps={rdp.get_epsilon(DELTA):.6f}"
    )
