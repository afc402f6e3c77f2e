"""`placement` suite: pre vs post vs sandwich norm, at initialisation and in training (C12, C13,
C19, C36).

    pre:       y = x + F(N(x))         post:  y = N(x + F(x))         sandwich:  y = x + P(F(N(x)))

Part (a), at initialisation, no training. For every placement × init (gpt2, xavier) × depth L
× seed: one forward and backward pass of the next-byte loss on fixed validation windows, then
the gradient norm of every layer's FFN output matrix (`down_proj`, Xiong et al.'s W²) and the
RMS of the residual stream each layer outputs. How the last (and first) layer's gradient scales
with depth is the least-squares slope of log ‖∇W²‖ on log L. Xiong et al. 2020, "On Layer
Normalization in the Transformer Architecture" (Theorems 1–2, Xavier initialisation): for
post-LN the last layer's gradient does not depend on L (slope 0), for pre-LN it falls as
1/√L (slope −0.5), because the pre-LN residual stream grows as √L and the final norm divides
by it. GPT-2's init shrinks the residual output projections by 1/√(2L), which keeps the stream
from growing, so the prediction is for xavier; gpt2 is measured beside it.

Part (b), training. placement × depth × warmup × peak lr × seed, xavier init, gradient clipping
OFF (clipping would hide the failure being studied), otherwise the trainer's defaults. Outcomes
are continuous: the final validation loss, the mean validation loss over the run (area under
the curve) and, from the per-layer gradient norms the trainer logs during training, log2 of
the first layer's gradient norm over the last layer's. A run that diverges (NaN/inf or a loss
above 4·ln 256) is counted as a failure, apart from the losses. Post and sandwich cells are
compared with the pre cell of the same depth, warmup and lr, paired by seed (same init streams
and batches), and the warmup effect is read as an interaction:
(post cold − post warm) − (pre cold − pre warm), per seed, with its interval.

Part (c), deep stacks (C36): pre vs post at depths of 48 layers and more, with and without
warmup, the same outcomes as (b) plus the per-layer gradient profile during training: per
layer, log2(‖∇ layer i‖ / ‖∇ last layer‖) averaged over the logged steps after warmup, and its
spread log2(max / min) across the stack. "The residual path carries the gradient straight back
(gradient ≈ 1)" reads as a flat profile (0 at every layer). Its runs are kept apart from (b)'s
(own arm names, own summary fields), so C19's depth trend and contrasts never see them.

What each size runs (`blocklab.experiments.suites.evaluation`): at --size tiny and --size quick
the suite plans only the runs a registered rule grades. C13 and C19 read part (b) at its
deepest depth and highest lr, pre and post, with and without warmup, so those sizes train that
contrast alone; the shallower depths (the depth trend), sandwich norm and the other lrs run at
--size full, and the summary names them. C36 reads the whole deep grid (c). The gradient
probes of (a) keep every placement at every size: C12 grades the pre-norm ones, and the post
and sandwich probes beside them (one forward and backward each, under a core-minute together at
quick) are the comparison C12's and C19's texts and the gradients figure read.

`Summary.data` (read by the claims ledger and the report) is a
`blocklab.experiments.summaries.PlacementData`: per placement and init a `GradientProbe` (gradient
norms at initialisation across depth, fitted slopes with intervals over per-seed slopes, residual
RMS, spread across one stack's layers), the predicted slopes, one `PlacementCell` per training
cell (statuses, validation loss of the finished runs, paired difference from pre-norm,
loss-curve area, gradient ratio during training) and the `PlacementEffect` contrasts; for the
deep grid the same cells (`deep`), a `LayerProfile` per cell and the `DeepEffect` contrasts.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any

from blocklab.config import ModelConfig
from blocklab.experiments.results import train_identity
from blocklab.experiments.suites.base import (
    RunSpec,
    Suite,
    format_ci,
    format_level,
    mean_ci,
    paired_difference,
    torch_threads,
)
from blocklab.experiments.suites.evaluation import (
    FINAL_EVAL_FRACTION,
    full_only,
    graded_only,
    listed,
)
from blocklab.experiments.summaries import (
    DeepEffect,
    GradientProbe,
    Interval,
    LayerProfile,
    PlacementCell,
    PlacementData,
    PlacementEffect,
    SlopePrediction,
    Summary,
    Table,
)

DATA = "stdlib"
PREDICTED_SLOPE_LAST = {"post": 0.0, "pre": -0.5}  # Xiong et al. 2020, Xavier init
XIONG = "Xiong et al. 2020, On Layer Normalization in the Transformer Architecture"


@dataclass(frozen=True)
class Probe:
    """Part (a): gradients at initialisation."""

    d_model: int
    n_heads: int
    depths: tuple[int, ...]
    seq_len: int
    batch_size: int
    placements: tuple[str, ...] = ("pre", "post", "sandwich")
    inits: tuple[str, ...] = ("gpt2", "xavier")


@dataclass(frozen=True)
class Training:
    """A training grid: part (b), or the deep stacks of part (c)."""

    d_model: int
    n_heads: int
    depths: tuple[int, ...]
    warmups: tuple[int, ...]
    lrs: tuple[float, ...]
    placements: tuple[str, ...]
    seq_len: int
    batch_size: int
    steps: int
    stuck_patience: int | None
    eval_every: int
    eval_batches: int
    log_every: int = 10  # per-layer gradient norms every this many steps
    # Placements trained at the deepest depth only (the shallower depths are there for the
    # pre/post depth trend).
    deepest_only: tuple[str, ...] = ()
    # The validation fraction every run scores at its end (`evaluation.FINAL_EVAL_FRACTION`).
    final_eval_fraction: float = 0.0

    def cells(self) -> list[tuple[str, int]]:
        """(placement, depth) pairs of the grid."""
        deepest = max(self.depths)
        return [(p, d) for p in self.placements for d in self.depths
                if d == deepest or p not in self.deepest_only]


@dataclass(frozen=True)
class Size:
    probe: Probe
    training: Training
    deep: Training  # part (c): its depths are C36's deep stacks, pre and post only


SIZES = {
    "tiny": Size(
        Probe(d_model=32, n_heads=2, depths=(2, 4), seq_len=16, batch_size=2),
        Training(d_model=32, n_heads=2, depths=(2,), warmups=(0, 2), lrs=(3e-3,),
                 placements=("pre", "post"), seq_len=16, batch_size=2, steps=5,
                 stuck_patience=None, eval_every=0, eval_batches=1, log_every=1,
                 final_eval_fraction=FINAL_EVAL_FRACTION["tiny"]),
        Training(d_model=16, n_heads=2, depths=(4,), warmups=(0, 2), lrs=(3e-3,),
                 placements=("pre", "post"), seq_len=16, batch_size=2, steps=5,
                 stuck_patience=None, eval_every=0, eval_batches=1, log_every=1,
                 final_eval_fraction=FINAL_EVAL_FRACTION["tiny"])),
    # Depth 12, pre and post, at lr 3e-3 (where post-norm without warmup was seen to stall
    # at depth 8): the contrast C13 and C19 grade, and nothing else (the depth trend and
    # sandwich norm run at full). Every run to the end (no stuck test: outcomes are losses,
    # not counts), 4 seeds so the warmup interaction has an interval. About 30 s a training
    # run on one core of the 2-core reference machine.
    "quick": Size(
        Probe(d_model=64, n_heads=4, depths=(2, 4, 8, 16, 32, 64), seq_len=64, batch_size=8),
        # 200 steps with warmup over the first third (about 17 s a run on one core of the
        # 2-core reference machine), so that `report --quick` fits 20 minutes.
        Training(d_model=32, n_heads=2, depths=(12,), warmups=(0, 67), lrs=(3e-3,),
                 placements=("pre", "post"), seq_len=64, batch_size=16, steps=200,
                 stuck_patience=None, eval_every=25, eval_batches=4,
                 final_eval_fraction=FINAL_EVAL_FRACTION["quick"]),
        # C36: 50 layers (the page's "50+"), pre and post, 4 seeds, 16 runs. A 48-layer d = 32
        # step at seq_len 32 takes about 0.23 s on one core whatever the backend (per-op
        # overhead), so 100 steps (warmup over the first third, as the main grid) and the
        # end-of-run evaluation cost about 30 s a run, 8 core-minutes in all.
        Training(d_model=32, n_heads=2, depths=(50,), warmups=(0, 33), lrs=(3e-3,),
                 placements=("pre", "post"), seq_len=32, batch_size=16, steps=100,
                 stuck_patience=None, eval_every=25, eval_batches=4,
                 final_eval_fraction=FINAL_EVAL_FRACTION["quick"])),
    # Hours: (pre, post at 3 depths + sandwich at 24) × 2 warmups × 2 lrs × 5 seeds = 140
    # training runs, and the deep grid's 40 (`blocklab report --full --plan` estimates them).
    "full": Size(
        Probe(d_model=128, n_heads=4, depths=(2, 4, 8, 16, 32, 64), seq_len=128, batch_size=8),
        Training(d_model=64, n_heads=4, depths=(6, 12, 24), warmups=(0, 100),
                 lrs=(1e-3, 3e-3), placements=("pre", "post", "sandwich"), seq_len=64,
                 batch_size=16, steps=1000, stuck_patience=None, eval_every=50, eval_batches=8,
                 deepest_only=("sandwich",), final_eval_fraction=FINAL_EVAL_FRACTION["full"]),
        # C36 at 48 and 64 layers: 2 depths × 2 placements × 2 warmups × 5 seeds = 40 runs.
        Training(d_model=64, n_heads=4, depths=(48, 64), warmups=(0, 100), lrs=(3e-3,),
                 placements=("pre", "post"), seq_len=64, batch_size=16, steps=1000,
                 stuck_patience=None, eval_every=50, eval_batches=8,
                 final_eval_fraction=FINAL_EVAL_FRACTION["full"])),
}


def probe_model_config(placement: str, depth: int, probe: Probe) -> ModelConfig:
    """The project's default block (RMSNorm, SwiGLU at 8d/3, RoPE, final norm); only the
    placement and depth vary."""
    return ModelConfig(vocab_size=256, d_model=probe.d_model, n_layers=depth,
                       n_heads=probe.n_heads, placement=placement, max_seq_len=probe.seq_len,
                       name=f"placement-{placement}-{depth}")


def train_model_config(placement: str, depth: int, training: Training) -> ModelConfig:
    return ModelConfig(vocab_size=256, d_model=training.d_model, n_layers=depth,
                       n_heads=training.n_heads, placement=placement,
                       max_seq_len=training.seq_len, name=f"placement-{placement}-{depth}")


def train_config(training: Training, warmup: int, lr: float, seed: int,
                 precision: str = "fp32"):
    """Xavier init and no gradient clipping; one thread (bit-reproducible, and faster than two
    on a busy 2-core machine)."""
    from blocklab.experiments.trainer import TrainConfig

    return TrainConfig(steps=training.steps, batch_size=training.batch_size,
                       seq_len=training.seq_len, lr=lr, warmup_steps=warmup, grad_clip=None,
                       init="xavier", seed=seed, eval_every=training.eval_every,
                       eval_batches=training.eval_batches, stuck_patience=training.stuck_patience,
                       log_every=training.log_every, threads=1, precision=precision,
                       final_eval_fraction=training.final_eval_fraction)


# --- part (a): gradients at initialisation ------------------------------------------------------
def init_gradients(placement: str, init: str, depth: int, seed: int,
                   probe: Probe, precision: str = "fp32") -> dict[str, Any]:
    """One forward/backward at initialisation; per-layer gradient norms and residual RMS.

    Returns {"status": "ok", "loss", "down_proj_grad": [‖∇ down_proj.weight‖ per layer],
    "layer_grad": [‖∇ all of the layer's parameters‖ per layer], "residual_rms": [RMS of each
    layer's output over the batch], "wall_time_s", ...}.
    """
    import torch
    import torch.nn.functional as F

    from blocklab.experiments.data import load_corpus, validation_windows
    from blocklab.experiments.trainer import TrainConfig, build_model

    started = time.perf_counter()
    batch = validation_windows(load_corpus(DATA).val, probe.seq_len, probe.batch_size)
    rms: list[float] = []

    def record(module, inputs, output) -> None:
        rms.append(float(output.detach().float().pow(2).mean().sqrt()))

    with torch_threads(1):
        # build_model reads only the seed, init, precision and backend of a TrainConfig.
        model = build_model(probe_model_config(placement, depth, probe),
                            TrainConfig(init=init, seed=seed, precision=precision))
        model.train()
        handles = [layer.register_forward_hook(record) for layer in model.layers]
        try:
            logits = model(batch[:, :-1])  # [B, T, V]
        finally:
            for handle in handles:
                handle.remove()
        loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
        loss.backward()

        def norm(params) -> float:
            return float(torch.linalg.vector_norm(torch.stack(
                [torch.linalg.vector_norm(p.grad) for p in params if p.grad is not None])))

        down = [norm([layer.ffn.down_proj.weight]) for layer in model.layers]
        whole = [norm(list(layer.parameters())) for layer in model.layers]
    return {"status": "ok", "placement": placement, "init": init, "depth": depth, "seed": seed,
            "loss": float(loss.detach()), "down_proj_grad": down, "layer_grad": whole,
            "residual_rms": rms, "wall_time_s": time.perf_counter() - started}


def loglog_slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope b of log y = a + b·log x; None with fewer than two usable points.

    y = c·x^p gives exactly p.
    """
    points = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True)
              if x is not None and y is not None and x > 0 and y > 0 and math.isfinite(y)]
    if len(points) < 2:
        return None
    mx = sum(u for u, _ in points) / len(points)
    my = sum(v for _, v in points) / len(points)
    sxx = sum((u - mx) ** 2 for u, _ in points)
    if sxx == 0:
        return None
    return sum((u - mx) * (v - my) for u, v in points) / sxx


