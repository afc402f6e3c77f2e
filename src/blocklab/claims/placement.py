"""C12, C13 and C19: where the norm sits, read from the placement suite's summary.

C12 grades how unevenly the loss feels the residual stream across one pre-norm stack at
initialisation; C13 reports the pre/post × warmup grid it designs; C19 grades the page's
statements on that grid. The stable-lr helpers serve C36 (`depth`) too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from functools import partial

from blocklab.claims.finding import (
    Context,
    Finding,
    claim,
    decided_scale,
    trend_word,
)
from blocklab.claims.lr_bias import lr_bias, unfair_reason
from blocklab.claims.registry import (
    C12_INITS,
    C13_PART,
    C13_STABILITY_PART,
    C19_EXPRESSIVE_PART,
    c12_part_name,
    registered,
    rule_of,
)
from blocklab.claims.rules import (
    CONDITIONAL,
    MIXED,
    UNTESTABLE,
    Estimate,
    Part,
    all_or_none,
    decided_text,
    failed_runs_part,
    settle,
    testable_all_or_none,
    unless_unlearned,
    verdict_text,
)
from blocklab.claims.text import WORDING, Template, say
from blocklab.experiments.suites.base import format_ci
from blocklab.experiments.suites.placement.summary import (
    GradientProbe,
    PlacementCell,
    PlacementData,
    PlacementEffect,
    StabilityEffect,
)
from blocklab.experiments.summaries import Interval

TEXT: dict[str, Template] = WORDING["PLACEMENT"]


def runs_made(cell: PlacementCell) -> int:
    """The runs a training cell made: a seed the sequential design added to other arms only
    is no run of this one (summaries list it as status "missing")."""
    return cell.runs - cell.status.get("missing", 0)


def unlearned(data: PlacementData, depth: int, *arms: tuple[str, bool], grid: str | None = None
              ) -> dict[str, tuple[int, int]]:
    """{arm: (runs that did not learn, runs made)} of the training cells `arms` ((placement,
    warm)) at `depth`, for `rules.unless_unlearned`; with `grid`, of its stable-lr sweeps:
    (seeds on which no rate of the ladder learned, seeds swept), seeds stable nowhere because
    the ladder's lowest rate did not learn (`StabilityArm.unlearned_low`), not because it
    diverged (which is an instability, and data)."""
    rows = ([(c, c.status.get("did_not_learn", 0), runs_made(c)) for c in data.training]
            if grid is None else
            [(a, a.unlearned_low, sum(r is not None for r in a.rungs)) for a in data.stability
             if a.grid == grid])
    out = {}
    for placement, warm in arms:
        chosen = [(dead, made) for row, dead, made in rows if row.placement == placement
                  and row.depth == depth and (row.warmup > 0) == warm]
        name = f"{placement}-norm {'with' if warm else 'without'} warmup"
        out[name if grid is None else f"{name} (lr sweep)"] = (
            sum(dead for dead, _ in chosen), sum(made for _, made in chosen))
    return out


def _failures(cells: list[PlacementCell]) -> dict[str, int]:
    """The training grid's failed and made runs, named as C13's and C19's sentences name them:
    pre-norm's, post-norm's without warmup and post-norm's with it."""
    out = {}
    for failed, made, placement, warm in (("pre_f", "pre_n", "pre", None),
                                          ("post_cold", "post_cold_n", "post", False),
                                          ("post_warm", "post_warm_n", "post", True)):
        chosen = [c for c in cells if c.placement == placement
                  and (warm is None or (c.warmup > 0) == warm)]
        out[failed] = sum(c.failures for c in chosen)
        out[made] = sum(runs_made(c) for c in chosen)
    return out


C12_COMBINES = WORDING["COMBINES"]["C12"]


def c12_rule(verdicts: list[str]) -> str:
    """`all_or_none` over the inits' parts, with the init as the condition: parts that split
    name the inits it holds under (`C12_COMBINES`), so the claim is conditional, not mixed."""
    verdict = all_or_none(verdicts)
    return CONDITIONAL if verdict == MIXED else verdict


