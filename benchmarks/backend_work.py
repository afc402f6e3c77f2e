"""What the op backends buy on the work users run: `report --quick`'s training runs and the C16
ladder's rungs, each trained with `fast` (PyTorch's library kernels where one computes the op:
`F.rms_norm`, `F.scaled_dot_product_attention`), `reference` (the readable expressions) and
`compiled` (`torch.compile`). The table in docs/speed.md was measured while `fast` still ran
blocklab's hand-written kernels (commit bb47a6c and before).

For every suite of `report --quick` (and the ladder's ffn rungs) this plans the runs as the
command does, takes a sample of its training runs spread over its arms, and runs each of them
once per backend, in one process and in turn (fast, reference, compiled; the order rotating
from run to run, so that machine load falls on all alike). A run's wall time (the whole run:
a training, a stability sweep's trainings or a probe's passes, all through the backend's ops)
and its compile time come from its own result. The whole command's run time per backend is then
estimated as the stored quick results' run time per suite (a folder of `report --quick`,
`--results`), times that suite's ratio of summed wall times backend / fast.

`compiled` is timed with Inductor's on-disk cache as a previous run of this benchmark left it
(run it twice: the second reads a warm cache, as a worker pool's later runs would); its compile
time per run is shown apart, since every run of a worker builds its graphs again.

    python benchmarks/backend_work.py --results runs [--per-suite 3] [--suites ffn,width] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites import registered_suites
from blocklab.experiments.suites.base import plan_suite

BACKENDS = ("fast", "reference", "compiled")


def training_specs(suite, size: str, backend: str, folder: Path):
    """The runs that train a model among the first ones `suite` plans at `size` (its tuning
    runs, or its evaluation runs where it has no tuning), in plan order."""
    try:
        options = RunOptions.for_suite(suite, size, backend=backend)
        planned = plan_suite(suite, options, folder)
    except ValueError:  # a backend the suite's runs refuse (compiled with nested widths)
        return []
    return [s for s in [*planned.specs, *planned.early] if not s.timed]


def sample(specs, per_suite: int):
    """`per_suite` runs spread over the arms: the first seed of each arm in turn."""
    by_arm: dict[str, list] = defaultdict(list)
    for spec in specs:
        by_arm[spec.arm].append(spec)
    picked, arms = [], sorted(by_arm)
    while len(picked) < per_suite and any(by_arm.values()):
        for arm in arms:
            if by_arm[arm] and len(picked) < per_suite:
                picked.append(by_arm[arm].pop(0))
    return picked


def run_time(result) -> float | None:
    """A run's wall time (its whole run: training, a stability sweep's trainings or a probe's
    passes, all of which go through the backend's ops), from its result or its stored record;
    None for a run that failed."""
    data = result.to_dict() if hasattr(result, "to_dict") else result
    if not isinstance(data, dict) or data.get("status", "ok") != "ok":
        return None
    return data.get("wall_time_s")


def stored_run_s(results: Path, suite: str) -> float:
    """Summed wall time of the runs `report --quick` stored for `suite` (its run files, named by
    run id; not its summaries)."""
    total = 0.0
    for path in (results / suite).glob("quick*/*.json"):
        if not re.fullmatch(r"[0-9a-f]{12}\.json", path.name):
            continue
        try:
            total += run_time(json.loads(path.read_text())) or 0.0
        except (OSError, ValueError):
            continue
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, required=True,
                        help="a folder of `report --quick` results (for the weights)")
    parser.add_argument("--per-suite", type=int, default=3)
    parser.add_argument("--ladder", default="rung1,rung3", help="C16 rungs to sample")
    parser.add_argument("--suites", default="", help="only these suites (comma-separated)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    work = []  # (group, spec by backend)
    with tempfile.TemporaryDirectory() as tmp:
        chosen = [n for n in args.suites.split(",") if n]
        for suite in registered_suites():
            if chosen and suite.name not in chosen:
                continue
            sizes = ["quick"] + ([r for r in args.ladder.split(",") if r]
                                 if suite.name == "ffn" else [])
            for size in sizes:
                plans = {b: {s.run_id: s for s in training_specs(suite, size, b, Path(tmp))}
                         for b in BACKENDS}
                for spec in sample(list(plans["fast"].values()), args.per_suite):
                    work.append((f"{suite.name} {size}",
                                 {b: plans[b].get(spec.run_id) for b in BACKENDS}))
        rows = []
        for i, (group, specs) in enumerate(work):
            order = BACKENDS[i % 3:] + BACKENDS[:i % 3]
            times = {}
            for backend in order:
                if specs[backend] is None:
                    times[backend] = {"error": "refused by the suite"}
                    continue
                try:
                    result = specs[backend].execute(None)
                except Exception as err:  # a backend that cannot run this run: recorded
                    times[backend] = {"error": f"{type(err).__name__}: {err}"[:120]}
                    continue
                wall = run_time(result)
                times[backend] = ({"error": "the run failed"} if wall is None else
                                  {"wall_s": wall, "compile_s": result.to_dict().get("compile_s")})
            rows.append({"group": group, "label": specs["fast"].label, "times": times})
            print(f"{group:14s} {specs['fast'].label:34s} " + "  ".join(
                f"{b} {t['wall_s']:6.1f}s" + (f" (+{t['compile_s']:.0f}s compile)"
                                               if t.get("compile_s") else "")
                if "wall_s" in t else f"{b} error" for b, t in times.items()), flush=True)

    groups: dict[str, list] = defaultdict(list)
    for row in rows:
        groups[row["group"]].append(row)
    summary = {}
    for group, members in groups.items():
        entry = {"runs": len(members)}
        for backend in BACKENDS[1:]:
            ok = [m for m in members
                  if "wall_s" in m["times"][backend] and "wall_s" in m["times"]["fast"]]
            if len(ok) < len(members):
                entry[backend] = None
                continue
            entry[backend] = (sum(m["times"][backend]["wall_s"] for m in ok)
                              / sum(m["times"]["fast"]["wall_s"] for m in ok))
            if backend == "compiled":
                entry["compile_s_median"] = statistics.median(
                    m["times"][backend]["compile_s"] or 0.0 for m in ok)
        summary[group] = entry

    # Whole command: each suite's stored training time × its ratio.
    command = {b: 0.0 for b in BACKENDS}
    for suite in registered_suites():
        base = stored_run_s(args.results, suite.name)
        entry = summary.get(f"{suite.name} quick")
        if not base or entry is None:
            continue
        command["fast"] += base
        for backend in BACKENDS[1:]:
            ratio = entry[backend]
            command[backend] += base * (ratio if ratio is not None else 1.0)
    out = {"by_group": summary, "command_training_s": command, "compile_note":
           "compiled's compile time per run is not in these sums: see compile_s_median"}
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print("\nsum of sampled runs' wall time, as a ratio to fast (below 1: faster than fast)")
    for group, entry in summary.items():
        cells = "  ".join(f"{b} {entry[b]:.2f}×" if entry[b] is not None else f"{b} n/a"
                          for b in BACKENDS[1:])
        extra = (f"  (compile {entry['compile_s_median']:.0f} s a run)"
                 if entry.get("compile_s_median") else "")
        print(f"  {group:16s} {entry['runs']} runs  {cells}{extra}")
    print(f"\nreport --quick's training runs (stored in {args.results}: "
          f"{command['fast'] / 60:.1f} min with fast):")
    for backend in BACKENDS[1:]:
        print(f"  {backend:9s} {command[backend] / 60:.1f} min "
              f"({command[backend] / command['fast']:.2f}× fast; compile time not included)")


if __name__ == "__main__":
    main()
