"""Training throughput: blocklab DecoderLM vs Hugging Face LlamaForCausalLM, side by side.

Both models have the same Llama architecture (RoPE, RMSNorm, SwiGLU), start from the same
weights and see the same batches (bytes of Python standard-library sources, so vocab 256 is
exact) on 2 CPU threads. Configs (`--config`):

    bar  vocab 256, d_model 256, 4 layers, 4 heads, d_ff 688,  T 256, B 16   (default)
    P    vocab 256, d_model 512, 8 layers, 8 heads, d_ff 1376, T 512, B 8

Arms: "blocklab" (`DecoderLM(backend=--backend, precision=--precision)`), "hf" (eager, SDPA
attention), with `--hf-compile` "hf_compiled" (the same HF model compiled in place,
`model.compile()`), and with `--precision bf16 --with-fp32` "blocklab_fp32" (blocklab's own
float32 step, the same weights: its "speed-up" line is what bfloat16 buys blocklab here).
Precision (`--precision`): fp32, or bf16, where blocklab computes in
bfloat16 with float32 weights (`precision="bf16"`) and Hugging Face runs its float32 model under
`torch.autocast("cpu", dtype=torch.bfloat16)`, the usual way.

Each arm is trained by blocklab's one training step (`blocklab.experiments.trainer.train_step`:
AdamW with the trainer's parameter groups, gradient clipping), with its own optimizer. Before
the steps every arm runs one untimed forward + backward whose gradients are dropped (no update),
timed apart: for a compiled arm that is the torch.compile warm-up. Then steps alternate between
the arms, in alternating order, so that machine noise hits them alike; warm-up steps are not
timed. Prints per arm the median step, tokens/s (from the median step, the best step and the
mean), the speed-up of blocklab over each Hugging Face arm (HF step time / blocklab step time),
the final losses (same weights and data: in fp32 they agree to rounding; in bf16 the two
schemes round differently), `model.backends()` for blocklab, and each arm's peak resident
memory.

Peak memory is measured in a fresh subprocess per arm (this script with `--memory-of ARM`), so
that arms do not share a peak: it imports the same modules, builds that one model, runs the
first call, the warm-up steps and 3 steps, and reports its peak resident size over the whole
run (building and any compiling included; Inductor's compile workers are other processes and
not counted) and, where Linux lets the peak be reset (/proc/self/clear_refs), over the 3 steps
alone, with the resident size before the model was built. The peak is /proc/self/status's
VmHWM; `resource.getrusage(RUSAGE_SELF).ru_maxrss` is kept in the JSON too, but it is not the
figure: Linux carries the forking parent's peak into it across exec, so in a child of this
(large) process it reads at least the parent's peak. `--no-memory` skips the subprocesses.

bfloat16 matmuls need AVX-512 BF16 or AMX to be fast on a CPU; without them (the CPU capability
and flags are printed) bf16 arms run many times slower than fp32 and say little about machines
that have them.

blocklab runs with `packed_qkv` (one q/k/v matmul) by default; `--packed-gate-up` also packs
the FFN's gate and up projections into one matmul, which on CPU tends to cost more than it
saves (its backward has to concatenate the two output gradients). Both models use SDPA's
`is_causal` path without a mask.

    python benchmarks/train_vs_hf.py [--config bar|P] [--precision fp32|bf16]
        [--backend fast|reference|compiled] [--hf-compile] [--steps 20] [--warmup 3]
        [--no-packed-qkv] [--no-memory] [--rounds 1] [--profile] [--json]

`--rounds N` repeats the timed steps N times on fresh batches and prints the median and range
of the per-round speed-ups; `--profile` then profiles 3 steps per arm and prints where each
step's time goes (`step_profile.py`: matmul, attention, the RMSNorm kernel,
elementwise ops, casts, loss, optimizer, other) and the casts it makes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from blocklab.config import ModelConfig
from blocklab.experiments.env import BF16_FLAGS, cpu_flags
from blocklab.experiments.trainer import TrainConfig, make_optimizer, train_step
from blocklab.interop.hf import hf_to_blocklab_name
from blocklab.interop.hf_config import to_hf
from blocklab.nn import DecoderLM

SOURCES = ("os.py", "typing.py", "argparse.py", "inspect.py", "dataclasses.py", "pathlib.py")
CONFIGS = {
    "bar": {"vocab_size": 256, "d_model": 256, "n_layers": 4, "n_heads": 4, "d_ff": 688,
            "seq_len": 256, "batch": 16},
    "P": {"vocab_size": 256, "d_model": 512, "n_layers": 8, "n_heads": 8, "d_ff": 1376,
          "seq_len": 512, "batch": 8},
}
ARMS = ("blocklab", "hf", "hf_compiled", "blocklab_fp32")
MEMORY_STEPS = 3


def corpus() -> torch.Tensor:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    data = b"".join((stdlib / name).read_bytes() for name in SOURCES if (stdlib / name).exists())
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).long()


def batches(data: torch.Tensor, batch: int, seq_len: int, steps: int, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        starts = torch.randint(0, data.numel() - seq_len - 1, (batch,), generator=gen)
        yield torch.stack([data[s:s + seq_len + 1] for s in starts.tolist()])  # [B, T + 1]


# packed tensor -> the separate tensors it stacks, in row order
PACKED = {"attention.qkv_proj.weight": ("attention.q_proj.weight", "attention.k_proj.weight",
                                        "attention.v_proj.weight"),
          "ffn.gate_up_proj.weight": ("ffn.gate_proj.weight", "ffn.up_proj.weight")}


def copy_hf_weights(hf, ours: DecoderLM) -> None:
    """Load the Hugging Face model's weights into ours, stacking the parts ours holds packed."""
    state = {hf_to_blocklab_name(name): t for name, t in hf.state_dict().items()}
    for name in ours.state_dict():
        for packed, parts in PACKED.items():
            if name.endswith(packed):
                prefix = name.removesuffix(packed)
                state[name] = torch.cat([state.pop(prefix + part) for part in parts])
    ours.load_state_dict(state)


