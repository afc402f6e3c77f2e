"""What PyTorch's scaled-dot-product attention does with a call (C31): the kernels it dispatches
(profiler op names), the mask each call hands it, and whether one SDPA backend accepts it."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator

# The line kineto, PyTorch's profiler library, writes to file descriptor 2 as each profile
# starts and as it stops ("USDT:2026-01-01 12:00:00 41:41 SyncActivityProfilerHandler.cpp:52]
# profiler_start"), at every KINETO_LOG_LEVEL.
_KINETO_MARKER = re.compile(rb"USDT:\S+ \S+ \d+:\d+ \S+:\d+\] ")


@contextlib.contextmanager
def _without_kineto_markers() -> Iterator[None]:
    """Inside, file descriptor 2 goes to a temporary file; on leaving, what was written there
    goes back to it, less kineto's marker lines (`_KINETO_MARKER`): anything else written
    meanwhile (a warning, another thread's progress bar) still appears, only later."""
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
    """The scaled-dot-product kernels PyTorch dispatches while `call()` runs, read from the
    profiler's op names: the aten ops named `*scaled_dot_product*` below the public entry
    point, e.g. `aten::_scaled_dot_product_flash_attention_for_cpu` (fused) or
    `aten::_scaled_dot_product_attention_math` (reference). Sorted, without repeats.

    The profiler is the public way to see ops below the one called; its two marker lines per
    profile, which no setting turns off, are kept off stderr (`_without_kineto_markers`)."""
    from torch.profiler import ProfilerActivity, profile

    with _without_kineto_markers(), profile(activities=[ProfilerActivity.CPU]) as prof:
        call()
    return sorted({e.key for e in prof.key_averages() if "scaled_dot_product" in e.key
                   and e.key != "aten::scaled_dot_product_attention"})


def sdpa_masks(call) -> list[str]:
    """How each `F.scaled_dot_product_attention` call made while `call()` runs gets its mask,
    recorded through a `TorchFunctionMode` (public API): "is_causal" (no mask tensor, the
    kernel masks by index), "none" (no mask at all: a single query sees every cached key) or
    "<dtype> mask [shape]" (a tensor the kernel must read: ALiBi's additive bias). Sorted,
    without repeats."""
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
    """True when `call()` runs with SDPA restricted to the one backend `backend_name` (an
    `SDPBackend` member name); else the first line of PyTorch's refusal."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    try:
        with sdpa_kernel(getattr(SDPBackend, backend_name)):
            call()
    except RuntimeError as err:
        return str(err).splitlines()[0]
    return True
