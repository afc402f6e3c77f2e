"""Compiled CPU kernels for RMSNorm, residual-add + RMSNorm, gated activations and half-split
RoPE (float32 and bfloat16).

On CPU, PyTorch has one C++ kernel for LayerNorm each way but none for RMSNorm's backward, so
RMSNorm built from tensor ops makes several passes and allocations and ends up slower than the
LayerNorm it is meant to undercut. `cpu_kernels.c` does each direction in one pass over the
rows. It is compiled on first use with the system C compiler (`$CC`, else `cc`; flags -O3
-march=native -fopenmp) and loaded with ctypes; nothing is downloaded and nothing is built at
install time.

The build cache (`cache_dir()`) is code this process will run, so it is handled with care:

- A build is keyed by the source, the flags, the machine and the CPU (not by the compiler: a
  cached build is used without spawning one, and a missing compiler only matters when a build
  is needed). It is compiled into a temporary file, loaded and checked for every kernel symbol,
  then renamed to a name carrying its sha256, and only then a manifest naming it and its hash
  is written (atomically). So a reader sees a complete, checked build or none.
- Before loading, the folder and both files must belong to this user and be writable by no one
  else, and the library's bytes must match the manifest's sha256 (the library's name carries
  its hash too, so a name the dynamic loader has seen always means the same bytes). A
  truncated, garbage or foreign file is never handed to the dynamic loader: it is rebuilt, and
  `notes()` says why.
- Any failure to build or load (no compiler, refused folder, missing symbol, ...) turns the
  kernels off for this process with the reason in `unavailable_reason()`; the "fast" backend
  then runs its fallback (`blocklab.nn.backends.FAST_FALLBACK`). BLOCKLAB_CPU_KERNELS=0 turns
  them off on purpose.
- Loading a build marks its manifest as used (its mtime); builds of other versions unused for
  a week are removed when a new build is made.

Float32 inputs (any strides) with a float32 gain take every kernel. Every kernel also takes
bfloat16 (a float32 or bfloat16 gain, cos and sin) in eager mode: bfloat16 in and out, float32
inside, each output rounded where the reference rounds. RoPE and the SiLU gate then equal the
reference bit for bit both ways; the norms' forward too, up to the order of the x² sum; GELU
up to erf's float32 rounding. (The norms run 5-25× faster than the lean fallback at [8192,
256-1024] forward + backward: `benchmarks/norm_speed.py --dtype bfloat16`.) Under
torch.compile bfloat16 takes the reference expression, which Inductor fuses. The "fast"
backend gives the other dtypes to its fallback, whose forward values are bit for bit the
reference's.

Gated activations: y = φ(gate)·up for SiLU (SwiGLU) and exact GELU (GeGLU), the activations
of `ACTIVATIONS`, each with its own code in C (any other is refused, by name here and by code
in C), φ recomputed in backward from the saved gate and up; exp and erf come from glibc's
vector maths (libmvec) where it exists. Gradients are first-order kernels; under
create_graph=True the backward instead differentiates the registered reference implementation
(`blocklab.nn.backends`), so higher derivatives are right, only slower. (RoPE is linear: its
backward is the same op rotating the other way, differentiable in turn.)

The kernels are torch.library custom ops: `torch.ops.blocklab.cpu_rms_norm`, `cpu_add_rms_norm`,
`cpu_rms_norm_backward`, `cpu_gated_activation`, `cpu_gated_activation_backward`, `cpu_rope`.
Each has a fake implementation (its outputs' shapes from its inputs'), and the forward ones an
autograd formula calling the backward ones, so torch.compile keeps each kernel as one call in
its forward and backward graphs instead of breaking the graph at ctypes. Importing this module
registers them; building and loading wait for the first call. In eager mode a custom op costs
more per call than the autograd.Function it replaced (the dispatcher and PyTorch's Python
wrappers, and the first call of any custom op in a process imports the compiler's tracer), so
eager calls go through autograd Functions running the same kernels.

Outputs are fresh tensors from PyTorch's allocator, like every other op's: nothing is reused
behind a caller's back. Large fresh outputs cost page faults under glibc's default settings;
`blocklab.allocator` (applied by the trainer) keeps freed memory for reuse instead.

Numerics: the sum of squares is accumulated in float32 in the kernel's own order, so values
agree with the reference to float32 rounding (tested to 1e-6), not bit for bit.

Shape legend: N: rows (all leading axes), d: the normalised axis.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import platform
import re
import stat
import subprocess
import tempfile
import threading
import time
from importlib import resources
from pathlib import Path

import torch
from torch import Tensor

from blocklab.errors import InputError, KernelUnavailable
from blocklab.nn import backends
from blocklab.nn.lean import check_cast, check_rope_operands, rows_of

FLAGS = ("-O3", "-march=native", "-fopenmp", "-fno-math-errno", "-shared", "-fPIC", "-std=c11")
# Vector expf/erff from glibc's libmvec where it exists (x86-64 glibc); scalar calls otherwise.
VARIANTS = (("-DBLOCKLAB_MVEC", "-lmvec", "-lm"), ("-lm",))
# The gated activations the C code has a loop for, by the code it takes (ACT_SILU, ACT_GELU);
# blocklab.nn.ffn declares the same set at registration.
ACTIVATIONS = {"silu": 0, "gelu": 1}
SYMBOLS = ("blocklab_rms_forward", "blocklab_rms_backward", "blocklab_gated_forward",
           "blocklab_gated_backward", "blocklab_rope", "blocklab_rms_forward_bf16",
           "blocklab_rms_backward_bf16", "blocklab_rope_bf16", "blocklab_gated_forward_bf16",
           "blocklab_gated_backward_bf16")
PREFIX = "blocklab_cpu_kernels_"
MANIFEST_MAX_BYTES = 4096
LIBRARY_MAX_BYTES = 64 * 2**20
STALE_S = 7 * 24 * 3600
_lock = threading.Lock()
_lib: ctypes.CDLL | None = None
_reason: str | None = None
_notes: list[str] = []
_loaded = False


def cache_dir() -> Path:
    """Where the built C kernels are kept: $BLOCKLAB_CACHE_DIR, else $XDG_CACHE_HOME/blocklab, else
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


