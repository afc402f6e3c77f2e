"""blocklab.verify: every check passes, and a broken reference is caught."""

import numpy as np
import pytest

from blocklab import verify


def test_every_check_passes():
    checks = verify.run_checks()
    failed = [c for c in checks if not c.passed]
    assert not failed, failed
    assert len(checks) >= 50


def test_claims_c01_to_c09_are_all_covered():
    claims = {c.claim for c in verify.run_checks(["worked"])}
    assert {f"C0{i}" for i in (1, 2, 3, 4, 5, 6, 8, 9)} <= claims
    assert "C07" in {c.claim for c in verify.run_checks(["shift-scale"])}


def test_groups_and_unknown_group():
    assert {c.group for c in verify.run_checks(["rope"])} == {"RoPE"}
    with pytest.raises(ValueError, match=r"unknown check group 'nope'; allowed: \["):
        verify.run_checks(["nope"])


def test_wrong_jacobian_is_reported_as_failure(monkeypatch):
    # A sign error in the analytic Jacobian must surface as a failed check.
    real = verify.ref.rmsnorm_jacobian
    monkeypatch.setattr(verify.ref, "rmsnorm_jacobian", lambda x, eps=1e-6, gain=None:
                        -real(x, eps, gain))
    failed = [c for c in verify.run_checks(["jacobians"]) if not c.passed]
    assert any("RMSNorm" in c.name for c in failed)


def test_missing_error_is_reported_as_failure(monkeypatch):
    monkeypatch.setattr(verify.ref, "norm_statistics",
                        lambda x, eps=1e-6: {"rmsnorm": np.zeros(len(x))})
    check = verify._raises("g", "n", "C08", lambda: verify.ref.norm_statistics([2.0, 2.0], 0.0),
                           "denominator")
    assert not check.passed and check.got == "no error"


def test_layernorm_scale_gap_closed_form():
    x = np.array([1.0, 3.0, -2.0, 0.5])
    eps, a = 1e-3, 3.0
    ln = verify.ref.layernorm
    direct = float(np.max(np.abs(ln(a * x, eps) - ln(x, eps))))
    assert verify._layernorm_scale_gap(x, a, eps) == pytest.approx(direct, rel=1e-12)


def test_rope_gap_by_shift_is_the_reference_gap_at_each_shift():
    import numpy as np

    from blocklab import reference as ref
    from blocklab.verify import ROPE_SHIFTS, rope_gap_by_shift

    gaps = rope_gap_by_shift()
    assert list(gaps) == [str(s) for s in ROPE_SHIFTS]
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=64), rng.normal(size=64)
    for s in ROPE_SHIFTS:
        want = max(ref.relative_position_gap(q, k, 10, 3, s, layout=layout)
                   for layout in ref.ROPE_LAYOUTS)
        assert gaps[str(s)] == want and 0 <= want < 1e-6
