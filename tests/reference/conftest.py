"""Shared checker for analytic-vs-numerical Jacobians."""

import numpy as np
import pytest

# Central differences with the default step h ~ cbrt(eps_mach) have error of order
# eps_mach^(2/3) ~ 4e-11 times the scale of f and its third derivative. The strategies keep
# inputs bounded and denominators (s, sigma) >= 0.5, so that error stays below ~1e-9 relative
# to max|J|. rtol 1e-6 / atol 1e-7 * max(1, max|J|) leaves a margin of 100x or more, while a
# wrong sign, factor or transpose in an analytic formula moves entries by O(max|J|).
JAC_RTOL = 1e-6
JAC_ATOL = 1e-7


@pytest.fixture(scope="session")
def assert_jacobian_close():
    def check(analytic, numeric):
        scale = max(1.0, float(np.max(np.abs(analytic))))
        np.testing.assert_allclose(analytic, numeric, rtol=JAC_RTOL, atol=JAC_ATOL * scale)

    return check