def _geometric_mean(values: list[float]) -> float | None:
    values = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


# --- plan ----------------------------------------------------------------------------------------
def plan(size_name: str, seeds: range, precision: str = "fp32") -> list[RunSpec]:
    """Every run of the suite at `size_name` on `seeds`, each model in `precision`."""
    size = SIZES[size_name]
    probe, training = size.probe, size.training
    specs = []
    for placement in probe.placements:
        for init in probe.inits:
            for depth in probe.depths:
                for seed in seeds:
                    payload = {"suite": "placement", "kind": "init_gradients",
                               "placement": placement, "init": init, "depth": depth,
                               "seed": seed, "probe": asdict(probe),
                               "model": probe_model_config(placement, depth, probe).to_dict(),
                               "data": DATA}
                    if precision != "fp32":
                        payload["precision"] = precision

                    def execute(progress, placement=placement, init=init, depth=depth,
                                seed=seed):
                        return init_gradients(placement, init, depth, seed, probe, precision)

                    specs.append(RunSpec(f"init {placement} {init} L={depth} seed {seed}",
                                         f"init/{placement}/{init}/{depth}", seed, payload,
                                         execute))
    return (specs + _training_specs(training, seeds, "train", precision)
            + _training_specs(size.deep, seeds, "deep", precision))


