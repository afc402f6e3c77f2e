"""What the norm-cost suite times (`time_kernels`, `time_like_for_like`, `time_training_steps`)
and the records a timing run stores in its `extra` (`KernelTimes`, `LikeForLikeTimes`,
`StepTimes`)."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from blocklab.config import ModelConfig
from blocklab.errors import InputError
from blocklab.experiments.env import torch_threads
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.base import interleaved

if TYPE_CHECKING:
    from torch import nn


KINDS = ("blocklab", "torch", "plain", "compiled")
PASSES = ("fwd", "fwdbwd")  # forward (no grad), forward+backward
NORM_NAMES = ("rmsnorm", "layernorm")
STEP_PATHS = ("blocklab", "like-for-like")
EPS = 1e-5  # the same ε for every implementation; the cost does not depend on it


@dataclass(frozen=True)
class StepShape:
    """The step-time run's models and batch, and its repeats after `warmup` untimed ones."""

    d_model: int
    n_layers: int
    seq_len: int
    batch_size: int
    repeats: int
    warmup: int


def model_config(norm: str, d_model: int, n_layers: int, seq_len: int) -> ModelConfig:
    """The project's default block (pre-norm, SwiGLU, RoPE), head_dim 32; only the norm differs."""
    return ModelConfig(vocab_size=256, d_model=d_model, n_layers=n_layers,
                       n_heads=max(1, d_model // 32), max_seq_len=seq_len, norm=norm,
                       position="rope", name=f"norm-cost-{norm}")


@dataclass(frozen=True)
class ImplTimes:
    """One implementation in a kernel timing: seconds per call in each repeat of each pass, a
    compiled one's compile time or error, the bytes kept for backward; None: left out."""

    compile_s: float | None = None
    error: str | None = None
    bytes: int | None = None
    extra_bytes: int | None = None
    tensors: int | None = None
    fwd_s: list[float] | None = None
    fwdbwd_s: list[float] | None = None

    def seconds(self, pass_name: str) -> list[float] | None:
        return self.fwd_s if pass_name == "fwd" else self.fwdbwd_s

    def to_dict(self) -> dict[str, float | str | int | list[float]]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


@dataclass(frozen=True)
class KernelTimes:
    """A kernels run (`time_kernels`): its shape [rows, d], each implementation's calls per
    timed block (per pass) and record, and the process's one-off torch.compile start-up."""

    kind: str  # "kernels"
    d: int
    rows: int
    threads: int
    repeats: int
    inner: dict[str, list[int]]
    impls: dict[str, ImplTimes]
    inductor_warmup_s: float

    def extra(self) -> dict[str, object]:
        return {**dataclasses.asdict(self),
                "impls": {name: rec.to_dict() for name, rec in self.impls.items()}}


@dataclass(frozen=True)
class LikeForLikeTimes(KernelTimes):
    """A like-for-like run (`time_like_for_like`): its kernel timing and what it timed."""

    method: str
    torch_fused: dict[str, bool]
    kernels: dict[str, str]
    timed_kind: str


@dataclass(frozen=True)
class StepTimes:
    """A step-time run: parameters per norm and seconds per step, {path: {norm: [s]}}."""

    kind: str  # "step"
    threads: int
    model: StepShape
    params: dict[str, int]
    step_s: dict[str, dict[str, list[float]]]

    def extra(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def timed_run(measure: Callable[[], KernelTimes | StepTimes]) -> RunResult:
    """The RunResult of a timing run: `measure()`'s record as its extra, timed."""
    started = time.perf_counter()
    record = measure()
    return RunResult(status="ok", wall_time_s=time.perf_counter() - started,
                     extra=record.extra())


def _plain_norms():
    import torch
    from torch import nn

    class PlainRMSNorm(nn.Module):
        """RMSNorm spelled in elementary ops (what a user writes without a fused kernel)."""

        def __init__(self, dim: int) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * self.weight

    class PlainLayerNorm(nn.Module):
        """LayerNorm spelled in the same elementary ops plus the centring and the bias."""

        def __init__(self, dim: int) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))
            self.bias = nn.Parameter(torch.zeros(dim))

        def forward(self, x):
            centred = x - x.mean(-1, keepdim=True)
            return centred * torch.rsqrt(centred.pow(2).mean(-1, keepdim=True) + EPS) \
                * self.weight + self.bias

    return PlainRMSNorm, PlainLayerNorm


