"""The `quantize` summary's speed-up table of one timing run."""

from __future__ import annotations

from blocklab.experiments.suites.quantize.timings import TimedRun
from blocklab.experiments.summaries import RATIO_METHOD, Table, TimeRatio


def _x(stats: TimeRatio) -> str:
    return f"{stats.ratio:.2f} [{stats.ci_low:.2f}, {stats.ci_high:.2f}]"


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


def timing_table(run: TimedRun) -> Table:
    m, spec = run.record.model, run.record.spec
    lens = [str(t) for t in spec.seq_lens]
    return Table(
        f"Speed-up vs float32, d={m['d_model']} L={m['n_layers']} d_ff={m['d_ff']}"
        f"{' (torch.compile)' if spec.compile else ' (eager)'}, {run.record.times.threads} "
        "thread(s), random weights",
        ["scheme", *[f"prefill T={t} ×" for t in lens],
         *[f"estimate T={t}" for t in lens], *[f"bound T={t}" for t in lens],
         "decode ×", "decode estimate", "decode bound", "logits rel. error"],
        [[row.scheme, *[_x(row.prefill_speedup[t]) for t in lens],
          *[_round(row.prefill_estimate[t]) for t in lens],
          *[_round(row.prefill_bound[t]) for t in lens], _x(row.decode_speedup),
          _round(row.decode_estimate), _round(row.decode_bound), row.logits_error]
         for row in run.rows],
        f"Speed-up = float time / scheme time per repeat ({RATIO_METHOD}, "
        f"{spec.repeats} repeats: ratio [95% CI]). bound = 1/(1 − f), "
        "f the quantized layers' share of the float model's time, measured as the speed-up "
        "of the model with those layers free (zeros out): no scheme beats it, up to timing "
        "noise. estimate = Amdahl 1/(1 − f + f/S), an estimate, not a bound: prefill S = k, "
        "the part's own GEMMs timed alone; decode S = its weight bytes, float32 / int8 with "
        f"scales. Decode continues the T={lens[0]} prefill on its KV cache.")
