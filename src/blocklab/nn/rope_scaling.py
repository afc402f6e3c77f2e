"""Inverse frequencies for rotary position embeddings (RoPE) and their scaled variants.

Plain RoPE (Su et al. 2021, https://arxiv.org/abs/2104.09864) rotates channel pair ``i`` of a
query or key at position ``m`` by the angle ``m * inv_freq[i]`` with

    inv_freq[i] = theta ** (-2i / rotary_dim),    i = 0 .. rotary_dim/2 - 1
    rotary_dim  = int(head_dim * partial_rotary_factor)

A scaling variant changes ``inv_freq`` (and may add an ``attention_factor`` multiplying cos and
sin) so that a model trained on ``original_max_position_embeddings`` tokens reads longer
sequences. Each is one pure function in ``ROPE_SCALINGS``:

    fn(head_dim, theta, partial_rotary_factor, scaling, seq_len=None)
        -> (inv_freq: [rotary_dim // 2] float32, attention_factor: float)

``scaling`` uses Hugging Face's ``rope_parameters`` keys; unknown keys raise. Frequencies use the
same float32 operations, in the same order, as transformers' ``ROPE_INIT_FUNCTIONS``, so the
angles are bit-identical; scalars (NTK base, YaRN ramp, temperature) are Python floats, as there.
"""

import math
from collections.abc import Callable, Mapping

import torch
from torch import Tensor

from blocklab.errors import InputError

RopeScalingFn = Callable[..., tuple[Tensor, float]]


def rotary_dim(head_dim: int, partial_rotary_factor: float = 1.0) -> int:
    """``int(head_dim * partial_rotary_factor)``, checked even; the other channels carry no
    position (GPT-NeoX, Phi)."""
    if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 2:
        raise InputError(f"head_dim must be an integer >= 2, got {head_dim!r}")
    if not 0.0 < partial_rotary_factor <= 1.0:
        raise InputError(f"partial_rotary_factor must be in (0, 1], got {partial_rotary_factor!r}")
    dim = int(head_dim * partial_rotary_factor)
    if dim < 2 or dim % 2:
        raise InputError(
            f"rotary_dim = int(head_dim * partial_rotary_factor) = {dim} must be even and >= 2 "
            f"(head_dim={head_dim}, partial_rotary_factor={partial_rotary_factor})"
        )
    return dim


def _plain_inv_freq(dim: int, theta: float) -> Tensor:
    """theta ** (-2i / dim) for i < dim/2, in float32, as Hugging Face computes it."""
    return 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))


def _check_keys(name: str, scaling: Mapping, theta: float, required: tuple[str, ...],
                optional: tuple[str, ...] = ()) -> None:
    """`scaling`'s keys against the variant's, then `theta`."""
    if not isinstance(scaling, Mapping):
        raise InputError(f"rope scaling must be a dict, got {type(scaling).__name__}")
    rope_type = scaling.get("rope_type", name)
    if rope_type != name:
        raise InputError(f"rope scaling {name!r} was given rope_type={rope_type!r}")
    allowed = ("rope_type", *required, *optional)
    for key in scaling:
        if key not in allowed:
            raise InputError(
                f"rope scaling {name!r} got unknown key {key!r}; allowed: {', '.join(allowed)}"
            )
    for key in required:
        if key not in scaling:
            raise InputError(
                f"rope scaling {name!r} needs key {key!r}; required: {', '.join(required)}"
            )
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not theta > 1.0:
        raise InputError(f"theta must be a number > 1, got {theta!r}")


def _number(name: str, scaling: Mapping, key: str, minimum: float, strict: bool = False) -> float:
    value = scaling[key]
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not is_number or value < minimum or (strict and value == minimum):
        bound = f"> {minimum}" if strict else f">= {minimum}"
        raise InputError(f"rope scaling {name!r}: {key} must be a number {bound}, got {value!r}")
    return float(value)


def _length(name: str, scaling: Mapping, key: str) -> int:
    value = scaling[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"rope scaling {name!r}: {key} must be an integer >= 1, got {value!r}")
    return value


def _ntk_dim(name: str, dim: int) -> int:
    # The NTK exponent dim / (dim - 2) needs at least two channel pairs.
    if dim < 4:
        raise InputError(f"rope scaling {name!r} needs rotary_dim >= 4, got {dim}")
    return dim


# --- the variants -----------------------------------------------------------------------------


def default_rope(head_dim: int, theta: float, partial_rotary_factor: float = 1.0,
                 scaling: Mapping | None = None,
                 seq_len: int | None = None) -> tuple[Tensor, float]:
    """Plain RoPE: ``inv_freq[i] = theta ** (-2i / rotary_dim)``, attention factor 1."""
    _check_keys("default", scaling or {}, theta, required=())
    return _plain_inv_freq(rotary_dim(head_dim, partial_rotary_factor), theta), 1.0


