"""dpaudit.opacus.reports: Opacus's known reports (#819, #571, #813) reproduced by many small trainings.

Each test trains a few dozen to a few hundred tiny models with Opacus 1.6 (one weight, or
Linear(4, 2000) for #819) on fixed seeds, CPU, one thread. The reference numbers are this
module's own measurements at the same seeds and run counts (deterministic: every training draws
from its own seeded torch.Generator), recorded in docs/library-audits.md ("Known reports"); the
claims are Opacus 1.6's PRV accountant for the settings' (σ, q, steps). The full-size
measurements (1,000 runs each) are `python -m dpaudit.opacus.reports all`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

opacus = pytest.importorskip("opacus")
torch = pytest.importorskip("torch")
from opacus import PrivacyEngine  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler  # noqa: E402

import dpaudit  # noqa: E402
from dpaudit.opacus import reports  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]


@pytest.fixture(autouse=True)
def one_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def test_opacus_normalises_by_the_floor_of_the_dataset_size():
    """The code path of #819 and #571 (Opacus 1.6, privacy_engine.py, make_private):
    q = 1/len(data_loader), expected_batch_size = int(len(dataset) · q), so neighbouring
    datasets with the same q get different normalisers."""
    assert opacus.__version__.startswith("1.6")
    for n, batch, expected in ((100, 10, 10), (99, 10, 9), (9, 3, 3), (8, 3, 2), (205, 10, 9), (204, 10, 9)):
        model = torch.nn.Linear(1, 1)
        loader = DataLoader(TensorDataset(torch.zeros(n, 1), torch.zeros(n, 1)), batch_size=batch)
        _, optimizer, dp_loader = PrivacyEngine().make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1), data_loader=loader,
            noise_multiplier=1.0, max_grad_norm=1.0,
        )
        assert len(dp_loader) == math.ceil(n / batch)
        assert optimizer.expected_batch_size == expected, (n, batch)


def test_issue_813_script_sample_rate_in_opacus_16():
    """The script of Opacus #813 (100,000 records, WeightedRandomSampler(num_samples=128),
    batch_size 16): Opacus 1.6 accounts q = 1/len(loader) = 1/8 = 0.125, 781× the 16/100,000
    the user asked for (the issue's 45,000× is not what 1.6 computes on this script). With
    the default Poisson sampling the weighted sampler is replaced (batches ≈ 12,500 records,
    normaliser 12,500); with poisson_sampling=False the weighted sampler is kept."""
    n = 100_000
    dataset = TensorDataset(torch.zeros(n, 10), torch.zeros(n, dtype=torch.long))
    for poisson in (True, False):
        sampler = WeightedRandomSampler(torch.ones(n), num_samples=128, replacement=True)
        loader = DataLoader(dataset, batch_size=16, sampler=sampler)
        model = torch.nn.Linear(10, 2)
        _, optimizer, dp_loader = PrivacyEngine().make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.01), data_loader=loader,
            noise_multiplier=1.0, max_grad_norm=1.0, poisson_sampling=poisson,
        )
        assert 1 / len(dp_loader) == 0.125
        assert optimizer.expected_batch_size == 12_500
        assert (1 / len(dp_loader)) / (16 / n) == pytest.approx(781.25)
        kept = isinstance(getattr(dp_loader, "sampler", None), WeightedRandomSampler)
        assert kept is (not poisson)


def test_llr_571_is_the_likelihood_ratio_of_the_implemented_mechanism():
    """At one step, the score equals the log of the two densities computed directly:
    (1 − q)·φ_{σ/b_in}(s) + q·φ at mean C/b_in, over φ_{σ/b_out}(s)."""
    sigma, q, b_in, b_out = 4.0, 1 / 3, 3.0, 2.0

    def density(s, mean, sd):
        return math.exp(-0.5 * ((s - mean) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))

    for s in (-2.0, 0.0, 0.4, 3.0):
        direct = math.log(
            (1 - q) * density(s, 0.0, sigma / b_in) + q * density(s, 1.0 / b_in, sigma / b_in)
        ) - math.log(density(s, 0.0, sigma / b_out))
        assert reports._llr_571(np.array([s]), sigma, q, b_in, b_out) == pytest.approx(direct, rel=1e-12, abs=1e-12)
    # Equal normalisers: the score is increasing in s (a pure shift of the member).
    grid = np.linspace(-5, 5, 101)
    values = [reports._llr_571(np.array([s]), sigma, q, 3.0, 3.0) for s in grid]
    assert np.all(np.diff(values) > 0)


# (report, runs, claimed ε, bound of the `report` variant). Claims: Opacus 1.6's PRV accountant
# for (σ, q, steps) = (2, 0.1, 10), (4, 1/3, 9) and (σ calibrated by Opacus for ε = 1, 1/21, 21).
# Bounds: this module's measurement at seed 0 (docs/library-audits.md, "Known reports"); the #819
# bound is the most 60 runs can give (its scores separate the datasets perfectly, checked below).
CASES = [
    ("819", 60, 0.81, 2.42),
    ("571", 200, 1.05, 2.11),
    ("813", 60, 1.00, 2.17),
]


@pytest.mark.parametrize("report,runs,claim,measured", CASES, ids=[c[0] for c in CASES])
def test_report_exceeds_the_claim_and_the_counterpart_stays_consistent(report, runs, claim, measured):
    bug = reports.audit_report(report, "report", runs, seed=0)
    fixed = reports.audit_report(report, "correct", runs, seed=0)
    for row in (bug, fixed):
        assert row.claimed_epsilon == pytest.approx(claim, abs=0.01)
        assert row.runs == runs and 0 < row.members < runs
    assert bug.eps_delta == pytest.approx(measured, abs=0.1)
    assert bug.eps_delta > bug.claimed_epsilon and bug.verdict.startswith("exceeds")
    assert fixed.eps_delta < fixed.claimed_epsilon and fixed.verdict == "consistent"
    if report == "819":
        members = np.arange(runs) < bug.members
        separated = members + np.arange(runs) / (10 * runs)  # distinct scores, every member above every non-member
        perfect = dpaudit.audit.eps_delta(separated, members, delta=reports.DELTA)
        assert bug.eps_delta == pytest.approx(perfect.epsilon, rel=1e-9)
    if report in ("819", "571"):
        assert bug.normaliser_member == bug.normaliser_non_member + 1
        assert fixed.normaliser_member == fixed.normaliser_non_member
    else:
        assert bug.normaliser_member == bug.normaliser_non_member == 9


def test_a_claim_that_depends_on_the_target_is_refused(monkeypatch):
    def train(member, generator, variant, want_epsilon=False):
        q = 0.1 if member else 0.2  # as if the sample rate followed the dataset's size
        return reports.Run(0.0, ((1.0, q, 10),), 10.0, 1.0 if want_epsilon else None)

    monkeypatch.setitem(reports.REPORTS, "819", (train, "none"))
    with pytest.raises(ValueError, match="different"):
        reports.audit_report("819", "report", 20)


def test_refusals():
    with pytest.raises(ValueError, match="report must be one of"):
        reports.audit_report("999", "report", 10)
    with pytest.raises(ValueError, match="variant must be one of"):
        reports.audit_report("819", "fixed", 10)
    with pytest.raises(ValueError, match="runs must be at least 2"):
        reports.audit_report("819", "report", 1)
