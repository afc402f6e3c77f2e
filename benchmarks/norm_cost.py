"""RMSNorm vs LayerNorm at one shape: forward and forward+backward time, saved bytes, ratios.

The same measurement as one kernel run of the `norm-cost` suite (implementations interleaved
within every repeat, medians, and the RMSNorm / LayerNorm time ratio within each implementation
kind as the geometric mean of paired ratios with a Student t CI on the log ratios), for a shape
or thread count the suite's grids do not cover. Nothing is stored; the suite is the place for
results the claims ledger reads.

    python benchmarks/norm_cost.py [--d 1024] [--rows 8192] [--threads 1] [--repeats 12]
                                   [--compile] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics

from blocklab.experiments.suites.norm_cost.timing import KINDS, PASSES, time_kernels
from blocklab.experiments.summaries import RATIO_METHOD, TimeRatio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=1024, help="normalised width")
    parser.add_argument("--rows", type=int, default=8192, help="rows (batch × tokens)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--repeats", type=int, default=12, help="interleaved repeats")
    parser.add_argument("--compile", action="store_true", help="include torch.compile'd ops")
    parser.add_argument("--json", action="store_true", help="print the raw result as JSON")
    args = parser.parse_args()

    result = time_kernels(args.d, args.rows, repeats=args.repeats, compile=args.compile,
                          threads=args.threads)
    if args.json:
        print(json.dumps(result.extra(), indent=1))
        return
    impls = result.impls
    print(f"d={args.d} rows={args.rows} threads={args.threads} repeats={args.repeats}; "
          f"RMS/LN: {RATIO_METHOD}")
    print(f"{'impl':10} {'pass':7} {'RMS ms':>9} {'LN ms':>9}  RMS/LN [95% CI]")
    for kind in KINDS:
        rms, ln = impls.get(f"rmsnorm:{kind}"), impls.get(f"layernorm:{kind}")
        if rms is None or ln is None or rms.fwd_s is None or ln.fwd_s is None:
            continue  # not timed here, or a compiled one that failed (its error recorded)
        for name in PASSES:
            a, b = rms.seconds(name), ln.seconds(name)
            if a is None or b is None:
                continue
            stats = TimeRatio.paired(a, b)
            print(f"{kind:10} {name:7} {1e3 * statistics.median(a):9.3f} "
                  f"{1e3 * statistics.median(b):9.3f}  {stats.ratio:.3f} "
                  f"[{stats.ci_low:.3f}, {stats.ci_high:.3f}]")
        print(f"{'':10} {'saved':7} {rms.extra_bytes:9d} {ln.extra_bytes:9d}  bytes beyond "
              "input and parameters")


if __name__ == "__main__":
    main()