def build_key(source: str) -> str:
    """The cache key of a build of `source` on this machine (16 hex digits)."""
    return hashlib.sha256("\0".join([source, *FLAGS, *sum(VARIANTS, ()), platform.machine(),
                                     _cpu_model()]).encode()).hexdigest()[:16]


class _Refused(Exception):
    """The cache or a file in it must not be used; the message says why."""


def _private(st: os.stat_result, what: str) -> None:
    """Refuse a cache folder or file that another user owns or may write."""
    uid = os.getuid()
    if st.st_uid != uid:
        raise _Refused(f"{what} belongs to uid {st.st_uid}, not to this user ({uid})")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise _Refused(f"{what} is writable by others (mode {stat.S_IMODE(st.st_mode):o})")


def _check_dir(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode):
        raise _Refused(f"kernel cache {folder} is not a folder")
    _private(st, f"kernel cache {folder}")


def _read_private(path: Path, limit: int) -> bytes:
    """The bytes of a regular file of ours (no symlink, not writable by others), read through
    the descriptor whose owner and mode were checked."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _Refused(f"{path} is not a regular file")
        _private(st, str(path))
        if st.st_size > limit:
            raise _Refused(f"{path} is {st.st_size} bytes, more than a build can be")
        chunks, left = [], st.st_size
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _symbols(lib: ctypes.CDLL) -> None:
    missing = [name for name in SYMBOLS if not hasattr(lib, name)]
    if missing:
        raise _Refused(f"library lacks kernel symbol(s) {missing}")


def _load_cached(folder: Path, key: str) -> ctypes.CDLL | None:
    """The checked cached build of `key`, or None (why goes to `notes()`) when there is none
    or it must not be loaded."""
    manifest = folder / f"{PREFIX}{key}.json"
    if not manifest.exists():
        return None
    try:
        meta = json.loads(_read_private(manifest, MANIFEST_MAX_BYTES).decode("utf-8"))
        name, digest = meta["library"], meta["sha256"]
        if not (isinstance(name, str) and re.fullmatch(rf"{PREFIX}{key}-[0-9a-f]{{16}}\.so", name)
                and isinstance(digest, str)):
            raise _Refused(f"manifest {manifest} names {name!r}, not a build of {key}")
        data = _read_private(folder / name, LIBRARY_MAX_BYTES)
        got = hashlib.sha256(data).hexdigest()
        if got != digest:
            raise _Refused(f"{name} does not match its manifest's sha256 ({len(data)} bytes)")
        # By path: only this user can write the folder, and blocklab only ever renames complete,
        # checked builds into it. (Not through /proc/self/fd: the dynamic loader would take a
        # reused fd path for a library it loaded before.)
        lib = ctypes.CDLL(str(folder / name))
        _symbols(lib)
    except (_Refused, OSError, ValueError, KeyError, TypeError) as exc:
        _notes.append(f"cached build not used ({_one_line(exc)}); rebuilding")
        return None
    try:
        os.utime(manifest)  # marks the build as in use, for pruning
    except OSError:
        pass
    return lib


def _build(source: str, folder: Path, key: str) -> None:
    """Compile `source` into a checked library and publish it under `key` in `folder`."""
    cc = _compiler()
    try:
        version = subprocess.run([cc, "--version"], capture_output=True, text=True,
                                 timeout=30).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError) as exc:
        raise RuntimeError(f"no C compiler: {cc!r} could not run ({_one_line(exc)})") from exc
    with tempfile.TemporaryDirectory(dir=folder, prefix=".build-") as tmp:
        src = Path(tmp) / "cpu_kernels.c"
        src.write_text(source)
        out = Path(tmp) / "kernels.so"
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
        try:  # checked before it is published: it loads and has every kernel
            _symbols(ctypes.CDLL(str(out)))
        except _Refused as exc:
            raise RuntimeError(f"the kernels {cc} built are unusable: {exc}") from None
        data = out.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        name = f"{PREFIX}{key}-{digest[:16]}.so"
        os.chmod(out, 0o600)
        os.replace(out, folder / name)
        meta = {"library": name, "sha256": digest, "compiler": version[:1], "flags": FLAGS,
                "built": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        staged = Path(tmp) / "manifest.json"
        staged.write_text(json.dumps(meta, indent=1))
        os.chmod(staged, 0o600)
        os.replace(staged, folder / f"{PREFIX}{key}.json")  # the build is visible from here on
    _prune(folder, key)


def _prune(folder: Path, keep: str) -> None:
    """Remove builds of other source versions whose manifest no process has loaded for a week,
    and libraries no manifest names any more (a process that loaded one keeps its mapping)."""
    now = time.time()
    named = set()
    for manifest in folder.glob(f"{PREFIX}*.json"):
        try:
            meta = json.loads(manifest.read_text())
            library = meta["library"] if isinstance(meta, dict) else None
        except (OSError, ValueError, KeyError):
            library = None
        try:
            if manifest.stem != f"{PREFIX}{keep}" and now - manifest.stat().st_mtime > STALE_S:
                manifest.unlink()
                continue
        except OSError:
            continue
        if isinstance(library, str):
            named.add(library)
    for library in folder.glob(f"{PREFIX}*-*.so"):
        try:
            if library.name not in named and now - library.stat().st_mtime > 60:
                library.unlink()
        except OSError:
            pass


def _declare(lib: ctypes.CDLL) -> None:
    p, n, f, i = ctypes.c_void_p, ctypes.c_long, ctypes.c_float, ctypes.c_int
    lib.blocklab_rms_forward.argtypes = [p, p, p, p, p, p, n, n, f, i, i]
    lib.blocklab_rms_forward.restype = None
    lib.blocklab_rms_backward.argtypes = [p, p, p, p, p, p, p, n, n, i, i]
    lib.blocklab_rms_backward.restype = ctypes.c_int
    lib.blocklab_gated_forward.argtypes = [p, n, p, n, p, n, n, i, i]
    lib.blocklab_gated_forward.restype = ctypes.c_int
    lib.blocklab_gated_backward.argtypes = [p, p, n, p, n, p, p, n, n, i, i]
    lib.blocklab_gated_backward.restype = ctypes.c_int
    lib.blocklab_rope.argtypes = [p, n, n, n, p, p, n, n, p, n, n, n, n, n, i, i]
    lib.blocklab_rope.restype = None
    lib.blocklab_rms_forward_bf16.argtypes = [p, p, p, p, p, p, n, n, f, i, i]
    lib.blocklab_rms_forward_bf16.restype = None
    lib.blocklab_rms_backward_bf16.argtypes = [p, p, p, p, p, p, p, n, n, i, i]
    lib.blocklab_rms_backward_bf16.restype = ctypes.c_int
    lib.blocklab_rope_bf16.argtypes = [p, n, n, n, p, p, n, n, p, n, n, n, n, n, i, i]
    lib.blocklab_rope_bf16.restype = None
    lib.blocklab_gated_forward_bf16.argtypes = lib.blocklab_gated_forward.argtypes
    lib.blocklab_gated_forward_bf16.restype = ctypes.c_int
    lib.blocklab_gated_backward_bf16.argtypes = lib.blocklab_gated_backward.argtypes
    lib.blocklab_gated_backward_bf16.restype = ctypes.c_int


def _one_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _load() -> ctypes.CDLL | None:
    global _lib, _reason, _loaded
    if _loaded:  # settled: no lock, and all that torch.compile traces once the kernels loaded
        return _lib
    with _lock:
        if _loaded:
            return _lib
        try:
            _lib, _reason = _find_or_build()
        finally:
            _loaded = True  # last: whoever sees it set sees _lib and _reason too
        return _lib


def _find_or_build() -> tuple[ctypes.CDLL | None, str | None]:
    """(the checked, declared library, None) or (None, why not)."""
    if os.environ.get("BLOCKLAB_CPU_KERNELS", "1") == "0":
        return None, "disabled by BLOCKLAB_CPU_KERNELS=0"
    try:
        source = resources.files("blocklab.nn").joinpath("cpu_kernels.c").read_text()
        folder = cache_dir()
        _check_dir(folder)
        key = build_key(source)
        lib = _load_cached(folder, key)
        if lib is None:
            _build(source, folder, key)
            lib = _load_cached(folder, key)
        if lib is None:
            raise RuntimeError(f"a fresh build would not load: {_notes[-1]}")
        _declare(lib)
    except (_Refused, OSError, RuntimeError, subprocess.SubprocessError) as exc:
        return None, _one_line(exc)
    return lib, None


def reset() -> None:
    """Forget the loaded library, any failure and the notes, so the next call builds or loads
    again."""
    global _lib, _reason, _loaded
    with _lock:
        _loaded = False  # first, for the lock-free readers of _load
        _lib, _reason = None, None
        _notes.clear()


def notes() -> list[str]:
    """What loading had to repair in this process (e.g. a corrupt cached build that was rebuilt)."""
    return list(_notes)


def _load_reason() -> str | None:
    """Why the kernels cannot load, or None once they have."""
    return _reason if _load() is None else None


# torch.compile cannot trace the loader (a lock, files, a compiler): once the kernels loaded it
# traces only the lock-free check in _load; before that, this mark has it run _load_reason
# while tracing and keep the answer as a constant. Marking imports the compiler (seconds), so
# it is done only when this module is imported during a compilation, as it is when norm.py's
# lazy import of it runs under torch.compile (torch.compiler.is_compiling() holds for the whole
# compile session, also in code run for real rather than traced). (Imported earlier and first
# loaded under torch.compile, the loader is a graph break, once; an error under fullgraph=True.)
if torch.compiler.is_compiling():
    torch.compiler.assume_constant_result(_load_reason)


def unavailable_reason(x: Tensor | None = None, weight: Tensor | None = None,
                       bfloat16: bool = False) -> str | None:
    """Why the C kernels cannot take x (and weight: the norm's gain, RoPE's cos), or None when
    they can. With `bfloat16` (the norms and RoPE) a bfloat16 x with a float32 or bfloat16
    second operand is taken too, in eager mode only: under torch.compile Inductor fuses the
    bfloat16 reference expression instead."""
    if x is not None:
        if x.device.type != "cpu":
            return f"x is on {x.device.type}, the C kernels run on CPU only"
        if bfloat16 and x.dtype == torch.bfloat16:
            if torch.compiler.is_compiling():
                return "bfloat16 takes the C kernels in eager mode only"
            if weight is not None and weight.dtype not in (torch.float32, torch.bfloat16):
                return (f"weight is {weight.dtype}, the bfloat16 kernels take it in "
                        "torch.float32 or torch.bfloat16")
            return _load_reason()
        if x.dtype != torch.float32:
            allowed = "torch.float32 or torch.bfloat16" if bfloat16 else "torch.float32 only"
            return f"x is {x.dtype}, the C kernels take {allowed}"
    if weight is not None and weight.dtype != torch.float32:
        return f"weight is {weight.dtype}, the C kernels take torch.float32 only"
    return _load_reason()


def available(x: Tensor | None = None, weight: Tensor | None = None) -> bool:
    return unavailable_reason(x, weight) is None


def _require(x: Tensor, weight: Tensor | None, bfloat16: bool = False) -> None:
    reason = unavailable_reason(x, weight, bfloat16)
    if reason is not None:
        raise KernelUnavailable(f"the C kernels cannot run here: {reason}")


# --- the kernels as custom ops (see the module docstring) -------------------------------------
# Outputs are always fresh, contiguous float32 tensors (a custom op's output must not alias an
# input, nor be optional). Each op checks its operands itself, so that a direct torch.ops.blocklab
# call cannot make a kernel read out of bounds.
def _kernels() -> ctypes.CDLL:
    lib = _load()
    if lib is None:
        raise KernelUnavailable(f"the C kernels cannot run here: {_reason}")
    return lib


def _operand(op: str, name: str, t: Tensor, shape: tuple[int, ...]) -> None:
    if t.dtype != torch.float32 or t.device.type != "cpu" or t.shape != shape:
        raise InputError(f"blocklab::{op}: {name} is {t.dtype} {tuple(t.shape)} on "
                         f"{t.device.type}; expected torch.float32 {tuple(shape)} on cpu")


def _empty(shape) -> Tensor:
    return torch.empty(shape, dtype=torch.float32)


def _fake(like: Tensor, shape) -> Tensor:
    """A fresh contiguous float32 output of `shape` for a fake implementation."""
    return like.new_empty(tuple(shape), dtype=torch.float32)


def _ptr(t: Tensor | None) -> int | None:
    return None if t is None else t.data_ptr()


def _custom_op(name: str, impl):
    """`impl` as the custom op blocklab::`name` (CPU), so torch.compile traces through it."""
    return torch.library.custom_op(f"blocklab::{name}", impl, mutates_args=(),
                                   device_types="cpu")


def _eager_function(name: str, impl, setup, backward) -> type[torch.autograd.Function]:
    """An autograd Function running `impl` with the custom op's own setup and backward.

    Eager calls take it instead of the op: the op's dispatch costs about 70 µs a call, 7-9%
    of a training step of a suite-sized model (d 64, 2 layers), for nothing outside a graph.
    Its backward calls the kernels directly too (`ctx.eager`); inside torch.compile the public
    functions call the ops, whose registered backward calls the backward ops.
    """
    def forward(ctx, *inputs):
        output = impl(*inputs)
        setup(ctx, inputs, output)
        ctx.eager = True
        return output

    return type(name, (torch.autograd.Function,),
                {"forward": staticmethod(forward), "backward": staticmethod(backward)})


def _rms_operands(op: str, x: Tensor, weight: Tensor, **same_as_x: Tensor | None) -> None:
    _operand(op, "x", x, x.shape)
    _operand(op, "weight", weight, x.shape[-1:])
    for name, t in same_as_x.items():
        if t is not None:
            _operand(op, name, t, x.shape)


def _forward(x: Tensor, residual: Tensor | None, weight: Tensor, eps: float,
             unit_offset: bool) -> tuple[Tensor, Tensor | None, Tensor]:
    """(y, h, 1/s): y, h: [..., d] (h None when there is no residual), 1/s: [..., 1]."""
    lib = _kernels()
    d = x.shape[-1]
    x = x.contiguous()
    y = _empty(x.shape)
    rinv = _empty(x.shape[:-1] + (1,))
    h = None
    if residual is not None:
        residual = residual.contiguous()
        h = _empty(x.shape)
    lib.blocklab_rms_forward(x.data_ptr(), _ptr(residual), _ptr(h),
                             weight.contiguous().data_ptr(), y.data_ptr(), rinv.data_ptr(),
                             x.numel() // d, d, float(eps), int(unit_offset),
                             torch.get_num_threads())
    return y, h, rinv


def _rms_norm_impl(x: Tensor, weight: Tensor, eps: float,
                   unit_offset: bool) -> tuple[Tensor, Tensor]:
    """x: [..., d], weight: [d] -> (y: [..., d], 1/s: [..., 1], kept for the backward)."""
    _rms_operands("cpu_rms_norm", x, weight)
    y, _, rinv = _forward(x, None, weight, eps, unit_offset)
    return y, rinv


_rms_norm_op = _custom_op("cpu_rms_norm", _rms_norm_impl)


@_rms_norm_op.register_fake
def _(x, weight, eps, unit_offset):
    return _fake(x, x.shape), _fake(x, x.shape[:-1] + (1,))


def _add_rms_norm_impl(x: Tensor, residual: Tensor, weight: Tensor, eps: float,
                       unit_offset: bool) -> tuple[Tensor, Tensor, Tensor]:
    """x, residual: [..., d], weight: [d] -> (y: [..., d], h = x + residual: [..., d],
    1/s: [..., 1])."""
    _rms_operands("cpu_add_rms_norm", x, weight, residual=residual)
    return _forward(x, residual, weight, eps, unit_offset)


_add_rms_norm_op = _custom_op("cpu_add_rms_norm", _add_rms_norm_impl)


@_add_rms_norm_op.register_fake
def _(x, residual, weight, eps, unit_offset):
    return _fake(x, x.shape), _fake(x, x.shape), _fake(x, x.shape[:-1] + (1,))


def _rms_norm_backward_impl(grad: Tensor, x: Tensor, rinv: Tensor, weight: Tensor,
                            grad_h: Tensor | None, unit_offset: bool,
                            weight_grad: bool) -> tuple[Tensor, Tensor]:
    """grad, x: [..., d], 1/s: [..., 1], weight: [d], grad_h: [..., d] or None (added to dx)
    -> (dx: [..., d], dw: [d], or [0] when not weight_grad)."""
    op = "cpu_rms_norm_backward"
    _rms_operands(op, x, weight, grad=grad, grad_h=grad_h)
    _operand(op, "rinv", rinv, x.shape[:-1] + (1,))
    lib = _kernels()
    d = x.shape[-1]
    x, grad, rinv = x.contiguous(), grad.contiguous(), rinv.contiguous()
    if grad_h is not None:
        grad_h = grad_h.contiguous()
    threads = torch.get_num_threads()
    dx = _empty(x.shape)
    dw = _empty((d if weight_grad else 0,))
    status = lib.blocklab_rms_backward(grad.data_ptr(), x.data_ptr(), rinv.data_ptr(),
                                       weight.contiguous().data_ptr(), _ptr(grad_h),
                                       dx.data_ptr(), dw.data_ptr() if weight_grad else None,
                                       x.numel() // d, d, int(unit_offset), threads)
    if status != 0:
        raise MemoryError(f"RMSNorm backward: no memory for {threads}×{d} float64 partial sums")
    return dx, dw


_rms_norm_backward_op = _custom_op("cpu_rms_norm_backward", _rms_norm_backward_impl)


@_rms_norm_backward_op.register_fake
def _(grad, x, rinv, weight, grad_h, unit_offset, weight_grad):
    return _fake(x, x.shape), _fake(x, (x.shape[-1] if weight_grad else 0,))


def _rms_reference(x: Tensor, weight: Tensor, eps: float, unit_offset: bool) -> Tensor:
    # both cast orders coincide in float32
    return backends.implementation("rms_norm", "reference")(x, weight, eps, "llama",
                                                            unit_offset)


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


def _rms_setup(ctx, inputs, output) -> None:
    x, weight, eps, unit_offset = inputs
    _, rinv = output
    ctx.save_for_backward(x, rinv, weight)  # x itself, so a double backward reaches it
    ctx.eps, ctx.unit_offset = eps, unit_offset
    ctx.mark_non_differentiable(rinv)


def _rms_backward(ctx, grad: Tensor, _grad_rinv):
    x, rinv, weight = ctx.saved_tensors
    if torch.is_grad_enabled():  # create_graph=True: a gradient that is differentiable
        return (*_differentiable_grads(
            lambda a, w: _rms_reference(a, w, ctx.eps, ctx.unit_offset), (x, weight),
            (grad,)), None, None)
    weight_grad = ctx.needs_input_grad[1]
    kernel = _rms_norm_backward_impl if getattr(ctx, "eager", False) else _rms_norm_backward_op
    dx, dw = kernel(grad, x, rinv, weight, None, ctx.unit_offset, weight_grad)
    return dx, dw if weight_grad else None, None, None


_rms_norm_op.register_autograd(_rms_backward, setup_context=_rms_setup)
_EagerRMSNorm = _eager_function("_EagerRMSNorm", _rms_norm_impl, _rms_setup, _rms_backward)


def _add_rms_setup(ctx, inputs, output) -> None:
    _, _, weight, eps, unit_offset = inputs
    _, h, rinv = output
    ctx.save_for_backward(h, rinv, weight)
    ctx.eps, ctx.unit_offset = eps, unit_offset
    ctx.mark_non_differentiable(rinv)
    ctx.set_materialize_grads(False)  # an unused y or h arrives as None, not as zeros


def _add_rms_backward(ctx, grad_y: Tensor | None, grad_h: Tensor | None, _grad_rinv):
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
    weight_grad = ctx.needs_input_grad[2]
    kernel = _rms_norm_backward_impl if getattr(ctx, "eager", False) else _rms_norm_backward_op
    dh, dw = kernel(grad_y, h, rinv, weight, grad_h, ctx.unit_offset, weight_grad)
    return dh, dh, dw if weight_grad else None, None, None


_add_rms_norm_op.register_autograd(_add_rms_backward, setup_context=_add_rms_setup)
_EagerAddRMSNorm = _eager_function("_EagerAddRMSNorm", _add_rms_norm_impl, _add_rms_setup,
                                   _add_rms_backward)


def rms_norm(x: Tensor, weight: Tensor, eps: float = 1e-6, unit_offset: bool = False,
             cast: str = "llama") -> Tensor:
    """RMSNorm of x: [..., d] (float32, or bfloat16 in eager mode; CPU) with gain weight: [d]
    -> [..., d] in x's dtype.

    Both cast orders ("llama", "gemma") coincide in float32; in bfloat16 `cast` says where the
    gain is applied (`blocklab.nn.norm`), as the reference rounds.
    """
    _require(x, weight, bfloat16=True)
    if x.dtype == torch.bfloat16:
        check_cast(cast)
        return RMSNormBF16.apply(x, weight, eps, unit_offset, cast)
    call = _rms_norm_op if torch.compiler.is_compiling() else _EagerRMSNorm.apply
    return call(x, weight, eps, unit_offset)[0]


def add_rms_norm(x: Tensor, residual: Tensor, weight: Tensor, eps: float = 1e-6,
                 unit_offset: bool = False, cast: str = "llama") -> tuple[Tensor, Tensor]:
    """h = x + residual, y = RMSNorm(h); x, residual: [..., d] (float32, or bfloat16 in eager
    mode; CPU) -> (y, h), in x's dtype."""
    _require(x, weight, bfloat16=True)
    if x.shape != residual.shape:
        raise InputError(f"add_rms_norm: x {tuple(x.shape)} and residual "
                         f"{tuple(residual.shape)} shapes differ")
    if residual.dtype != x.dtype:
        raise InputError(f"add_rms_norm: residual is {residual.dtype}; expected {x.dtype} "
                         "like x")
    if x.dtype == torch.bfloat16:
        check_cast(cast)
        return AddRMSNormBF16.apply(x, residual, weight, eps, unit_offset, cast)
    call = _add_rms_norm_op if torch.compiler.is_compiling() else _EagerAddRMSNorm.apply
    y, h, _ = call(x, residual, weight, eps, unit_offset)
    return y, h


