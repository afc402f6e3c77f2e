"""SwiGLU for one token, its Jacobian, and parameter/activation budgets of plain vs gated FFNs.

Matrices are stored ``[out, in]`` and vectors are columns, as on the page::

          x [d]
        /       \\
    W_g x       W_u x          gate, up: [m]
      |            |
    SiLU(g)  (*)   u           hidden h = SiLU(g) (*) u: [m]   ((*) = elementwise product)
           \\     /
            W_d h              output y: [d]

Shape legend: d = hidden width (``d_model``), m = intermediate width (``d_ff``), B = batch,
T = sequence length.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from blocklab.checks import MAX_SIZE
from blocklab.checks import shown_value as shown
from blocklab.errors import InputError

from ._validate import as_matrix, as_vector, check_overflow, entries
from .activations import silu, silu_grad


def _check_swiglu_inputs(x, gate_matrix, up_matrix, down_matrix):
    """Validate and convert the SwiGLU inputs; return ``x, W_g, W_u, W_d`` as float64."""
    x = as_vector(x, "x")
    w_g = as_matrix(gate_matrix, "gate_matrix")
    w_u = as_matrix(up_matrix, "up_matrix")
    w_d = as_matrix(down_matrix, "down_matrix")
    d = x.shape[0]
    m = w_g.shape[0]
    if w_g.shape[1] != d:
        raise InputError(f"gate_matrix has shape {w_g.shape}; its input width must equal "
                         f"len(x) = {d}")
    if w_u.shape != w_g.shape:
        raise InputError(f"branch widths differ: up_matrix has shape {w_u.shape}, gate_matrix "
                         f"has shape {w_g.shape}; both must be [m, d] = [{m}, {d}]")
    if w_d.shape[0] != d:
        raise InputError(f"down_matrix has shape {w_d.shape}; its output width must equal "
                         f"len(x) = {d}")
    if w_d.shape[1] != m:
        raise InputError(f"down_matrix has shape {w_d.shape}; its input width must equal the "
                         f"branch width m = {m}")
    return x, w_g, w_u, w_d


def swiglu(x, gate_matrix, up_matrix, down_matrix) -> dict:
    """Bias-free SwiGLU of one token: ``y = W_d (SiLU(W_g x) (*) (W_u x))``; x: [d],
    W_g, W_u: [m, d], W_d: [d, m].

    Returns ``gate`` g = W_g x [m], ``up`` u = W_u x [m], ``hidden`` h = SiLU(g) (*) u [m],
    ``output`` y = W_d h [d]; ``parameters`` = 3 d m and ``hidden_elements`` = m (ints).
    """
    x, w_g, w_u, w_d = _check_swiglu_inputs(x, gate_matrix, up_matrix, down_matrix)
    with np.errstate(over="ignore", invalid="ignore"):
        gate = w_g @ x
        up = w_u @ x
        hidden = silu(gate) * up
        output = w_d @ hidden
    check_overflow("swiglu", {"gate = W_g x": gate, "up = W_u x": up,
                              "hidden = SiLU(gate) (*) up": hidden, "output = W_d hidden": output},
                   entries(x, "matrix", w_g, w_u, w_d))
    d, m = x.shape[0], gate.shape[0]
    return {
        "gate": gate,
        "up": up,
        "hidden": hidden,
        "output": output,
        "parameters": 3 * d * m,
        "hidden_elements": m,
    }


def swiglu_jacobian(x, gate_matrix, up_matrix, down_matrix) -> np.ndarray:
    """Analytic Jacobian ``dy/dx`` of :func:`swiglu`, [d, d].

    By the product rule on h = SiLU(g) (*) u with g = W_g x, u = W_u x::

        J = W_d diag(SiLU'(g) (*) u) W_g + W_d diag(SiLU(g)) W_u

    Same arguments and errors as :func:`swiglu`.
    """
    x, w_g, w_u, w_d = _check_swiglu_inputs(x, gate_matrix, up_matrix, down_matrix)
    with np.errstate(over="ignore", invalid="ignore"):
        gate = w_g @ x
        up = w_u @ x
        # diag(v) @ W is v[:, None] * W: scale row i of W by v_i.
        dh_dx = (silu_grad(gate) * up)[:, None] * w_g + silu(gate)[:, None] * w_u  # [m, d]
        jacobian = w_d @ dh_dx
    check_overflow("swiglu_jacobian", {"gate = W_g x": gate, "up = W_u x": up,
                                       "dh/dx": dh_dx, "the Jacobian W_d dh/dx": jacobian},
                   entries(x, "matrix", w_g, w_u, w_d))
    return jacobian


def _positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise InputError(f"{name} must be a positive integer, got {shown(value)}")
    if value > MAX_SIZE:
        raise InputError(f"{name} must be a positive integer at most 2**53 = {MAX_SIZE} (beyond "
                         f"it sizes are not exact in float64), got {shown(value)}")
    return int(value)


def _flag(value, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def ffn_budget(d: int, m: int, batch: int, seq_len: int, gated: bool, bias: bool = False) -> dict:
    """Parameter and intermediate-activation counts of one FFN, plain or gated.

    Plain ``W_2 phi(W_1 x)`` holds two matrices (W_1: [m, d], W_2: [d, m]); gated (SwiGLU) adds a
    third [m, d] input projection::

        matrix_params = 2 d m (plain) or 3 d m (gated)
        bias_params   = m + d (plain) or 2 m + d (gated); 0 if not bias
        branch_elements = B T m: one [B, T, m] intermediate branch (grows with B and T; the
                          parameters do not)
        intermediate_elements = branches * branch_elements, branches = 1 (plain) or 2 (gated)

    Counts, not peak memory; exact Python ints: ``matrix_params, bias_params, total_params,
    branch_elements, branches, intermediate_elements``.
    """
    d = _positive_int(d, "d")
    m = _positive_int(m, "m")
    batch = _positive_int(batch, "batch")
    seq_len = _positive_int(seq_len, "seq_len")
    gated = _flag(gated, "gated")
    bias = _flag(bias, "bias")
    branches = 2 if gated else 1
    matrix_params = (branches + 1) * d * m
    bias_params = (branches * m + d) if bias else 0
    branch_elements = batch * seq_len * m
    return {
        "matrix_params": matrix_params,
        "bias_params": bias_params,
        "total_params": matrix_params + bias_params,
        "branch_elements": branch_elements,
        "branches": branches,
        "intermediate_elements": branches * branch_elements,
    }


def equal_param_width(m0: int, multiple_of: int = 1) -> int:
    """Gated width whose 3 d m matrix parameters match a plain FFN of width ``m0`` (2 d m0).

    ``3 d m = 2 d m0`` gives ``m = 2 m0 / 3``, rounded UP to a multiple of ``multiple_of``
    (integer arithmetic, exact at any size).
    """
    m0 = _positive_int(m0, "m0")
    multiple_of = _positive_int(multiple_of, "multiple_of")
    return -(-2 * m0 // (3 * multiple_of)) * multiple_of


def llama_ffn_width(d: int, multiple_of: int = 256, ffn_dim_multiplier: float | None = None) -> int:
    """SwiGLU width by Meta's rule in ``FeedForward.__init__`` of the Llama reference code.

    ``hidden = 4 d``; ``hidden = int(2 hidden / 3)``; if a multiplier is given,
    ``hidden = int(multiplier * hidden)``; then round up to a multiple of ``multiple_of``.
    Its float steps and truncations are kept, so d = 4096 gives 11008 (Llama 2 7B) and 14336
    (Llama 3 8B: multiplier 1.3, multiple_of 1024).
    https://github.com/meta-llama/llama3/blob/main/llama/model.py
    """
    d = _positive_int(d, "d")
    multiple_of = _positive_int(multiple_of, "multiple_of")
    hidden = 4 * d
    hidden = int(2 * hidden / 3)
    if ffn_dim_multiplier is not None:
        valid = (isinstance(ffn_dim_multiplier, numbers.Real)
                 and not isinstance(ffn_dim_multiplier, bool)
                 and math.isfinite(ffn_dim_multiplier) and ffn_dim_multiplier > 0)
        if not valid:
            raise InputError(f"ffn_dim_multiplier must be a positive real number or None, "
                             f"got {ffn_dim_multiplier!r}")
        scaled = ffn_dim_multiplier * hidden
        if not scaled <= MAX_SIZE:  # inf, or a width no config allows
            raise InputError(f"ffn_dim_multiplier={ffn_dim_multiplier!r} makes the width "
                             f"{scaled:g} for d={d}, beyond 2**53 = {MAX_SIZE}")
        hidden = int(scaled)
    if hidden < 1:
        raise InputError(f"ffn_dim_multiplier={ffn_dim_multiplier!r} leaves no intermediate "
                         f"width for d={d}")
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)