def machine() -> dict:
    """torch's CPU capability and the /proc/cpuinfo flags bfloat16 speed depends on."""
    return {"capability": torch.backends.cpu.get_cpu_capability(),
            "flags": cpu_flags(BF16_FLAGS), "load_average": os.getloadavg()}


def model_config(args) -> ModelConfig:
    c = CONFIGS[args.config]
    return ModelConfig(vocab_size=c["vocab_size"], d_model=c["d_model"],
                       n_layers=c["n_layers"], n_heads=c["n_heads"], d_ff=c["d_ff"],
                       max_seq_len=args.seq_len, norm_eps=1e-6)


def build_hf(cfg: ModelConfig):
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(**{k: v for k, v in to_hf(cfg, "llama").items()
                                           if k != "architectures"},
                                        attn_implementation="sdpa"))


def build_blocklab(cfg: ModelConfig, args) -> DecoderLM:
    return DecoderLM(cfg, backend=args.backend, precision=args.precision,
                     packed_gate_up=args.packed_gate_up, packed_qkv=args.packed_qkv)


def forward_of(arm: str, model, precision: str):
    """ids [B, T] -> logits [B, T, V] for one arm; the Hugging Face arms under autocast in bf16."""
    if arm.startswith("blocklab"):
        return model  # bfloat16 compute is the model's own (precision="bf16")

    def forward(ids):
        if precision == "fp32":
            return model(input_ids=ids, use_cache=False).logits
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(input_ids=ids, use_cache=False).logits
        # bfloat16 logits; autocast would compute the cross-entropy in float32 all the same.
        return logits.float()
    return forward


def first_call(forward, model, chunk: torch.Tensor) -> float:
    """Seconds of one forward + backward on chunk [B, T + 1], gradients dropped, no update:
    where a compiled arm builds its graphs."""
    tick = time.perf_counter()
    logits = forward(chunk[:, :-1])
    F.cross_entropy(logits.flatten(0, 1), chunk[:, 1:].flatten()).backward()
    seconds = time.perf_counter() - tick
    model.zero_grad(set_to_none=True)
    return seconds


def _status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Reset this process's peak resident size (Linux: VmHWM), True if it could."""
    try:
        Path("/proc/self/clear_refs").write_text("5", encoding="utf-8")
    except OSError:
        return False
    return True


