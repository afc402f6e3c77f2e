"""A decoder-only language model built from one `ModelConfig`.

    ids ── embed_tokens (· sqrt(d_model)) (+ absolute positions) (── embed_norm)
        ── layers[0] … layers[n_layers − 1] ── norm ── lm_head (── softcap) ── logits

The `build_*` functions are the one place where config fields become modules.

Shape legend: B: batch, T: tokens in this call, V: vocab_size, d_model: width.
"""

from __future__ import annotations

import contextlib
import logging
import math
import numbers
import time

import torch
from torch import Tensor, nn

from blocklab.checks import MAX_SIZE, shown_value
from blocklab.config import ModelConfig
from blocklab.errors import InputError, PositionsBeyondTable
from blocklab.nn import backends
from blocklab.nn.attention import Attention, KVCache
from blocklab.nn.block import Block
from blocklab.nn.ffn import build_ffn
from blocklab.nn.linear import Linear
from blocklab.nn.norm import RMSNorm, build_norm
from blocklab.nn.position import ALiBi, LearnedPositions, RotaryEmbedding, SinusoidalPositions
from blocklab.precision import Precision, check_precision

# Scaling variants that read the pre-training length; Hugging Face fills it in from
# max_position_embeddings when a config leaves it out (`standardize_rope_params`, and the
# dynamic variant reads max_position_embeddings directly).
_NEEDS_ORIGINAL_LENGTH = ("dynamic", "yarn", "llama3")
_log = logging.getLogger(__name__)
# The one place a `blocklab.precision.Precision` becomes a dtype (None: the parameters' own).
_DTYPES: dict[Precision, torch.dtype | None] = {"fp32": None, "bf16": torch.bfloat16}


# --- build: config -> modules -----------------------------------------------------------------
def _check_supported(cfg: ModelConfig) -> None:
    if not cfg.causal:
        raise InputError("ModelConfig.causal=False is not supported by DecoderLM (decoder only); "
                         "expected causal=True")
    if cfg.type_vocab_size:
        raise InputError(f"ModelConfig.type_vocab_size={cfg.type_vocab_size} is not supported "
                         "by DecoderLM (no token-type embeddings); expected 0")
    if cfg.pooler:
        raise InputError("ModelConfig.pooler=True is not supported by DecoderLM (no pooler); "
                         "expected False")
    if cfg.n_experts:
        raise InputError(f"ModelConfig.n_experts={cfg.n_experts}: MoE layers are counted by "
                         "blocklab.budget but not built by blocklab.nn; expected 0")
    if cfg.nope_every is not None:
        raise InputError(f"ModelConfig.nope_every={cfg.nope_every}: layers without RoPE are "
                         "counted by blocklab.budget but not built by blocklab.nn; expected None")


def build_norm_for(cfg: ModelConfig, dim: int | None = None, impl: str = "fast") -> nn.Module:
    """The config's norm over `dim` channels (d_model by default)."""
    return build_norm(cfg.norm, cfg.d_model if dim is None else dim, cfg.norm_eps,
                      bias=cfg.norm_bias, unit_offset=cfg.norm_unit_offset, cast=cfg.norm_cast,
                      impl=impl)


def build_attention(cfg: ModelConfig, packed_qkv: bool = False, impl: str = "fast",
                    layer: int = 0) -> Attention:
    """Layer `layer`'s attention (its window: `ModelConfig.attention_window`); `impl` is its
    QK-norms' backend."""
    q_norm = k_norm = None
    if cfg.qk_norm:  # per-head RMSNorm over head_dim (Qwen3), whatever the block norm is
        q_norm, k_norm = (RMSNorm(cfg.head_dim, eps=cfg.norm_eps, unit_offset=cfg.norm_unit_offset,
                                  cast=cfg.norm_cast, impl=impl) for _ in "qk")
    return Attention(cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim,
                     qkv_bias=cfg.attn_bias, out_bias=cfg.attn_out_bias, q_norm=q_norm,
                     k_norm=k_norm, rope_layout=cfg.rope_layout, scale=cfg.attn_scale,
                     logit_softcap=cfg.attn_logit_softcap,
                     sliding_window=cfg.attention_window(layer), packed_qkv=packed_qkv)


def build_block(cfg: ModelConfig, packed_gate_up: bool = False, packed_qkv: bool = False,
                impl: str = "fast", layer: int = 0) -> Block:
    """Decoder layer `layer`. `packed_gate_up` stores a gated FFN's gate and up projections as
    one matrix, `packed_qkv` the q, k, v projections; `impl` is its norms' backend."""
    sandwich = cfg.placement == "sandwich"
    return Block(
        build_attention(cfg, packed_qkv, impl, layer),
        build_ffn(cfg.ffn, cfg.d_model, cfg.d_ff, bias=cfg.ffn_bias,
                  packed=packed_gate_up and cfg.gated),
        build_norm_for(cfg, impl=impl),
        build_norm_for(cfg, impl=impl),
        placement=cfg.placement,
        attn_post_norm=build_norm_for(cfg, impl=impl) if sandwich else None,
        ffn_post_norm=build_norm_for(cfg, impl=impl) if sandwich else None,
        residual_scale=cfg.residual_scale,
    )