def _extreme_layers(profile: list[float | None]) -> tuple[int, int] | None:
    """(layer with the largest, layer with the smallest) value of a per-layer profile."""
    usable = [(v, i) for i, v in enumerate(profile) if v is not None and math.isfinite(v)]
    return (max(usable)[1], min(usable)[1]) if len(usable) > 1 else None


def _c12_sensitivity(grads: Mapping[str, GradientProbe], deepest: str, lang: str) -> str:
    """Per init, where in the stack the sensitivity is largest and smallest (mean profile over
    seeds, the layers' inputs only), as a sentence in `lang` ('' without a profile)."""
    found = {init: _extreme_layers((g.per_layer_sensitivity.get(deepest) or [])[:int(deepest)])
             for init, g in grads.items()}
    layers = [say(TEXT["c12_where_init"], lang, init=init, largest=f[0], smallest=f[1])
              for init, f in found.items() if f is not None]
    return say(TEXT["c12_where"], lang, layers=say(TEXT["sep"], lang).join(layers)) if layers else ""


def c12_arms(part: str, metric: str, arms: list[str]) -> list[str]:
    """The arms a C12 part reads: its init's pre-norm probes (`init/pre/<init>/<depth>`)."""
    init = re.search(r"pre-norm, (\S+) init", part)
    return [a for a in arms if init and a.startswith(f"init/pre/{init.group(1)}/")]


# Scale-dependent: an even spread in one probed stack cannot show that no deeper or trained
# stack spreads.
@claim("C12", suite="placement", scale_dependent=True, arms=c12_arms)
def c12(ctx: Context) -> Finding:
    data = ctx.required("placement").data
    grads = data.init_gradients["pre"]
    deepest = str(max(next(iter(grads.values())).depths))
    rules = registered("C12", ctx.size)
    # An init the summary lacks is an undecided part (no interval), never a dropped one.
    parts = Part.decided_together([
        (c12_part_name(init), rules[c12_part_name(init)],
         Estimate.of(grads[init].sensitivity_spread_past_embedding_log2.get(
             deepest, Interval(0)) if init in grads else Interval(0)))
        for init in C12_INITS])
    verdict = settle([p.verdict for p in parts], c12_rule)
    probe = data.size.get("probe", {})
    held = [init for init, p in zip(C12_INITS, parts, strict=True) if p.verdict == "confirmed"]
    spreads = "; ".join(f"{p.name}: {2 ** p.estimate.value:.1f}× (log2 {decided_text(p)}) → "
                        f"{p.verdict}" for p in parts if p.estimate.value is not None)
    param = "; ".join(f"{init}: log2 {format_ci(g.layer_spread_log2[deepest], 2)}"
                      for init, g in grads.items() if deepest in g.layer_spread_log2)
    trained = [c for c in data.training if c.placement == "pre" and c.warmup > 0]
    during = "; ".join(f"depth {c.depth}, lr {c.lr:g}: "
                       f"{format_ci(c.grad_first_over_last_log2, 2)}" for c in trained)

    def text(lang: str) -> str:
        condition = (say(TEXT["c12_condition"], lang, inits=" / ".join(held))
                     if verdict == CONDITIONAL else "")
        return say(TEXT["c12"], lang, deepest=deepest, spreads=spreads,
                   where=_c12_sensitivity(grads, deepest, lang) + condition, param=param,
                   during=say(TEXT["c12_during"], lang, during=during) if during else "",
                   scale=decided_scale(verdict, probe, lang, say(TEXT["c12_scale"], lang),
                                       depth=int(deepest)))

    return Finding(
        verdict, text("en"), text("zh"),
        {"depth": int(deepest),
         "sensitivity_spread_log2": {init: g.sensitivity_spread_log2[deepest]
                                     for init, g in grads.items()
                                     if deepest in g.sensitivity_spread_log2},
         "per_layer_sensitivity": {init: g.per_layer_sensitivity.get(deepest)
                                   for init, g in grads.items()},
         "spread_log2": {init: g.layer_spread_log2[deepest] for init, g in grads.items()},
         "per_layer_grad": {init: g.per_layer_grad[deepest] for init, g in grads.items()},
         "during_training": [{"depth": c.depth, "lr": c.lr,
                              "first_over_last_log2": c.grad_first_over_last_log2}
                             for c in trained]},
        ctx.suite_command("placement"), "placement_gradients", parts, *C12_COMBINES)