def memory_of(arm: str, args) -> dict:
    """Peak resident memory of one arm trained alone in this (fresh) process."""
    # The same imports in every arm, so that the resident size before the model agrees.
    from transformers import LlamaForCausalLM  # noqa: F401
    torch.manual_seed(0)
    before = _status_kib("VmRSS")
    cfg = model_config(args)
    if arm == "blocklab":
        model = build_blocklab(cfg, args)
    else:
        model = build_hf(cfg)
        if arm == "hf_compiled":
            model.compile()
    forward = forward_of(arm, model, args.precision)
    tc = TrainConfig(lr=1e-3)
    optim = make_optimizer(model, tc)
    params = list(model.parameters())
    chunks = list(batches(corpus(), args.batch, args.seq_len, args.warmup + MEMORY_STEPS + 1))
    first_call(forward, model, chunks[0])
    for chunk in chunks[1:args.warmup + 1]:
        train_step(forward, chunk, optim, params, lr=tc.lr, grad_clip=tc.grad_clip)
    # ru_maxrss is the peak of this process since it started, in KiB on Linux; but Linux
    # carries the peak of the process that forked it across fork + exec into it, so a child of
    # a large parent reports at least the parent's peak. VmHWM is the peak of this process's
    # own memory since exec, so it is the figure used where /proc has it.
    ru_maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    whole = _status_kib("VmHWM")
    reset = _reset_peak()
    for chunk in chunks[args.warmup + 1:]:
        train_step(forward, chunk, optim, params, lr=tc.lr, grad_clip=tc.grad_clip)
    steps = _status_kib("VmHWM") if reset else None
    ru_maxrss = max(ru_maxrss, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    peak = ru_maxrss if whole is None else max(whole, steps or 0)
    return {"arm": arm, "peak_kib": peak, "steps_peak_kib": steps, "ru_maxrss_kib": ru_maxrss,
            "rss_before_model_kib": before}


def measure_memory(arm: str, args) -> dict:
    """memory_of(arm) in a fresh subprocess running this script."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--memory-of", arm,
           "--config", args.config, "--precision", args.precision, "--backend", args.backend,
           "--threads", str(args.threads), "--warmup", str(args.warmup),
           "--batch", str(args.batch), "--seq-len", str(args.seq_len),
           "--packed-qkv" if args.packed_qkv else "--no-packed-qkv",
           "--packed-gate-up" if args.packed_gate_up else "--no-packed-gate-up"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"arm": arm, "error": f"exit {proc.returncode}: {tail}"}
    return json.loads(lines[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=tuple(CONFIGS), default="bar")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--backend", choices=("fast", "reference", "compiled"), default="fast",
                        help="blocklab's backend (blocklab.nn.backends)")
    parser.add_argument("--hf-compile", action="store_true",
                        help="add a third arm: the HF model compiled in place (model.compile())")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per arm")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per arm")
    parser.add_argument("--batch", type=int, default=None, help="default: the config's")
    parser.add_argument("--seq-len", type=int, default=None, help="default: the config's")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--packed-qkv", action=argparse.BooleanOptionalAction, default=True,
                        help="one matmul for the q, k, v projections")
    parser.add_argument("--packed-gate-up", action=argparse.BooleanOptionalAction,
                        default=False, help="one matmul for the gate and up projections")
    parser.add_argument("--with-fp32", action="store_true",
                        help="with --precision bf16: add blocklab's float32 step as an arm")
    parser.add_argument("--rounds", type=int, default=1,
                        help="repeat the timed steps; report each round's ratio (median, spread)")
    parser.add_argument("--profile", action="store_true",
                        help="after timing, profile 3 steps per arm (step_profile.py categories)")
    parser.add_argument("--no-memory", action="store_true",
                        help="skip the per-arm peak-memory subprocesses")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--memory-of", choices=ARMS, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    load = os.getloadavg()  # before this process adds its own load
    args.batch = args.batch or CONFIGS[args.config]["batch"]
    args.seq_len = args.seq_len or CONFIGS[args.config]["seq_len"]
    if args.steps < 1 or args.warmup < 0 or args.rounds < 1:
        parser.error("--steps and --rounds must be >= 1 and --warmup >= 0")

    torch.set_num_threads(args.threads)
    if args.memory_of is not None:
        print(json.dumps(memory_of(args.memory_of, args)))
        return

    torch.manual_seed(0)
    cfg = model_config(args)
    hf = build_hf(cfg)
    ours = build_blocklab(cfg, args)
    copy_hf_weights(hf, ours)
    models = {"blocklab": ours, "hf": hf}
    if args.with_fp32 and args.precision == "bf16":
        # blocklab's own float32 step beside its bfloat16 one: what bf16 buys on this CPU
        ours_fp32 = DecoderLM(cfg, backend=args.backend, precision="fp32",
                              packed_gate_up=args.packed_gate_up, packed_qkv=args.packed_qkv)
        ours_fp32.load_state_dict(ours.state_dict())
        models["blocklab_fp32"] = ours_fp32
    if args.hf_compile:
        hf_compiled = build_hf(cfg)
        hf_compiled.load_state_dict(hf.state_dict())
        hf_compiled.compile()  # in place: same parameters and state-dict keys
        models["hf_compiled"] = hf_compiled
    arms = list(models)
    forwards = {arm: forward_of(arm, m, args.precision) for arm, m in models.items()}
    # Every arm takes blocklab's training step (AdamW groups, clipping): the step timed is
    # the step trained.
    tc = TrainConfig(lr=1e-3)
    optims = {arm: make_optimizer(m, tc) for arm, m in models.items()}
    params = {arm: list(m.parameters()) for arm, m in models.items()}
    seconds: dict[str, list[float]] = {arm: [] for arm in arms}
    losses = dict.fromkeys(arms, float("nan"))
    data = corpus()
    chunks = batches(data, args.batch, args.seq_len, 1 + args.warmup + args.steps)
    first = next(chunks)
    first_s = {arm: first_call(forwards[arm], models[arm], first) for arm in arms}
    # Rounds: the timed steps again on fresh batches; each round's ratio of median steps is
    # one reading, so the spread across rounds shows how far one reading can be trusted.
    round_ratios: dict[str, list[float]] = {arm: [] for arm in arms if arm != "blocklab"}
    for rnd in range(args.rounds):
        this_round: dict[str, list[float]] = {arm: [] for arm in arms}
        if rnd:
            chunks = batches(data, args.batch, args.seq_len, args.steps, seed=rnd)
        for step, chunk in enumerate(chunks):
            # Swap the order every step so that no arm always runs on a cache another just
            # warmed (or cooled).
            for arm in arms if step % 2 == 0 else arms[::-1]:
                start = time.perf_counter()
                result = train_step(forwards[arm], chunk, optims[arm], params[arm], lr=tc.lr,
                                    grad_clip=tc.grad_clip)
                if rnd or step >= args.warmup:
                    this_round[arm].append(time.perf_counter() - start)
                losses[arm] = result.loss
        for arm in arms:
            seconds[arm].extend(this_round[arm])
        for arm in round_ratios:
            round_ratios[arm].append(statistics.median(this_round[arm])
                                     / statistics.median(this_round["blocklab"]))
    profiles = {}
    if args.profile:
        from step_profile import profile_step  # this folder's module: python puts it on the path
        chunk = first
        for arm in arms:
            profiles[arm] = profile_step(lambda arm=arm: train_step(
                forwards[arm], chunk, optims[arm], params[arm], lr=tc.lr,
                grad_clip=tc.grad_clip), steps=3)
    memory = {} if args.no_memory else {arm: measure_memory(arm, args) for arm in arms
                                        if arm != "blocklab_fp32"}

    tokens = args.batch * args.seq_len  # per step
    # The median step resists other processes' bursts on a shared machine, the best step shows
    # each arm with the least interference; the mean is the plain throughput over all steps.
    step_ms = {arm: statistics.median(s) * 1e3 for arm, s in seconds.items()}
    median = {arm: tokens / statistics.median(s) for arm, s in seconds.items()}
    best = {arm: tokens / min(s) for arm, s in seconds.items()}
    mean = {arm: tokens * len(s) / sum(s) for arm, s in seconds.items()}
    hf_arms = [arm for arm in arms if arm != "blocklab"]
    # Speed-up of blocklab over each HF arm: the HF arm's median step time over blocklab's.
    speedup = {arm: median["blocklab"] / median[arm] for arm in hf_arms}
    info = machine()
    result = {
        "config": {"config": args.config, "precision": args.precision,
                   "backend": args.backend, "hf_compile": args.hf_compile,
                   "batch": args.batch, "seq_len": args.seq_len, "threads": args.threads,
                   "steps": args.steps, "warmup": args.warmup,
                   "packed_qkv": args.packed_qkv, "packed_gate_up": args.packed_gate_up,
                   "model": {k: v for k, v in CONFIGS[args.config].items()
                             if k not in ("batch", "seq_len")},
                   "torch": torch.__version__},
        "machine": {**info, "load_average": load},
        "backends": ours.backends(),
        "step_ms": step_ms,
        "tokens_per_s": median,
        "tokens_per_s_best": best,
        "tokens_per_s_mean": mean,
        "ratio": median["blocklab"] / median["hf"],
        "ratio_best": best["blocklab"] / best["hf"],
        "ratio_mean": mean["blocklab"] / mean["hf"],
        "speedup": speedup,
        "rounds": {arm: {"ratios": r, "median": statistics.median(r), "min": min(r),
                         "max": max(r)} for arm, r in round_ratios.items()},
        "profile": profiles,
        "first_call_s": first_s,
        "peak_memory": memory,
        "final_loss": losses,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    flags = " ".join(f"{f}={'yes' if v else 'no'}" for f, v in info["flags"].items())
    c = CONFIGS[args.config]
    print(f"torch {torch.__version__}, CPU capability {info['capability']}; {flags}; "
          f"threads {args.threads}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    cpus = os.cpu_count() or 1
    if load[0] + args.threads > cpus + 0.5:
        print(f"BUSY MACHINE: load average {load[0]:.2f} on {cpus} CPUs; at --threads "
              f"{args.threads} each arm's steps include waiting for other processes, so compare "
              "the speed-ups rather than the step times")
    if args.precision == "bf16" and not (info["flags"]["avx512_bf16"]
                                         or info["flags"]["amx_bf16"]):
        print("no AVX-512 BF16 / AMX on this CPU: bfloat16 matmuls are far slower than float32 "
              "here, so these bf16 figures say little about CPUs that have them")
    print(f"config {args.config}: vocab {c['vocab_size']}, d_model {c['d_model']}, "
          f"{c['n_layers']} layers, {c['n_heads']} heads, d_ff {c['d_ff']}, T {args.seq_len}, "
          f"B {args.batch}; {args.precision}; {args.steps} timed steps after {args.warmup} "
          "warm-up")
    print(f"blocklab: backend={args.backend!r}, packed_qkv={args.packed_qkv}, packed_gate_up="
          f"{args.packed_gate_up}; backends(): {result['backends']}")
    print(f"{'arm':>12} {'step ms':>9} {'tokens/s':>9} {'(best':>7} {'mean)':>7} "
          f"{'first call s':>12} {'peak RSS MiB':>13} {'steps only':>11} {'final loss':>10}")
    for arm in arms:
        mem = memory.get(arm, {})
        if "error" in mem or not mem:
            whole = steps_only = "n/a"
        else:
            whole = f"{mem['peak_kib'] / 1024:.0f}"
            steps_only = ("n/a" if mem["steps_peak_kib"] is None
                          else f"{mem['steps_peak_kib'] / 1024:.0f}")
        print(f"{arm:>12} {step_ms[arm]:>9.1f} {median[arm]:>9.0f} {best[arm]:>7.0f} "
              f"{mean[arm]:>7.0f} {first_s[arm]:>12.1f} {whole:>13} {steps_only:>11} "
              f"{losses[arm]:>10.4f}")
    for arm in hf_arms:
        print(f"  blocklab speed-up over {arm}: {speedup[arm]:.3f}× ({arm} step time / "
              f"blocklab's; best steps: {best['blocklab'] / best[arm]:.3f}, mean: "
              f"{mean['blocklab'] / mean[arm]:.3f})")
    for arm, r in result["rounds"].items():
        if len(r["ratios"]) > 1:
            print(f"  over {len(r['ratios'])} rounds of {args.steps} steps: blocklab speed-up "
                  f"over {arm} median {r['median']:.3f}× (min {r['min']:.3f}, max "
                  f"{r['max']:.3f})")
    if profiles:
        from step_profile import CATEGORIES
        print("profile (torch.profiler, 3 steps; ms of own CPU time per step; casts: "
              "aten::_to_copy calls per step)")
        print(f"{'category':>12} " + " ".join(f"{arm:>12}" for arm in profiles))
        for cat in CATEGORIES:
            print(f"{cat:>12} " + " ".join(f"{p['ms'][cat]:>12.1f}" for p in profiles.values()))
        print(f"{'total':>12} " + " ".join(f"{p['total_ms']:>12.1f}" for p in profiles.values()))
        print(f"{'casts':>12} " + " ".join(f"{p['casts']:>12.0f}" for p in profiles.values()))
    for arm, mem in memory.items():
        if "error" in mem:
            print(f"  peak memory of {arm}: not measured ({mem['error']})")
    if memory:
        base = {arm: m["rss_before_model_kib"] / 1024 for arm, m in memory.items()
                if "error" not in m and m.get("rss_before_model_kib")}
        if base:
            print("peak RSS: each arm alone in a fresh process (VmHWM: building, first call "
                  f"(compiling), warm-up and {MEMORY_STEPS} steps; 'steps only': the peak over "
                  f"the {MEMORY_STEPS} steps); resident before the model was built: "
                  + ", ".join(f"{arm} {mib:.0f} MiB" for arm, mib in base.items()))
    print("first call: one untimed forward + backward before the steps (for a compiled arm, "
          "the torch.compile warm-up)")


if __name__ == "__main__":
    main()
