"""`quantize`: real int8 quantization of a DecoderLM, prefill and decode speed per scheme (C32), and
how SwiGLU's three matrices may be quantized (C33).

Two kinds of run:

    timing    (timed, alone) one random-weight DecoderLM of the size's shape, quantized by torchao
              in every scheme of `blocklab.experiments.quantize.SCHEMES` (ffn / attention / all
              linear layers × weight-only / dynamic int8); prefill at each T and one-token decode
              on the KV cache, repeats interleaved (`time_schemes`), with the float model whose
              quantized layers are free: its speed-up is the bound 1 / (1 − f) no scheme can
              beat, f the layers' share of the time; the parts' own GEMMs timed alone give the
              k of the Amdahl estimate 1 / (1 − f + f/k) (decode: S = the layers' bytes, float
              / int8, in place of k). Eager always; torch.compile'd too where the size says so.
    quality   one per seed: a small SwiGLU model trained by the one training loop
              (`blocklab.experiments.trainer.train`), then its validation loss and logits error
              under every scheme (torchao), and the C33 comparison: gate/up/down quantized
              separately, or gate|up merged with one per-tensor scale or per-row scales
              (fake quantization written in `blocklab.nn.quantize`): the FFN output error
              and validation loss of each, and per layer (`merge_comparison`) the merged
              against the separate weights and how far apart gate's and up's scales are.

`Summary.data` is a `blocklab.experiments.summaries.QuantizeData`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from blocklab.config import ModelConfig
from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import train_identity
from blocklab.experiments.suites.base import (
    Results,
    RunSpec,
    Suite,
    format_ci,
    format_level,
    mean_ci,
    paired_difference,
)
from blocklab.experiments.summaries import (
    Interval,
    QuantizeData,
    QuantQuality,
    QuantTiming,
    Summary,
    SwigluQuant,
    Table,
)

if TYPE_CHECKING:
    from torch import Tensor

# Each size: the timed shapes (model, prefill lengths, decode steps, repeats, compiled or not) and
# the trained model. Dynamic int8 on a CPU without VNNI/AMX runs int8 GEMMs on a slow path
# (seconds per call at d = 1024, T = 512), which bounds what quick can afford.
SIZES: dict[str, dict[str, Any]] = {
    "tiny": {
        "timing": [{"d_model": 64, "n_layers": 1, "n_heads": 2, "d_ff": 176, "seq_lens": [32],
                    "decode_steps": 2, "repeats": 3, "compile": False}],
        "quality": {"d_model": 32, "n_layers": 1, "n_heads": 2, "seq_len": 32, "batch_size": 4,
                    "steps": 8, "lr": 3e-3, "warmup_steps": 2, "eval_windows": 4},
    },
    "quick": {
        "timing": [{"d_model": 1024, "n_layers": 2, "n_heads": 8, "d_ff": 2816,
                    "seq_lens": [512], "decode_steps": 4, "repeats": 3, "compile": False}],
        "quality": {"d_model": 128, "n_layers": 2, "n_heads": 4, "seq_len": 128,
                    "batch_size": 16, "steps": 300, "lr": 3e-3, "warmup_steps": 20,
                    "eval_windows": 32},
    },
    "full": {
        "timing": [{"d_model": 1024, "n_layers": 4, "n_heads": 8, "d_ff": 2816,
                    "seq_lens": [512, 1024, 2048], "decode_steps": 8, "repeats": 5,
                    "compile": False},
                   {"d_model": 2048, "n_layers": 2, "n_heads": 16, "d_ff": 5632,
                    "seq_lens": [512, 1024], "decode_steps": 8, "repeats": 5, "compile": False},
                   {"d_model": 1024, "n_layers": 2, "n_heads": 8, "d_ff": 2816,
                    "seq_lens": [512], "decode_steps": 8, "repeats": 5, "compile": True}],
        "quality": {"d_model": 256, "n_layers": 4, "n_heads": 4, "seq_len": 128,
                    "batch_size": 32, "steps": 1000, "lr": 2e-3, "warmup_steps": 50,
                    "eval_windows": 64},
    },
}
THREADS = 1  # timings on one thread: on a shared 2-core machine two threads contend


def cpu_flags() -> dict[str, bool]:
    """The x86 features torch's int8 GEMMs depend on (from /proc/cpuinfo; all False elsewhere)."""
    from blocklab.experiments.env import cpu_flags as listed

    return listed(("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_tile", "amx_int8"))


