"""What a kernels run measures (`time_kernels`): seconds per call of every implementation,
forward and forward+backward, in rotated repeats; the bytes autograd saves for backward
(`saved_tensor_bytes`); compile times taken cold (`_cold_compile`)."""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from blocklab.errors import InputError
from blocklab.experiments.env import torch_threads
from blocklab.experiments.suites.norm_cost.implementations import build_implementations
from blocklab.experiments.suites.norm_cost.records import ImplTimes, KernelTimes
from blocklab.experiments.suites.norm_cost.sizes import KINDS, PASSES


def saved_tensor_bytes(fn: Callable[[], Any], exclude: Sequence[Any] = ()) -> dict[str, int]:
    """Bytes autograd keeps for backward while `fn()` runs its forward, counted exactly.

    Every tensor saved for backward passes through a `saved_tensors_hooks` pack hook; distinct
    storages are summed once each (two ops saving the same x hold it once). `extra_bytes`
    leaves out the storages of `exclude` (the input and the parameters, which exist anyway), so
    it is the activation memory the layer adds. Deterministic: no allocator, no timing.

    Returns {"bytes", "extra_bytes", "tensors"}.
    """
    import torch

    seen: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        fn()
    excluded = {t.untyped_storage().data_ptr() for t in exclude}
    return {"bytes": sum(seen.values()),
            "extra_bytes": sum(n for ptr, n in seen.items() if ptr not in excluded),
            "tensors": len(seen)}


@contextlib.contextmanager
def _cold_compile() -> Iterator[None]:
    """Compile from scratch: a fresh, empty inductor cache folder (generated C++ and its builds,
    FX graphs, autograd graphs) and no compiled frames in memory, so a compile time means the
    same on the first run of a machine and the tenth; the folder is deleted afterwards.

    Public API only: the folder is set through the documented TORCHINDUCTOR_CACHE_DIR (and
    TRITON_CACHE_DIR) variables, read at each cache access, and restored afterwards;
    `torch.compiler.reset()` drops the compiled frames. Inductor's in-memory table of built
    kernels, keyed by their generated C++, has no public way to clear, and the same source
    compiled twice in one process skips its C++ build the second time (0.6 s instead of 5 s
    here). A kernel run never meets that: it compiles its own shape at its own thread count
    (which inductor writes into the C++), once.
    """
    import torch

    names = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
    saved = {name: os.environ.get(name) for name in names}
    torch.compiler.reset()
    with tempfile.TemporaryDirectory(prefix="blocklab-inductor-") as folder:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = folder
        os.environ["TRITON_CACHE_DIR"] = os.path.join(folder, "triton")
        try:
            yield
        finally:
            torch.compiler.reset()
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


_INDUCTOR_WARM = False


def _warm_inductor() -> float:
    """Seconds spent on this process's first torch.compile of anything (imports, compiler
    checks); paid once per process, so it is reported apart from the per-shape compile times."""
    global _INDUCTOR_WARM
    if _INDUCTOR_WARM:
        return 0.0
    import torch

    start = time.perf_counter()
    x = torch.randn(8, 8, requires_grad=True)
    torch.compile(lambda t: (t * 2).sin(), dynamic=False)(x).sum().backward()
    _INDUCTOR_WARM = True
    return time.perf_counter() - start