def build_position(cfg: ModelConfig) -> nn.Module | None:
    """The module for `cfg.position`; None for NoPE."""
    if cfg.position == "learned":
        return LearnedPositions(cfg.max_seq_len, cfg.d_model)
    if cfg.position == "sinusoidal":
        return SinusoidalPositions(cfg.d_model)
    if cfg.position == "alibi":
        return ALiBi(cfg.n_heads)
    if cfg.position == "rope":
        scaling = None if cfg.rope_scaling is None else dict(cfg.rope_scaling)
        if scaling is not None and scaling["rope_type"] in _NEEDS_ORIGINAL_LENGTH:
            scaling.setdefault("original_max_position_embeddings", cfg.max_seq_len)
        return RotaryEmbedding(cfg.head_dim, theta=cfg.rope_theta,
                               partial_rotary_factor=cfg.partial_rotary_factor,
                               layout=cfg.rope_layout, scaling=scaling,
                               max_seq_len=cfg.max_seq_len)
    return None


# Integer dtypes ids may come in; nn.Embedding takes int32 and int64 only, so the narrower ones
# are widened (losslessly). The unsigned 16-64-bit types have too few kernels to be taken.
_ID_DTYPES = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)


@torch.compiler.disable  # runs eagerly under torch.compile too: a bad id is never an index error
def _check_ids(input_ids: Tensor, vocab_size: int, device: torch.device | None = None,
               name: str = "input_ids") -> None:
    """Token ids must be an integer [B, T] tensor in [0, vocab_size), on `device` when given:
    nn.Embedding would raise a bare IndexError on CPU and a process-ending assert on CUDA."""
    if not isinstance(input_ids, Tensor):
        raise InputError(f"{name} must be a tensor, got {type(input_ids).__name__}")
    dtype = input_ids.dtype
    if dtype not in _ID_DTYPES:
        raise InputError(f"{name} must be an integer tensor, got dtype {dtype}; allowed: "
                         f"{[str(d).removeprefix('torch.') for d in _ID_DTYPES]}")
    if input_ids.dim() != 2:
        raise InputError(f"{name} must be [B, T], got shape {tuple(input_ids.shape)}")
    if device is not None and input_ids.device != device:
        raise InputError(f"{name} is on {input_ids.device}, the model on {device}; expected "
                         "the model's device")
    if input_ids.numel() == 0:
        return
    lo, hi = torch.stack(torch.aminmax(input_ids)).tolist()
    if lo < 0 or hi >= vocab_size:
        bad = lo if lo < 0 else hi
        raise InputError(f"{name} holds token id {bad}; allowed ids are in [0, {vocab_size}) "
                         f"(vocab_size={vocab_size})")