# --- RMSNorm in bfloat16 (eager) --------------------------------------------------------------
# bfloat16 in and out, float32 inside, each output rounded once where the reference rounds
# (cpu_kernels.c, "bfloat16 RMSNorm"). No custom op: under torch.compile bfloat16 runs the
# reference expression, which Inductor fuses with its neighbours.
def _bf16_gain(weight: Tensor, unit_offset: bool, cast: str) -> Tensor:
    """The float32 gain the kernel multiplies by, offset as the reference offsets it: in the
    weight's dtype for llama (`1 + weight`, rounded there), in float32 for gemma."""
    if cast == "gemma":
        gain = weight.detach().float()
        return (1.0 + gain if unit_offset else gain).contiguous()
    gain = 1.0 + weight.detach() if unit_offset else weight.detach()
    return gain.float().contiguous()


def _backward_gain(weight: Tensor, unit_offset: bool) -> Tensor:
    """The gain the backward multiplies by: 1 + weight in float32, unrounded, as the lean
    Function's backward takes it (closer to the exact gradient than the bfloat16-rounded gain
    a llama-order forward multiplies by)."""
    return _bf16_gain(weight, unit_offset, "gemma")


def _bf16_forward(x: Tensor, residual: Tensor | None, gain: Tensor, eps: float,
                  cast: str) -> tuple[Tensor, Tensor | None, Tensor]:
    """(y, h, 1/s): y, h: [..., d] bfloat16 (h None without a residual), 1/s: [..., 1] fp32."""
    lib = _kernels()
    d = x.shape[-1]
    x = x.contiguous()
    y = torch.empty(x.shape, dtype=torch.bfloat16)
    rinv = _empty(x.shape[:-1] + (1,))
    h = None
    if residual is not None:
        residual = residual.contiguous()
        h = torch.empty(x.shape, dtype=torch.bfloat16)
    lib.blocklab_rms_forward_bf16(x.data_ptr(), _ptr(residual), _ptr(h), gain.data_ptr(),
                                  y.data_ptr(), rinv.data_ptr(), x.numel() // d, d, float(eps),
                                  int(cast == "gemma"), torch.get_num_threads())
    return y, h, rinv


