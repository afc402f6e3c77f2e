"""Measuring int8 quantization of a `DecoderLM`: prefill and decode time per scheme, the most
a scheme can gain, and what quantization costs in error and loss.

    schemes   nothing quantized, or the ffn / attention / all linear layers by torchao in
              "weight-only" or "dynamic" int8 (`blocklab.nn.int8`), each a quantized copy of
              one model; every repeat runs every scheme once, rotated by one each repeat, with
              the float model whose part's linear layers are free (`without_part`)
    GEMMs     a part's own linear layers at the prefill shape [T, d], timed alone: k

Amdahl: with f the share of the float model's *time* (not FLOPs) in the quantized layers and
S their own speed-up, speed-up = 1 / ((1 − f) + f/S)  (several parts: Σ f_p/S_p).

    bound     S → ∞: 1 / (1 − f) = t_float / t_free, measured; no scheme changing only those
              layers can beat it (up to noise)
    estimate  S = k (prefill) or the weight bytes' ratio float / int8 (decode, as if
              memory-bound): not upper bounds of S, so a scheme may beat the estimate
    quality   a trained model's validation loss under each scheme, and for SwiGLU the C33
              comparison of gate/up/down quantized separately or merged

Speed-ups are time(nothing quantized) / time(scheme) per repeat; > 1 is faster.
"""

from __future__ import annotations

import copy
import math
import statistics
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

from blocklab.budget import count_params, decode_flops, prefill_flops
from blocklab.budget.memory import kv_cache_bytes
from blocklab.config import ModelConfig
from blocklab.errors import InputError
from blocklab.experiments.env import torch_threads
from blocklab.experiments.int8_records import SchemeLoss, SchemeTimes, SwigluError
from blocklab.experiments.trainer import memory_bytes
from blocklab.nn.attention import KVCache
from blocklab.nn.int8 import (
    MODES,
    SWIGLU_SCHEMES,
    linear_filter,
    part_of,
    quantize_model,
    swiglu_quantized_copy,
)

# The schemes timed, "none" first: every speed-up is against it.
SCHEMES: tuple[tuple[str, str], ...] = (("none", "none"),) + tuple(
    (part, mode) for mode in MODES for part in ("ffn", "attention", "all"))
FREE_PARTS = ("ffn", "attention", "all")  # the parts made free, one model each, for the bounds
FLOAT_BYTES = 4  # the timed models are float32
TIMING_VOCAB = 256  # a byte vocabulary: the head stays small, so the timings are the blocks'
MIN_CALL_S = 0.02  # a prefill timed shorter is timed as the fastest of several calls


def scheme_name(part: str, mode: str) -> str:
    return "none" if part == "none" else f"{part}/{mode}"


