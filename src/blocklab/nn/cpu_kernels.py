"""Compiled CPU kernels for RMSNorm, residual-add + RMSNorm, gated activations and half-split
RoPE (float32).

On CPU, PyTorch has one C++ kernel for LayerNorm each way but none for RMSNorm's backward, so
RMSNorm built from tensor ops makes several passes and allocations and ends up slower than the
LayerNorm it is meant to undercut. `cpu_kernels.c` does each direction in one pass over the
rows. It is compiled on first use with the system C compiler (`$CC`, else `cc`; flags -O3
-march=native -fopenmp) into a per-user cache, keyed by the source, the flags, the compiler and
the CPU, and loaded with ctypes; nothing is downloaded and nothing is built at install time.

Where no compiler works, or BLOCKLAB_CPU_KERNELS=0, `unavailable_reason` says why and
`RMSNorm(impl="auto")` and `fused.gated_activation` keep the tensor-op path
(`blocklab.nn.fused`). Only float32 inputs (any strides) with a float32 gain take this path;
bfloat16 and float64 use `fused`, whose numerics are bit for bit the reference's.

Gated activations: y = φ(gate)·up for SiLU (SwiGLU) and exact GELU (GeGLU), φ recomputed in
backward from the saved gate and up; exp and erf come from glibc's vector maths (libmvec) where
it exists. Gradients are first-order kernels; under create_graph=True the backward instead
differentiates the reference expression, so higher derivatives are right, only slower.

Output buffers: a fresh [N, d] float32 tensor on CPU comes from the C allocator, and for large
tensors glibc maps new pages each time; touching them costs the kernel a page fault and a
zero-fill per 4 KiB, which on our 2-core machine takes longer than the whole normalisation
(`benchmarks/norm_speed.py` measures both). So the outputs (y, h, dx) come from a small cache
of buffers this module owns, reused once nothing else holds them (like the CUDA caching
allocator). It keeps at most BLOCKLAB_CPU_BUFFER_CACHE_MB (default 1024) MiB;
`empty_cache()` returns it; BLOCKLAB_CPU_BUFFER_CACHE_MB=0 turns it off.

Numerics: the sum of squares is accumulated in float32 in the kernel's own order, so values
agree with the reference to float32 rounding (tested to 1e-6), not bit for bit.

Shape legend: N: rows (all leading axes), d: the normalised axis.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import subprocess
import tempfile
import threading
import time
from importlib import resources
from pathlib import Path

import torch
from torch import Tensor

from blocklab.nn.fused import check_rope_operands, rows_of

FLAGS = ("-O3", "-march=native", "-fopenmp", "-fno-math-errno", "-shared", "-fPIC", "-std=c11")
# Vector expf/erff from glibc's libmvec where it exists (x86-64 glibc); scalar calls otherwise.
VARIANTS = (("-DBLOCKLAB_MVEC", "-lmvec", "-lm"), ("-lm",))
ACTIVATIONS = {"silu": 0, "gelu": 1}
_lock = threading.Lock()
_lib: ctypes.CDLL | None = None
_reason: str | None = None
_loaded = False


def cache_dir() -> Path:
    """Where compiled kernels are kept: $BLOCKLAB_CACHE_DIR, else $XDG_CACHE_HOME/blocklab, else
    ~/.cache/blocklab."""
    env = os.environ.get("BLOCKLAB_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "blocklab"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "flags")):
                return line
    except OSError:
        pass
    return platform.processor()


def _compiler() -> str:
    return os.environ.get("CC", "cc")


def _build(source: str) -> Path:
    """Compile the kernel source (once per cache key) and return the shared library's path."""
    cc = _compiler()
    try:
        version = subprocess.run([cc, "--version"], capture_output=True, text=True,
                                 timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise RuntimeError(f"no C compiler: {cc!r} could not run ({exc})") from exc
    key = hashlib.sha256("\0".join([source, *FLAGS, *sum(VARIANTS, ()), version,
                                    platform.machine(), _cpu_model()]).encode()).hexdigest()[:16]
    target = cache_dir() / f"blocklab_cpu_kernels_{key}.so"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        src = Path(tmp) / "cpu_kernels.c"
        src.write_text(source)
        out = Path(tmp) / target.name
        for variant in VARIANTS:
            defines = [f for f in variant if f.startswith("-D")]
            libs = [f for f in variant if not f.startswith("-D")]
            proc = subprocess.run([cc, *FLAGS, *defines, str(src), "-o", str(out), *libs],
                                  capture_output=True, text=True, timeout=300)
            if proc.returncode == 0:
                break
        else:
            first = (proc.stderr.strip().splitlines() or ["no message"])[0]
            raise RuntimeError(f"{cc} failed to compile the CPU kernels: {first}")
        os.replace(out, target)  # atomic: a concurrent build leaves one complete file
    _prune(target)
    return target


STALE_S = 7 * 24 * 3600


def _prune(keep: Path) -> None:
    """Remove kernels of other source versions untouched for a week (another install may still
    use a recent one; a process that loaded a removed file keeps its mapping)."""
    now = time.time()
    for old in keep.parent.glob("blocklab_cpu_kernels_*.so"):
        try:
            if old != keep and now - old.stat().st_mtime > STALE_S:
                old.unlink()
        except OSError:
            pass


def _declare(lib: ctypes.CDLL) -> None:
    p, n, f, i = ctypes.c_void_p, ctypes.c_long, ctypes.c_float, ctypes.c_int
    lib.blocklab_rms_forward.argtypes = [p, p, p, p, p, p, n, n, f, i, i]
    lib.blocklab_rms_forward.restype = None
    lib.blocklab_rms_backward.argtypes = [p, p, p, p, p, p, p, n, n, i, i]
    lib.blocklab_rms_backward.restype = ctypes.c_int
    lib.blocklab_gated_forward.argtypes = [p, n, p, n, p, n, n, i, i]
    lib.blocklab_gated_forward.restype = None
    lib.blocklab_gated_backward.argtypes = [p, p, n, p, n, p, p, n, n, i, i]
    lib.blocklab_gated_backward.restype = None
    lib.blocklab_rope.argtypes = [p, n, n, n, p, p, n, n, p, n, n, n, n, n, i, i]
    lib.blocklab_rope.restype = None


def _load() -> ctypes.CDLL | None:
    global _lib, _reason, _loaded
    with _lock:
        if _loaded:
            return _lib
        _loaded = True
        if os.environ.get("BLOCKLAB_CPU_KERNELS", "1") == "0":
            _reason = "disabled by BLOCKLAB_CPU_KERNELS=0"
            return None
        try:
            source = resources.files("blocklab.nn").joinpath("cpu_kernels.c").read_text()
            lib = ctypes.CDLL(str(_build(source)))
            _declare(lib)
        except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
            _reason = str(exc).splitlines()[0]
            return None
        _lib = lib
        return lib


def reset() -> None:
    """Forget the loaded library and any failure, so the next call builds or loads again."""
    global _lib, _reason, _loaded
    with _lock:
        _lib, _reason, _loaded = None, None, False


def unavailable_reason(x: Tensor | None = None, weight: Tensor | None = None) -> str | None:
    """Why the compiled kernels cannot take x (and weight), or None when they can."""
    if x is not None:
        if x.device.type != "cpu":
            return f"x is on {x.device.type}, the compiled kernels run on CPU only"
        if x.dtype != torch.float32:
            return f"x is {x.dtype}, the compiled kernels take torch.float32 only"
    if weight is not None and weight.dtype != torch.float32:
        return f"weight is {weight.dtype}, the compiled kernels take torch.float32 only"
    if _load() is None:
        return _reason
    return None


def available(x: Tensor | None = None, weight: Tensor | None = None) -> bool:
    return unavailable_reason(x, weight) is None


def _use_count(t: Tensor) -> int:
    return torch._C._storage_Use_Count(t.untyped_storage()._cdata)


# A tensor nothing else refers to: only the cache's own reference (and the probe's).
_FREE = _use_count(torch.empty(1))


def _alias(buf: Tensor, shape: torch.Size) -> Tensor:
    # A new tensor on buf's storage that is not a view of it: autograd treats a custom
    # Function's view outputs specially (no in-place use), a plain tensor it does not.
    return torch.empty(0, dtype=buf.dtype).set_(buf.untyped_storage(), 0, shape)


SMALL = 64 * 1024  # elements (256 KiB): smaller outputs come straight from the allocator


class _BufferCache:
    """Float32 CPU buffers by element count, handed out again when no one else holds them."""

    def __init__(self) -> None:
        self._buffers: dict[int, list[Tensor]] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    @staticmethod
    def limit_bytes() -> int:
        raw = os.environ.get("BLOCKLAB_CPU_BUFFER_CACHE_MB", "1024")
        try:
            mb = float(raw)
        except ValueError:
            mb = -1.0
        if not mb >= 0:  # also NaN
            raise ValueError(f"BLOCKLAB_CPU_BUFFER_CACHE_MB={raw!r} is not allowed; expected a "
                             "number of MiB >= 0")
        return int(min(mb, 2.0**40) * 2**20)

    def empty(self, shape: torch.Size) -> Tensor:
        """An uninitialised float32 tensor of `shape`, from the cache when one is free."""
        numel = shape.numel()
        if numel < SMALL:  # the heap serves these without page faults; skip the bookkeeping
            return torch.empty(shape, dtype=torch.float32)
        with self._lock:
            for buf in self._buffers.get(numel, ()):
                if _use_count(buf) == _FREE:
                    return _alias(buf, shape)
            buf = torch.empty(numel, dtype=torch.float32)
            if numel and self._bytes + 4 * numel <= self.limit_bytes():
                self._buffers.setdefault(numel, []).append(buf)
                self._bytes += 4 * numel
        return _alias(buf, shape)

    def clear(self) -> None:
        with self._lock:
            self._buffers.clear()
            self._bytes = 0

    @property
    def nbytes(self) -> int:
        return self._bytes


_cache = _BufferCache()


def empty_cache() -> None:
    """Drop the cached output buffers (memory returns once no tensor refers to them)."""
    _cache.clear()


def cached_bytes() -> int:
    """Bytes held by the output-buffer cache."""
    return _cache.nbytes


def _ptr(t: Tensor | None) -> int | None:
    return None if t is None else t.data_ptr()


def _forward(x: Tensor, residual: Tensor | None, weight: Tensor, eps: float,
             unit_offset: bool) -> tuple[Tensor, Tensor, Tensor]:
    """(y, h, 1/s): y, h: [..., d] (h is x when there is no residual), 1/s: [..., 1]."""
    lib = _load()
    d = x.shape[-1]
    x = x.contiguous()
    y = _cache.empty(x.shape)
    rinv = torch.empty(x.shape[:-1] + (1,), dtype=torch.float32)
    h = x
    if residual is not None:
        residual = residual.contiguous()
        h = _cache.empty(x.shape)
    lib.blocklab_rms_forward(x.data_ptr(), _ptr(residual), h.data_ptr(),
                             weight.contiguous().data_ptr(), y.data_ptr(), rinv.data_ptr(),
                             x.numel() // d, d, float(eps), int(unit_offset),
                             torch.get_num_threads())
    return y, h, rinv


def _backward(grad: Tensor, h: Tensor, rinv: Tensor, weight: Tensor, grad_h: Tensor | None,
              unit_offset: bool, need_weight_grad: bool) -> tuple[Tensor, Tensor | None]:
    lib = _load()
    d = h.shape[-1]
    grad = grad.contiguous()
    if grad_h is not None:
        grad_h = grad_h.contiguous()
    threads = torch.get_num_threads()
    dx = _cache.empty(h.shape)
    dw = torch.empty(d, dtype=torch.float32) if need_weight_grad else None
    status = lib.blocklab_rms_backward(grad.data_ptr(), h.data_ptr(), rinv.data_ptr(),
                                       weight.contiguous().data_ptr(), _ptr(grad_h),
                                       dx.data_ptr(), _ptr(dw), h.numel() // d, d,
                                       int(unit_offset), threads)
    if status != 0:
        raise MemoryError(f"RMSNorm backward: no memory for {threads}×{d} float64 partial sums")
    return dx, dw


def _rms_reference(x: Tensor, weight: Tensor, eps: float, unit_offset: bool) -> Tensor:
    gain = 1.0 + weight if unit_offset else weight
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * gain


def _differentiable_grads(fn, inputs: tuple[Tensor, ...],
                          grads: tuple[Tensor, ...]) -> list[Tensor | None]:
    """Vector-Jacobian products of fn at inputs, as a graph (for create_graph=True): the
    kernels' own gradients carry no graph, so higher derivatives go through the reference."""
    with torch.enable_grad():
        out = fn(*inputs)
    wanted = [t for t in inputs if t.requires_grad]
    got = iter(torch.autograd.grad(out, wanted, grads, create_graph=True, allow_unused=True)
               if wanted else ())
    return [next(got) if t.requires_grad else None for t in inputs]


class CompiledRMSNorm(torch.autograd.Function):
    """y = RMSNorm(x; γ), float32, saving x and 1/s."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, eps: float, unit_offset: bool) -> Tensor:
        y, _, rinv = _forward(x, None, weight, eps, unit_offset)
        ctx.save_for_backward(x, rinv, weight)  # x itself, so a double backward reaches it
        ctx.eps, ctx.unit_offset = eps, unit_offset
        return y

    @staticmethod
    def backward(ctx, grad: Tensor):
        x, rinv, weight = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph=True: a gradient that is differentiable
            return (*_differentiable_grads(
                lambda a, w: _rms_reference(a, w, ctx.eps, ctx.unit_offset), (x, weight),
                (grad,)), None, None)
        dx, dw = _backward(grad, x.contiguous(), rinv, weight, None, ctx.unit_offset,
                           ctx.needs_input_grad[1])
        return dx, dw, None, None


class CompiledAddRMSNorm(torch.autograd.Function):
    """(y, h) with h = x + residual, y = RMSNorm(h), float32, saving h and 1/s."""

    @staticmethod
    def forward(ctx, x: Tensor, residual: Tensor, weight: Tensor, eps: float,
                unit_offset: bool) -> tuple[Tensor, Tensor]:
        y, h, rinv = _forward(x, residual, weight, eps, unit_offset)
        ctx.save_for_backward(h, rinv, weight)
        ctx.eps, ctx.unit_offset = eps, unit_offset
        return y, h

    @staticmethod
    def backward(ctx, grad_y: Tensor, grad_h: Tensor | None):
        h, rinv, weight = ctx.saved_tensors
        if grad_y is None:  # only h was used downstream
            return grad_h, grad_h, None, None, None
        if torch.is_grad_enabled():  # create_graph=True; h is our output, so this recurses
            dh, dw = _differentiable_grads(
                lambda a, w: _rms_reference(a, w, ctx.eps, ctx.unit_offset), (h, weight),
                (grad_y,))
            if grad_h is not None:
                dh = grad_h if dh is None else dh + grad_h
            return dh, dh, dw, None, None
        dh, dw = _backward(grad_y, h, rinv, weight, grad_h, ctx.unit_offset,
                           ctx.needs_input_grad[2])
        return dh, dh, dw, None, None


def _require(x: Tensor, weight: Tensor) -> None:
    reason = unavailable_reason(x, weight)
    if reason is not None:
        raise RuntimeError(f"compiled CPU RMSNorm cannot run here: {reason}")


def rms_norm(x: Tensor, weight: Tensor, eps: float = 1e-6, unit_offset: bool = False) -> Tensor:
    """RMSNorm of x: [..., d] (float32, CPU) with gain weight: [d] -> [..., d].

    Both cast orders ("llama", "gemma") coincide in float32, so there is no `cast` argument.
    """
    _require(x, weight)
    return CompiledRMSNorm.apply(x, weight, eps, unit_offset)


def add_rms_norm(x: Tensor, residual: Tensor, weight: Tensor, eps: float = 1e-6,
                 unit_offset: bool = False) -> tuple[Tensor, Tensor]:
    """h = x + residual, y = RMSNorm(h); x, residual: [..., d] (float32, CPU) -> (y, h)."""
    _require(x, weight)
    if x.shape != residual.shape:
        raise ValueError(f"add_rms_norm: x {tuple(x.shape)} and residual "
                         f"{tuple(residual.shape)} shapes differ")
    if residual.dtype != torch.float32:
        raise ValueError(f"add_rms_norm: residual is {residual.dtype}; expected torch.float32 "
                         "like x")
    return CompiledAddRMSNorm.apply(x, residual, weight, eps, unit_offset)


# --- gated activations ------------------------------------------------------------------------
class CompiledGatedActivation(torch.autograd.Function):
    """y = φ(gate) · up, float32, saving gate and up; φ recomputed in backward."""

    @staticmethod
    def forward(ctx, gate: Tensor, up: Tensor, activation: str) -> Tensor:
        lib = _load()
        g2, sg = rows_of(gate)
        u2, su = rows_of(up)
        y = _cache.empty(gate.shape)
        lib.blocklab_gated_forward(g2.data_ptr(), sg, u2.data_ptr(), su, y.data_ptr(),
                                   g2.shape[0], g2.shape[1], ACTIVATIONS[activation],
                                   torch.get_num_threads())
        ctx.save_for_backward(gate, up)
        ctx.activation = activation
        return y

    @staticmethod
    def backward(ctx, grad: Tensor):
        lib = _load()
        gate, up = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph=True: a gradient that is differentiable
            act = torch.nn.functional.silu if ctx.activation == "silu" else \
                torch.nn.functional.gelu
            return (*_differentiable_grads(lambda a, b: act(a) * b, (gate, up), (grad,)), None)
        g2, sg = rows_of(gate)
        u2, su = rows_of(up)
        grad = grad.contiguous()
        d_gate = _cache.empty(gate.shape) if ctx.needs_input_grad[0] else None
        d_up = _cache.empty(up.shape) if ctx.needs_input_grad[1] else None
        lib.blocklab_gated_backward(grad.data_ptr(), g2.data_ptr(), sg, u2.data_ptr(), su,
                                    _ptr(d_gate), _ptr(d_up), g2.shape[0], g2.shape[1],
                                    ACTIVATIONS[ctx.activation], torch.get_num_threads())
        return d_gate, d_up, None


def gated_activation(gate: Tensor, up: Tensor, activation: str = "silu") -> Tensor:
    """φ(gate) · up for float32 CPU gate, up: [..., d_ff] -> [..., d_ff] (SwiGLU for "silu",
    GeGLU for "gelu", the exact erf form)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"gated_activation: activation={activation!r} is not allowed; "
                         f"expected one of {sorted(ACTIVATIONS)}")
    if gate.shape != up.shape:
        raise ValueError(f"gated_activation: gate {tuple(gate.shape)} and up "
                         f"{tuple(up.shape)} shapes differ")
    for t in (gate, up):
        _require(t, None)
    return CompiledGatedActivation.apply(gate, up, activation)


