"""C36: pre-norm lets deep stacks (50+ layers) train stably, because the residual path carries
the gradient straight back (gradient ≈ 1).

Read from the placement suite's deep stacks (50 layers and more at quick) and gradient probes:

    (a) deep pre-norm trains stably     pre − post log2(largest stable lr), with warmup    > 0
    (b) the residual path carries the   ‖J_l − I‖_F/√n of pre-norm blocks at init          small
        gradient straight back (≈ 1)    (the identity term of ∂x_{l+1}/∂x_l dominates)
"""

from __future__ import annotations

from blocklab.claims import registry
from blocklab.claims.finding import Context, Finding, ci_n_text, claim, decided_scale
from blocklab.claims.placement import (
    at_deepest,
    lr_fairness,
    stability_text,
    stable_effect,
    unlearned,
)
from blocklab.claims.registry import (
    C36_IDENTITY_PART,
    C36_STABLE_PART,
    registered,
)
from blocklab.claims.rules import (
    Estimate,
    Part,
    all_or_none,
    settle,
    unless_unlearned,
    verdict_text,
)
from blocklab.claims.text import WORDING, Template, say
from blocklab.experiments.suites.placement.summary import PlacementData
from blocklab.experiments.summaries import Interval


def identity_estimate(data: PlacementData, init: str | None = None, placement: str = "pre"
                      ) -> Estimate:
    """Part (b)'s estimate over seeds (`registry.C36_IDENTITY_RULE`) from the placement suite's
    gradient probes under `init` (default: the registered one); n = 0 where none recorded it.
    Of post-norm blocks, y = N(x + F(x)), it is reported, not graded: with no bare identity
    term, J_N = I − x̂x̂ᵀ per token still gives ‖J − I‖_F/√n = 1/√d at init."""
    probe = data.init_gradients.get(placement, {}).get(init or registry.C36_IDENTITY_INIT)
    return Estimate.of(Interval(0) if probe is None else probe.identity_deviation_median)


C36_COMBINES = WORDING["COMBINES"]["C36"]

TEXT: dict[str, Template] = WORDING["DEPTH"]


def c36_arms(part: str, metric: str, arms: list[str]) -> list[str]:
    """(a) the deepest stable-lr sweeps with warmup; (b) the pre-norm probes of the graded
    init at the deepest probed depth (`init/pre/<init>/<depth>`)."""
    if part == C36_STABLE_PART:
        return at_deepest(("deep", None, "warm"), arms)
    probes = [a.split("/") for a in arms
              if a.startswith(f"init/pre/{registry.C36_IDENTITY_INIT}/")]
    deepest = max((int(p[3]) for p in probes), default=0)
    return ["/".join(p) for p in probes if int(p[3]) == deepest]


@claim("C36", suite="placement", scale_dependent=True, arms=c36_arms, subsection=True)
def c36(ctx: Context) -> Finding:
    data = ctx.required("placement").data
    effect = stable_effect(data, "deep")
    if effect is None:
        return Finding("untestable-here", *TEXT["no_sweep"], {},
                       ctx.suite_command("placement"), "placement_deep")
    depth = effect.depth
    rules = registered("C36", ctx.size)
    parts = Part.decided_together([
        unless_unlearned((C36_STABLE_PART, rules[C36_STABLE_PART],
                          Estimate.of(effect.pre_vs_post_warm)),
                         unlearned(data, depth, ("pre", True), ("post", True), grid="deep")),
        (C36_IDENTITY_PART, rules[C36_IDENTITY_PART], identity_estimate(data))])
    post_identity = identity_estimate(data, placement="post")
    swept_cold = effect.pre_vs_post_cold.n > 0  # full sweeps the cold arms too
    verdict = settle([p.verdict for p in parts], all_or_none)
    deep = data.size.get("deep", {})
    graded = "; ".join(f"{p.name}: {verdict_text(p)}" for p in parts)
    _, fair_en, fair_zh = lr_fairness(data)
    arms = [a for a in data.stability if a.grid == "deep"]
    table = {
        "columns": ["placement", "depth", "warmup", "steps", "largest stable lr",
                    "log2 vs ladder start", "none / top stable", "val loss at each lr"],
        "rows": [[a.placement, a.depth, a.warmup, a.steps,
                  "—" if a.max_stable_lr is None else f"{a.max_stable_lr:.3g}",
                  ci_n_text(a.log2_max_stable, 2), f"{a.censored_low}/{a.censored_high}",
                  "; ".join(f"{lr}: " + ("—" if None in v or not v else
                                          f"{sum(v) / len(v):.3f}")
                            for lr, v in a.loss_at_lr.items())] for a in arms],
        "caption": "The deep stacks' largest stable peak lr per seed, bisected on a doubling "
                   "ladder (geometric mean, and log2 against the ladder's start: mean [95% CI] "
                   "over seeds)."}

    def text(lang: str) -> str:
        zh = lang == "zh"
        cold = (say(TEXT["cold"], lang, contrast=ci_n_text(effect.pre_vs_post_cold, 2))
                if swept_cold else "")
        return say(TEXT["c36"], lang, depth=depth, seeds=data.seeds, graded=graded,
                   stability=stability_text(data, "deep", depth, lang), cold=cold,
                   post_identity=post_identity.text(), fair=fair_zh if zh else fair_en,
                   scale=decided_scale(verdict, deep, lang, depth=depth))

    return Finding(
        verdict, text("en"), text("zh"),
        {"effect": effect, "stability": arms, "table": table,
         "post_identity_deviation": post_identity},
        ctx.suite_command("placement"), "placement_deep", parts, *C36_COMBINES)