def timing_config(t: dict[str, Any]) -> ModelConfig:
    from blocklab.experiments.quantize import TIMING_VOCAB

    return ModelConfig(vocab_size=TIMING_VOCAB, d_model=t["d_model"], n_layers=t["n_layers"],
                       n_heads=t["n_heads"], d_ff=t["d_ff"], ffn="swiglu",
                       max_seq_len=max(t["seq_lens"]) + t["decode_steps"])


def run_timing(t: dict[str, Any]) -> dict[str, Any]:
    import time

    from blocklab.experiments.quantize import time_schemes

    started = time.perf_counter()
    cfg = timing_config(t)
    raw = time_schemes(cfg, seq_lens=t["seq_lens"], decode_steps=t["decode_steps"],
                       repeats=t["repeats"], compile=t["compile"], threads=THREADS)
    return {"status": "ok", "kind": "timing", "model": cfg.to_dict(), "spec": t,
            "cpu_flags": cpu_flags(), **raw, "wall_time_s": time.perf_counter() - started}


def _quality_configs(size: str, seed: int):
    from blocklab.experiments.trainer import TrainConfig

    q = SIZES[size]["quality"]
    mc = ModelConfig(vocab_size=256, d_model=q["d_model"], n_layers=q["n_layers"],
                     n_heads=q["n_heads"], ffn="swiglu", max_seq_len=q["seq_len"])
    tc = TrainConfig(steps=q["steps"], batch_size=q["batch_size"], seq_len=q["seq_len"],
                     lr=q["lr"], warmup_steps=q["warmup_steps"], eval_every=0, log_every=0,
                     eval_batches=1, seed=seed, threads=1)
    return mc, tc


def merge_comparison(gate: Tensor, up: Tensor, down: Tensor,
                     row_scale: Tensor | None = None) -> dict[str, float]:
    """One layer's C33 numbers from its float weights gate, up [m, d] and down [d, m]:

        per_row_diff     max |ŵ_merged − ŵ_separate| over gate, up and down, gate|up merged
                         as one [2m, d] matrix with one scale per row against each quantized
                         alone (`quantize_swiglu` "merged-per-row" / "separate-per-row"): 0
                         exactly, as each row keeps its own scale.
                         `row_scale` [2m, 1] replaces the merged matrix's per-row scales (a test
                         perturbs one to show the comparison can fail)
        per_tensor_diff  the same under one per-tensor scale for gate|up
        gate_scale, up_scale   each matrix's own per-tensor scale
        scale_ratio      max / min of the two: merged under one per-tensor scale, the matrix
                         with the smaller scale is quantized on a grid this many times coarser
        merged_over_max  the merged per-tensor scale / the larger of the two (1.0)
    """
    import torch

    from blocklab.nn.quantize import fake_quantize, int8_scale, quantize_swiglu

    def largest(a, b):
        return max(float((x - y).abs().max()) for x, y in zip(a, b, strict=True))

    if row_scale is None:
        merged_row = quantize_swiglu(gate, up, down, "merged-per-row")
    else:
        merged_row = (*fake_quantize(torch.cat((gate, up)), "per-row", row_scale)
                      .split(gate.shape[0]), fake_quantize(down, "per-row"))
    per_tensor = largest(quantize_swiglu(gate, up, down, "merged-per-tensor"),
                         quantize_swiglu(gate, up, down, "separate-per-tensor"))
    s_gate, s_up = (float(int8_scale(w, "per-tensor")) for w in (gate, up))
    merged_scale = float(int8_scale(torch.cat((gate, up)), "per-tensor"))
    return {"per_row_diff": largest(merged_row,
                                    quantize_swiglu(gate, up, down, "separate-per-row")),
            "per_tensor_diff": per_tensor, "gate_scale": s_gate, "up_scale": s_up,
            "scale_ratio": max(s_gate, s_up) / min(s_gate, s_up),
            "merged_over_max": merged_scale / max(s_gate, s_up)}


