"""Exact float64 reference maths of the FFN and normalization pages (NumPy only).

Imports neither torch nor the rest of blocklab; ``nn`` and the claim checks compare against it.
The pages' own names and return keys are kept (``swiglu``, ``norm_statistics``,
``residual_paths``); anything but real numbers, or a float64 overflow, is a one-line InputError.
"""

from .activations import gelu, gelu_tanh, relu, relu_grad, sigmoid, silu, silu_grad
from .ffn import (
    equal_param_width,
    ffn_budget,
    llama_ffn_width,
    swiglu,
    swiglu_jacobian,
)
from .finite_diff import central_difference_jacobian
from .norms import (
    layernorm,
    layernorm_jacobian,
    norm_statistics,
    radial_action,
    rmsnorm,
    rmsnorm_jacobian,
    scale_invariance_gap,
    shift_scale_table,
)
from .residual import commutator, residual_paths
from .rope import ROPE_LAYOUTS, relative_position_gap, rope_frequencies, rope_rotate, rope_score

__all__ = ["ROPE_LAYOUTS", "central_difference_jacobian", "commutator", "equal_param_width",
           "ffn_budget", "gelu", "gelu_tanh", "layernorm", "layernorm_jacobian", "llama_ffn_width",
           "norm_statistics", "radial_action", "relative_position_gap", "relu", "relu_grad",
           "residual_paths", "rmsnorm", "rmsnorm_jacobian", "rope_frequencies", "rope_rotate",
           "rope_score", "scale_invariance_gap", "shift_scale_table", "sigmoid", "silu",
           "silu_grad", "swiglu", "swiglu_jacobian"]