def linear_rope(head_dim: int, theta: float, partial_rotary_factor: float,
                scaling: Mapping, seq_len: int | None = None) -> tuple[Tensor, float]:
    """Position interpolation: ``inv_freq / factor`` (Chen et al. 2023, arXiv:2306.15595)."""
    # original_max_position_embeddings is informational here (Hugging Face configs carry it).
    _check_keys("linear", scaling, theta, required=("factor",),
                optional=("original_max_position_embeddings",))
    factor = _number("linear", scaling, "factor", 1.0)
    inv_freq = _plain_inv_freq(rotary_dim(head_dim, partial_rotary_factor), theta)
    return inv_freq / factor, 1.0


def ntk_rope(head_dim: int, theta: float, partial_rotary_factor: float,
             scaling: Mapping, seq_len: int | None = None) -> tuple[Tensor, float]:
    """Static NTK-aware scaling: plain RoPE with base ``theta * factor ** (d / (d - 2))``,
    d = rotary_dim, so the slowest pair is slowed by exactly ``factor`` and the fastest kept
    (bloc97, https://www.reddit.com/r/LocalLLaMA/comments/14lz7j5/). Not a transformers type."""
    # original_max_position_embeddings is informational here (Hugging Face configs carry it).
    _check_keys("ntk", scaling, theta, required=("factor",),
                optional=("original_max_position_embeddings",))
    factor = _number("ntk", scaling, "factor", 1.0)
    dim = _ntk_dim("ntk", rotary_dim(head_dim, partial_rotary_factor))
    base = theta * factor ** (dim / (dim - 2))
    return _plain_inv_freq(dim, base), 1.0


def dynamic_ntk_rope(head_dim: int, theta: float, partial_rotary_factor: float,
                     scaling: Mapping, seq_len: int | None = None) -> tuple[Tensor, float]:
    """Dynamic NTK scaling: the NTK base grows with the current sequence length.

    With ``L = max(seq_len, original)`` (``original = original_max_position_embeddings``):

        base = theta * (factor * L / original - (factor - 1)) ** (d / (d - 2))

    plain RoPE up to the original length (emozilla,
    https://www.reddit.com/r/LocalLLaMA/comments/14mrgpr/).
    """
    _check_keys("dynamic", scaling, theta,
                required=("factor", "original_max_position_embeddings"))
    factor = _number("dynamic", scaling, "factor", 1.0)
    original = _length("dynamic", scaling, "original_max_position_embeddings")
    dim = _ntk_dim("dynamic", rotary_dim(head_dim, partial_rotary_factor))
    if seq_len is not None and (isinstance(seq_len, bool) or not isinstance(seq_len, int)):
        raise InputError(f"seq_len must be an integer or None, got {seq_len!r}")
    length = original if seq_len is None else max(seq_len, original)
    base = theta * ((factor * length / original) - (factor - 1)) ** (dim / (dim - 2))
    return _plain_inv_freq(dim, base), 1.0


def _yarn_temperature(factor: float, mscale: float = 1.0) -> float:
    """YaRN's ``0.1 * mscale * ln(factor) + 1`` (1 when not extending)."""
    if factor <= 1:
        return 1.0
    return 0.1 * mscale * math.log(factor) + 1.0