def _effect(data: PlacementData) -> PlacementEffect | None:
    """The contrast C13 and C19 are graded on: the deepest depth, then the longest warmup."""
    return max(data.effects, key=lambda e: (e.depth, e.warmup), default=None)


def stable_effect(data: PlacementData, grid: str) -> StabilityEffect | None:
    """The largest-stable-lr contrasts of `grid` ("sweep": C13 and C19; "deep": C36) at its
    deepest depth."""
    return max((e for e in data.stability_effects if e.grid == grid),
               key=lambda e: (e.depth, e.warmup), default=None)


def stability_text(data: PlacementData, grid: str, depth: int, lang: str = "en") -> str:
    """Each swept arm's largest stable peak lr at `depth` in `lang`: geometric mean, the
    interval in doublings and the censored seeds."""
    rows = []
    for a in data.stability:
        if a.grid != grid or a.depth != depth:
            continue
        ci = a.log2_max_stable
        rows.append(say(
            TEXT["stable_arm"], lang, placement=a.placement,
            warmup=say(TEXT["cold" if a.warmup == 0 else "warm"], lang),
            lr="—" if a.max_stable_lr is None else f"{a.max_stable_lr:.3g}",
            span=("" if not ci.resolved else
                  f" [{a.ladder[0] * 2 ** ci.ci_low:.3g}, {a.ladder[0] * 2 ** ci.ci_high:.3g}]"),
            n=ci.n, low=a.censored_low, high=a.censored_high))
    return say(TEXT["sep"], lang).join(rows)


def lr_fairness(data: PlacementData) -> tuple[bool, str, str]:
    """Whether every tuned training arm's optimum is interior, and the words for it."""
    arms = data.lr_tuning
    fair = bool(arms) and all(t.interior for t in arms)
    en = "; ".join(t.words() for t in arms)
    zh = "；".join(f"{t.arm} {t.lr:g}（{'内部最优' if t.interior else '位于网格边缘'}"
                  + (f"，网格扩展 {t.extended} 点" if t.extended else "") + "）" for t in arms)
    return fair, en, zh


def c19_lr_bias(data: PlacementData, depth: int, warmup: int) -> dict[str, float | None]:
    """The nats the tuned rates put into C19's two loss contrasts at `depth` (`lr_bias`: a
    parabola in log lr through each arm's chosen rate and its neighbours): "cold − warm" for
    pre-norm's (cold − warm) and "interaction" for (post cold − post warm) − (pre cold − pre
    warm); None where an arm's curve gives no optimum to read."""
    chosen = {t.arm: t.lr for t in data.lr_tuning}

    def excess(placement: str, w: int) -> float | None:
        arm = f"{placement}/{depth}/{w}"
        return None if arm not in chosen else lr_bias(data.lr_trials, arm, chosen[arm]).excess

    def cold_minus_warm(placement: str) -> float | None:
        cold, warm = excess(placement, 0), excess(placement, warmup)
        return None if cold is None or warm is None else cold - warm

    pre, post = cold_minus_warm("pre"), cold_minus_warm("post")
    return {"cold − warm": pre, "interaction": None if pre is None or post is None else post - pre}


# Which arms of the deepest (placement, warmup) contrast a C13 or C19 part reads: the grid
# ("train": part (b) at each arm's tuned lr; "sweep": its largest stable lrs), "pre" / "post" /
# None (both) and "cold" (warmup 0) / "warm" / None (both).
_CELLS = {
    C13_PART: ("train", None, None),
    C13_STABILITY_PART: ("sweep", None, None),
    "pre-norm trains without warmup": ("train", "pre", None),
    "pre-norm is stable without warmup": ("sweep", "pre", None),
    "post-norm needs warmup": ("train", None, None),
    "post-norm needs warmup to be stable": ("sweep", None, None),
    "post-norm gradients vanish in the lower layers": ("train", "post", "warm"),
    C19_EXPRESSIVE_PART: ("train", None, "warm"),
}


