"""Measuring int8 quantization of a `DecoderLM`: prefill and decode time per scheme, the roofline
bounds `blocklab.budget` gives for them, and what quantization costs in error and loss.

    schemes   (part, mode): nothing quantized, or the ffn / attention / all linear layers by
              torchao in "weight-only" or "dynamic" int8 (`blocklab.nn.quantize`)
    timing    every scheme is a quantized copy of the same random-weight model; a repeat runs
              every scheme once, in an order rotated by one each repeat (drift hits all alike):
              a prefill of T tokens per T (filling a KV cache), then `decode_steps` one-token
              steps on the cache of the first T (median of the steps)
    GEMMs     the speed-up k of a part's own linear layers at the prefill shape [T, d], timed
              alone (no attention kernel, norm or activation): the k of the Amdahl bound
    bounds    prefill: quantizing a part with FLOP share s whose GEMMs run k× faster speeds a
              prefill by at most 1 / (1 − s + s/k) (Amdahl); decode: a step that only moves
              bytes runs at most bytes_fp / bytes_q faster, every quantized weight read as
              1 byte instead of 4 (float32), the KV cache unchanged
    quality   a trained model's validation loss with each scheme (torchao, eager), and for
              SwiGLU the C33 comparison of gate/up/down quantized separately or merged

Speed-up = time(nothing quantized) / time(scheme), per repeat; > 1 is faster.
"""

from __future__ import annotations

import copy
import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from blocklab.budget import count_params, decode_flops, prefill_flops
from blocklab.budget.memory import decode_weight_params_read, kv_cache_bytes
from blocklab.config import ModelConfig
from blocklab.errors import InputError
from blocklab.experiments.suites.base import torch_threads
from blocklab.nn.attention import KVCache
from blocklab.nn.quantize import (
    MODES,
    SWIGLU_SCHEMES,
    part_of,
    quantize_model,
    swiglu_quantized_copy,
)

# The schemes timed, "none" first: every speed-up is against it.
SCHEMES: tuple[tuple[str, str], ...] = (("none", "none"),) + tuple(
    (part, mode) for mode in MODES for part in ("ffn", "attention", "all"))
FLOAT_BYTES = 4  # the timed models are float32
TIMING_VOCAB = 256  # a byte vocabulary: the head stays small, so the timings are the blocks'


def scheme_name(part: str, mode: str) -> str:
    return "none" if part == "none" else f"{part}/{mode}"