def yarn_rope(head_dim: int, theta: float, partial_rotary_factor: float,
              scaling: Mapping, seq_len: int | None = None) -> tuple[Tensor, float]:
    """YaRN (Peng et al. 2023, arXiv:2309.00071): fast pairs kept, slow ones interpolated by
    ``factor``, a linear ramp between the pairs making ``beta_fast`` and ``beta_slow`` turns
    over ``original_max_position_embeddings``:

        d(r) = rotary_dim * ln(original / (2 pi r)) / (2 ln theta)
        low, high = d(beta_fast), d(beta_slow)     (floor / ceil when truncate)
        ramp[i] = clamp((i - low) / (high - low), 0, 1)
        inv_freq = inv_freq_plain / factor * ramp + inv_freq_plain * (1 - ramp)

    The attention factor multiplies cos and sin: ``attention_factor`` if given, else
    ``t(factor, mscale) / t(factor, mscale_all_dim)`` when both are non-zero (DeepSeek-V2/V3),
    else ``t(factor) = 0.1 ln(factor) + 1``. Defaults: beta_fast 32, beta_slow 1, truncate True.
    """
    _check_keys("yarn", scaling, theta, required=("factor", "original_max_position_embeddings"),
                optional=("attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim",
                          "truncate"))
    dim = rotary_dim(head_dim, partial_rotary_factor)
    factor = _number("yarn", scaling, "factor", 1.0)
    original = _length("yarn", scaling, "original_max_position_embeddings")
    # None means "the paper's default", as in Hugging Face configs that spell it out as null.
    defaults = {"beta_fast": 32.0, "beta_slow": 1.0}
    betas = {k: v if scaling.get(k) is None else scaling[k] for k, v in defaults.items()}
    beta_fast = _number("yarn", betas, "beta_fast", 0.0, strict=True)
    beta_slow = _number("yarn", betas, "beta_slow", 0.0, strict=True)
    if beta_fast <= beta_slow:
        raise InputError(
            f"rope scaling 'yarn': beta_fast must exceed beta_slow, got {beta_fast} <= {beta_slow}"
        )
    truncate = scaling.get("truncate", True)
    if not isinstance(truncate, bool):
        raise InputError(f"rope scaling 'yarn': truncate must be True or False, got {truncate!r}")

    attention_factor = scaling.get("attention_factor")
    if attention_factor is None:
        mscale, mscale_all_dim = scaling.get("mscale"), scaling.get("mscale_all_dim")
        if mscale and mscale_all_dim:
            attention_factor = _yarn_temperature(factor, mscale) / _yarn_temperature(
                factor, mscale_all_dim
            )
        else:
            attention_factor = _yarn_temperature(factor)
    else:
        attention_factor = _number("yarn", scaling, "attention_factor", 0.0, strict=True)

    def pair_index_for_turns(turns: float) -> float:
        return dim * math.log(original / (turns * 2 * math.pi)) / (2 * math.log(theta))

    low, high = pair_index_for_turns(beta_fast), pair_index_for_turns(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # avoid 0/0 in the ramp
    ramp = ((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)
    keep = 1 - ramp  # weight of the original (extrapolated) frequency

    wavelength_scale = theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    extrapolated = 1.0 / wavelength_scale
    interpolated = 1.0 / (factor * wavelength_scale)
    inv_freq = interpolated * (1 - keep) + extrapolated * keep
    return inv_freq, float(attention_factor)


def llama3_rope(head_dim: int, theta: float, partial_rotary_factor: float,
                scaling: Mapping, seq_len: int | None = None) -> tuple[Tensor, float]:
    """Llama 3.1 scaling, by wavelength ``w = 2 pi / inv_freq`` (Meta's reference code):

    - w < original / high_freq_factor: unchanged
    - w > original / low_freq_factor:  divided by ``factor``
    - in between, ``(1 - s) * inv_freq / factor + s * inv_freq`` with
      ``s = (original / w - low_freq_factor) / (high_freq_factor - low_freq_factor)``
    """
    _check_keys("llama3", scaling, theta,
                required=("factor", "low_freq_factor", "high_freq_factor",
                          "original_max_position_embeddings"))
    factor = _number("llama3", scaling, "factor", 1.0)
    low_freq_factor = _number("llama3", scaling, "low_freq_factor", 0.0, strict=True)
    high_freq_factor = _number("llama3", scaling, "high_freq_factor", 0.0, strict=True)
    if high_freq_factor <= low_freq_factor:
        raise InputError(
            "rope scaling 'llama3': high_freq_factor must exceed low_freq_factor, "
            f"got {high_freq_factor} <= {low_freq_factor}"
        )
    original = _length("llama3", scaling, "original_max_position_embeddings")

    inv_freq = _plain_inv_freq(rotary_dim(head_dim, partial_rotary_factor), theta)
    wavelength = 2 * math.pi / inv_freq
    longest_kept = original / high_freq_factor
    shortest_scaled = original / low_freq_factor

    scaled = torch.where(wavelength > shortest_scaled, inv_freq / factor, inv_freq)
    s = (original / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)
    blended = (1 - s) * scaled / factor + s * scaled
    in_between = (wavelength >= longest_kept) & (wavelength <= shortest_scaled)
    return torch.where(in_between, blended, scaled), 1.0


ROPE_SCALINGS: dict[str, RopeScalingFn] = {
    "default": default_rope,
    "linear": linear_rope,
    "dynamic": dynamic_ntk_rope,
    "yarn": yarn_rope,
    "llama3": llama3_rope,
    "ntk": ntk_rope,
}


def rope_type_of(scaling: Mapping | None) -> str:
    """The ``rope_type`` of a scaling dict (``"default"`` for None), one of ``ROPE_SCALINGS``."""
    if scaling is None:
        return "default"
    if not isinstance(scaling, Mapping):
        raise InputError(f"rope scaling must be a dict or None, got {type(scaling).__name__}")
    if "rope_type" not in scaling:
        raise InputError(
            f"rope scaling needs a 'rope_type' key; allowed: {', '.join(ROPE_SCALINGS)}"
        )
    name = scaling["rope_type"]
    if name not in ROPE_SCALINGS:
        raise InputError(f"unknown rope_type {name!r}; allowed: {', '.join(ROPE_SCALINGS)}")
    return name


def rope_frequencies(head_dim: int, theta: float = 10000.0, partial_rotary_factor: float = 1.0,
                     scaling: Mapping | None = None,
                     seq_len: int | None = None) -> tuple[Tensor, float]:
    """``(inv_freq [rotary_dim // 2] float32, attention_factor)`` of ``scaling``'s variant."""
    fn = ROPE_SCALINGS[rope_type_of(scaling)]
    return fn(head_dim, theta, partial_rotary_factor, scaling or {}, seq_len)