def build_implementations(d: int, kinds: Sequence[str] = KINDS) -> dict[str, nn.Module]:
    """'norm:kind' -> a module [rows, d] -> [rows, d] (compiled ones not yet called)."""
    import torch
    from torch import nn

    from blocklab.nn import LayerNorm, RMSNorm

    plain_rms, plain_ln = _plain_norms()
    makers: dict[str, Callable[[], nn.Module]] = {
        "rmsnorm:blocklab": lambda: RMSNorm(d, eps=EPS),
        "layernorm:blocklab": lambda: LayerNorm(d, eps=EPS),
        "rmsnorm:torch": lambda: nn.RMSNorm(d, eps=EPS),
        "layernorm:torch": lambda: nn.LayerNorm(d, eps=EPS),
        "rmsnorm:plain": lambda: plain_rms(d),
        "layernorm:plain": lambda: plain_ln(d),
        "rmsnorm:compiled": lambda: torch.compile(plain_rms(d), dynamic=False),
        "layernorm:compiled": lambda: torch.compile(plain_ln(d), dynamic=False),
    }
    return {name: make() for name, make in makers.items() if name.split(":")[1] in kinds}


def saved_tensor_bytes(fn: Callable[[], Any], exclude: Sequence[Any] = ()) -> dict[str, int]:
    """{"bytes", "extra_bytes", "tensors"} autograd keeps for backward while `fn()` runs,
    counted through a `saved_tensors_hooks` pack hook, each storage once; `extra_bytes` leaves
    out `exclude` (the input and parameters): the activation memory the layer adds."""
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
    """Compile from scratch (an empty TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR, restored
    after; no compiled frames), so a compile time means the same on a machine's first run and
    its tenth. Inductor's in-memory kernel table cannot be cleared, but a kernel run compiles
    its own shape at its own thread count once, and never meets it."""
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
    """Seconds of this process's first torch.compile, reported apart from per-shape compiles."""
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
    """Forward (no grad) and forward+backward (`torch.autograd.grad` of x and the parameters)
    seconds per call of every implementation of `kinds` at [rows, d].

    A timed block repeats a call `inner` times (about `block_s`) and records the mean; repeat r
    runs the implementations rotated by r. A compile's time is recorded, and its failure,
    while the others are still timed. `passes`: a compiled module compiles once per pass.
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
                # a compiler failure (inductor raises many types) must not sink the eager
                # numbers; an eager implementation that fails is a bug and stops the run
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
    records = {name: ImplTimes(compile_s=compile_s.get(name), error=errors.get(name),
                               fwd_s=seconds[name].get("fwd"),
                               fwdbwd_s=seconds[name].get("fwdbwd"), **saved.get(name, {}))
               for name in impls}
    return KernelTimes(kind="kernels", d=d, rows=rows, threads=threads, repeats=repeats,
                       inner=inner, impls=records, inductor_warmup_s=inductor_warmup_s)


def _backward_nodes(y) -> int:
    """Autograd nodes between `y` and its leaves: 1 when one fused op computed y."""
    seen, stack = set(), [y.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(child for child, _ in node.next_functions)
    return sum(1 for node in seen if "AccumulateGrad" not in node.name())


def torch_norms_fused(d: int = 8) -> dict[str, bool]:
    """{norm: whether F.rms_norm / F.layer_norm runs as one fused op here}, read off the
    autograd graph (torch 2.13 on CPU: F.rms_norm a composite of six ops, F.layer_norm fused)."""
    import torch
    import torch.nn.functional as F

    x = torch.randn(2, d, requires_grad=True)
    weight = torch.ones(d, requires_grad=True)
    bias = torch.zeros(d, requires_grad=True)
    rms = F.rms_norm(x, (d,), weight, EPS)
    ln = F.layer_norm(x, (d,), weight, bias, EPS)
    return {"rmsnorm": _backward_nodes(rms) == 1, "layernorm": _backward_nodes(ln) == 1}


# What each like-for-like method times, by norm (the kinds of `build_implementations`).
LIKE_KERNELS = {
    "torch-fused": {"rmsnorm": "torch.nn.RMSNorm (F.rms_norm, fused)",
                    "layernorm": "torch.nn.LayerNorm (F.layer_norm, fused)"},
    "torch.compile": {"rmsnorm": "torch.compile of x·rsqrt(mean(x²) + ε)·γ (inductor)",
                      "layernorm": "torch.compile of (x − μ)·rsqrt(mean((x − μ)²) + ε)·γ + β "
                                   "(inductor)"},
}
_LIKE_KIND = {"torch-fused": "torch", "torch.compile": "compiled"}


def like_method(fused: dict[str, bool]) -> str:
    """PyTorch's own kernels when both norms run fused, else both through torch.compile."""
    return "torch-fused" if all(fused.values()) else "torch.compile"