def _bf16_backward(grad: Tensor, x: Tensor, rinv: Tensor, gain: Tensor, grad_h: Tensor | None,
                   cast: str, weight_grad: bool) -> tuple[Tensor, Tensor | None]:
    """(dx: [..., d] bfloat16 (+ grad_h), dγ: [d] float32 or None)."""
    lib = _kernels()
    d = x.shape[-1]
    x = x.contiguous()  # the saved input may be a strided view (q and k under qk-norm)
    grad = grad.to(torch.bfloat16).contiguous()
    if grad_h is not None:
        grad_h = grad_h.to(torch.bfloat16).contiguous()
    threads = torch.get_num_threads()
    dx = torch.empty(x.shape, dtype=torch.bfloat16)
    dw = _empty((d,)) if weight_grad else None
    status = lib.blocklab_rms_backward_bf16(grad.data_ptr(), x.data_ptr(), rinv.data_ptr(),
                                            gain.data_ptr(), _ptr(grad_h), dx.data_ptr(),
                                            _ptr(dw), x.numel() // d, d, int(cast == "gemma"),
                                            threads)
    if status != 0:
        raise MemoryError(f"RMSNorm backward: no memory for {threads}×{d} float64 partial sums")
    return dx, dw


def _bf16_reference(x: Tensor, weight: Tensor, eps: float, unit_offset: bool,
                    cast: str) -> Tensor:
    return backends.implementation("rms_norm", "reference")(x, weight, eps, cast, unit_offset)