def _training_specs(training: Training, seeds: range, grid: str,
                    precision: str = "fp32") -> list[RunSpec]:
    """The runs of one training grid: `grid` "train" (part b) or "deep" (part c) names its
    payload kind and arms (`train/<placement>/<depth>/<warmup>/<lr>`, `deep/...`)."""
    from blocklab.experiments.trainer import run

    kind, prefix = {"train": ("train", ""), "deep": ("train_deep", "deep ")}[grid]
    specs = []
    for placement, depth in training.cells():
        mc = train_model_config(placement, depth, training)
        for warmup in training.warmups:
            for lr in training.lrs:
                for seed in seeds:
                    tc = train_config(training, warmup, lr, seed, precision)
                    label = f"{prefix}{placement} L={depth} warmup {warmup} lr {lr:g} seed {seed}"
                    payload = {"suite": "placement", "kind": kind,
                               "model": mc.to_dict(),
                               "train": train_identity(tc),
                               "data": DATA}

                    def execute(progress, mc=mc, tc=tc, label=label, run=run):
                        return run(mc, tc, DATA, progress=progress, label=label)

                    specs.append(RunSpec(label, f"{grid}/{placement}/{depth}/{warmup}/{lr:g}",
                                         seed, payload, execute))
    return specs


# --- summary -------------------------------------------------------------------------------------
def _gradient_summary(probe: Probe, seeds: range,
                      by_key: dict[tuple, dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    depths = list(probe.depths)
    for placement in probe.placements:
        out[placement] = {}
        for init in probe.inits:
            def runs(depth: int, placement=placement, init=init) -> list[dict[str, Any]]:
                found = [by_key.get(("init", placement, init, depth, s)) for s in seeds]
                return [r for r in found if r and r.get("status") == "ok"]

            def at(index: int, depth: int, runs=runs) -> float | None:
                return _geometric_mean([r["down_proj_grad"][index] for r in runs(depth)])

            last = [at(-1, d) for d in depths]
            first = [at(0, d) for d in depths]
            per_seed_last, per_seed_first = [], []
            for seed in seeds:
                rows = [by_key.get(("init", placement, init, d, seed)) for d in depths]
                if all(r and r.get("status") == "ok" for r in rows):
                    per_seed_last.append(loglog_slope(depths,
                                                      [r["down_proj_grad"][-1] for r in rows]))
                    per_seed_first.append(loglog_slope(depths,
                                                       [r["down_proj_grad"][0] for r in rows]))
            out[placement][init] = GradientProbe(
                depths=depths,
                last_layer_grad=last,
                first_layer_grad=first,
                slope_last=loglog_slope(depths, last),
                slope_first=loglog_slope(depths, first),
                slope_last_ci=mean_ci(per_seed_last),
                slope_first_ci=mean_ci(per_seed_first),
                residual_rms_last=[mean_ci([r["residual_rms"][-1] for r in runs(d)]).mean
                                   for d in depths],
                per_layer_grad={
                    str(d): [mean_ci([r["down_proj_grad"][i] for r in runs(d)]).mean
                             for i in range(d)] for d in depths},
                layer_spread_log2={
                    str(d): mean_ci([_spread_log2(r["down_proj_grad"]) for r in runs(d)])
                    for d in depths},
            )
    return out


def _spread_log2(norms: list[float]) -> float | None:
    """log2(max / min) over one stack's per-layer gradient norms."""
    usable = [v for v in norms if v is not None and math.isfinite(v) and v > 0]
    return math.log2(max(usable) / min(usable)) if len(usable) == len(norms) > 1 else None


def _val_auc(result: dict[str, Any], seq_len: int) -> float | None:
    """Mean validation loss over a finished run's evaluations: the area under its curve
    divided by its length (evaluations are evenly spaced)."""
    if result.get("status") != "ok":
        return None
    values = (result.get("curves") or {}).get("val", {}).get(str(seq_len)) or []
    if not values or any(v is None or not math.isfinite(v) for v in values):
        return None
    return sum(values) / len(values)


def _first_over_last_log2(result: dict[str, Any], warmup: int) -> float | None:
    """Mean over the logged steps at or after warmup of log2(‖∇ first layer‖ / ‖∇ last
    layer‖) (all of a layer's parameters), for a finished run."""
    if result.get("status") != "ok":
        return None
    logged = (result.get("curves") or {}).get("layer_grad_norms") or {}
    ratios = [math.log2(layers[0] / layers[-1])
              for step, layers in zip(logged.get("step", []), logged.get("layer", []),
                                      strict=True)
              if step >= warmup and len(layers) > 1 and layers[0] and layers[-1]
              and math.isfinite(layers[0]) and math.isfinite(layers[-1])]
    return sum(ratios) / len(ratios) if ratios else None


def _final_val(result: dict[str, Any]) -> float | None:
    value = (result.get("final") or {}).get("val_loss")
    return value if value is not None and math.isfinite(value) else None


def _ok_val(result: dict[str, Any]) -> float | None:
    """The final val loss of a run that finished ("ok"); None for a failed or missing one."""
    return _final_val(result) if result.get("status") == "ok" else None


def _training_summary(training: Training, seeds: range, by_key: dict[tuple, dict[str, Any]],
                      grid: str = "train") -> list[PlacementCell]:
    """One cell per (placement, depth, warmup, lr) of the grid whose results are keyed
    `(grid, placement, depth, warmup, lr, seed)` in `by_key`."""
    rows = []
    for placement, depth in training.cells():
        for warmup in training.warmups:
            for lr in training.lrs:
                def results(p: str, depth=depth, warmup=warmup, lr=lr) -> list[dict]:
                    return [by_key.get((grid, p, depth, warmup, lr, s)) or {}
                            for s in seeds]

                mine = results(placement)
                status: dict[str, int] = {}
                for r in mine:
                    if not r:  # a seed the sequential design added to other arms only
                        continue
                    key = r.get("status", "missing")
                    status[key] = status.get(key, 0) + 1
                # Quality from the runs that finished; stuck and diverged runs are counted
                # in the status columns only. Pairs need both seeds finished (n shown).
                vals = [_ok_val(r) for r in mine]
                delta = None
                if placement != "pre" and "pre" in training.placements:
                    delta = paired_difference(vals, [_ok_val(r) for r in results("pre")])
                rows.append(PlacementCell(
                    placement=placement, depth=depth, warmup=warmup, lr=lr,
                    failures=status.get("diverged", 0) + status.get("stuck", 0),
                    runs=sum(1 for r in mine if r), status=status, val_loss=mean_ci(vals),
                    delta_vs_pre=delta,
                    steps_done=mean_ci([r.get("steps_done") for r in mine]).mean,
                    val_auc=mean_ci([_val_auc(r, training.seq_len) for r in mine]),
                    grad_first_over_last_log2=mean_ci(
                        [_first_over_last_log2(r, warmup) for r in mine]),
                ))
    return rows


def _layer_log2_vs_last(result: dict[str, Any], warmup: int) -> list[float] | None:
    """Per layer (bottom first), the mean over the logged steps at or after warmup of
    log2(‖∇ layer i‖ / ‖∇ last layer‖), for a finished run; None when nothing usable was
    logged. Steps where any layer's norm is zero or non-finite are left out."""
    if result.get("status") != "ok":
        return None
    logged = (result.get("curves") or {}).get("layer_grad_norms") or {}
    rows = [[math.log2(v / layers[-1]) for v in layers]
            for step, layers in zip(logged.get("step", []), logged.get("layer", []), strict=True)
            if step >= warmup and len(layers) > 1
            and all(v is not None and math.isfinite(v) and v > 0 for v in layers)]
    if not rows:
        return None
    return [sum(column) / len(rows) for column in zip(*rows, strict=True)]


def _layer_spread_during(result: dict[str, Any], warmup: int) -> float | None:
    """Mean over the logged steps at or after warmup of log2(max / min) over the layers of
    one stack, for a finished run."""
    if result.get("status") != "ok":
        return None
    logged = (result.get("curves") or {}).get("layer_grad_norms") or {}
    spreads = [_spread_log2(layers)
               for step, layers in zip(logged.get("step", []), logged.get("layer", []),
                                       strict=True) if step >= warmup]
    spreads = [v for v in spreads if v is not None]
    return sum(spreads) / len(spreads) if spreads else None


def _deep_profiles(deep: Training, seeds: range,
                   by_key: dict[tuple, dict[str, Any]]) -> list[LayerProfile]:
    """Per deep-grid cell, the per-layer gradient profile and spread during training."""
    out = []
    for placement, depth in deep.cells():
        for warmup in deep.warmups:
            for lr in deep.lrs:
                mine = [by_key.get(("deep", placement, depth, warmup, lr, s)) or {}
                        for s in seeds]
                profiles = [p for p in (_layer_log2_vs_last(r, warmup) for r in mine)
                            if p is not None and len(p) == depth]
                out.append(LayerProfile(
                    placement=placement, depth=depth, warmup=warmup, lr=lr,
                    grad_log2_vs_last=[mean_ci([p[i] for p in profiles]).mean
                                       for i in range(depth)],
                    spread_log2=mean_ci([_layer_spread_during(r, warmup) for r in mine])))
    return out


def _deep_effects(deep: Training, seeds: range,
                  by_key: dict[tuple, dict[str, Any]]) -> list[DeepEffect]:
    """The contrasts C36 is graded on, per deep depth, lr and non-zero warmup."""
    if not {"pre", "post"} <= set(deep.placements) or 0 not in deep.warmups:
        return []
    effects = []
    for depth in deep.depths:
        for lr in deep.lrs:
            for warmup in [w for w in deep.warmups if w > 0]:
                def runs(p: str, w: int, depth=depth, lr=lr) -> list[dict[str, Any]]:
                    return [by_key.get(("deep", p, depth, w, lr, s)) or {} for s in seeds]

                def vals(p: str, w: int) -> list[float | None]:
                    return [_ok_val(r) for r in runs(p, w)]

                def ratios(p: str, warmup=warmup) -> list[float | None]:
                    return [_first_over_last_log2(r, warmup) for r in runs(p, warmup)]

                effects.append(DeepEffect(
                    depth=depth, lr=lr, warmup=warmup,
                    pre_warmup_effect=paired_difference(vals("pre", 0), vals("pre", warmup)),
                    pre_vs_post_cold=paired_difference(vals("pre", 0), vals("post", 0)),
                    pre_grad_first_over_last_log2=mean_ci(ratios("pre")),
                    post_minus_pre_grad_log2=paired_difference(ratios("post"),
                                                               ratios("pre"))))
    return effects


def interaction_per_seed(training: Training, seeds: range, by_key: dict[tuple, dict[str, Any]],
                         depth: int, lr: float, warmup: int) -> list[float | None]:
    """Per seed, (post cold − post warm) − (pre cold − pre warm) of the final validation loss;
    None for a seed where any of the four runs did not finish."""
    def vals(p: str, w: int) -> list[float | None]:
        return [_ok_val(by_key.get(("train", p, depth, w, lr, s)) or {}) for s in seeds]

    return [None if None in (a, b, c, d) else (a - b) - (c - d)
            for a, b, c, d in zip(vals("post", 0), vals("post", warmup), vals("pre", 0),
                                  vals("pre", warmup), strict=True)]


def interaction_trend(training: Training, seeds: range,
                      by_key: dict[tuple, dict[str, Any]]) -> Interval:
    """The warmup interaction at the deepest depth minus at the shallowest, paired by seed, at
    the highest lr and longest warmup: positive = post-norm's need for warmup grows with
    depth. No interval with one depth."""
    if len(training.depths) < 2 or not {"pre", "post"} <= set(training.placements):
        return Interval(0)
    lr, warmup = max(training.lrs), max(training.warmups)
    deep, shallow = (interaction_per_seed(training, seeds, by_key, d, lr, warmup)
                     for d in (max(training.depths), min(training.depths)))
    return paired_difference(deep, shallow)


def _effects(training: Training, seeds: range,
             by_key: dict[tuple, dict[str, Any]]) -> list[PlacementEffect]:
    """The contrasts C13 and C19 are graded on, per depth, lr and non-zero warmup."""
    if not {"pre", "post"} <= set(training.placements) or 0 not in training.warmups:
        return []
    effects = []
    for depth in training.depths:
        for lr in training.lrs:
            for warmup in [w for w in training.warmups if w > 0]:
                def vals(p: str, w: int, depth=depth, lr=lr) -> list[float | None]:
                    return [_ok_val(by_key.get(("train", p, depth, w, lr, s)) or {})
                            for s in seeds]

                def ratios(p: str, depth=depth, lr=lr, warmup=warmup) -> Interval:
                    return mean_ci([_first_over_last_log2(
                        by_key.get(("train", p, depth, warmup, lr, s)) or {}, warmup)
                        for s in seeds])

                post_warm, pre_warm = vals("post", warmup), vals("pre", warmup)
                interaction = interaction_per_seed(training, seeds, by_key, depth, lr, warmup)
                effects.append(PlacementEffect(
                    depth=depth, lr=lr, warmup=warmup,
                    warmup_interaction=mean_ci(interaction),
                    pre_warmup_effect=paired_difference(vals("pre", 0), pre_warm),
                    post_vs_pre_warm=paired_difference(post_warm, pre_warm),
                    post_grad_first_over_last_log2=ratios("post"),
                    pre_grad_first_over_last_log2=ratios("pre")))
    return effects


def _g(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def _slope_cell(stats: Interval, fitted: float | None) -> str:
    if fitted is None:
        return "—"
    if not stats.resolved:
        return f"{fitted:+.2f}"
    return f"{fitted:+.2f} [{stats.ci_low:+.2f}, {stats.ci_high:+.2f}]"


def summarise(size_name: str, seeds: range, results: list[tuple[RunSpec, dict[str, Any]]]
              ) -> Summary:
    size = SIZES[size_name]
    probe, training, deep = size.probe, size.training, size.deep
    by_key: dict[tuple, dict[str, Any]] = {}
    entropy = None
    for spec, result in results:
        payload = spec.payload
        if payload["kind"] == "init_gradients":
            by_key[("init", payload["placement"], payload["init"], payload["depth"],
                    spec.seed)] = result
        else:
            model, train = payload["model"], payload["train"]
            grid = "deep" if payload["kind"] == "train_deep" else "train"
            by_key[(grid, model["placement"], model["n_layers"], train["warmup_steps"],
                    train["lr"], spec.seed)] = result
            entropy = entropy or (result.get("final") or {}).get("unigram_entropy")
    gradients = _gradient_summary(probe, seeds, by_key)
    rows = _training_summary(training, seeds, by_key)
    deep_rows = _training_summary(deep, seeds, by_key, grid="deep")
    profiles = _deep_profiles(deep, seeds, by_key)
    deep_effects = _deep_effects(deep, seeds, by_key)

    depth_columns = [f"L={d}" for d in probe.depths]
    last_table = Table(
        "At initialisation: ‖∇W_down‖ of the LAST layer vs depth",
        ["placement", "init", *depth_columns, "slope [95% CI]", "Xiong et al. (xavier)"],
        [[p, i, *[_g(v) for v in g.last_layer_grad],
          _slope_cell(g.slope_last_ci, g.slope_last),
          "—" if p not in PREDICTED_SLOPE_LAST else f"{PREDICTED_SLOPE_LAST[p]:+.1f}"]
         for p, by_init in gradients.items() for i, g in by_init.items()],
        "Slope: least squares of log ‖∇W_down‖ on log L, fitted to the geometric means over "
        "seeds; the interval is over per-seed slopes. Predicted: post-LN 0 (independent of L), "
        "pre-LN −0.5 (∝ 1/√L), for Xavier init (gpt2 init scales residual outputs by "
        "1/√(2L) and is outside the theorem).")
    first_table = Table(
        "At initialisation: ‖∇W_down‖ of the FIRST layer vs depth",
        ["placement", "init", *depth_columns, "slope [95% CI]"],
        [[p, i, *[_g(v) for v in g.first_layer_grad],
          _slope_cell(g.slope_first_ci, g.slope_first)]
         for p, by_init in gradients.items() for i, g in by_init.items()],
        "A negative slope means the gradient reaching the bottom of the stack shrinks as layers "
        "are added (vanishing with depth), whatever identity path the block has.")
    rms_table = Table(
        "At initialisation: RMS of the residual stream leaving the last layer",
        ["placement", "init", *depth_columns],
        [[p, i, *[_g(v) for v in g.residual_rms_last]]
         for p, by_init in gradients.items() for i, g in by_init.items()],
        "Post-norm ends every layer in a norm (RMS ≈ 1); the pre-norm stream grows with depth "
        "unless the init scales the residual outputs down.")
    effects = _effects(training, seeds, by_key)
    spread_table = Table(
        "At initialisation: how unevenly the layers of ONE stack get gradient",
        ["placement", "init", *depth_columns],
        [[p, i, *[format_level(g.layer_spread_log2[str(d)], 2) for d in probe.depths]]
         for p, by_init in gradients.items() for i, g in by_init.items()],
        "log2(max / min) of ‖∇W_down‖ over the layers of one model, mean [95% CI] over seeds: "
        "1 means some layer gets twice the gradient of another. A factor that scales every "
        "layer alike (the final norm's 1/√L) cancels here.")
    train_table = Table(
        f"Training {training.steps} steps, xavier init, no gradient clipping",
        ["placement", "depth", "warmup", "lr", "failed/runs (div, stuck)",
         "val loss [95% CI]", "Δ vs pre [95% CI]", "mean val loss over training",
         "log2 ‖∇first‖/‖∇last‖ [95% CI]"],
        [[r.placement, r.depth, r.warmup, f"{r.lr:g}",
          f"{r.failures}/{r.runs} ({r.status.get('diverged', 0)}, "
          f"{r.status.get('stuck', 0)})",
          format_level(r.val_loss),
          "—" if r.delta_vs_pre is None else format_ci(r.delta_vs_pre, 3),
          format_level(r.val_auc), format_level(r.grad_first_over_last_log2, 2)]
         for r in rows],
        "Val loss over the runs that finished (status ok); diverged and stuck runs count in "
        "the failed column only"
        + ("" if training.stuck_patience is None else
           f" (a stuck run stops at warmup + {training.stuck_patience} steps)")
        + ". Δ = this − pre at the same "
        "depth, warmup and lr, paired by seed over the seeds where both finished (n shown); "
        "negative = lower loss than pre-norm. Mean val loss over training: the area under the "
        "validation curve over its length. Gradient ratio: whole first layer over whole last "
        f"layer, logged every {training.log_every} steps after warmup. Unigram "
        f"entropy of the training bytes: {_g(entropy)} nats.")
    effect_table = Table(
        "Warmup and placement effects, paired by seed (final val loss, nats)",
        ["depth", "lr", "warmup", "(post cold − warm) − (pre cold − warm) [95% CI]",
         "pre cold − pre warm [95% CI]", "post warm − pre warm [95% CI]",
         "log2 ‖∇first‖/‖∇last‖ post", "… pre"],
        [[e.depth, f"{e.lr:g}", e.warmup, format_ci(e.warmup_interaction),
          format_ci(e.pre_warmup_effect), format_ci(e.post_vs_pre_warm),
          format_level(e.post_grad_first_over_last_log2, 2),
          format_level(e.pre_grad_first_over_last_log2, 2)] for e in effects],
        "Positive interaction: leaving warmup out costs post-norm more than pre-norm. Seeds "
        "where any of the four runs failed drop out of the interaction (n shown); failures "
        "are in the training table. Gradient ratios from the runs with warmup. "
        + (f"Depth trend (interaction at the deepest minus the shallowest depth, paired by "
           f"seed): {format_ci(interaction_trend(training, seeds, by_key))} nats (positive: "
           "the need for warmup grows with depth)." if len(training.depths) > 1 else
           "Depth trend: at --size full only (this size trains one depth, the deepest)."))
    spreads = {(p.placement, p.depth, p.warmup, p.lr): p.spread_log2 for p in profiles}
    deep_table = Table(
        f"Deep stacks (C36): training {deep.steps} steps, xavier init, no gradient clipping",
        ["placement", "depth", "warmup", "lr", "failed/runs (div, stuck)",
         "val loss [95% CI]", "Δ vs pre [95% CI]", "mean val loss over training",
         "log2 ‖∇first‖/‖∇last‖ [95% CI]", "log2 max/min over layers [95% CI]"],
        [[r.placement, r.depth, r.warmup, f"{r.lr:g}",
          f"{r.failures}/{r.runs} ({r.status.get('diverged', 0)}, "
          f"{r.status.get('stuck', 0)})",
          format_level(r.val_loss),
          "—" if r.delta_vs_pre is None else format_ci(r.delta_vs_pre, 3),
          format_level(r.val_auc), format_level(r.grad_first_over_last_log2, 2),
          format_level(spreads[(r.placement, r.depth, r.warmup, r.lr)], 2)]
         for r in deep_rows],
        "As the training table, at depths of C36's deep stacks. Gradient columns: per-layer "
        f"gradient norms (all of a layer's parameters) logged every {deep.log_every} steps at or "
        "after warmup, averaged over those steps, then over seeds; 0 = the first layer gets as "
        "much gradient as the last (the page's 'gradient ≈ 1'); log2 max/min = how unevenly "
        "the layers of one stack get gradient.")
    deep_effect_table = Table(
        "Deep stacks (C36): contrasts paired by seed",
        ["depth", "lr", "warmup", "pre cold − pre warm [95% CI]",
         "pre cold − post cold [95% CI]", "log2 ‖∇first‖/‖∇last‖ pre (warm)",
         "post − pre of it (warm) [95% CI]"],
        [[e.depth, f"{e.lr:g}", e.warmup, format_ci(e.pre_warmup_effect),
          format_ci(e.pre_vs_post_cold), format_level(e.pre_grad_first_over_last_log2, 2),
          format_ci(e.post_minus_pre_grad_log2, 2)] for e in deep_effects],
        "Final val loss in nats; cold = no warmup. Negative pre cold − post cold: pre-norm "
        "ends lower without warmup. Negative post − pre: post-norm's bottom layer gets less of "
        "the last layer's gradient than pre-norm's. Seeds where a run failed drop out of the "
        "pairs (n shown); failures are in the table above.")
    notes = [
        f"(a) probe: d_model={probe.d_model}, n_heads={probe.n_heads}, depths "
        f"{list(probe.depths)}, inits {list(probe.inits)}, one forward/backward of the "
        f"next-byte loss on {probe.batch_size} fixed validation windows of {probe.seq_len} "
        "bytes; RMSNorm, SwiGLU (d_ff 8d/3), RoPE, final norm in every placement.",
        f"(b) training: d_model={training.d_model}, n_heads={training.n_heads}, depths "
        f"{list(training.depths)}, placements {list(training.placements)}, warmups "
        f"{list(training.warmups)}, lrs {list(training.lrs)}, seq_len={training.seq_len}, "
        f"batch={training.batch_size}, steps={training.steps}, cosine to 0.1·lr, AdamW wd 0.1, "
        "xavier init, clipping off, "
        + ("no stuck test" if training.stuck_patience is None else
           f"stuck after {training.stuck_patience} post-warmup steps above the unigram entropy")
        + f", 1 thread, data={DATA}.",
        f"(c) deep stacks (C36): d_model={deep.d_model}, n_heads={deep.n_heads}, depths "
        f"{list(deep.depths)}, placements {list(deep.placements)}, warmups "
        f"{list(deep.warmups)}, lrs {list(deep.lrs)}, seq_len={deep.seq_len}, "
        f"batch={deep.batch_size}, steps={deep.steps}, otherwise as (b); kept out of (b)'s "
        "tables, contrasts and depth trend.",
    ]
    left_out = _left_out(size) if graded_only(size_name) else []
    if left_out:
        notes.append(full_only(left_out, "C13 and C19 read part (b) at its deepest depth and "
                                         "highest lr, pre and post only"))
    data = PlacementData(
        init_gradients=gradients,
        predictions=SlopePrediction(slope_last=dict(PREDICTED_SLOPE_LAST), init="xavier",
                                    source=XIONG),
        training=rows, effects=effects,
        interaction_trend=interaction_trend(training, seeds, by_key),
        unigram_entropy=entropy, seeds=len(seeds),
        steps=training.steps, size=asdict(size),
        deep=deep_rows, deep_profiles=profiles, deep_effects=deep_effects,
        deep_steps=deep.steps)
    return Summary("placement", size_name, len(seeds),
                   [last_table, first_table, spread_table, rms_table, train_table,
                    effect_table, deep_table, deep_effect_table], notes, data,
                   first_seed=seeds.start)


def _left_out(size: Size) -> list[str]:
    """What the full size's part (b) trains and `size`'s does not, in words."""
    full, training = SIZES["full"].training, size.training
    out = []
    if len(training.depths) < len(full.depths):
        out.append(f"part (b)'s depth trend (depths {listed([str(d) for d in full.depths])} "
                   "at full)")
    missing = [p for p in full.placements if p not in training.placements]
    if missing:
        out.append(f"{listed(missing)} norm in part (b)")
    if len(training.lrs) < len(full.lrs):
        out.append(f"part (b) at more peak lrs ({listed([f'{lr:g}' for lr in full.lrs])} at "
                   "full)")
    return out


def price(spec: RunSpec, cal) -> float | None:
    """Estimated seconds of one run on this machine (`blocklab.experiments.estimate`): a
    gradient probe builds its model and takes one forward+backward (priced as a step) on
    [batch_size, seq_len]; training runs are the trainer's (the default)."""
    payload = spec.payload
    if payload["kind"] != "init_gradients":
        return None
    probe, model = payload["probe"], payload["model"]
    b, t, precision = probe["batch_size"], probe["seq_len"], payload.get("precision", "fp32")
    return cal.build_s(model, b, t, precision) + cal.step_s(model, b, t, precision)


SUITE = Suite("placement", "pre vs post vs sandwich norm: gradients at init and training, "
              "and deep stacks (C12, C13, C19, C36)", plan, summarise,
              # C19's and C36's registered rules need four paired seeds (blocklab.claims).
              default_seeds={"tiny": 1, "quick": 4, "full": 5}, precisions=("fp32", "bf16"),
              price=price)