def scaled_config(cfg: ModelConfig, *, n_layers: int | None = None,
                  d_model: int | None = None, max_seq_len: int = 4096) -> ModelConfig:
    """`cfg` cut to `n_layers` layers and scaled to width `d_model` (head_dim and GQA ratio kept,
    d_ff scaled to a multiple of 64), with a byte vocabulary and no sliding window."""
    if d_model is not None and d_model < 1:  # (the CLI checks --layers itself)
        raise InputError(f"--d-model {d_model!r} is not allowed; expected a positive integer")
    if d_model is not None and d_model != cfg.d_model and d_model % cfg.head_dim:
        raise InputError(f"--d-model {d_model} is not allowed for this model; expected a "
                         f"multiple of its head_dim {cfg.head_dim}")
    cut = cfg.replace(vocab_size=TIMING_VOCAB, max_seq_len=max_seq_len, sliding_window=None,
                      tie_embeddings=False, name="",
                      n_layers=cfg.n_layers if n_layers is None else min(n_layers, cfg.n_layers))
    if d_model is None or d_model == cfg.d_model:
        return cut
    hd = cfg.head_dim
    heads = d_model // hd
    group = cfg.n_heads // cfg.n_kv_heads
    kv = max(1, heads // group)
    while heads % kv:
        kv -= 1
    d_ff = max(64, round(cfg.d_ff * d_model / cfg.d_model / 64) * 64)
    return cut.replace(d_model=d_model, n_heads=heads, n_kv_heads=kv, head_dim=hd, d_ff=d_ff,
                       ffn_multiple_of=1, ffn_dim_multiplier=None)


def checkpoint_files(path: Path) -> list[Path]:
    """The safetensors files of a Hugging Face checkpoint folder (empty when it has none)."""
    return sorted(path.glob("*.safetensors"))


def checkpoint_layers(path: str | Path, n_layers: int) -> nn.Module:
    """The checkpoint at `path` (float32) as a DecoderLM of its first `n_layers` layers, with
    its own embeddings, final norm and lm_head."""
    from blocklab.interop.hf import load_hf
    from blocklab.nn import DecoderLM

    with warnings.catch_warnings():
        # the quantize command says itself which weights are not finite, once
        warnings.simplefilter("ignore", RuntimeWarning)
        full = load_hf(path, dtype=torch.float32)
    if not 1 <= n_layers <= full.config.n_layers:
        raise InputError(f"--layers {n_layers} is not allowed for {path}; expected 1 to "
                         f"{full.config.n_layers}")
    kept = {name: tensor for name, tensor in full.state_dict().items()
            if not name.startswith("layers.") or int(name.split(".")[1]) < n_layers}
    cut = DecoderLM(full.config.replace(n_layers=n_layers))
    cut.load_state_dict(kept)  # strict: every tensor of the cut model comes from the checkpoint
    return cut


# --- bounds and estimates (see the module docstring) ---
def amdahl_parts(parts: Sequence[tuple[float, float]]) -> float:
    """1 / (1 − Σ f_p + Σ f_p/S_p) for parts (f_p, S_p); S_p = math.inf makes part p free."""
    for share, k in parts:
        if not (0.0 <= share <= 1.0) or not k > 0:
            raise InputError(f"amdahl: share={share!r} must lie in [0, 1] and k={k!r} be > 0")
    total = sum(share for share, _ in parts)
    if total > 1.0 + 1e-12:
        raise InputError(f"amdahl: the shares sum to {total!r}; expected at most 1")
    rest = max(0.0, 1.0 - total) + sum(share / k for share, k in parts)
    return math.inf if rest == 0.0 else 1.0 / rest


def free_speedup(t_float: Sequence[float], t_free: Sequence[float]) -> float:
    """The bound 1 / (1 − f), measured: the mean over repeats of t_float[r] / t_free[r]."""
    return statistics.fmean(b / t for b, t in zip(t_float, t_free, strict=True))


def time_share(bound: float) -> float:
    """f from a measured bound 1 / (1 − f), clamped to [0, 1] (noise can make it negative)."""
    return min(1.0, max(0.0, 1.0 - 1.0 / bound))


def part_flop_share(cfg: ModelConfig, part: str, seq_len: int, *, decode: bool = False) -> float:
    """The FLOP share of `part`'s linear layers in a prefill of seq_len tokens (or a decode step
    at that context); shown beside the time share, never used for the bound."""
    f = decode_flops(cfg, 1, seq_len) if decode else prefill_flops(cfg, 1, seq_len)
    quantized = {"none": 0, "ffn": f.ffn, "attention": f.attention_proj,
                 "all": f.ffn + f.attention_proj}[part]
    return quantized / f.total


_LINEARS = {"none": (), "ffn": ("gate_proj", "up_proj", "down_proj"),
            "attention": ("q_proj", "k_proj", "v_proj", "o_proj")}
_LINEARS["all"] = _LINEARS["ffn"] + _LINEARS["attention"]


def part_bytes_ratio(cfg: ModelConfig, part: str) -> float:
    """S of `part`'s linear layers if memory-bound: float32 weight bytes over int8 bytes plus a
    float32 scale per output row (1.0 for "none")."""
    params, rows = _part_sizes(cfg, part)
    return 1.0 if not params else FLOAT_BYTES * params / (params + FLOAT_BYTES * rows)


def _part_sizes(cfg: ModelConfig, part: str) -> tuple[int, int]:
    """(weights, output rows: one scale each) of one layer's linear layers of `part`."""
    layer = count_params(cfg).layer
    q, kv = cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
    rows = {"gate_proj": cfg.d_ff, "up_proj": cfg.d_ff, "down_proj": cfg.d_model,
            "q_proj": q, "k_proj": kv, "v_proj": kv, "o_proj": cfg.d_model}
    names = [n for n in _LINEARS[part] if layer[n]]
    return sum(layer[n] for n in names), sum(rows[n] for n in names)


# --- memory, before anything is built ---
def timing_bytes(cfg: ModelConfig, seq_lens: Sequence[int],
                 decode_steps: int = 4) -> dict[str, int]:
    """A lower estimate of `measure_schemes`' peak bytes: {"weights": the float model, a copy
    being quantized, every scheme's copy and every free-part copy; "activations": the longest
    prefill's KV cache, one layer's forward tensors and the logits}."""
    from blocklab.budget.memory import layer_activation_elements

    total = count_params(cfg).total

    def part_params(part: str) -> tuple[int, int]:
        weights, rows = _part_sizes(cfg, part)
        return cfg.n_layers * weights, cfg.n_layers * rows

    weights = 2 * FLOAT_BYTES * total  # the float model, and a copy being quantized
    for part, _ in SCHEMES[1:]:
        quantized, rows = part_params(part)
        weights += FLOAT_BYTES * (total - quantized) + quantized + FLOAT_BYTES * rows
    for part in FREE_PARTS:
        weights += FLOAT_BYTES * (total - part_params(part)[0])
    longest = max(seq_lens)
    per_layer = layer_activation_elements(cfg, 1, longest)["total_fused"]
    activations = (kv_cache_bytes(cfg, 1, longest + decode_steps, "fp32")
                   + FLOAT_BYTES * (per_layer + longest * cfg.vocab_size))
    return {"weights": weights, "activations": activations}


def check_timing_fits(cfg: ModelConfig, seq_lens: Sequence[int], *, options: str,
                      loaded_bytes: int, advice: str) -> None:
    """InputError naming `options` for a timing whose `timing_bytes` plus `loaded_bytes` (a
    checkpoint being read) exceed the memory available here, before any allocation."""
    need = timing_bytes(cfg, seq_lens)
    needed = need["weights"] + need["activations"] + loaded_bytes
    available, total = memory_bytes()
    if available is None or needed <= available:
        return
    gib = 2**30
    loaded = f", the checkpoint as read {loaded_bytes / gib:,.1f} GiB" if loaded_bytes else ""
    of_total = "" if total is None else f" of this machine's {total / gib:,.1f} GiB"
    raise InputError(
        f"{options}: timing needs at least {needed / gib:,.1f} GiB (the float model, its "
        f"{len(SCHEMES) - 1} int8 copies and {len(FREE_PARTS)} copies without the quantized "
        f"layers {need['weights'] / gib:,.1f} GiB, activations {need['activations'] / gib:,.1f} "
        f"GiB{loaded}), more than the {available / gib:,.1f} GiB available{of_total}; "
        f"{advice}")


# --- timing ---
class FreeLinear(nn.Module):
    """A linear layer at no cost beyond its output, zeros [..., out_features]."""

    def __init__(self, out_features: int) -> None:
        super().__init__()
        self.out_features = out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.new_zeros(*x.shape[:-1], self.out_features)  # [..., out_features]


def without_part(model: nn.Module, part: str) -> nn.Module:
    """A deep copy of `model` whose linear layers of `part` are `FreeLinear`: its time is the
    1 − f of Amdahl's law (compiled, folded zeros only loosen the bound)."""
    wanted = linear_filter(part)
    out = copy.deepcopy(model)
    for name, module in list(out.named_modules()):
        if wanted(module, name):
            parent, _, child = name.rpartition(".")
            setattr(out.get_submodule(parent), child, FreeLinear(module.out_features))
    return out


def _linears(model: nn.Module, part: str, layer: int = 0) -> list[nn.Linear]:
    return [m for name, m in model.named_modules() if isinstance(m, nn.Linear)
            and name.startswith(f"layers.{layer}.") and part_of(name) == part]


def measure_schemes(cfg: ModelConfig, *, seq_lens: Sequence[int], decode_steps: int = 4,
                    repeats: int = 3, compile: bool = False, threads: int | None = None,
                    model: nn.Module | None = None) -> SchemeTimes:
    """`SchemeTimes` of every scheme and free-part model, per repeat (see the module
    docstring); decode steps continue the prefill of seq_lens[0]. `model`: a float32 DecoderLM
    of `cfg` to quantize, else random weights (seed 0). A prefill shorter than `MIN_CALL_S` is
    timed as the fastest of as many calls (at most 10) as fill it: noise only adds time.
    """
    from blocklab.nn import DecoderLM

    threads = threads or torch.get_num_threads()
    out = SchemeTimes(prefill_s={}, decode_s={}, free_prefill_s={}, free_decode_s={},
                      gemm_s={}, logits_error={}, compile_s={}, threads=threads)
    with torch_threads(threads):
        if model is None:
            torch.manual_seed(0)
            model = DecoderLM(cfg)
        base = model.eval().requires_grad_(False)
        models = {scheme_name(part, mode): base if part == "none"
                  else quantize_model(copy.deepcopy(base), part, mode) for part, mode in SCHEMES}
        for part in FREE_PARTS:
            models[f"free/{part}"] = without_part(models["none"], part)
        names = list(models)
        # Where each model's timings go: the schemes' own, or the free models' by part.
        slots = {name: (out.prefill_s, out.decode_s, name) for name in names
                 if not name.startswith("free/")}
        slots.update({f"free/{part}": (out.free_prefill_s, out.free_decode_s, part)
                      for part in FREE_PARTS})
        g = torch.Generator().manual_seed(0)
        ids = {t: torch.randint(0, cfg.vocab_size, (1, t), generator=g) for t in seq_lens}
        step_ids = torch.randint(0, cfg.vocab_size, (1, 1), generator=g)
        parts = {"ffn": _linears(models["none"], "ffn"),
                 "attention": _linears(models["none"], "attention")}
        gemm_in = {(t, lin.in_features): torch.randn(t, lin.in_features, generator=g)
                   for t in seq_lens for lins in parts.values() for lin in lins}
        reference: dict[int, torch.Tensor] = {}
        calls = {t: 1 for t in seq_lens}  # prefill calls per measurement, set at warm-up

        def prefill(model, t):
            cache = KVCache(cfg.n_layers, max_len=t + decode_steps)
            return model(ids[t], cache=cache), cache

        def decode(model, cache):
            times = []
            for _ in range(decode_steps):
                tick = time.perf_counter()
                model(step_ids, cache=cache)
                times.append(time.perf_counter() - tick)
            return float(statistics.median(times))

        def gemms(linears, t):
            for lin in linears:
                lin(gemm_in[t, lin.in_features])

        for prefill_s, decode_s, key in slots.values():
            prefill_s[key] = {str(t): [] for t in seq_lens}
            decode_s[key] = []
        gemm_sets = {f"none/{p}": lins for p, lins in parts.items()}
        for part, mode in SCHEMES[1:]:
            if part in parts:
                gemm_sets[scheme_name(part, mode)] = _linears(models[scheme_name(part, mode)],
                                                              part)
        for name in gemm_sets:
            out.gemm_s[name] = {str(t): [] for t in seq_lens}

        def warm(name, model):  # warm-up (and compile), untimed
            tick = time.perf_counter()
            for t in reversed(seq_lens):  # the first length last: decode continues it
                started = time.perf_counter()
                logits, cache = prefill(model, t)
                if name == "none":
                    reference[t] = logits
                    took = max(time.perf_counter() - started, 1e-9)
                    calls[t] = min(10, math.ceil(MIN_CALL_S / took))
                elif t == seq_lens[0] and name in out.prefill_s:
                    ref = reference[t]
                    error = float((logits - ref).norm() / ref.norm())
                    # NaN from non-finite weights (`nonfinite_weights`) is no measurement
                    out.logits_error[name] = error if math.isfinite(error) else None
            decode(model, cache)
            out.compile_s[name] = time.perf_counter() - tick if compile else None

        def measure(name, model):
            prefill_s, decode_s, key = slots[name]
            for t in reversed(seq_lens):
                fastest = math.inf
                for _ in range(calls[t]):
                    tick = time.perf_counter()
                    _, cache = prefill(model, t)
                    fastest = min(fastest, time.perf_counter() - tick)
                prefill_s[key][str(t)].append(fastest)
            decode_s[key].append(decode(model, cache))

        if compile:
            # One model at a time: all share DecoderLM.forward's code, so compiling them side by
            # side would exhaust torch.compile's per-function cache. dynamic=True: the growing
            # KV cache would otherwise recompile at every decode step.
            for name in names:
                torch.compiler.reset()
                model = torch.compile(models[name], dynamic=True)
                warm(name, model)
                for _ in range(repeats):
                    measure(name, model)
            torch.compiler.reset()
        else:
            for name in names:
                warm(name, models[name])
            for r in range(repeats):
                for name in names[r % len(names):] + names[:r % len(names)]:
                    measure(name, models[name])
        for _ in range(repeats):  # the parts' own GEMMs, eager
            for name, lins in gemm_sets.items():
                for t in seq_lens:
                    gemms(lins, t)  # a call untimed first: allocations, caches
                    tick = time.perf_counter()
                    gemms(lins, t)
                    out.gemm_s[name][str(t)].append(time.perf_counter() - tick)
    return out


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
def quality_of_schemes(model: nn.Module, windows: torch.Tensor) -> dict[str, SchemeLoss]:
    """{scheme: SchemeLoss} of a trained model under each scheme (torchao, eager)."""
    model = model.eval()
    ref_logits = model(windows[:, :-1])
    ref_loss = validation_loss(model, windows)
    out = {}
    for part, mode in SCHEMES:
        q = model if part == "none" else quantize_model(copy.deepcopy(model), part, mode)
        loss = ref_loss if part == "none" else validation_loss(q, windows)
        err = float((q(windows[:, :-1]) - ref_logits).norm() / ref_logits.norm())
        out[scheme_name(part, mode)] = SchemeLoss(val_loss=loss, delta=loss - ref_loss,
                                                  logits_error=err)
    return out


@torch.no_grad()
def swiglu_errors(model: nn.Module, windows: torch.Tensor) -> dict[str, SwigluError]:
    """C33: {scheme: SwigluError} for every SWIGLU_SCHEMES entry, the FFN inputs x captured
    from the float model."""
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
        out[scheme] = SwigluError(val_loss=loss, delta=loss - ref_loss,
                                  ffn_error=math.sqrt(num / den),
                                  logits_error=float((q(windows[:, :-1]) - ref_logits).norm()
                                                     / ref_logits.norm()))
    return out