class RMSNormBF16(torch.autograd.Function):
    """RMSNorm of bfloat16 x by the C kernels; saves x, 1/s and the gain."""

    @staticmethod
    def forward(ctx, x, weight, eps, unit_offset, cast):
        gain = _bf16_gain(weight, unit_offset, cast)
        y, _, rinv = _bf16_forward(x, None, gain, eps, cast)
        ctx.save_for_backward(x, rinv, weight)
        ctx.eps, ctx.unit_offset, ctx.cast = eps, unit_offset, cast
        return y

    @staticmethod
    def backward(ctx, grad):
        x, rinv, weight = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph=True: a gradient that is differentiable
            return (*_differentiable_grads(
                lambda a, w: _bf16_reference(a, w, ctx.eps, ctx.unit_offset, ctx.cast),
                (x, weight), (grad,)), None, None, None)
        weight_grad = ctx.needs_input_grad[1]
        dx, dw = _bf16_backward(grad, x, rinv, _backward_gain(weight, ctx.unit_offset),
                                None, ctx.cast, weight_grad)
        return dx, None if dw is None else dw.to(weight.dtype), None, None, None


class AddRMSNormBF16(torch.autograd.Function):
    """(y, h) with h = x + residual, y = RMSNorm(h), bfloat16, by the C kernels; saves h."""

    @staticmethod
    def forward(ctx, x, residual, weight, eps, unit_offset, cast):
        gain = _bf16_gain(weight, unit_offset, cast)
        y, h, rinv = _bf16_forward(x, residual, gain, eps, cast)
        ctx.save_for_backward(h, rinv, weight)
        ctx.eps, ctx.unit_offset, ctx.cast = eps, unit_offset, cast
        ctx.set_materialize_grads(False)  # an unused y or h arrives as None, not as zeros
        return y, h

    @staticmethod
    def backward(ctx, grad_y, grad_h):
        h, rinv, weight = ctx.saved_tensors
        if grad_y is None:  # only h was used downstream
            return grad_h, grad_h, None, None, None, None
        if torch.is_grad_enabled():  # create_graph=True: through the reference
            dh, dw = _differentiable_grads(
                lambda a, w: _bf16_reference(a, w, ctx.eps, ctx.unit_offset, ctx.cast),
                (h, weight), (grad_y,))
            if grad_h is not None:
                dh = grad_h if dh is None else dh + grad_h
            return dh, dh, dw, None, None, None
        weight_grad = ctx.needs_input_grad[2]
        dh, dw = _bf16_backward(grad_y, h, rinv, _backward_gain(weight, ctx.unit_offset),
                                grad_h, ctx.cast, weight_grad)
        return dh, dh, None if dw is None else dw.to(weight.dtype), None, None, None


