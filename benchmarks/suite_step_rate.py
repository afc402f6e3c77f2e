"""The suites' training steps at their quick shapes: model FLOP rate against a lone GEMM's.

A quick suite run trains a small model on one thread (two runs side by side on a 2-core
machine), where per-op costs weigh as much as the matrix products. For each shape this times
blocklab's training step (`make_optimizer` + `train_step`) in float32 and in bfloat16 compute
(attention by `F.scaled_dot_product_attention`), in one process and in turn
(so that machine load falls on both alike), and prints the median step, the model FLOP rate
(3× the forward FLOPs of `blocklab.budget`, over the step time) and that rate as a fraction of
a lone GEMM in the same dtype at the FFN's up-projection shape [B·T, d] × [d, d_ff] (its median
rate on the same thread).

    shape      suite       d    layers  heads  d_ff   T    B
    ffn        ffn         64   2       4      176    64   16
    placement  placement   32   12      2      85     64   16
    deep       placement   32   50      2      85     32   16   (C36's 50 layers)
    rung1      ffn ladder  96   2       6      384    64   23   (C16 at 4× quick's compute)
    rung2      ffn ladder  128  2       8      512    64   32   (16×)
    rung3      ffn ladder  176  2       11     704    64   45   (64×: the top rung)

The ladder's rungs are the ReLU arm's model at each rung (`blocklab ladder`, whose
`--precision auto` picks the faster precision per rung from one timed step of each).
    python benchmarks/suite_step_rate.py [--rounds 5] [--steps 10] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from blocklab.budget.flops import prefill_flops
from blocklab.config import ModelConfig
from blocklab.experiments.ladder import RUNGS
from blocklab.experiments.suites.ffn.runs import SIZES as FFN_SIZES
from blocklab.experiments.trainer import TrainConfig, make_optimizer, train_step
from blocklab.nn import DecoderLM

ARMS = ("fp32", "bf16")
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
SHAPES = {
    "ffn": dict(d_model=64, n_layers=2, n_heads=4, d_ff=176, seq_len=64, batch=16),
    "placement": dict(d_model=32, n_layers=12, n_heads=2, d_ff=85, seq_len=64, batch=16),
    "deep": dict(d_model=32, n_layers=50, n_heads=2, d_ff=85, seq_len=32, batch=16),
}
for _rung in RUNGS:  # the ladder's rungs, as `blocklab ladder` trains them (the ReLU arm)
    _size = FFN_SIZES[_rung]
    SHAPES[_rung] = dict(d_model=_size.d_model, n_layers=_size.n_layers,
                         n_heads=_size.n_heads, d_ff=4 * _size.d_model, seq_len=_size.seq_len,
                         batch=_size.batch_size)


def config_of(shape: dict) -> ModelConfig:
    return ModelConfig(vocab_size=256, d_model=shape["d_model"], n_layers=shape["n_layers"],
                       n_heads=shape["n_heads"], d_ff=shape["d_ff"],
                       max_seq_len=shape["seq_len"])


def gemm_rate(m: int, k: int, n: int, dtype: torch.dtype, repeats: int = 50) -> float:
    """Median FLOP/s of a lone [m, k] × [k, n] product in `dtype`."""
    a, b = torch.randn(m, k, dtype=dtype), torch.randn(k, n, dtype=dtype)
    for _ in range(5):
        a @ b
    times = []
    for _ in range(repeats):
        tick = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - tick)
    return 2 * m * k * n / statistics.median(times)


def measure(shape: dict, rounds: int, steps: int) -> dict:
    cfg = config_of(shape)
    tc = TrainConfig(lr=1e-3)
    models, optimizers, params = {}, {}, {}
    for arm in ARMS:
        torch.manual_seed(0)
        models[arm] = DecoderLM(cfg, precision=arm)
        optimizers[arm] = make_optimizer(models[arm], tc)
        params[arm] = list(models[arm].parameters())
    generator = torch.Generator().manual_seed(0)
    batch = torch.randint(0, 256, (shape["batch"], shape["seq_len"] + 1), generator=generator)

    def step(arm):
        train_step(models[arm], batch, optimizers[arm], params[arm], lr=tc.lr, grad_clip=1.0)

    for arm in models:
        for _ in range(3):
            step(arm)
    medians: dict[str, list[float]] = {arm: [] for arm in models}
    for rnd in range(rounds):
        for arm in ARMS if rnd % 2 == 0 else ARMS[::-1]:
            times = []
            for _ in range(steps):
                tick = time.perf_counter()
                step(arm)
                times.append(time.perf_counter() - tick)
            medians[arm].append(statistics.median(times))
    flops = 3 * prefill_flops(cfg, shape["batch"], shape["seq_len"], causal=True).total
    out = {"shape": shape, "model_flops": flops, "arms": {}}
    for arm, m in medians.items():
        sec = statistics.median(m)
        gemm = gemm_rate(shape["batch"] * shape["seq_len"], shape["d_model"], shape["d_ff"],
                         DTYPES[arm])
        out["arms"][arm] = {"step_ms": sec * 1e3, "flop_s": flops / sec, "gemm_flop_s": gemm,
                            "fraction_of_gemm": flops / sec / gemm,
                            "round_ms": [x * 1e3 for x in m],
                            "attention": models[arm].backends()["attention"]}
    out["bf16_speedup"] = out["arms"]["fp32"]["step_ms"] / out["arms"]["bf16"]["step_ms"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--shapes", nargs="+", choices=tuple(SHAPES), default=list(SHAPES))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.rounds < 1 or args.steps < 1:
        parser.error("--rounds and --steps must be >= 1")
    torch.set_num_threads(1)  # as a suite run
    results = {name: measure(SHAPES[name], args.rounds, args.steps) for name in args.shapes}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"torch {torch.__version__}, CPU capability "
          f"{torch.backends.cpu.get_cpu_capability()}, 1 thread; median of {args.rounds} "
          f"rounds × {args.steps} steps")
    print(f"{'shape':>10} {'arm':>6} {'step ms':>8} {'GFLOP/s':>8} {'GEMM GFLOP/s':>13} "
          f"{'fraction':>9} attention")
    for name, r in results.items():
        for arm, a in r["arms"].items():
            print(f"{name:>10} {arm:>6} {a['step_ms']:>8.2f} {a['flop_s'] / 1e9:>8.1f} "
                  f"{a['gemm_flop_s'] / 1e9:>13.1f} {a['fraction_of_gemm']:>9.2f} "
                  f"{a['attention']}")
        print(f"{name:>10} bf16 speed-up over fp32: {r['bf16_speedup']:.3f}×")


if __name__ == "__main__":
    main()
