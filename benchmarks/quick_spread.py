"""Where the per-seed spread that keeps quick parts open comes from, measured.

Two measurements, each on what a quick report stores:

ffn    C16's paired gaps (val loss arm − ReLU) / ReLU, %, per seed, at the quick length and
       trained twice as long on the same seeds at the same tuned learning rates (the ffn
       suite's own `longer` runs, stored in `<size>+x2` beside the suite's folder), on every
       seed the folder's ffn plan holds: mean, 95% interval and sd of each gap at both
       lengths. The quick runs are read from RESULTS (`blocklab report --quick --results
       RESULTS`, or `blocklab suite ffn --quick --results RESULTS`).
windows  the position suite's metric (loss past L against sliding windows of L, %) of one
       freshly trained quick arm, read on `--sets` disjoint sets of the suite's 16 validation
       windows at 2× and 16×: the sd across sets is the evaluation's share of the per-seed
       spread; the sd across seeds is in the report.

    python benchmarks/quick_spread.py ffn --results runs [--jobs 2]
    python benchmarks/quick_spread.py windows [--arm rope] [--seed 11] [--sets 8]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path


def ffn(results: Path, jobs: int) -> None:
    from blocklab import stats
    from blocklab.claims.sequential import Wanted, run_longer
    from blocklab.experiments.executors import ParallelExecutor
    from blocklab.experiments.options import RunRequest
    from blocklab.experiments.results import ResultStore
    from blocklab.experiments.suites import get_suite
    from blocklab.experiments.suites.base import longer_dir, suite_dir
    from blocklab.experiments.suites.ffn.runs import SIZES

    request = RunRequest(results, "quick")
    suite = get_suite("ffn")
    options = request.options(suite)
    if not any(ResultStore(suite_dir(results, suite, options)).iter_results()):
        print(f"no quick ffn runs under {results}: run `blocklab suite ffn --quick "
              f"--results {results}` first", file=sys.stderr)
        raise SystemExit(2)
    arms = tuple(SIZES["quick"].arms)
    # run_longer trains these arms on every seed the folder's plan holds
    wanted = Wanted("C16", "all arms", "ffn", arms, 0, 0)
    errors = run_longer(request, {"ffn": [wanted]}, executor=ParallelExecutor(jobs),
                        progress=True)
    if errors:
        raise SystemExit(f"the longer runs failed: {errors}")
    for label, folder in (("quick", suite_dir(results, suite, options)),
                          ("×2 steps", longer_dir(results, suite, options))):
        losses: dict[str, dict[int, float]] = {}
        for _, result in ResultStore(folder).iter_results():
            run = result.run
            if (run is None or result.status != "ok" or result.final is None
                    or "d=" in run.label or " lr " in run.label):
                continue  # the scale-trend and sensitivity arms' runs
            losses.setdefault(run.arm, {})[run.seed] = result.final.val_loss
        relu = losses.get("relu", {})
        print(f"{label}: ReLU val loss {statistics.mean(relu.values()):.4f} "
              f"over seeds {sorted(relu)}")
        for arm in arms:
            if arm == "relu":
                continue
            gaps = [100 * (losses[arm][s] - relu[s]) / relu[s]
                    for s in sorted(relu) if s in losses.get(arm, {})]
            iv = stats.paired_interval(gaps)
            print(f"  {arm} − relu: {iv.value:+.2f}% [{iv.ci_low:+.2f}, {iv.ci_high:+.2f}] "
                  f"(95%, n={len(gaps)}), sd {iv.sd:.2f}")


def windows(arm: str, seed: int, sets: int) -> None:
    import numpy as np
    import torch

    from blocklab.experiments.data import load_corpus
    from blocklab.experiments.options import RunOptions
    from blocklab.experiments.suites.position.runs import (
        SIZES,
        arm_config,
        loss_beyond,
        sliding_window_loss,
        train_config,
    )
    from blocklab.experiments.trainer import evaluate, train

    torch.set_num_threads(1)
    config = SIZES["quick"]
    L, per_set = config.L, config.eval_windows
    corpus = load_corpus("stdlib")
    model, _ = train(arm_config("quick", arm), train_config(RunOptions("quick"), seed), corpus)
    model.eval()

    def metric(m: int, starts: np.ndarray) -> float:
        rows = torch.from_numpy(corpus.val[starts[:, None] + np.arange(m * L + 1)]
                                .astype(np.int64))
        full = loss_beyond(evaluate(model, {m * L: rows}, batch_tokens=16384)[m * L]
                           ["per_position"], L)
        slid = loss_beyond(sliding_window_loss(model, rows, L, L // 2), L)
        return 100 * (full - slid) / slid

    for m in (2, 16):
        last = corpus.val.size - (m * L + 1)
        starts = np.floor(np.linspace(0, last, sets * per_set)).astype(np.int64)
        values = [metric(m, starts[k::sets]) for k in range(sets)]
        print(f"{arm} seed {seed} at {m}×: {sets} disjoint sets of {per_set} windows: "
              f"{', '.join(f'{v:+.2f}' for v in values)}; mean {statistics.mean(values):+.2f}, "
              f"sd {statistics.stdev(values):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    f = sub.add_parser("ffn")
    f.add_argument("--results", type=Path, required=True)
    f.add_argument("--jobs", type=int, default=2)
    w = sub.add_parser("windows")
    w.add_argument("--arm", default="rope")
    w.add_argument("--seed", type=int, default=11)
    w.add_argument("--sets", type=int, default=8)
    args = parser.parse_args()
    if args.what == "ffn":
        ffn(args.results, args.jobs)
    else:
        windows(args.arm, args.seed, args.sets)


if __name__ == "__main__":
    main()