# --- gated activations ------------------------------------------------------------------------
def _gated_operands(op: str, gate: Tensor, up: Tensor, activation: str) -> None:
    if activation not in ACTIVATIONS:
        raise InputError(f"blocklab::{op}: activation={activation!r} is not allowed; "
                         f"expected one of {sorted(ACTIVATIONS)}")
    _operand(op, "gate", gate, gate.shape)
    _operand(op, "up", up, gate.shape)


def _gated_status(op: str, status: int, activation: str) -> None:
    if status != 0:  # ACTIVATIONS names a code the C source has no loop for
        raise KernelUnavailable(f"blocklab::{op}: the C kernel has no code for activation "
                                f"{activation!r} (code {ACTIVATIONS[activation]})")


def _gated_impl(gate: Tensor, up: Tensor, activation: str) -> Tensor:
    """φ(gate) · up; gate, up: [..., m] (rows read in place where evenly spaced, as the two
    halves of a packed gate_up output are) -> [..., m]."""
    _gated_operands("cpu_gated_activation", gate, up, activation)
    lib = _kernels()
    g2, sg = rows_of(gate)
    u2, su = rows_of(up)
    y = _empty(gate.shape)
    status = lib.blocklab_gated_forward(g2.data_ptr(), sg, u2.data_ptr(), su, y.data_ptr(),
                                        g2.shape[0], g2.shape[1], ACTIVATIONS[activation],
                                        torch.get_num_threads())
    _gated_status("cpu_gated_activation", status, activation)
    return y


