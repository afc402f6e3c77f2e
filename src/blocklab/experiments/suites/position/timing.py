"""What C31's cost run reads beside its step times: the SDPA kernels and masks a call gets and
whether a backend accepts it; and prefill/decode times at a realistic shape (d_model 1024, where
the matmuls dominate as in a real model; reported, never graded)."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass

from blocklab.config import ModelConfig
from blocklab.experiments.suites.base import interleaved

# The line kineto (PyTorch's profiler) writes to fd 2 as each profile starts and stops, at every
# KINETO_LOG_LEVEL: "USDT:2026-01-01 12:00:00 41:41 SyncActivityProfilerHandler.cpp:52] ...".
_KINETO_MARKER = re.compile(rb"USDT:\S+ \S+ \d+:\d+ \S+:\d+\] ")


@contextlib.contextmanager
def _without_kineto_markers() -> Iterator[None]:
    """Fd 2 held in a temporary file, written back on leaving less kineto's marker lines."""
    try:
        saved = os.dup(2)
    except OSError:  # no stderr at all: nothing to keep clean
        yield
        return
    if sys.stderr is not None:
        sys.stderr.flush()
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            if sys.stderr is not None:
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            kept = b"".join(line for line in held.read().splitlines(keepends=True)
                            if not _KINETO_MARKER.match(line))
            while kept:
                kept = kept[os.write(2, kept):]


def sdpa_kernels(call) -> list[str]:
    """The SDPA kernels dispatched while `call()` runs, sorted: the profiler's aten ops below
    the public entry point, e.g. `aten::_scaled_dot_product_flash_attention_for_cpu`."""
    from torch.profiler import ProfilerActivity, profile

    with _without_kineto_markers(), profile(activities=[ProfilerActivity.CPU]) as prof:
        call()
    return sorted({e.key for e in prof.key_averages() if "scaled_dot_product" in e.key
                   and e.key != "aten::scaled_dot_product_attention"})


