"""C36: pre-norm lets deep stacks (50+ layers) train stably, because the residual path carries
the gradient straight back (gradient ≈ 1).

Read from the placement suite's deep grid (`PlacementData.deep*`): pre vs post norm at depths of
50 layers and more, with and without warmup, paired by seed, graded at the deepest depth and
highest lr. Four parts, each with a rule registered in `registry` before any data is read:

    (a) pre-norm trains without warmup    pre cold − pre warm, final val loss      non-inferior
    (b) pre-norm's gradient ≈ 1           log2 ‖∇first‖/‖∇last‖ of pre (warm)      equivalent to 0
    (c) post-norm's does not reach down   post − pre of that log2 ratio (warm)     negative
    (d) pre beats post without warmup     pre cold − post cold, final val loss     negative

Part (a) is one-sided: a warmup shortens the steps at full learning rate, so a pre-norm run
without it may end lower, which is no sign of instability. A failed run (diverged, stuck) is
counted apart and keeps (a) from being confirmed; it never enters a loss. One learning rate and
one run length on a small model: a part that fails is not reproduced at this scale, never
contradicted.
"""

from __future__ import annotations

from dataclasses import asdict

from blocklab.claims.checks import all_or_none, failed_runs_part, runs_made
from blocklab.claims.ledger import (
    DECIDED,
    SETTLE_EN,
    SETTLE_ZH,
    Context,
    Finding,
    Part,
    claim,
    missing,
    scale_text,
    settle,
)
from blocklab.claims.registry import C36_MIN_SEEDS, C36_RULES, registered  # noqa: F401
from blocklab.claims.rules import Estimate
from blocklab.experiments.summaries import DeepEffect, Interval, PlacementCell

# The four parts' rules are registered in `registry.C36_RULES`, in the order above.
C36_COMBINES = ("confirmed when every part is confirmed; not reproduced at this scale when none "
                "is confirmed; otherwise conditional. " + SETTLE_EN)
C36_COMBINES_ZH = ("各部分全部成立时成立；没有一部分成立时为此规模下未复现；否则有条件成立。" + SETTLE_ZH)


def _graded_effect(effects: list[DeepEffect]) -> DeepEffect | None:
    """The contrast C36 is graded on: the deepest depth, then the highest lr and warmup."""
    return max(effects, key=lambda e: (e.depth, e.lr, e.warmup)) if effects else None


def _failed(cells: list[PlacementCell], placement: str, depth: int, warmup: int | None = None
            ) -> tuple[int, int]:
    chosen = [c for c in cells if c.placement == placement and c.depth == depth
              and (warmup is None or c.warmup == warmup)]
    return sum(c.failures for c in chosen), sum(runs_made(c) for c in chosen)


def _ci(stats: Interval, digits: int = 3) -> str:
    if stats.mean is None:
        return "—"
    if not stats.resolved:
        return f"{stats.mean:+.{digits}f} (n={stats.n})"
    return (f"{stats.mean:+.{digits}f} [{stats.ci_low:+.{digits}f}, "
            f"{stats.ci_high:+.{digits}f}] (n={stats.n})")


def _level(stats: Interval | None, digits: int = 3) -> str:
    """'mean [low, high]' unsigned (a level, not a difference), or '—'."""
    if stats is None or stats.mean is None:
        return "—"
    if not stats.resolved:
        return f"{stats.mean:.{digits}f} (n={stats.n})"
    return f"{stats.mean:.{digits}f} [{stats.ci_low:.{digits}f}, {stats.ci_high:.{digits}f}]"


