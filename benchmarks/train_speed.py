"""Training-step throughput of DecoderLM against transformers' LlamaForCausalLM, on CPU.

Same shapes for all (vocab 256, d_model 256, 4 layers, 4 heads, d_ff 688, T = 256, B = 16,
2 threads), one process, steps interleaved (ours, HF eager, HF sdpa, ours, ...), the median step
time reported as tokens/s. `--precision fp32` (default) trains in float32; `bf16` computes in
bfloat16 with float32 weights: blocklab by `DecoderLM(precision="bf16")`, the other models under
`torch.autocast("cpu", dtype=torch.bfloat16)`. Also per model: bytes saved for backward in one step
(counted with `torch.autograd.graph.saved_tensors_hooks`, each storage once) and the model
FLOPs utilisation (MFU): the step's model FLOPs (3× the forward count of `blocklab.budget`:
matmuls and causal attention pairs, the same for every model since the maths is the same) over
the step time, as a fraction of the matmul rate measured at the step's own GEMM shapes in the
step's own dtype (float32, or bfloat16 under `--precision bf16`).

The compute floor answers "how much faster could any implementation of this step be here?":
the step's matrix products and attention kernels (every op `FlopCounterMode` has a formula for,
plus the CPU flash-attention kernels it lacks), recorded during one blocklab step and replayed
alone on fresh tensors of the same shapes and strides, each op's fastest of a few runs. Norms,
activations, RoPE, softmax-loss, copies and the autograd engine cost nothing in the floor, so a
model's step time over the floor bounds the speedup a faster implementation of everything else
could give over that model.
The machine may be shared; the load average is printed with the figures, and so is the CPU's
capability: bfloat16 matmuls are fast only with AVX-512 BF16 or AMX, and without them run many
times slower than float32.

    python benchmarks/train_speed.py [--repeats 5] [--precision fp32|bf16] [--compile]

x-transformers joins the comparison when it is installed (`pip install x-transformers`);
`--compile` adds `DecoderLM(backend="compiled")`, printing its warm-up time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

from blocklab.budget.flops import prefill_flops
from blocklab.config import ModelConfig
from blocklab.experiments.env import BF16_FLAGS, cpu_flags
from blocklab.experiments.suites.norm_cost.timing import saved_tensor_bytes
from blocklab.nn import DecoderLM

V, D, L, H, DFF, T, B = 256, 256, 4, 4, 688, 256, 16


CONFIG = ModelConfig(vocab_size=V, d_model=D, n_layers=L, n_heads=H, d_ff=DFF, ffn="swiglu",
                     norm="rmsnorm", position="rope", max_seq_len=T)


def _ours(precision: str = "fp32") -> torch.nn.Module:
    return DecoderLM(CONFIG, precision=precision)


class Autocast(torch.nn.Module):
    """A model whose forward runs under CPU bfloat16 autocast (the usual mixed precision),
    returning float32 logits as the cross-entropy under autocast would use them."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return _logits(self.model, ids).float()


def cpu_capability() -> tuple[str, bool]:
    """torch's CPU capability and the /proc/cpuinfo flags bfloat16 speed depends on, and
    whether the CPU has bfloat16 matmul units (AVX-512 BF16 or AMX)."""
    flags = cpu_flags(BF16_FLAGS)
    return (f"CPU capability {torch.backends.cpu.get_cpu_capability()}; "
            + " ".join(f"{f}={'yes' if present else 'no'}" for f, present in flags.items()),
            flags["avx512_bf16"] or flags["amx_bf16"])


def _hf(attn: str) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=V, hidden_size=D, num_hidden_layers=L, num_attention_heads=H,
                      intermediate_size=DFF, max_position_embeddings=T,
                      attn_implementation=attn)
    return LlamaForCausalLM(cfg)


def _xtransformers() -> torch.nn.Module | None:
    """The same architecture in x-transformers (pip install x-transformers), or None."""
    try:
        from x_transformers import Decoder, TransformerWrapper
    except ImportError:
        return None
    # ff_mult = 688/256 gives the same SwiGLU width; rotary, RMSNorm, no biases, SDPA.
    return TransformerWrapper(
        num_tokens=V, max_seq_len=T, use_abs_pos_emb=False,
        attn_layers=Decoder(dim=D, depth=L, heads=H, rotary_pos_emb=True, use_rmsnorm=True,
                            ff_glu=True, ff_swish=True, ff_mult=DFF / D, ff_no_bias=True,
                            attn_flash=True))


def _logits(model, ids):
    out = model(ids)
    return out if isinstance(out, torch.Tensor) else out.logits


def _step(model, ids):
    model.zero_grad(set_to_none=True)
    logits = _logits(model, ids[:, :-1])
    F.cross_entropy(logits.reshape(-1, V), ids[:, 1:].reshape(-1)).backward()


def saved_bytes(model, ids) -> int:
    """Bytes autograd keeps for backward in one step, each storage once."""
    return saved_tensor_bytes(lambda: _step(model, ids))["bytes"]


def model_flops() -> int:
    """Forward + backward FLOPs of one step: 3× the forward count (the backward's two
    products per forward product), inputs of T tokens."""
    return 3 * prefill_flops(CONFIG, B, T, causal=True).total


def tree_map(fn, obj):
    """fn applied to every leaf of nested lists, tuples and dicts (an op's arguments)."""
    if isinstance(obj, list | tuple):
        return type(obj)(tree_map(fn, o) for o in obj)
    if isinstance(obj, dict):
        return {k: tree_map(fn, v) for k, v in obj.items()}
    return fn(obj)


