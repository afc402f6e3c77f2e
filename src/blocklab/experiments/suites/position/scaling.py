"""RoPE scaling read off a trained RoPE model: each kind's `rope_scaling` dict, YaRN's β
re-derived for our training length, and the model copied with a scaling applied."""

from __future__ import annotations

import math

from blocklab.experiments.suites.position.sizes import THETA

# YaRN's beta_fast = 32, beta_slow = 1 were tuned on Llama 2: 4096 tokens, theta 10^4.
YARN_REFERENCE_LENGTH = 4096
YARN_PAPER_BETAS = (32.0, 1.0)
SCALINGS = ("linear", "ntk", "dynamic", "yarn", "yarn-rescaled")
# A RoPE model's `ModelConfig.rope_scaling`: "rope_type", "factor" and, per type, the original
# length and YaRN's β.
RopeScaling = dict[str, str | int | float]


def yarn_betas(L: int, reference_length: int = YARN_REFERENCE_LENGTH,
               betas: tuple[float, float] = YARN_PAPER_BETAS) -> tuple[float, float]:
    """(beta_fast, beta_slow) for training length L, keeping YaRN's split of the spectrum.

    YaRN ramps channel pair i by the number of turns it completes within the original length,
    L / (2π θ^(2i/r)). At a fixed fraction f = 2i/r of the rotary spectrum that count is
    L / (2π θ^f): proportional to L, whatever head_dim is. β_fast = 32 and β_slow = 1 were
    tuned at L = 4096 with θ = 10⁴ (Llama 2), where pairs below 33% of the spectrum are kept,
    pairs above 70% are interpolated and the rest are ramped. Scaling both β by
    L / reference_length keeps those fractions at our L (and at our θ, which is the same).
    """
    scale = L / reference_length
    return betas[0] * scale, betas[1] * scale


def yarn_ramp_pairs(L: int, rotary_dim: int, beta_fast: float, beta_slow: float,
                    theta: float = THETA) -> tuple[int, int]:
    """The (low, high) pair indices of YaRN's ramp, as `blocklab.nn.rope_scaling.yarn_rope`
    computes them (truncated): pairs < low keep their frequency, pairs >= high are divided by
    the factor."""
    def pair_for_turns(turns: float) -> float:
        return rotary_dim * math.log(L / (turns * 2 * math.pi)) / (2 * math.log(theta))

    low = max(math.floor(pair_for_turns(beta_fast)), 0)
    high = min(math.ceil(pair_for_turns(beta_slow)), rotary_dim - 1)
    return low, high


def scaling_config(kind: str, factor: float, L: int) -> RopeScaling:
    """The rope_scaling dict of `kind` at `factor` for a model trained at L."""
    if kind in ("linear", "ntk"):
        return {"rope_type": kind, "factor": float(factor)}
    scaling: RopeScaling = {"rope_type": "yarn" if kind.startswith("yarn") else kind,
                            "factor": float(factor), "original_max_position_embeddings": L}
    if kind == "yarn-rescaled":
        scaling["beta_fast"], scaling["beta_slow"] = yarn_betas(L)
    return scaling


def with_rope_scaling(model, scaling: RopeScaling | None):
    """A copy of a trained RoPE `DecoderLM` with `scaling`: same weights, backend, precision and
    device, new rotary table."""
    from blocklab.nn import DecoderLM

    scaled = DecoderLM(model.config.replace(rope_scaling=scaling), backend=model.backend,
                       precision=model.precision)
    scaled.load_state_dict(model.state_dict())
    return scaled.to(next(model.parameters()).device).eval()