_gated_op = _custom_op("cpu_gated_activation", _gated_impl)


@_gated_op.register_fake
def _(gate, up, activation):
    return _fake(gate, gate.shape)


def _gated_backward_impl(grad: Tensor, gate: Tensor, up: Tensor, activation: str,
                         gate_grad: bool, up_grad: bool) -> tuple[Tensor, Tensor]:
    """grad, gate, up: [..., m] -> (d_gate, d_up): [..., m] each, or [0] when not asked for."""
    op = "cpu_gated_activation_backward"
    _gated_operands(op, gate, up, activation)
    _operand(op, "grad", grad, gate.shape)
    lib = _kernels()
    g2, sg = rows_of(gate)
    u2, su = rows_of(up)
    grad = grad.contiguous()
    d_gate = _empty(gate.shape if gate_grad else (0,))
    d_up = _empty(up.shape if up_grad else (0,))
    status = lib.blocklab_gated_backward(grad.data_ptr(), g2.data_ptr(), sg, u2.data_ptr(), su,
                                         d_gate.data_ptr() if gate_grad else None,
                                         d_up.data_ptr() if up_grad else None, g2.shape[0],
                                         g2.shape[1], ACTIVATIONS[activation],
                                         torch.get_num_threads())
    _gated_status(op, status, activation)
    return d_gate, d_up


_gated_backward_op = _custom_op("cpu_gated_activation_backward", _gated_backward_impl)


@_gated_backward_op.register_fake
def _(grad, gate, up, activation, gate_grad, up_grad):
    return (_fake(gate, gate.shape if gate_grad else (0,)),
            _fake(gate, up.shape if up_grad else (0,)))


def _gated_setup(ctx, inputs, output) -> None:
    gate, up, activation = inputs
    ctx.save_for_backward(gate, up)  # φ is recomputed in backward
    ctx.activation = activation


def _gated_reference_grads(activation: str, gate: Tensor, up: Tensor, grad: Tensor):
    """(d_gate, d_up, None) through the reference, as a graph: the kernels' own gradients
    carry none, so higher derivatives go this way."""
    reference = backends.implementation("gated_activation", "reference")
    return (*_differentiable_grads(lambda a, b: reference(a, b, activation), (gate, up),
                                   (grad,)), None)


def _gated_backward(ctx, grad: Tensor):
    gate, up = ctx.saved_tensors
    if torch.is_grad_enabled():  # create_graph=True: a gradient that is differentiable
        return _gated_reference_grads(ctx.activation, gate, up, grad)
    gate_grad, up_grad = ctx.needs_input_grad[:2]
    kernel = _gated_backward_impl if getattr(ctx, "eager", False) else _gated_backward_op
    d_gate, d_up = kernel(grad, gate, up, ctx.activation, gate_grad, up_grad)
    return d_gate if gate_grad else None, d_up if up_grad else None, None


_gated_op.register_autograd(_gated_backward, setup_context=_gated_setup)
_EagerGated = _eager_function("_EagerGated", _gated_impl, _gated_setup, _gated_backward)


def gated_activation(gate: Tensor, up: Tensor, activation: str = "silu") -> Tensor:
    """φ(gate) · up for float32 CPU gate, up: [..., d_ff] (both bfloat16 too, in eager mode)
    -> [..., d_ff] (SwiGLU for "silu", GeGLU for "gelu", the exact erf form)."""
    if activation not in ACTIVATIONS:
        raise InputError(f"gated_activation: activation={activation!r} is not allowed; "
                         f"expected one of {sorted(ACTIVATIONS)}")
    if gate.shape != up.shape:
        raise InputError(f"gated_activation: gate {tuple(gate.shape)} and up "
                         f"{tuple(up.shape)} shapes differ")
    if gate.dtype != up.dtype:
        raise InputError(f"gated_activation: gate is {gate.dtype} and up {up.dtype}; expected "
                         "one dtype")
    for t in (gate, up):
        _require(t, None, bfloat16=True)
    if gate.dtype == torch.bfloat16:
        return GatedBF16.apply(gate, up, activation)
    call = _gated_op if torch.compiler.is_compiling() else _EagerGated.apply
    return call(gate, up, activation)


def _gated_bf16(gate: Tensor, up: Tensor, activation: str) -> Tensor:
    lib = _kernels()
    g2, sg = rows_of(gate)
    u2, su = rows_of(up)
    y = torch.empty(gate.shape, dtype=torch.bfloat16)
    status = lib.blocklab_gated_forward_bf16(g2.data_ptr(), sg, u2.data_ptr(), su,
                                             y.data_ptr(), g2.shape[0], g2.shape[1],
                                             ACTIVATIONS[activation], torch.get_num_threads())
    _gated_status("gated_activation (bfloat16)", status, activation)
    return y


