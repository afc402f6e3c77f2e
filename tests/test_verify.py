"""blocklab.verify: every check passes, and a broken reference is caught."""

import numpy as np
import pytest

from blocklab import verify
from blocklab.reference.norms import equality_tolerance


def test_every_check_passes_and_covers_c01_to_c09():
    checks = verify.run_checks()
    failed = [c for c in checks if not c.passed]
    assert not failed, failed
    assert len(checks) >= 50
    assert {f"C0{i}" for i in range(1, 10)} <= {c.claim for c in checks}
    assert len([c for c in checks if c.group == "shift/scale table"]) == 16
    assert {c.group for c in verify.run_checks(["rope"])} == {"RoPE"}
    with pytest.raises(ValueError, match=r"unknown check group 'nope'; allowed: \["):
        verify.run_checks(["nope"])


def test_missing_error_is_reported_as_failure():
    check = verify._raises("g", "n", "C08", lambda: None, "denominator")
    assert not check.passed and check.got == "no error"


def _shift_scale(eps: float, transform: str, norm: str) -> verify.Check:
    name = f"{norm} under {transform.replace('_', ' ')} (ε={eps:g})"
    return next(c for c in verify.run_checks(["shift-scale"]) if c.name == name)


def test_rmsnorm_at_eps_1e6_and_scale_minus_3_is_a_sign_flip_within_the_tolerance():
    """N(−3x) = −N(x) misses by ε's closed-form gap (2e-7), within the table's tolerance: a
    sign flip, its deviation and tolerance shown; at ε = 0 exact (rounding's 1e-12)."""
    x, eps = np.array([1.0, 3.0, -2.0, 0.5]), 1e-6
    check = _shift_scale(eps, "negative_scale", "rmsnorm")
    gap = verify.ref.scale_invariance_gap(x, 3.0, eps)
    direct = float(np.max(np.abs(verify.ref.rmsnorm(-3 * x, eps) + verify.ref.rmsnorm(x, eps))))
    tol = equality_tolerance(x, -3.0, eps)
    assert check.passed and check.got == f"Δ = {direct:.3e}, sign flip: yes"
    assert check.expected == f"sign flip within {tol:.1e}, off by {gap:.3e} (closed form)"
    assert 1e-7 < gap <= tol < 3e-7 and check.max_error <= 1e-12
    exact = _shift_scale(0.0, "negative_scale", "rmsnorm")
    assert exact.passed and exact.expected == "sign flip" and exact.tolerance == 1e-12
    assert exact.got.endswith("sign flip: yes") and exact.max_error <= 1e-12


def test_a_sign_flip_missed_beyond_the_tolerance_fails(monkeypatch):
    real = verify.ref.shift_scale_table

    def missed(*args, **kwargs):
        return [{**row, "sign_flip": False} if row["transform"] == "negative_scale" else row
                for row in real(*args, **kwargs)]

    monkeypatch.setattr(verify.ref, "shift_scale_table", missed)
    failed = {c.name for c in verify.run_checks(["shift-scale"]) if not c.passed}
    assert failed == {f"{norm} under negative scale (ε={eps:g})"
                      for norm in ("rmsnorm", "layernorm") for eps in (0.0, 1e-6)}


def test_rope_gap_by_shift_stays_at_rounding_at_every_shift():
    gaps = verify.rope_gap_by_shift()
    assert list(gaps) == ["1", "100", "10000", "1000000"]
    assert all(0 <= gap < 1e-6 for gap in gaps.values())