def run_quality(size: str, seed: int, progress: Any = False) -> dict[str, Any]:
    import time

    from blocklab.experiments.data import load_corpus, validation_windows
    from blocklab.experiments.quantize import quality_of_schemes, swiglu_errors
    from blocklab.experiments.suites.base import torch_threads
    from blocklab.experiments.trainer import train
    from blocklab.nn.quantize import gated_ffn_weights

    started = time.perf_counter()
    mc, tc = _quality_configs(size, seed)
    model, trained = train(mc, tc, "stdlib", progress=progress, label=f"quantize seed {seed}")
    windows = validation_windows(load_corpus("stdlib").val, tc.seq_len,
                                 SIZES[size]["quality"]["eval_windows"])
    with torch_threads(1):
        quality = quality_of_schemes(model, windows)
        swiglu = swiglu_errors(model, windows)
        layers = [merge_comparison(*(w.detach() for w in gated_ffn_weights(layer.ffn)))
                  for layer in model.layers]
    return {"status": trained["status"], "kind": "quality", "model": mc.to_dict(),
            "train": {"val_loss": trained["final"]["val_loss"],
                      "steps_done": trained["steps_done"], "data": trained["data"]},
            "quality": quality, "swiglu": swiglu, "layers": layers,
            "merged_per_row_max_diff": max(x["per_row_diff"] for x in layers),
            "merged_per_tensor_max_diff": max(x["per_tensor_diff"] for x in layers),
            "merged_scale_over_max": [x["merged_over_max"] for x in layers],
            "wall_time_s": time.perf_counter() - started}


def plan(options: RunOptions, tuned: Results = ()) -> list[RunSpec]:
    """The timed runs (one per timed shape), then one quality run per seed."""
    size, seeds = options.size, options.seeds
    specs = []
    for t in SIZES[size]["timing"]:
        # "bounds": the runs time the free-layers models too; runs stored before lack them.
        payload = {"suite": "quantize", "kind": "timing", "threads": THREADS,
                   "bounds": "time-share", **t}
        label = (f"timing d={t['d_model']} L={t['n_layers']} T={t['seq_lens']}"
                 f"{' compiled' if t['compile'] else ''}")
        specs.append(RunSpec(label, "timing", 0, payload,
                             lambda progress, t=t: run_timing(t), timed=True))
    for seed in seeds:
        mc, tc = _quality_configs(size, seed)
        payload = {"suite": "quantize", "kind": "quality", "model": mc.to_dict(),
                   "train": train_identity(tc), "data": "stdlib",
                   "eval_windows": SIZES[size]["quality"]["eval_windows"],
                   # "layers": the runs record each layer's gate and up scales (C33); runs
                   # stored before lack them.
                   "layers": "scales"}
        specs.append(RunSpec(f"quality seed {seed}", "quality", seed, payload,
                             lambda progress, seed=seed: run_quality(size, seed, progress)))
    return specs


# Reference-machine seconds (`blocklab.experiments.estimate`) of what a calibration does not time:
# a timing run per size (torchao's int8 kernels: dynamic int8 without VNNI runs a slow path),
# and a quality run's quantizing (torchao's imports and quantize_ of every scheme) beside its
# forwards, which are priced from the calibration.
_TIMING_REFERENCE_S = {"tiny": 1.1, "quick": 15.5, "full": 200.0}  # full: a guess
_QUALITY_REFERENCE_S = 0.6


def price(spec: RunSpec, cal) -> float | None:
    """Estimated seconds of one run on this machine from a calibration (`blocklab.experiments.
    estimate`): a timing run its size's reference time; a quality run the trainer's run, then
    a forward and a validation pass of the windows for every scheme of `quality_of_schemes`
    and `swiglu_errors`, and the quantizing."""
    from blocklab.experiments.estimate import training_s
    from blocklab.experiments.quantize import SCHEMES, SWIGLU_SCHEMES

    payload = spec.payload
    if payload["kind"] == "timing":
        size = next((name for name, config in SIZES.items()
                     if any(t == {k: payload[k] for k in t} for t in config["timing"])), "full")
        return cal.reference_s(_TIMING_REFERENCE_S[size])
    model, train = payload["model"], payload["train"]
    b, t = train["batch_size"], train["seq_len"]
    forward = cal.forward_s(model, b, t, payload["eval_windows"], t)
    return (training_s(model, train, cal) + 2 * (len(SCHEMES) + len(SWIGLU_SCHEMES) + 1)
            * forward + cal.reference_s(_QUALITY_REFERENCE_S))