@claim("C36")
def c36(ctx: Context) -> Finding:
    summary = ctx.summary("placement")
    if summary is None:
        return missing(ctx, "placement")
    data = summary.data
    effect = _graded_effect(data.deep_effects)
    if effect is None:
        return Finding("untestable-here", "The placement suite ran no deep pre/post × warmup "
                       "grid.", "placement 实验没有运行深层 pre/post × warmup 网格。", {},
                       ctx.suite_command("placement"), "placement_deep")
    depth = effect.depth
    pre_f, pre_n = _failed(data.deep, "pre", depth)
    post_cold_f, post_cold_n = _failed(data.deep, "post", depth, 0)
    post_warm_f, post_warm_n = _failed(data.deep, "post", depth, effect.warmup)
    rules = registered("C36", ctx.size)
    names = list(rules)
    parts = Part.decided_together([
        failed_runs_part(names[0], rules[names[0]], effect.pre_warmup_effect, pre_f),
        (names[1], rules[names[1]], Estimate.of(effect.pre_grad_first_over_last_log2)),
        (names[2], rules[names[2]], Estimate.of(effect.post_minus_pre_grad_log2)),
        (names[3], rules[names[3]], Estimate.of(effect.pre_vs_post_cold)),
    ])
    verdict = settle([p.verdict for p in parts], all_or_none)
    deep = data.size.get("deep", {})
    scale = {"d_model": deep.get("d_model"), "depth": depth, "steps": data.deep_steps,
             "batch": deep.get("batch_size"), "seq_len": deep.get("seq_len")}
    scale_en = scale_text(**scale) if verdict in DECIDED else ""
    scale_zh = scale_text(**scale, zh=True) if verdict in DECIDED else ""
    graded = "; ".join(f"{p.name}: {p.estimate.text()} → {p.verdict}" for p in parts)
    spreads = {(p.placement, p.warmup): p.spread_log2 for p in data.deep_profiles
               if p.depth == depth and p.lr == effect.lr}
    spreads_all = {(p.placement, p.depth, p.warmup, p.lr): p.spread_log2
                   for p in data.deep_profiles}
    spread_en = "; ".join(f"{placement} {'with' if w else 'without'} warmup "
                          f"{_ci(s, 2)}" for (placement, w), s in spreads.items())
    spread_zh = "；".join(f"{placement} {'有' if w else '无'} warmup {_ci(s, 2)}"
                          for (placement, w), s in spreads.items())
    table = {
        "columns": ["placement", "depth", "warmup", "failed/runs", "val loss",
                    "log2 ‖∇first‖/‖∇last‖", "log2 max/min over layers"],
        "rows": [[c.placement, c.depth, c.warmup, f"{c.failures}/{runs_made(c)}", _level(c.val_loss),
                  _level(c.grad_first_over_last_log2, 2),
                  _level(spreads_all.get((c.placement, c.depth, c.warmup, c.lr)), 2)]
                 for c in data.deep],
        "caption": f"The deep grid, {data.deep_steps} steps, lr {effect.lr:g}, mean [95% CI] "
                   "over seeds of the finished runs; gradient columns during training after "
                   "warmup."}
    return Finding(
        verdict,
        f"Depth {depth}, lr {effect.lr:g}, warmup 0 vs {effect.warmup} of {data.deep_steps} "
        f"steps, up to {data.seeds} seeds, paired by seed: {graded}. Failures (counted apart): "
        f"pre-norm {pre_f}/{pre_n}; post-norm {post_cold_f}/{post_cold_n} without warmup, "
        f"{post_warm_f}/{post_warm_n} with. How unevenly the layers of one stack get gradient "
        f"during training, log2(max / min) over layers: {spread_en}. Gradient ratios are of "
        "whole layers' parameter gradients; a positive log2 ‖∇first‖/‖∇last‖ means the bottom "
        "gets more than the top. One learning rate and one run length on a small model: a "
        "part that fails is not reproduced at this scale, never contradicted." + scale_en,
        f"深度 {depth}、学习率 {effect.lr:g}、warmup 0 对 {effect.warmup}（共 {data.deep_steps} 步）、"
        f"至多 {data.seeds} 个种子，按种子配对：{graded}。失败（单独计数）：Pre-Norm {pre_f}/{pre_n}；"
        f"Post-Norm 无 warmup {post_cold_f}/{post_cold_n}，有 warmup {post_warm_f}/{post_warm_n}。"
        f"训练中同一堆叠各层梯度的不均匀程度，log2(最大/最小)：{spread_zh}。梯度之比取整层参数的梯度范数；"
        "log2 ‖∇第一层‖/‖∇最后一层‖ 为正表示底层收到的梯度多于顶层。各组共用一个学习率和一种训练长度，且模型很小："
        "不成立的部分只能算“此规模下未复现”，不能算“被否定”。" + scale_zh,
        {"effect": asdict(effect), "effects": [asdict(e) for e in data.deep_effects],
         "failures": {"pre": [pre_f, pre_n], "post_cold": [post_cold_f, post_cold_n],
                      "post_warm": [post_warm_f, post_warm_n]},
         "profiles": [asdict(p) for p in data.deep_profiles],
         "training": [asdict(c) for c in data.deep], "steps": data.deep_steps,
         "table": table},
        ctx.suite_command("placement"), "placement_deep", parts, C36_COMBINES,
        C36_COMBINES_ZH)
