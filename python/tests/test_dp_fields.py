"""The Python package checks DP fields through the binding's one validation
(`dpaudit_accounting::dp_fields`, `_dpaudit.check_dp_field`), not a copy of
its rules (issue 41): each refusal is the validator's message under the
caller's keyword. The canary harnesses' refusals: tests/torch/test_canary_dp_fields.py."""

import math

import pytest

from dpaudit import _dpaudit


@pytest.mark.parametrize(
    ("field", "context", "admitted", "refused"),
    [
        ("noise_multiplier", "training", [0.0, 5e-324, 1.0], [-1.0, math.nan, math.inf]),
        ("noise_multiplier", "claimed", [5e-324, 1.0], [0.0, -1.0, math.nan, math.inf]),
        ("noise_multiplier", "calibrated", [0.0], [5e-324, 1.0, -1.0, math.nan]),
        ("max_grad_norm", "training", [5e-324, 1.0], [0.0, -1.0, math.nan, math.inf]),
        ("sample_rate", "claimed", [5e-324, 1.0], [0.0, 1.5, math.nan]),
        ("delta", "claimed", [1e-5], [0.0, 1.0, math.nan]),
        ("target_epsilon", "calibrated", [5e-324, 8.0], [0.0, -1.0, math.inf, math.nan]),
    ],
)
def test_the_binding_states_the_rust_rules(field, context, admitted, refused):
    for v in admitted:
        assert _dpaudit.check_dp_field(v, field=field, context=context) == v
    for v in refused:
        with pytest.raises(ValueError, match=f"^{field} must be "):
            _dpaudit.check_dp_field(v, field=field, context=context)
    with pytest.raises(ValueError, match="^sigma must be"):
        _dpaudit.check_dp_field(refused[0], field=field, context=context, name="sigma")


def test_unknown_fields_and_contexts_are_refused_naming_the_choices():
    with pytest.raises(ValueError, match="field must be one of noise_multiplier, max_grad_norm"):
        _dpaudit.check_dp_field(1.0, field="clip", context="training")
    with pytest.raises(ValueError, match="context must be one of training, claimed, calibrated"):
        _dpaudit.check_dp_field(1.0, field="delta", context="audit")