class GatedBF16(torch.autograd.Function):
    """φ(gate) · up in bfloat16 by the C kernels (eager), rounded where the reference rounds;
    φ recomputed in backward from the saved gate and up."""

    @staticmethod
    def forward(ctx, gate, up, activation):
        ctx.save_for_backward(gate, up)
        ctx.activation = activation
        return _gated_bf16(gate, up, activation)

    @staticmethod
    def backward(ctx, grad):
        gate, up = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph=True: a gradient that is differentiable
            return _gated_reference_grads(ctx.activation, gate, up, grad)
        gate_grad, up_grad = ctx.needs_input_grad[:2]
        lib = _kernels()
        g2, sg = rows_of(gate)
        u2, su = rows_of(up)
        grad = grad.to(torch.bfloat16).contiguous()
        d_gate = torch.empty(gate.shape, dtype=torch.bfloat16) if gate_grad else None
        d_up = torch.empty(up.shape, dtype=torch.bfloat16) if up_grad else None
        status = lib.blocklab_gated_backward_bf16(grad.data_ptr(), g2.data_ptr(), sg,
                                                  u2.data_ptr(), su, _ptr(d_gate), _ptr(d_up),
                                                  g2.shape[0], g2.shape[1],
                                                  ACTIVATIONS[ctx.activation],
                                                  torch.get_num_threads())
        _gated_status("gated_activation backward (bfloat16)", status, ctx.activation)
        return d_gate, d_up, None


# --- RoPE -------------------------------------------------------------------------------------
def _rope(x: Tensor, cos: Tensor, sin: Tensor, inverse: bool) -> Tensor:
    """x: [B, H, T, hd] (float32, or bfloat16 with float32 cos and sin), cos, sin:
    [1 or B, 1, T, r] -> contiguous [B, H, T, hd] in x's dtype."""
    lib = _kernels()
    if x.stride(-1) != 1:
        x = x.contiguous()
    B, H, T, hd = x.shape
    if cos.stride(-1) != 1 or cos.stride() != sin.stride():
        cos, sin = cos.contiguous(), sin.contiguous()
    out = torch.empty((B, H, T, hd), dtype=x.dtype)
    cb = cos.stride(0) if cos.shape[0] > 1 else 0
    kernel = lib.blocklab_rope_bf16 if x.dtype == torch.bfloat16 else lib.blocklab_rope
    kernel(x.data_ptr(), x.stride(0), x.stride(1), x.stride(2), cos.data_ptr(),
           sin.data_ptr(), cb, cos.stride(2), out.data_ptr(), B, H, T, hd,
           cos.shape[-1] // 2, int(inverse), torch.get_num_threads())
    return out


def _rope_impl(x: Tensor, cos: Tensor, sin: Tensor, inverse: bool) -> Tensor:
    """The half-split rotation R (or its transpose when inverse) of x: [B, H, T, hd] by
    cos, sin: [1 or B, 1, T, r] -> [B, H, T, hd]."""
    check_rope_operands(x, cos, sin)
    for name, t in (("x", x), ("cos", cos), ("sin", sin)):
        _operand("cpu_rope", name, t, t.shape)
    return _rope(x, cos, sin, inverse)


_rope_op = _custom_op("cpu_rope", _rope_impl)


@_rope_op.register_fake
def _(x, cos, sin, inverse):
    return _fake(x, x.shape)


def _rope_setup(ctx, inputs, output) -> None:
    _, cos, sin, inverse = inputs
    ctx.save_for_backward(cos, sin)  # constants: the rotation is linear in x
    ctx.inverse = inverse


def _rope_backward(ctx, grad: Tensor):
    # The gradient of R x is Rᵀ grad, and of Rᵀ x is R grad: this op again, which is itself
    # differentiable, so create_graph=True needs no special case.
    cos, sin = ctx.saved_tensors
    call = _EagerRope.apply if getattr(ctx, "eager", False) else _rope_op
    return call(grad, cos, sin, not ctx.inverse), None, None, None


_rope_op.register_autograd(_rope_backward, setup_context=_rope_setup)
_EagerRope = _eager_function("_EagerRope", _rope_impl, _rope_setup, _rope_backward)


def rope_half_split(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """The half_split RoPE rotation of float32 CPU x: [B, H, T, hd] (any strides; bfloat16 too
    in eager mode) by cos, sin: [1 or B, 1, T, r] (r even, r <= hd; constants, no gradient
    flows to them) -> [B, H, T, hd] in x's dtype; the maths of
    `blocklab.nn.position.apply_rotary`'s half_split layout, forward values equal bit for bit
    (in bfloat16: rotated in float32 and rounded once, as the reference does)."""
    _require(x, None, bfloat16=True)
    if cos.dtype not in (torch.float32, torch.bfloat16) or cos.dtype != sin.dtype:
        raise InputError(f"rope_half_split: cos, sin are {cos.dtype}, {sin.dtype}; expected "
                         "torch.float32 (or both torch.bfloat16 with a bfloat16 x)")
    check_rope_operands(x, cos, sin)
    if x.dtype == torch.bfloat16:
        return RopeBF16.apply(x, cos.float(), sin.float(), False)
    if cos.dtype != torch.float32:
        raise InputError(f"rope_half_split: cos, sin are {cos.dtype}; expected torch.float32 "
                         "with a float32 x")
    call = _rope_op if torch.compiler.is_compiling() else _EagerRope.apply
    return call(x, cos, sin, False)


class RopeBF16(torch.autograd.Function):
    """The rotation of bfloat16 x (eager): R x, or Rᵀ x when `inverse`; its gradient is the
    other one, this Function again, so create_graph=True needs no special case."""

    @staticmethod
    def forward(ctx, x, cos, sin, inverse):
        ctx.save_for_backward(cos, sin)
        ctx.inverse = inverse
        return _rope(x, cos, sin, inverse)

    @staticmethod
    def backward(ctx, grad):
        cos, sin = ctx.saved_tensors
        return RopeBF16.apply(grad.to(torch.bfloat16), cos, sin, not ctx.inverse), None, None, \
            None