def sdpa_masks(call) -> list[str]:
    """How each SDPA call while `call()` runs gets its mask, sorted: "is_causal", "none" (one
    query sees every cached key) or "<dtype> mask [shape]" (a tensor it reads: ALiBi's bias)."""
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode

    seen: set[str] = set()

    class Record(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is F.scaled_dot_product_attention:
                mask = kwargs.get("attn_mask", args[3] if len(args) > 3 else None)
                if mask is not None:
                    dtype = str(mask.dtype).removeprefix("torch.")
                    seen.add(f"{dtype} mask {list(mask.shape)}")
                else:
                    seen.add("is_causal" if kwargs.get("is_causal") else "none")
            return func(*args, **kwargs)

    with Record():
        call()
    return sorted(seen)


def accepted_by(backend_name: str, call) -> bool | str:
    """True when `call()` runs with SDPA restricted to `SDPBackend.<backend_name>`; else the
    first line of PyTorch's refusal."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    try:
        with sdpa_kernel(getattr(SDPBackend, backend_name)):
            call()
    except RuntimeError as err:
        return str(err).splitlines()[0]
    return True


# "none" first: the baseline of every ratio.
COST_SCHEMES = ("none", "rope", "alibi")
VOCAB = 256  # the suite's byte vocabulary: the head is a negligible share at d_model 1024
THETA = 10000.0  # RoPE's θ in every model of the suite


@dataclass(frozen=True)
class Shape:
    """A prefill of `prompt_tokens`, then `decode_tokens` single-token steps, `repeats` times
    after `warmup` unrecorded ones."""

    label: str
    d_model: int
    n_layers: int
    n_heads: int
    prompt_tokens: int
    decode_tokens: int
    warmup: int
    repeats: int


REALISTIC_SHAPES: dict[str, Shape] = {
    "tiny": Shape(label="tiny shape (exercises the code only; not a realistic timing)",
                  d_model=64, n_layers=1, n_heads=2, prompt_tokens=32, decode_tokens=4,
                  warmup=0, repeats=2),
    "quick": Shape(label="realistic shape", d_model=1024, n_layers=2, n_heads=16,
                   prompt_tokens=1024, decode_tokens=32, warmup=1, repeats=6),
    "full": Shape(label="realistic shape", d_model=1024, n_layers=2, n_heads=16,
                  prompt_tokens=1024, decode_tokens=32, warmup=1, repeats=10),
}
# Wall seconds of `time_realistic_shapes` per size on the reference machine (`Calibration`).
REFERENCE_S = {"tiny": 0.1, "quick": 26.0, "full": 41.0}


def shape_config(size: str, scheme: str) -> ModelConfig:
    """The timed model of `scheme` at `size`: only `position` differs between schemes."""
    s = REALISTIC_SHAPES[size]
    return ModelConfig(vocab_size=VOCAB, d_model=s.d_model, n_layers=s.n_layers,
                       n_heads=s.n_heads, position=scheme,
                       max_seq_len=s.prompt_tokens + s.decode_tokens, rope_theta=THETA,
                       name=f"position-cost-{scheme}")


@dataclass(frozen=True)
class ShapeTimes:
    """Per scheme, prefill seconds and decode seconds per token of every recorded repeat."""

    label: str
    d_model: int
    n_layers: int
    n_heads: int
    batch_size: int
    prompt_tokens: int
    decode_tokens: int
    repeats: int
    threads: int
    prefill_s: dict[str, list[float]]
    decode_s: dict[str, list[float]]
    wall_time_s: float


def decode_call(model, prompt, tokens):
    """`start()` prefills a fresh KV cache with `prompt` [1, P] (no grad) and returns
    `decode()`, which feeds it `tokens` [1, n] one at a time."""
    import torch

    from blocklab.nn import KVCache

    def start():
        cache = KVCache(model.config.n_layers, max_len=prompt.shape[1] + tokens.shape[1])
        with torch.no_grad():
            model(prompt, cache=cache)

        def decode():
            with torch.no_grad():
                for i in range(tokens.shape[1]):
                    model(tokens[:, i:i + 1], cache=cache)
        return decode
    return start


def _prefill_then_decode(model, tokens, prompt: int) -> tuple[float, float]:
    """(prefill seconds, decode seconds per token): tokens [1, prompt + n] → a prefill of the
    first `prompt` into a fresh KV cache, then the other n one at a time."""
    tick = time.perf_counter()
    decode = decode_call(model, tokens[:, :prompt], tokens[:, prompt:])()
    prefill_s = time.perf_counter() - tick
    tick = time.perf_counter()
    decode()
    return prefill_s, (time.perf_counter() - tick) / (tokens.shape[1] - prompt)


def time_realistic_shapes(size: str, seed: int = 0) -> ShapeTimes:
    """Prefill and decode times of `COST_SCHEMES` at the size's shape, in an order rotating
    every repeat (drift falls on all alike); the caller sets threads."""
    import torch

    from blocklab.nn import DecoderLM

    started = time.perf_counter()
    s = REALISTIC_SHAPES[size]
    prompt, n = s.prompt_tokens, s.decode_tokens
    models = {}
    for scheme in COST_SCHEMES:
        torch.manual_seed(seed)  # the same weights for every scheme (none has no extra ones)
        models[scheme] = DecoderLM(shape_config(size, scheme)).eval()
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, VOCAB, (1, prompt + n), generator=generator)  # [1, prompt + n]
    times = interleaved(COST_SCHEMES, s.warmup, s.repeats,
                        lambda scheme, i: _prefill_then_decode(models[scheme], tokens, prompt))
    prefill = {scheme: [p for p, _ in pairs] for scheme, pairs in times.items()}
    decode = {scheme: [d for _, d in pairs] for scheme, pairs in times.items()}
    return ShapeTimes(label=s.label, d_model=s.d_model, n_layers=s.n_layers,
                      n_heads=s.n_heads, batch_size=1, prompt_tokens=prompt, decode_tokens=n,
                      repeats=s.repeats, threads=torch.get_num_threads(), prefill_s=prefill,
                      decode_s=decode, wall_time_s=time.perf_counter() - started)