def at_deepest(cell: tuple[str, str | None, str | None], arms: list[str]) -> list[str]:
    """The arms `<grid>/<placement>/<depth>/<warmup>` of `cell` (grid, placement or None,
    "cold" / "warm" or None) at the deepest depth of its grid: the contrast that C13, C19 and
    C36 (`depth`) are graded on."""
    grid, placement, warmup = cell
    cells = [a.split("/") for a in arms if a.startswith(grid + "/") and a.count("/") == 3]
    if not cells:
        return []
    depth = max(int(c[2]) for c in cells)
    cells = [c for c in cells if int(c[2]) == depth and placement in (None, c[1])
             and warmup in (None, "cold" if int(c[3]) == 0 else "warm")]
    return ["/".join(c) for c in cells]


def contrast_arms(part: str, metric: str, arms: list[str]) -> list[str]:
    """The arms a C13 or C19 part reads: its cell of the deepest contrast (`_CELLS`)."""
    return at_deepest(_CELLS.get(part, ("train", None, None)), arms)


@claim("C13", suite="placement", scale_dependent=True, arms=contrast_arms)
def c13(ctx: Context) -> Finding:
    data = ctx.required("placement").data
    cells = data.training
    failures = _failures(cells)
    depths = sorted({c.depth for c in cells})
    effect = _effect(data)
    stable = stable_effect(data, "sweep")

    def text(lang: str) -> str:
        found = "" if effect is None else say(
            TEXT["c13_effect"], lang, depth=effect.depth,
            lrs=", ".join(f"{k} {v:g}" for k, v in effect.lrs.items()), warmup=effect.warmup,
            interaction=format_ci(effect.warmup_interaction, 3),
            pre=format_ci(effect.pre_warmup_effect, 3),
            post_vs_pre=format_ci(effect.post_vs_pre_warm, 3))
        swept = "" if stable is None else say(
            TEXT["c13_stable"], lang, depth=stable.depth,
            stability=stability_text(data, "sweep", stable.depth, lang),
            interaction=format_ci(stable.warmup_interaction, 2) + say(TEXT["doublings"], lang))
        return say(TEXT["c13"], lang, seeds=data.seeds, depths=depths, steps=data.steps,
                   effect=found, stable=swept, **failures)

    # The page designs this experiment and states no result: it is "run", its parts the
    # finding's estimates (C19 grades the claims it bears on).
    why = "the page designed this experiment and stated no result to grade"
    parts = [Part(name, rule_of("C13", ctx.size, name), Estimate.of(found.warmup_interaction),
                  "run", why)
             for name, found in ((C13_PART, effect), (C13_STABILITY_PART, stable))
             if found is not None]
    return Finding(
        "run", text("en"), text("zh"),
        {"training": cells, "effects": data.effects,
         "stability": [a for a in data.stability if a.grid == "sweep"],
         "stability_effects": [e for e in data.stability_effects if e.grid == "sweep"],
         "lr_tuning": data.lr_tuning},
        ctx.suite_command("placement"), "placement_training", parts,
        "run: the experiment is reported, not graded")


C19_COMBINES = WORDING["COMBINES"]["C19"]