_aten = torch.ops.aten
HEAVY = set(flop_registry) | {_aten._scaled_dot_product_flash_attention_for_cpu,
                              _aten._scaled_dot_product_flash_attention_for_cpu_backward}
GEMMS = (_aten.mm, _aten.addmm, _aten.bmm)


class _Spec:
    def __init__(self, t: torch.Tensor) -> None:
        self.shape, self.stride, self.dtype = t.shape, t.stride(), t.dtype

    def make(self) -> torch.Tensor:
        return torch.empty_strided(self.shape, self.stride, dtype=self.dtype).normal_()


class _Recorder(TorchDispatchMode):
    """Records every matmul/attention op of a step as (op, argument specs)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.overloadpacket in HEAVY:
            def spec(a):
                return _Spec(a) if isinstance(a, torch.Tensor) else a
            self.calls.append((func, tree_map(spec, args), tree_map(spec, kwargs)))
        return func(*args, **kwargs)


def _gemm_flops(func, args) -> int:
    shapes = [a.shape for a in args if isinstance(a, torch.Tensor)]
    if func.overloadpacket is _aten.addmm:
        shapes = shapes[1:]  # the bias
    (*batch, m, k), n = shapes[0], shapes[1][-1]
    return 2 * m * k * n * (batch[0] if batch else 1)


def compute_floor(model, ids, repeats: int) -> tuple[float, float, int]:
    """(floor s, GEMM-only s, GEMM FLOPs) of one step's matmul and attention ops run alone."""
    with _Recorder() as rec:
        _step(model, ids)

    def make(a):
        return a.make() if isinstance(a, _Spec) else a

    calls = [(f, tree_map(make, a), tree_map(make, k)) for f, a, k in rec.calls]
    gemm = [c for c in calls if c[0].overloadpacket in GEMMS]
    def best(f, a, k) -> float:
        # The op's own fastest time, its inputs warm in cache as they are in a real step.
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            f(*a, **k)
            times.append(time.perf_counter() - t0)
        return min(times)

    with torch.no_grad():
        per_call = [best(*c) for c in calls]
    floor = sum(per_call)
    gemm_s = sum(t for t, c in zip(per_call, calls, strict=True)
                 if c[0].overloadpacket in GEMMS)
    return floor, gemm_s, sum(_gemm_flops(f, a) for f, a, _ in gemm)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                        help="bf16: blocklab precision='bf16', the others under autocast")
    parser.add_argument("--compile", action="store_true",
                        help="add DecoderLM(backend='compiled'); its warm-up is timed and "
                             "printed")
    args = parser.parse_args()
    capability, bf16_units = cpu_capability()
    print(f"{capability}; precision {args.precision}")
    if args.precision == "bf16" and not bf16_units:
        print("no AVX-512 BF16 / AMX on this CPU: bfloat16 matmuls are far slower than float32 "
              "here; MFU below is against this machine's bfloat16 rate")
    torch.set_num_threads(2)
    torch.manual_seed(0)
    ids = torch.randint(0, V, (B, T + 1))
    others = {"hf_eager": _hf("eager"), "hf_sdpa": _hf("sdpa")}
    xt = _xtransformers()
    if xt is None:
        print("x-transformers is not installed (pip install x-transformers); skipping it")
    else:
        others["x_transf"] = xt
    if args.precision == "bf16":
        others = {name: Autocast(m) for name, m in others.items()}
    models = {"blocklab": _ours(args.precision), **others}
    if args.compile:
        compiled = DecoderLM(CONFIG, backend="compiled", precision=args.precision)
        compiled.load_state_dict(models["blocklab"].state_dict())
        warm = compiled.warm_up(ids[:, :-1])
        print(f"blocklab compiled: warm-up (torch.compile) {warm:.1f} s, not in the step times")
        models["compiled"] = compiled
    load = os.getloadavg()
    times: dict[str, list[float]] = {k: [] for k in models}
    for m in models.values():
        _step(m, ids)  # warm-up
    for _ in range(args.repeats):
        for name, m in models.items():
            t0 = time.perf_counter()
            _step(m, ids)
            times[name].append(time.perf_counter() - t0)
    floor, gemm_s, gemm_flops = compute_floor(models["blocklab"], ids, max(args.repeats, 3))
    rate = gemm_flops / gemm_s
    flops = model_flops()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; model FLOPs per step "
          f"{flops / 1e9:.1f} G; matmul rate at the step's GEMM shapes {rate / 1e9:.1f} "
          f"GFLOP/s ({'bfloat16' if args.precision == 'bf16' else 'float32'}, 2 threads)")
    print(f"compute floor (blocklab's GEMMs and attention kernels replayed alone): "
          f"{floor * 1e3:.0f} ms = {B * T / floor:.0f} tokens/s")
    base = statistics.median(times["blocklab"])
    for name, m in models.items():
        t = statistics.median(times[name])
        best = min(times[name])
        print(f"{name:>9}: {B * T / t:8.0f} tokens/s  ({t / base:4.2f}× blocklab's step time)  "
              f"saved for backward {saved_bytes(m, ids) / 2**20:7.1f} MiB  "
              f"MFU {flops / t / rate:.2f}  fastest step/floor {best / floor:.2f}")
    print("fastest step/floor (both best cases, so load on the machine cancels): the most any "
          "implementation with the same matmul and attention kernels could gain over that "
          "model here.")


if __name__ == "__main__":
    main()