def time_like_for_like(d: int, rows: int, *, repeats: int, threads: int,
                       block_s: float = 0.01, seed: int = 0) -> LikeForLikeTimes:
    """RMSNorm and LayerNorm on [rows, d] timed with equally fused kernels (`like_method`):
    forward+backward, and the forward when not compiled (it would compile once more)."""
    with torch_threads(threads):
        fused = torch_norms_fused()
    method = like_method(fused)
    kind = _LIKE_KIND[method]
    passes = PASSES if kind != "compiled" else ("fwdbwd",)
    timed = time_kernels(d, rows, repeats=repeats, compile=kind == "compiled",
                         threads=threads, block_s=block_s, seed=seed, kinds=(kind,),
                         passes=passes)
    return LikeForLikeTimes(**{**vars(timed), "kind": "like-for-like"}, method=method,
                            torch_fused=fused, kernels=dict(LIKE_KERNELS[method]),
                            timed_kind=kind)


def _torch_rms_norm_module(norm):
    """`norm` (a plain-gain RMSNorm) computed by F.rms_norm, sharing its gain."""
    import torch.nn.functional as F
    from torch import nn

    class _TorchRMSNorm(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight, self.eps = norm.weight, norm.eps

        def forward(self, x):
            """x: [..., d] -> [..., d]."""
            return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)

    return _TorchRMSNorm()


def like_for_like(model):
    """`model` with every RMSNorm replaced in place by F.rms_norm, the counterpart of a
    LayerNorm model's F.layer_norm; refuses an RMSNorm F.rms_norm does not compute."""
    from blocklab.nn.norm import RMSNorm

    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, RMSNorm):
                offset = getattr(child, "unit_offset", False)
                if offset or child.cast != "llama":
                    raise InputError(
                        f"like_for_like: {name} is not a plain RMSNorm (unit_offset={offset}, "
                        f"cast={child.cast!r}); F.rms_norm computes only unit_offset=False, "
                        "cast='llama'")
                setattr(parent, name, _torch_rms_norm_module(child))
    return model


def time_training_steps(step: StepShape, *, threads: int, seed: int = 0) -> StepTimes:
    """Seconds per optimizer step of both norms' models on each of `STEP_PATHS`, the four
    models' steps interleaved in a rotating order on the same batches (float32)."""
    from blocklab.experiments.data import load_corpus, sample_batch
    from blocklab.experiments.trainer import TrainConfig, build_model, make_optimizer, train_step

    corpus = load_corpus("stdlib")
    tc = TrainConfig(steps=1, batch_size=step.batch_size, seq_len=step.seq_len, seed=seed)
    keys = [(path, norm) for path in STEP_PATHS for norm in NORM_NAMES]
    with torch_threads(threads):
        models, optimizers = {}, {}
        for path, norm in keys:
            mc = model_config(norm, step.d_model, step.n_layers, step.seq_len)
            model = build_model(mc, tc)
            models[path, norm] = like_for_like(model) if path == "like-for-like" else model
            optimizers[path, norm] = make_optimizer(models[path, norm], tc)
        params = {key: list(model.parameters()) for key, model in models.items()}
        batches = [sample_batch(corpus.train, seed=seed, step=i, batch_size=tc.batch_size,
                                seq_len=tc.seq_len) for i in range(step.warmup + step.repeats)]

        def measure(key: tuple[str, str], i: int) -> float:
            tick = time.perf_counter()
            train_step(models[key], batches[i], optimizers[key], params[key], lr=tc.lr,
                       grad_clip=tc.grad_clip)  # the trainer's step, timed whole
            return time.perf_counter() - tick

        seconds = interleaved(keys, step.warmup, step.repeats, measure)
    times = {path: {norm: seconds[path, norm] for norm in NORM_NAMES} for path in STEP_PATHS}
    counts = {norm: sum(p.numel() for p in models["blocklab", norm].parameters())
              for norm in NORM_NAMES}
    return StepTimes(kind="step", threads=threads, model=step, params=counts, step_s=times)