# --- summarise ---
def timing_rows(result: dict[str, Any]) -> list[QuantTiming]:
    """One QuantTiming per scheme of a timing result (`time_schemes`' output with "model" and
    "spec"): speed-ups, the bound 1 / (1 − f) measured by the free-layers models and the Amdahl
    estimate (see `blocklab.experiments.quantize`). Noise can time the free-layers model a
    little behind the float one: f is then 0 and the bound 1, the least it can be, and the
    estimate is kept at most the bound. Bounds and estimates are None for a result without the
    free-layers timings."""
    import math
    import statistics

    from blocklab.experiments.quantize import (
        amdahl_parts,
        free_speedup,
        part_bytes_ratio,
        part_flop_share,
        speedups,
        time_share,
    )

    cfg = ModelConfig.from_dict(result["model"])
    seq_lens = [str(t) for t in result["spec"]["seq_lens"]]
    compiled = bool(result["spec"]["compile"])
    base_prefill, base_decode = result["prefill_s"]["none"], result["decode_s"]["none"]
    free_prefill, free_decode = result.get("free_prefill_s"), result.get("free_decode_s")

    def shares(part: str, bounds: dict[str, float]) -> list[tuple[str, float]]:
        """(part, f) of the layers `part` quantizes: "all" has two, at their own S, their f
        scaled to sum to what the free "all" model measures (noise can make f_ffn + f_attention
        differ from it)."""
        if part != "all":
            return [(part, time_share(bounds[part]))]
        f = {p: time_share(bounds[p]) for p in ("ffn", "attention")}
        total, whole = sum(f.values()), time_share(bounds["all"])
        return [(p, 0.0 if total == 0 else whole * x / total) for p, x in f.items()]

    bytes_ratio = {p: part_bytes_ratio(cfg, p) for p in ("ffn", "attention")}
    out = []
    for scheme, prefill in result["prefill_s"].items():
        part, mode = ("none", "none") if scheme == "none" else scheme.split("/")
        flop, share, k, estimate, bound = {}, {}, {}, {}, {}
        for t in seq_lens:
            flop[t] = part_flop_share(cfg, part, int(t))
            ks = {}
            for p in (("ffn", "attention") if part == "all" else (part,)):
                if p != "none":
                    fp, q = result["gemm_s"][f"none/{p}"][t], result["gemm_s"][f"{p}/{mode}"][t]
                    ks[p] = statistics.median(fp) / statistics.median(q)
            k[t] = None if part == "all" else ks.get(part, 1.0)
            if part == "none":
                share[t], estimate[t], bound[t] = 0.0, 1.0, 1.0
            elif free_prefill is None:
                share[t] = estimate[t] = bound[t] = None
            else:
                bounds = {p: free_speedup(base_prefill[t], free_prefill[p][t])
                          for p in free_prefill}
                share[t] = time_share(bounds[part])
                bound[t] = 1.0 / (1.0 - share[t]) if share[t] < 1.0 else math.inf
                estimate[t] = min(bound[t], amdahl_parts([(f, ks[p])
                                                          for p, f in shares(part, bounds)]))
        if part == "none":
            d_share, d_estimate, d_bound = 0.0, 1.0, 1.0
        elif free_decode is None:
            d_share = d_estimate = d_bound = None
        else:
            bounds = {p: free_speedup(base_decode, free_decode[p]) for p in free_decode}
            d_share = time_share(bounds[part])
            d_bound = 1.0 / (1.0 - d_share) if d_share < 1.0 else math.inf
            d_estimate = min(d_bound, amdahl_parts([(f, bytes_ratio[p])
                                                    for p, f in shares(part, bounds)]))
        out.append(QuantTiming(
            scheme=scheme, part=part, mode=mode, compiled=compiled,
            prefill_ms={t: 1000 * statistics.median(prefill[t]) for t in seq_lens},
            prefill_speedup={t: mean_ci(speedups(prefill[t], base_prefill[t]))
                             for t in seq_lens},
            decode_ms=1000 * statistics.median(result["decode_s"][scheme]),
            decode_speedup=mean_ci(speedups(result["decode_s"][scheme], base_decode)),
            logits_error=result["logits_error"].get(scheme),
            flop_share=flop, time_share=share, gemm_speedup=k, prefill_estimate=estimate,
            prefill_bound=bound, decode_time_share=d_share, decode_estimate=d_estimate,
            decode_bound=d_bound, compile_s=result["compile_s"].get(scheme)))
    return out