@claim("C19", suite="placement", scale_dependent=True, arms=contrast_arms)
def c19(ctx: Context) -> Finding:
    data = ctx.required("placement").data
    cells = data.training
    effect, stable = _effect(data), stable_effect(data, "sweep")
    if effect is None or stable is None:
        return Finding("untestable-here", *TEXT["c19_no_grid"], {},
                       ctx.suite_command("placement"), "placement_training")
    failures = _failures(cells)
    rules = registered("C19", ctx.size)
    names = list(rules)
    fair, fair_en, fair_zh = lr_fairness(data)
    # Contradiction needs every arm at an interior optimum (and no size here trains long
    # enough to call a stability result more than this scale's); a loss contrast at tuned
    # rates is confirmed only when the rates' own bias leaves it within δ/2.
    bias = c19_lr_bias(data, effect.depth, effect.warmup)
    bias_text = ", ".join(f"{k} {'—' if v is None else f'{v:+.3f} nats'}" for k, v in bias.items())
    edge = None if fair else "a tuned rate sits at its grid's edge"
    unfair = [unfair_reason(edge, bias["cold − warm"]), None,
              unfair_reason(edge, bias["interaction"]), None, None, None]
    pre, post = (("pre", False), ("pre", True)), (("post", False), ("post", True))
    trained = partial(unlearned, data, effect.depth)
    swept = partial(unlearned, data, stable.depth, grid="sweep")
    first = failed_runs_part(names[0], rules[names[0]], effect.pre_warmup_effect,
                             failures["pre_f"])
    parts = Part.decided_together([
        first if isinstance(first, Part) else unless_unlearned(first, trained(*pre)),
        unless_unlearned((names[1], rules[names[1]], Estimate.of(stable.pre_cold_vs_warm)),
                         swept(*pre)),
        unless_unlearned((names[2], rules[names[2]], Estimate.of(effect.warmup_interaction)),
                         trained(*pre, *post)),
        unless_unlearned((names[3], rules[names[3]], Estimate.of(stable.warmup_interaction)),
                         swept(*pre, *post)),
        # gradients read on live networks only: a run that did not learn is no measurement
        unless_unlearned((names[4], rules[names[4]],
                          Estimate.of(effect.post_grad_first_over_last_log2)),
                         trained(("post", True))),
        # a statement this machine's budget cannot test: its estimate shown, no decision
        Part(names[5], rules[names[5]], Estimate.of(effect.post_vs_pre_warm), UNTESTABLE,
             f"no size trains near convergence ({data.steps} steps here); post − pre with "
             "warmup at the tuned lrs is shown, not graded"),
    ], fair_arms=fair, unfair=unfair,
        bias=[bias["cold − warm"], None, bias["interaction"], None, None, None])
    verdict = settle([p.verdict for p in parts], testable_all_or_none)
    train = data.size.get("training", {})
    # the probe at initialisation, reported beside (a ladder rung runs none)
    post = data.init_gradients.get("post", {}).get("xavier")
    graded = "; ".join(f"{p.name}: {verdict_text(p)}" for p in parts)
    depths = sorted({e.depth for e in data.effects})

    def text(lang: str) -> str:
        zh = lang == "zh"
        probe = "" if post is None else say(TEXT["c19_probe"], lang,
                                            slope=format_ci(post.slope_first_ci, 2))
        trend = "" if len(depths) < 2 else say(
            TEXT["c19_trend"], lang, last=depths[-1], first=depths[0],
            change=format_ci(data.interaction_trend, 3) + " nats",
            direction=trend_word(data.interaction_trend, "above", lang))
        return say(TEXT["c19"], lang, depth=effect.depth, seeds=data.seeds,
                   fair=fair_zh if zh else fair_en, bias=bias_text, graded=graded,
                   stability=stability_text(data, "sweep", stable.depth, lang), probe=probe,
                   trend=trend, scale=decided_scale(verdict, train, lang, depth=effect.depth,
                                                    steps=data.steps),
                   **failures)

    return Finding(
        verdict, text("en"), text("zh"),
        {"effect": effect, "stable_effect": stable, "interaction_trend": data.interaction_trend,
         "effects": data.effects,
         "failures": {k: [failures[f], failures[n]] for k, f, n in (
             ("pre", "pre_f", "pre_n"), ("post_cold", "post_cold", "post_cold_n"),
             ("post_warm", "post_warm", "post_warm_n"))},
         "post_slope_first": None if post is None else post.slope_first_ci,
         "stability": [a for a in data.stability if a.grid == "sweep"],
         "lr_tuning": data.lr_tuning, "fair_arms": fair, "lr_bias_nats": bias, "training": cells},
        ctx.suite_command("placement"), "placement_training", parts, *C19_COMBINES)