def scaled_config(cfg: ModelConfig, *, n_layers: int | None = None,
                  d_model: int | None = None, max_seq_len: int = 4096) -> ModelConfig:
    """`cfg` cut to `n_layers` layers and scaled to width `d_model` (head_dim kept, heads and
    d_ff scaled in proportion, d_ff rounded to a multiple of 64, the GQA ratio kept), with a
    byte vocabulary (`TIMING_VOCAB`) and no sliding window: a stack small enough to time here."""
    for name, value in (("layers", n_layers), ("d_model", d_model)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise InputError(f"--{name.replace('_', '-')} {value!r} is not allowed; expected a "
                             "positive integer")
    changes: dict[str, Any] = {"vocab_size": TIMING_VOCAB, "max_seq_len": max_seq_len,
                               "sliding_window": None, "tie_embeddings": False, "name": ""}
    if n_layers is not None:
        changes["n_layers"] = min(n_layers, cfg.n_layers)
    if d_model is not None and d_model != cfg.d_model:
        hd = cfg.head_dim
        if d_model % hd:
            raise InputError(f"--d-model {d_model} is not allowed for this model; expected a "
                             f"multiple of its head_dim {hd}")
        heads = d_model // hd
        group = cfg.n_heads // cfg.n_kv_heads
        kv = max(1, heads // group)
        while heads % kv:
            kv -= 1
        d_ff = max(64, round(cfg.d_ff * d_model / cfg.d_model / 64) * 64)
        changes.update(d_model=d_model, n_heads=heads, n_kv_heads=kv, head_dim=hd, d_ff=d_ff,
                       ffn_multiple_of=1, ffn_dim_multiplier=None)
    return cfg.replace(**changes)


# --- bounds from the budget ---
def amdahl(share: float, k: float) -> float:
    """Speed-up of the whole when a fraction `share` of its time runs k× faster:
    1 / (1 − s + s/k)."""
    if not (0.0 <= share <= 1.0) or not k > 0:
        raise InputError(f"amdahl: share={share!r} must lie in [0, 1] and k={k!r} be > 0")
    return 1.0 / (1.0 - share + share / k)


def part_flop_share(cfg: ModelConfig, part: str, seq_len: int, *, decode: bool = False) -> float:
    """The FLOP share of `part`'s linear layers in a prefill of seq_len tokens (or a decode step
    at that context), by `blocklab.budget.flops`."""
    f = decode_flops(cfg, 1, seq_len) if decode else prefill_flops(cfg, 1, seq_len)
    quantized = {"none": 0, "ffn": f.ffn, "attention": f.attention_proj,
                 "all": f.ffn + f.attention_proj}[part]
    return quantized / f.total


def decode_bytes(cfg: ModelConfig, part: str, context: int) -> int:
    """Bytes a decode step at `context` reads: every weight (`decode_weight_params_read`) at
    4 bytes, `part`'s linear weights at 1 byte (int8; the per-row scales, 4 bytes per row, are
    added), and the float32 KV cache."""
    params = count_params(cfg)
    weights = decode_weight_params_read(cfg, params) * FLOAT_BYTES
    layer = params.layer
    names = {"none": (), "ffn": ("gate_proj", "up_proj", "down_proj"),
             "attention": ("q_proj", "k_proj", "v_proj", "o_proj")}
    names["all"] = names["ffn"] + names["attention"]
    int8 = cfg.n_layers * sum(layer[n] for n in names[part])
    rows = cfg.n_layers * sum(_rows(cfg, n) for n in names[part])
    return weights - int8 * (FLOAT_BYTES - 1) + rows * FLOAT_BYTES + kv_cache_bytes(
        cfg, 1, context, "fp32")


def _rows(cfg: ModelConfig, name: str) -> int:
    """Output rows of one layer's linear layer `name` (one scale each)."""
    q, kv = cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
    return {"gate_proj": cfg.d_ff, "up_proj": cfg.d_ff, "down_proj": cfg.d_model,
            "q_proj": q, "k_proj": kv, "v_proj": kv, "o_proj": cfg.d_model}[name]


# --- timing ---
def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def build_schemes(cfg: ModelConfig, schemes: Sequence[tuple[str, str]],
                  seed: int = 0) -> dict[str, nn.Module]:
    """scheme name -> an eval-mode model: the same random-weight DecoderLM (seeded), quantized
    per scheme."""
    from blocklab.nn import DecoderLM

    torch.manual_seed(seed)
    base = DecoderLM(cfg).eval().requires_grad_(False)
    models = {}
    for part, mode in schemes:
        model = base if part == "none" else quantize_model(copy.deepcopy(base), part, mode)
        models[scheme_name(part, mode)] = model
    return models


def _linears(model: nn.Module, part: str, layer: int = 0) -> list[nn.Linear]:
    return [m for name, m in model.named_modules() if isinstance(m, nn.Linear)
            and name.startswith(f"layers.{layer}.") and part_of(name) == part]


@torch.no_grad()
def time_schemes(cfg: ModelConfig, *, seq_lens: Sequence[int], decode_steps: int = 4,
                 repeats: int = 3, warmup: int = 1,
                 schemes: Sequence[tuple[str, str]] = SCHEMES, compile: bool = False,
                 threads: int | None = None, seed: int = 0,
                 progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Prefill and decode seconds of every scheme, per repeat, and the relative logits error.
    Decode steps continue the prefill of seq_lens[0] tokens (its KV cache).

    Returns {"prefill_s": {scheme: {T: [s per repeat]}}, "decode_s": {scheme: [s per repeat]},
    "gemm_s": {scheme: {T: [s per repeat]}} (the quantized part's own linear layers of layer 0
    at [T, d]; "ffn" and "attention" parts only, with "none/<part>" their float baseline),
    "logits_error": {scheme: ‖ŷ − y‖ / ‖y‖ on the first prefill}, "compile_s": {scheme: s}}.
    """
    if schemes[0] != ("none", "none"):
        raise InputError("the first scheme must be ('none', 'none'): speed-ups are against it")
    threads = threads or torch.get_num_threads()
    out: dict[str, Any] = {"prefill_s": {}, "decode_s": {}, "gemm_s": {}, "logits_error": {},
                           "compile_s": {}}
    with torch_threads(threads):
        models = build_schemes(cfg, schemes, seed)
        names = list(models)
        g = torch.Generator().manual_seed(seed)
        ids = {t: torch.randint(0, cfg.vocab_size, (1, t), generator=g) for t in seq_lens}
        step_ids = torch.randint(0, cfg.vocab_size, (1, 1), generator=g)
        parts = {"ffn": _linears(models["none"], "ffn"),
                 "attention": _linears(models["none"], "attention")}
        gemm_in = {(t, lin.in_features): torch.randn(t, lin.in_features, generator=g)
                   for t in seq_lens for lins in parts.values() for lin in lins}
        reference: dict[int, torch.Tensor] = {}

        def prefill(model, t):
            cache = KVCache(cfg.n_layers, max_len=t + decode_steps)
            return model(ids[t], cache=cache), cache

        def decode(model, cache):
            times = []
            for _ in range(decode_steps):
                tick = time.perf_counter()
                model(step_ids, cache=cache)
                times.append(time.perf_counter() - tick)
            return _median(times)

        def gemms(linears, t):
            for lin in linears:
                lin(gemm_in[t, lin.in_features])

        for name in names:
            out["prefill_s"][name] = {str(t): [] for t in seq_lens}
            out["decode_s"][name] = []
        gemm_sets = {f"none/{p}": lins for p, lins in parts.items()}
        for part, mode in schemes[1:]:
            if part in parts:
                gemm_sets[scheme_name(part, mode)] = _linears(models[scheme_name(part, mode)],
                                                              part)
        for name in gemm_sets:
            out["gemm_s"][name] = {str(t): [] for t in seq_lens}
        def warm(name, model):  # warm-up (and compile), untimed
            tick = time.perf_counter()
            for _ in range(warmup):
                for t in reversed(seq_lens):  # the first length last: decode continues it
                    logits, cache = prefill(model, t)
                    if name == "none":
                        reference.setdefault(t, logits)
                    elif t == seq_lens[0]:
                        ref = reference[t]
                        out["logits_error"][name] = float((logits - ref).norm() / ref.norm())
                decode(model, cache)
            out["compile_s"][name] = time.perf_counter() - tick if compile else None

        def measure(name, model):
            for t in reversed(seq_lens):
                tick = time.perf_counter()
                _, cache = prefill(model, t)
                out["prefill_s"][name][str(t)].append(time.perf_counter() - tick)
            out["decode_s"][name].append(decode(model, cache))

        if compile:
            # One scheme at a time: all schemes share DecoderLM.forward's code, so compiling
            # them side by side would exhaust torch.compile's per-function cache. dynamic=True:
            # the growing KV cache would otherwise recompile at every decode step.
            for name in names:
                torch.compiler.reset()
                model = torch.compile(models[name], dynamic=True)
                warm(name, model)
                for _ in range(repeats):
                    measure(name, model)
                if progress:
                    progress(f"compiled {name}")
            torch.compiler.reset()
        else:
            for name in names:
                warm(name, models[name])
            for r in range(repeats):
                for name in names[r % len(names):] + names[:r % len(names)]:
                    measure(name, models[name])
                if progress:
                    progress(f"repeat {r + 1}/{repeats}")
        for _ in range(repeats):  # the parts' own GEMMs, eager
            for name, lins in gemm_sets.items():
                for t in seq_lens:
                    gemms(lins, t)  # a call untimed first: allocations, caches
                    tick = time.perf_counter()
                    gemms(lins, t)
                    out["gemm_s"][name][str(t)].append(time.perf_counter() - tick)
    out["threads"] = threads
    return out


def speedups(timings: dict[str, list[float]], baseline: list[float]) -> list[float]:
    """Per-repeat speed-ups baseline[r] / timings[r]."""
    return [b / t for b, t in zip(baseline, timings, strict=True)]


# --- quality ---
@torch.no_grad()
def validation_loss(model: nn.Module, windows: torch.Tensor, batch: int = 8) -> float:
    """Mean next-token loss (nats/token) on fixed windows [n, L + 1]."""
    total, count = 0.0, 0
    for chunk in windows.split(batch):
        logits = model(chunk[:, :-1])
        total += float(nn.functional.cross_entropy(
            logits.flatten(0, 1), chunk[:, 1:].flatten(), reduction="sum"))
        count += chunk[:, 1:].numel()
    return total / count


@torch.no_grad()
def quality_of_schemes(model: nn.Module, windows: torch.Tensor,
                       schemes: Sequence[tuple[str, str]] = SCHEMES) -> dict[str, dict[str, float]]:
    """{scheme: {"val_loss", "delta", "logits_error"}} of a trained model under each scheme
    (torchao, eager); delta = val loss − the float model's; the logits error is
    ‖ŷ − y‖ / ‖y‖ on the windows."""
    model = model.eval()
    ref_logits = model(windows[:, :-1])
    ref_loss = validation_loss(model, windows)
    out = {}
    for part, mode in schemes:
        q = model if part == "none" else quantize_model(copy.deepcopy(model), part, mode)
        loss = ref_loss if part == "none" else validation_loss(q, windows)
        err = float((q(windows[:, :-1]) - ref_logits).norm() / ref_logits.norm())
        out[scheme_name(part, mode)] = {"val_loss": loss, "delta": loss - ref_loss,
                                        "logits_error": err}
    return out


@torch.no_grad()
def swiglu_errors(model: nn.Module, windows: torch.Tensor) -> dict[str, dict[str, float]]:
    """C33: {scheme: {"val_loss", "delta", "ffn_error", "logits_error", "max_scale_ratio"}} for
    every SWIGLU_SCHEMES entry (fake quantization of gate/up/down only, written in
    `blocklab.nn.quantize`). ffn_error = ‖FFN_q(x) − FFN(x)‖ / ‖FFN(x)‖ over every layer's FFN
    input x on the windows (captured from the float model)."""
    model = model.eval()
    inputs: list[torch.Tensor] = []
    hooks = [layer.ffn.register_forward_hook(lambda m, args, out: inputs.append(args[0]))
             for layer in model.layers]
    ref_logits = model(windows[:, :-1])
    for h in hooks:
        h.remove()
    ref_loss = validation_loss(model, windows)
    out = {}
    for scheme in SWIGLU_SCHEMES:
        q = swiglu_quantized_copy(model, scheme)
        num = sum(float((ql.ffn(x) - fl.ffn(x)).pow(2).sum())
                  for ql, fl, x in zip(q.layers, model.layers, inputs, strict=True))
        den = sum(float(fl.ffn(x).pow(2).sum()) for fl, x in zip(model.layers, inputs,
                                                                  strict=True))
        loss = validation_loss(q, windows)
        out[scheme] = {"val_loss": loss, "delta": loss - ref_loss,
                       "ffn_error": math.sqrt(num / den),
                       "logits_error": float((q(windows[:, :-1]) - ref_logits).norm()
                                             / ref_logits.norm())}
    return out