def _x(stats) -> str:
    return "—" if stats.mean is None else format_level(stats, 2)


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


def summarise(options: RunOptions, results: Results) -> Summary:
    size, seeds = options.size, options.seeds
    timed = [(spec, r) for spec, r in results if spec.arm == "timing"]
    quality_runs = [(spec, r) for spec, r in results if spec.arm == "quality"
                    and r.get("status") == "ok"]
    timings = [row for _, r in timed for row in timing_rows(r)]
    tables, notes = [], []
    for _, r in timed:
        m = r["model"]
        rows = [row for row in timing_rows(r)]
        lens = [str(t) for t in r["spec"]["seq_lens"]]
        tables.append(Table(
            f"Speed-up vs float32, d={m['d_model']} L={m['n_layers']} d_ff={m['d_ff']}"
            f"{' (torch.compile)' if r['spec']['compile'] else ' (eager)'}, {r['threads']} "
            "thread(s), random weights",
            ["scheme", *[f"prefill T={t} ×" for t in lens],
             *[f"estimate T={t}" for t in lens], *[f"bound T={t}" for t in lens],
             "decode ×", "decode estimate", "decode bound", "logits rel. error"],
            [[row.scheme, *[_x(row.prefill_speedup[t]) for t in lens],
              *[_round(row.prefill_estimate[t]) for t in lens],
              *[_round(row.prefill_bound[t]) for t in lens], _x(row.decode_speedup),
              _round(row.decode_estimate), _round(row.decode_bound), row.logits_error]
             for row in rows],
            "Speed-up = float time / scheme time per repeat (mean [95% CI]). bound = 1/(1 − f), "
            "f the quantized layers' share of the float model's time, measured as the speed-up "
            "of the model with those layers free (zeros out): no scheme beats it, up to timing "
            "noise. estimate = Amdahl 1/(1 − f + f/S), an estimate, not a bound: prefill S = k, "
            "the part's own GEMMs timed alone; decode S = its weight bytes, float32 / int8 with "
            f"scales. Decode continues the T={lens[0]} prefill on its KV cache."))
        flags = r["cpu_flags"]
        if not (flags.get("avx512_vnni") or flags.get("avx_vnni") or flags.get("amx_int8")):
            notes.append("This CPU has no VNNI or AMX int8 instructions (flags: "
                         + ", ".join(f"{k}={v}" for k, v in flags.items())
                         + "): torch's int8 GEMM runs a slow path, so dynamic int8 is slower "
                         "here, not faster.")
    quality = _quality(quality_runs)
    swiglu = swiglu_summary([r["swiglu"] for _, r in quality_runs])
    penalty = merged_tensor_loss_penalty([r["swiglu"] for _, r in quality_runs])
    if quality:
        tables.append(Table(
            "Trained model (SwiGLU, stdlib): validation loss under each scheme (torchao, eager)",
            ["scheme", "val loss", "Δ vs float", "logits rel. error"],
            [[q.scheme, format_level(q.val_loss), format_ci(q.delta, 4),
              format_level(q.logits_error, 4)] for q in quality],
            "Δ paired by seed, nats/token."))
        tables.append(Table(
            "C33: SwiGLU's gate, up, down quantized separately or gate|up merged",
            ["scheme", "FFN rel. error", "vs separate, %", "Δ val loss", "logits rel. error"],
            [[s.scheme, format_level(s.ffn_error, 4),
              format_ci(s.error_vs_separate_pct, 2), format_ci(s.delta, 4),
              format_level(s.logits_error, 4)] for s in swiglu],
            "down reads the hidden (width d_ff), not x: it is never concatenated with gate and "
            "up. merged-per-row equals separate-per-row exactly (each row keeps its scale). "
            "vs separate: the FFN output error against the same granularity's separate scheme, "
            "paired by seed."))
    layers = [x for _, r in quality_runs for x in r["layers"]]
    ratios = [x["scale_ratio"] for x in layers]
    if layers:
        tables.append(Table(
            "C33: gate's and up's per-tensor int8 scales, per layer",
            ["seed", "layer", "gate scale", "up scale", "ratio (max / min)",
             "max |merged − separate| per row", "per tensor"],
            [[spec.seed, i, f"{x['gate_scale']:.4g}", f"{x['up_scale']:.4g}",
              round(x["scale_ratio"], 3), f"{x['per_row_diff']:.3g}",
              f"{x['per_tensor_diff']:.3g}"]
             for spec, r in quality_runs for i, x in enumerate(r["layers"])],
            "One per-tensor scale for gate|up is the larger of the two: the other matrix is "
            "quantized on a grid (max / min) times coarser than its own. Near 1, merging costs "
            "nothing even per tensor."))
    row_diff = max((x["per_row_diff"] for x in layers), default=0.0)
    tensor_diff = max((x["per_tensor_diff"] for x in layers), default=0.0)
    if layers:
        notes.append(f"Max |merged − separate| over the trained weights of {len(layers)} layers: "
                     f"per-row {row_diff:.3g}, per-tensor {tensor_diff:.3g}; gate's and up's "
                     f"per-tensor scales {min(ratios):.3g}× to {max(ratios):.3g}× apart; merging "
                     "gate|up under one per-tensor scale changes the validation loss by "
                     f"{format_ci(penalty, 5)} nats/token against each at its own.")
    first = timed[0][1] if timed else None
    quality_model = quality_runs[0][1]["model"] if quality_runs else {}
    data = QuantizeData(
        model=first["model"] if first else {}, seq_lens=first["spec"]["seq_lens"] if first else [],
        decode_context=first["spec"]["seq_lens"][0] if first else 0,
        repeats=first["spec"]["repeats"] if first else 0,
        threads=first["threads"] if first else 0,
        cpu_flags=first["cpu_flags"] if first else {}, timings=timings,
        quality_model=quality_model, quality=quality, swiglu=swiglu,
        merged_per_row_max_diff=row_diff, merged_per_tensor_max_diff=tensor_diff,
        merged_scale_over_max=[x["merged_over_max"] for x in layers],
        gate_up_scale_ratio=ratios, merged_tensor_loss_penalty=penalty)
    return Summary("quantize", size, len(seeds), tables, notes, data, first_seed=seeds.start)


