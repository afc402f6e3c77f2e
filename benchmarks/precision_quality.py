"""Does bfloat16 training reach the loss float32 training reaches? Paired runs, same seeds.

Each seed trains the `blocklab train` default model (vocab 256, d_model 128, 4 layers, 4
heads, SwiGLU, RMSNorm, pre-norm, RoPE; B = 16, T = 128) for 600 steps on the built-in corpus
twice: precision "fp32" and "bf16" (bfloat16 compute, float32 weights and AdamW state). Same
initial weights, same batches; the only difference is the arithmetic. Prints each seed's final
validation loss in both, their difference bf16 − fp32, its mean with a 95% t interval over the
seeds (`blocklab.experiments.suites.base.mean_ci`), and whether the interval lies within
±margin (0.01 nats by default): a bfloat16 run that is as good as float32 to that margin.

Runs go to worker processes (one thread each, `--jobs` at once) and each result is written
atomically to OUT/<run id>.json (a `ResultStore`), so an interrupted check resumes where it stopped.
On a CPU without bfloat16 matrix units (no AMX or AVX512-BF16) the bf16 runs are many times
slower than the float32 ones; the CPU capability is printed with the figures.

    python benchmarks/precision_quality.py [--seeds 3] [--steps 600] [--jobs 2]
                                           [--out runs/precision-quality] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from blocklab.experiments.run_result import RunResult

PRECISIONS = ("fp32", "bf16")


def _configs(args: argparse.Namespace, precision: str, seed: int):
    from blocklab.config import ModelConfig
    from blocklab.experiments.trainer import TrainConfig

    model = ModelConfig(vocab_size=256, d_model=args.d_model, n_layers=args.n_layers,
                        n_heads=4)
    train = TrainConfig(steps=args.steps, seed=seed, precision=precision, threads=1,
                        eval_every=0)
    return model, train


def _row(result: RunResult) -> dict:
    train = result.train_config or {}
    return {"precision": train["precision"], "seed": train["seed"], "status": result.status,
            "val_loss": result.final.val_loss if result.final is not None else None,
            "ms_per_step": result.ms_per_step}


def _one(args: argparse.Namespace, precision: str, seed: int, path: str) -> dict:
    from blocklab.experiments.trainer import run

    model, train = _configs(args, precision, seed)
    return _row(run(model, train, "stdlib", path))


def summarise(rows: list[dict], margin: float) -> dict:
    """Paired differences bf16 − fp32 of the final validation loss, with a 95% t interval."""
    from blocklab.experiments.suites.base import mean_ci

    by = {(r["precision"], r["seed"]): r for r in rows}
    seeds = sorted({r["seed"] for r in rows})
    diffs = []
    for seed in seeds:
        a, b = by[("fp32", seed)], by[("bf16", seed)]
        if a["status"] == b["status"] == "ok":
            diffs.append(b["val_loss"] - a["val_loss"])
    failed = [f"{r['precision']} seed {r['seed']}: {r['status']}" for r in rows
              if r["status"] != "ok"]
    out = {"seeds": seeds, "differences": diffs, "failed": failed, "margin": margin}
    if len(diffs) >= 2:
        ci = mean_ci(diffs)  # the suites' 95% t interval
        out.update(mean=ci.mean, ci95=[ci.ci_low, ci.ci_high], max_abs=max(abs(d) for d in diffs),
                   within_margin=bool(-margin < ci.ci_low and ci.ci_high < margin))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--n-layers", type=int, default=4)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--margin", type=float, default=0.01, help="nats")
    parser.add_argument("--out", type=Path, default=Path("runs/precision-quality"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import torch
    from rich.progress import Progress

    from blocklab.experiments.results import ResultStore, run_id

    store = ResultStore(args.out)
    rows, todo = [], []
    for seed in range(args.seeds):
        for precision in PRECISIONS:
            rid = run_id(*_configs(args, precision, seed), "stdlib")
            if store.has(rid):
                rows.append(_row(store.load(rid)))
            else:
                todo.append((precision, seed, str(store.path_for(rid))))
    # bf16 runs first: on CPUs without bfloat16 units they are the long ones.
    todo.sort(key=lambda t: (t[0] != "bf16", t[1]))
    with Progress(disable=args.json) as bar, \
            ProcessPoolExecutor(max_workers=args.jobs) as pool:
        task = bar.add_task(f"{len(todo)} runs", total=len(todo))
        futures = [pool.submit(_one, args, *item) for item in todo]
        for future in as_completed(futures):
            rows.append(future.result())
            bar.advance(task)
    summary = summarise(rows, args.margin)
    summary["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    summary["ms_per_step"] = {p: sorted(r["ms_per_step"] for r in rows if r["precision"] == p)
                              for p in PRECISIONS}
    summary["runs"] = sorted(rows, key=lambda r: (r["seed"], r["precision"]))
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    for r in summary["runs"]:
        print(f"seed {r['seed']} {r['precision']}: val loss {r['val_loss']:.4f} "
              f"({r['status']}, {r['ms_per_step']:.0f} ms/step)")
    if "mean" in summary:
        low, high = summary["ci95"]
        verdict = "within" if summary["within_margin"] else "not shown within"
        print(f"bf16 − fp32: mean {summary['mean']:+.4f} nats, 95% CI [{low:+.4f}, "
              f"{high:+.4f}], largest |difference| {summary['max_abs']:.4f}: {verdict} "
              f"±{args.margin:g} nats over {len(summary['differences'])} seeds")
    for line in summary["failed"]:
        print("failed:", line)
    if not math.isfinite(summary.get("mean", 0.0)):
        raise SystemExit(1)
    print(f"CPU capability: {summary['cpu_capability']}")


if __name__ == "__main__":
    main()