# --- RoPE -------------------------------------------------------------------------------------
def _rope(x: Tensor, cos: Tensor, sin: Tensor, inverse: bool) -> Tensor:
    """x: [B, H, T, hd], cos, sin: [1 or B, 1, T, r] -> contiguous [B, H, T, hd]."""
    lib = _load()
    if x.stride(-1) != 1:
        x = x.contiguous()
    B, H, T, hd = x.shape
    if cos.stride(-1) != 1 or cos.stride() != sin.stride():
        cos, sin = cos.contiguous(), sin.contiguous()
    out = _cache.empty(torch.Size((B, H, T, hd)))
    cb = cos.stride(0) if cos.shape[0] > 1 else 0
    lib.blocklab_rope(x.data_ptr(), x.stride(0), x.stride(1), x.stride(2), cos.data_ptr(),
                      sin.data_ptr(), cb, cos.stride(2), out.data_ptr(), B, H, T, hd,
                      cos.shape[-1] // 2, int(inverse), torch.get_num_threads())
    return out


class CompiledRope(torch.autograd.Function):
    """Half-split RoPE of x by constant cos, sin, saving only cos and sin (the rotation is
    linear, so its gradient is the inverse rotation of the incoming gradient)."""

    @staticmethod
    def forward(ctx, x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
        ctx.save_for_backward(cos, sin)
        return _rope(x, cos, sin, inverse=False)

    @staticmethod
    def backward(ctx, grad: Tensor):
        cos, sin = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph=True: the same inverse in tensor ops
            from blocklab.nn.fused import rotate_half_split
            h = sin.shape[-1] // 2
            # the transpose of [[c1, -s1], [s2, c2]] is the rotation with sin -> -(s2, s1)
            swapped = -torch.cat((sin[..., h:], sin[..., :h]), dim=-1)
            return rotate_half_split(grad, cos, swapped), None, None
        return _rope(grad, cos, sin, inverse=True), None, None


def rope_half_split(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """The half_split RoPE rotation of float32 CPU x: [B, H, T, hd] (any strides) by cos, sin:
    [1 or B, 1, T, r] (r even, r <= hd; constants, no gradient flows to them) -> [B, H, T, hd];
    the maths of `blocklab.nn.fused.rotate_half_split`, forward values equal bit for bit."""
    _require(x, None)
    if cos.dtype != torch.float32 or sin.dtype != torch.float32:
        raise ValueError(f"rope_half_split: cos, sin are {cos.dtype}, {sin.dtype}; expected "
                         "torch.float32")
    check_rope_operands(x, cos, sin)
    return CompiledRope.apply(x, cos, sin)
