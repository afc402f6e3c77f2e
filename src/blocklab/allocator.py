"""glibc malloc settings that keep a CPU training loop off page faults.

PyTorch allocates CPU tensors with the C allocator and frees them when the last reference goes.
glibc serves large blocks with fresh `mmap`s (and returns freed heap tops to the system), so
every step of a training loop touches new pages: one page fault and a zero-fill per 4 KiB,
which on a 2-core machine costs about as much as an extra pass over the tensor. Two `mallopt`
settings make glibc keep and reuse that memory instead:

    M_MMAP_THRESHOLD = 32 MiB   blocks up to 32 MiB (glibc's maximum) come from the heap
    M_TRIM_THRESHOLD = 4 GiB    freed heap memory is kept for reuse, not returned

The price is that the process's resident memory stays at its high-water mark. Measured effect:
`benchmarks/train_speed.py --no-tune-malloc` against the default. Set BLOCKLAB_TUNE_MALLOC=0 to
leave the allocator alone. No effect (and no error) on a C library other than glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 2**20
TRIM_THRESHOLD = 4 * 2**30

_applied: str | None = None


def tune_cpu_allocator() -> str | None:
    """Apply the settings above once per process; a one-line description, or None when not
    applied (disabled, or not glibc)."""
    global _applied
    if _applied is not None:
        return _applied
    if os.environ.get("BLOCKLAB_TUNE_MALLOC", "1") == "0":
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    if not (mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) and mallopt(M_TRIM_THRESHOLD,
                                                                   TRIM_THRESHOLD)):
        return None
    _applied = (f"glibc malloc: blocks up to {MMAP_THRESHOLD // 2**20} MiB from the heap, "
                f"freed memory kept up to {TRIM_THRESHOLD // 2**30} GiB")
    return _applied


def current() -> str | None:
    """The description of the tuning applied in this process, or None (no side effects)."""
    return _applied