def time_kernels(d: int, rows: int, *, repeats: int, compile: bool, threads: int,
                 block_s: float = 0.01, seed: int = 0,
                 kinds: Sequence[str] | None = None,
                 passes: Sequence[str] = PASSES) -> KernelTimes:
    """Forward and forward+backward seconds per call of every implementation at [rows, d]
    (`KernelTimes`).

    Forward runs under `torch.no_grad()` (inference); forward+backward computes the gradients
    of x and the parameters with `torch.autograd.grad` for a fixed upstream gradient. Each timed
    block repeats a call `inner` times (chosen once per implementation so a block lasts about
    `block_s`) and records the mean; repeat r runs the implementations in KINDS order rotated
    by r. Compiled implementations are compiled before timing, their compile time (first
    forward+backward, then first no-grad forward) recorded separately; if compiling fails the
    error is recorded and the other implementations are still timed. `kinds`: only these
    kinds (default: every kind of KINDS, "compiled" only when `compile`); `passes`: only these
    of PASSES (a compiled module compiles once per pass: grad mode is part of its guards).
    """
    import torch

    if kinds is None:
        kinds = KINDS if compile else tuple(k for k in KINDS if k != "compiled")
    elif "compiled" in kinds and not compile:
        raise InputError("time_kernels: the compiled kind needs compile=True")
    with torch_threads(threads):
        inductor_warmup_s = _warm_inductor() if compile else 0.0
    with torch_threads(threads), (_cold_compile() if compile else contextlib.nullcontext()):
        generator = torch.Generator().manual_seed(seed)
        x = torch.randn(rows, d, generator=generator).requires_grad_(True)
        upstream = torch.randn(rows, d, generator=generator)
        impls = build_implementations(d, kinds)
        compile_s: dict[str, float] = {}
        errors: dict[str, str] = {}
        saved: dict[str, dict[str, int]] = {}
        seconds: dict[str, dict[str, list[float]]] = {name: {} for name in impls}

        def forward(module):
            def call():
                with torch.no_grad():
                    module(x)
            return call

        def forward_backward(module):
            inputs = [x, *module.parameters()]

            def call():
                torch.autograd.grad(module(x), inputs, upstream)
            return call

        calls: dict[str, dict[str, Callable[[], None]]] = {}
        for name, module in impls.items():
            made = {"fwdbwd": forward_backward(module), "fwd": forward(module)}
            # forward+backward first, as the compile times have always been taken
            chosen = {key: call for key, call in made.items() if key in passes}
            try:
                tick = time.perf_counter()
                for call in chosen.values():
                    call()
                if name.endswith(":compiled"):
                    compile_s[name] = time.perf_counter() - tick
                for _ in range(2):  # warm-up, untimed
                    for call in chosen.values():
                        call()
            except Exception as err:
                # A compiler failure (any type: inductor raises many) must not sink the eager
                # numbers; it is recorded and shown in the summary's notes. An eager
                # implementation that fails is a bug and stops the run.
                if not name.endswith(":compiled"):
                    raise
                errors[name] = f"{type(err).__name__}: {err}".splitlines()[0]
                continue
            saved[name] = saved_tensor_bytes(lambda m=module: m(x),
                                             exclude=[x, *module.parameters()])
            calls[name] = {key: chosen[key] for key in PASSES if key in chosen}

        inner: dict[str, list[int]] = {}  # per pass, in PASSES order
        for name, pair in calls.items():
            counts = []
            for key, call in pair.items():
                tick = time.perf_counter()
                call()
                once = max(time.perf_counter() - tick, 1e-7)
                counts.append(max(1, min(1000, math.ceil(block_s / once))))
                seconds[name][key] = []
            inner[name] = counts

        names = list(calls)
        for r in range(repeats):
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                for (key, call), count in zip(calls[name].items(), inner[name], strict=True):
                    tick = time.perf_counter()
                    for _ in range(count):
                        call()
                    seconds[name][key].append((time.perf_counter() - tick) / count)
    records = {}
    for name in impls:
        kept = saved.get(name, {})
        records[name] = ImplTimes(
            compile_s=compile_s.get(name), error=errors.get(name), bytes=kept.get("bytes"),
            extra_bytes=kept.get("extra_bytes"), tensors=kept.get("tensors"),
            fwd_s=seconds[name].get("fwd"), fwdbwd_s=seconds[name].get("fwdbwd"))
    return KernelTimes(kind="kernels", d=d, rows=rows, threads=threads, repeats=repeats,
                       inner=inner, impls=records, inductor_warmup_s=inductor_warmup_s)