# --- the model ----------------------------------------------------------------------------------
class DecoderLM(nn.Module):
    """Decoder-only Transformer language model.

    Args:
        config: the model; options a decoder cannot honour raise an InputError naming the field.
        packed_gate_up, packed_qkv: hold gate and up (q, k, v) as one `gate_up_proj`
            (`qkv_proj`): the same function in fewer matmuls (`interop.save_hf` splits them).
        backend: "fast", "reference" or "compiled" (`blocklab.nn.backends`; compiled in place,
            same state dict, graphs built by the first call or `warm_up`).
        precision: "fp32" computes in the parameters' dtype; "bf16" computes activations and
            matmuls in bfloat16 with float32 parameters, while norm statistics, RoPE angles,
            the softmax and the logits stay float32.

    Weights N(0, 0.02) (Hugging Face Llama's `initializer_range`), biases 0, norm gains 1.

    `forward(input_ids, positions=None, cache=None)`: input_ids [B, T]; positions [T] or [B, T]
    (default cache.length + arange(T)); cache a `KVCache`, extended in place. Returns logits
    [B, T, V] in float32 (float64 for a float64 model).
    """

    def __init__(self, config: ModelConfig, *, backend: str = "fast", precision: Precision = "fp32",
                 packed_gate_up: bool = False, packed_qkv: bool = False) -> None:
        super().__init__()
        _check_supported(config)
        self.backend = backends.check_backend(backend)
        self.precision = check_precision(precision)
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.d_model)
        self.position = build_position(config)
        self.embed_norm = build_norm_for(config, impl=backend) if config.embed_norm else None
        self.layers = nn.ModuleList(build_block(config, packed_gate_up, packed_qkv, backend, i)
                                    for i in range(config.n_layers))
        self.norm = build_norm_for(config, impl=backend) if config.final_norm else nn.Identity()
        self.lm_head = Linear(config.d_model, config.vocab_size, bias=False)
        self.apply(self._init_weights)
        if config.tie_embeddings:
            self.lm_head.weight = self.embed_tokens.weight
        if backend == "compiled":
            self.compile()  # in place: the state dict keeps its keys

    def warm_up(self, input_ids: Tensor, backward: bool = True) -> float:
        """One forward (and backward) on input_ids [B, T], so torch.compile builds its graphs
        before the first timed step; returns and logs its wall seconds. Gradients are kept."""
        grads = {p: p.grad for p in self.parameters()}
        for p in grads:
            p.grad = None  # backward would otherwise add into existing gradients in place
        tick = time.perf_counter()
        with torch.set_grad_enabled(backward):
            logits = self(input_ids)
            if backward:
                logits.float().sum().backward()
        seconds = time.perf_counter() - tick
        for p, grad in grads.items():
            p.grad = grad
        _log.info("DecoderLM warm-up (%s): %.2f s for input %s", self.backend, seconds,
                  tuple(input_ids.shape))
        return seconds

    def compute_dtype(self) -> torch.dtype:
        """bfloat16 under precision "bf16", else the embedding's dtype."""
        return _DTYPES[self.precision] or self.embed_tokens.weight.dtype

    def backends(self) -> dict[str, str]:
        """op -> what computes it: "rms_norm" -> `RMSNorm.runs` (comma-joined where they
        differ); "attention" -> "sdpa", or "math" (the explicit softmax softcapping needs)."""
        norms = {m.runs for m in self.modules() if isinstance(m, RMSNorm)}
        found = {"rms_norm": ", ".join(sorted(norms))} if norms else {}
        found["attention"] = "sdpa" if self.config.attn_logit_softcap is None else "math"
        return found

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)

    def forward(self, input_ids: Tensor, positions: Tensor | None = None,
                cache: KVCache | None = None) -> Tensor:
        cfg = self.config
        _check_ids(input_ids, cfg.vocab_size, self.embed_tokens.weight.device)
        if input_ids.dtype not in (torch.int64, torch.int32):
            input_ids = input_ids.long()  # what nn.Embedding takes
        B, T = input_ids.shape
        past = 0 if cache is None else cache.length
        known = {}  # positions we make ourselves need no check (and no read-back)
        if positions is None:
            positions = torch.arange(past, past + T, device=input_ids.device)  # [T]
            known = {"max_position": past + T - 1}

        x = self.embed_tokens(input_ids)  # (B, T, d_model)
        if cfg.embed_scale:
            # sqrt(d_model) rounded to the activation dtype first, as Gemma does.
            x = x * torch.tensor(math.sqrt(cfg.d_model), dtype=x.dtype)
        if cfg.position in ("learned", "sinusoidal"):
            x = x + self.position(positions, **known).to(x.dtype)
        compute = _DTYPES[self.precision]
        if compute is not None and x.dtype != compute:
            x = x.to(compute)  # bfloat16 from here on; every Linear follows its input's dtype
        if self.embed_norm is not None:
            x = self.embed_norm(x)

        # Computed once here and shared by every layer.
        rope = self.position(positions, **known) if cfg.position == "rope" else None  # 2×[T, r]
        bias = None
        if cfg.position == "alibi":
            k_positions = positions
            if cache is not None:
                if cache.positions is not None:
                    k_positions = torch.cat((cache.positions, positions), dim=-1)
                cache.positions = k_positions
            bias = self.position(positions, k_positions, **known)  # (1 or B, H, T, T_k)

        for i, layer in enumerate(self.layers):
            x = layer(x, rope=rope, bias=bias, cache=None if cache is None else cache[i])
        logits = self.lm_head(self.norm(x))  # (B, T, V)
        if cfg.final_logit_softcap is not None:
            cap = cfg.final_logit_softcap
            logits = cap * torch.tanh(logits / cap)
        return logits.float() if logits.dtype != torch.float64 else logits

    def _check_generate(self, input_ids: Tensor, max_new_tokens: int, temperature: float,
                        generator: torch.Generator | None, use_cache: bool) -> tuple[int, float]:
        """(max_new_tokens, temperature) as int and float, or an InputError naming the first
        argument not allowed."""
        prompt = "input_ids (the prompt)"
        device = self.embed_tokens.weight.device
        _check_ids(input_ids, self.config.vocab_size, device, prompt)
        B, T = input_ids.shape
        if B == 0 or T == 0:
            raise InputError(f"{prompt} is empty, shape {(B, T)}; expected at least one "
                             "sequence of at least one token")
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, numbers.Integral) \
                or not 0 <= max_new_tokens <= MAX_SIZE:
            raise InputError(f"max_new_tokens={shown_value(max_new_tokens)} is not allowed; "
                             f"expected an integer in [0, {MAX_SIZE}]")
        value = math.nan  # a bool or a string that looks like a number is not one
        if isinstance(temperature, numbers.Real) and not isinstance(temperature, bool):
            with contextlib.suppress(OverflowError):  # an int beyond float range
                value = float(temperature)
        if not (math.isfinite(value) and value >= 0):
            raise InputError(f"temperature={shown_value(temperature)} is not allowed; expected a "
                             "finite number >= 0 (0: greedy)")
        if generator is not None and not isinstance(generator, torch.Generator):
            raise InputError(f"generator must be a torch.Generator or None, got "
                             f"{type(generator).__name__}")
        if generator is not None and value > 0 and generator.device.type != device.type:
            raise InputError(f"generator is on {generator.device}, the model on {device}; "
                             "expected a generator on the model's device")
        if not isinstance(use_cache, bool):
            raise InputError(f"use_cache={shown_value(use_cache)} is not allowed; expected True "
                             "or False")
        if isinstance(self.position, LearnedPositions):
            # The last new token is only predicted, never fed back: the positions read are
            # 0 … T + max_new_tokens − 2.
            rows = self.position.max_seq_len
            if T > rows:
                raise PositionsBeyondTable(
                    f"{prompt} has {T} tokens, more than the learned position table's "
                    f"max_seq_len={rows} rows; a learned table cannot extrapolate")
            if T + max_new_tokens - 1 > rows:
                raise PositionsBeyondTable(
                    f"max_new_tokens={max_new_tokens} after a {T}-token prompt reads position "
                    f"{T + max_new_tokens - 2}, past the learned position table of "
                    f"max_seq_len={rows} (positions 0 to {rows - 1}); at most "
                    f"{rows - T + 1} new tokens fit after this prompt")
        return int(max_new_tokens), value

    @torch.no_grad()
    def generate(self, input_ids: Tensor, max_new_tokens: int, temperature: float = 0.0,
                 generator: torch.Generator | None = None, use_cache: bool = True) -> Tensor:
        """Append `max_new_tokens` tokens to `input_ids` [B, T]; returns [B, T + max_new_tokens].

        temperature 0 is greedy; > 0 samples softmax(logits / temperature) with `generator`.
        Without `use_cache` every step recomputes the whole sequence (same tokens, slower).
        Every argument is checked before any work; logits that are not finite raise an
        InputError after the last step instead of deciding tokens.
        """
        max_new_tokens, temperature = self._check_generate(input_ids, max_new_tokens,
                                                           temperature, generator, use_cache)
        if max_new_tokens == 0:
            return input_ids.clone()
        tokens = input_ids
        cache = (KVCache(self.config.n_layers, max_len=input_ids.shape[1] + max_new_tokens)
                 if use_cache else None)
        step_input = input_ids
        finite = []  # per step, read back once at the end: no device sync inside the loop
        for _ in range(max_new_tokens):
            logits = self(step_input if use_cache else tokens, cache=cache)[:, -1]  # (B, V)
            finite.append(torch.isfinite(logits).all())
            if temperature == 0:
                next_token = logits.argmax(dim=-1, keepdim=True)  # (B, 1)
            else:
                # Shifted by the row max first (softmax is shift-invariant) and divided in
                # float64, where every temperature > 0 is > 0: a tiny one then sends every other
                # logit to −inf instead of overflowing to inf − inf (or 0 / 0 in float32).
                shifted = (logits - logits.amax(dim=-1, keepdim=True)).double()  # (B, V)
                probs = torch.softmax(shifted / temperature, dim=-1)  # (B, V)
                # NaN probabilities are a device-side assert in CUDA's multinomial, which ends
                # the process; such rows draw from uniform weights and are reported below.
                probs = torch.where(torch.isfinite(probs).all(-1, keepdim=True), probs, 1.0)
                next_token = torch.multinomial(probs, 1, generator=generator)
            tokens = torch.cat((tokens, next_token), dim=1)
            step_input = next_token
        bad = (~torch.stack(finite)).nonzero().flatten().tolist()
        if bad:
            raise InputError(f"generate: the model's logits are not finite (NaN or inf) at "
                             f"{len(bad)} of {max_new_tokens} steps, first at step {bad[0]}; "
                             "its weights or activations hold NaN or inf, so no token it "
                             "picks means anything")
        return tokens