def _quality(runs) -> list[QuantQuality]:
    if not runs:
        return []
    quality = []
    for scheme in runs[0][1]["quality"]:
        rows = [r["quality"][scheme] for _, r in runs]
        quality.append(QuantQuality(scheme, mean_ci([x["val_loss"] for x in rows]),
                                    mean_ci([x["delta"] for x in rows]),
                                    mean_ci([x["logits_error"] for x in rows])))
    return quality


def swiglu_summary(per_seed: list[dict[str, dict[str, float]]]) -> list[SwigluQuant]:
    """One SwigluQuant per scheme from `swiglu_errors`' output of each seed: the FFN output
    error, logits error and Δ val loss over seeds, and the FFN output error against the same
    granularity's separate scheme, 100·(error / separate's − 1) %, paired by seed."""
    if not per_seed:
        return []
    out = []
    for scheme in per_seed[0]:
        rows = [r[scheme] for r in per_seed]
        base = [r[f"separate-{scheme.split('-', 1)[1]}"]["ffn_error"] for r in per_seed]
        pct = paired_difference([100 * x["ffn_error"] / b for x, b in zip(rows, base,
                                                                         strict=True)],
                                [100.0] * len(rows))
        out.append(SwigluQuant(scheme, mean_ci([x["ffn_error"] for x in rows]),
                               mean_ci([x["logits_error"] for x in rows]),
                               mean_ci([x["delta"] for x in rows]), pct))
    return out


def merged_tensor_loss_penalty(per_seed: list[dict[str, dict[str, float]]]) -> Interval:
    """Val loss with gate|up merged under one per-tensor scale − with each at its own, nats/token,
    paired by seed (`swiglu_errors`' output of each seed)."""
    return paired_difference([r["merged-per-tensor"]["val_loss"] for r in per_seed],
                             [r["separate-per-tensor"]["val_loss"] for r in per_seed])


SUITE = Suite(
    name="quantize",
    description="int8 quantization (torchao): prefill/decode speed-up per scheme against the "
                "roofline (C32); SwiGLU's matrices quantized separately vs merged (C33)",
    plan=plan,
    summarise=summarise,
    default_seeds={"tiny": 1, "quick": 3, "full": 5},
    price=price,
)
