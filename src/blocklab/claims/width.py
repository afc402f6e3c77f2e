"""C37: the FFN's width can be a control point, but slicing an ordinary model is not
nested-width training (page 000, § 2026研究进展).

The ordinary model sliced to m/2 and m/4 against the nested one, the nested model's price at m,
and its m/2 against a model trained at m/2 alone, each a paired % of the validation loss.
"""

from __future__ import annotations

from blocklab.claims.finding import DECIDED, Context, Finding, claim
from blocklab.claims.registry import (
    C37_MARGIN_PCT,
    C37_NARROW_PART,
    C37_PRICE_PART,
    C37_SLICED_PARTS,
    C37_SMALLEST_EFFECT_PCT,
    registered,
)
from blocklab.claims.rules import (
    CONFIRMED,
    MIXED,
    Estimate,
    Part,
    decided_text,
    settle,
    with_failed_seeds,
)
from blocklab.claims.text import WORDING, Template, say
from blocklab.experiments.suites.base import format_ci
from blocklab.experiments.suites.width.summary import WidthData

C37_COMBINES = WORDING["COMBINES"]["C37"]

TEXT: dict[str, Template] = WORDING["WIDTH"]


def combine_c37(parts: list[Part]) -> str:
    """C37's verdict from its parts (sliced m/2, sliced m/4, price, narrow), by `C37_COMBINES`."""
    def decided(verdicts: list[str]) -> str:
        if verdicts[0] == CONFIRMED:
            return CONFIRMED if all(v == CONFIRMED for v in verdicts) else MIXED
        return verdicts[0]

    return settle([p.verdict for p in parts], decided)


def c37_arms(part: str, metric: str, arms: list[str]) -> list[str]:
    """The arms a C37 part reads: the nested arm and the ordinary one, or the narrow one."""
    other = "narrow" if part == C37_NARROW_PART else "ordinary"
    return [a for a in ("nested", other) if a in arms]


@claim("C37", suite="width", scale_dependent=True, arms=c37_arms)
def c37(ctx: Context) -> Finding:
    data: WidthData = ctx.required("width").data
    rules = registered("C37", ctx.size)
    m = data.widths[0]
    estimates = {**{name: data.sliced_vs_nested_pct[str(m // k)]
                    for k, name in C37_SLICED_PARTS.items()},
                 C37_PRICE_PART: data.nested_price_pct,
                 C37_NARROW_PART: data.nested_vs_narrow_pct}
    parts = Part.decided_together([(name, rule, Estimate.of(estimates[name]))
                                   for name, rule in rules.items()])
    parts = [with_failed_seeds(p, {a: data.status.get(a, {})
                                   for a in c37_arms(p.name, "", list(data.status))})
             for p in parts]
    verdict = combine_c37(parts)
    by_width = ", ".join(
        f"k={p.width}: " + " / ".join(f"{arm} {p.loss[arm].mean:.3f}" for arm in p.loss
                                      if p.loss[arm].mean is not None)
        + f" ({p.ffn_params:,} FFN parameters, {p.flops_per_token:,} FLOPs/token)"
        for p in data.points)
    size = data.size
    model = (f"d_model {size.get('d_model')} × {size.get('n_layers')} layers, SwiGLU m = {m}, "
             f"{data.steps} steps of {size.get('batch_size')} × {size.get('seq_len')} tokens")

    def text(lang: str) -> str:
        graded = say(TEXT["sep"], lang).join(
            say(TEXT["graded"], lang, part=p.name, decided=decided_text(p, 2, "%"),
                verdict=p.verdict) for p in parts)
        return say(TEXT["c37"], lang, model=model, lr=data.lr, scheme=data.scheme,
                   seeds=data.seeds, by_width=by_width, graded=graded,
                   smallest=C37_SMALLEST_EFFECT_PCT, margin=C37_MARGIN_PCT,
                   at_scale=say(TEXT["at_scale"], lang) if verdict in DECIDED else "")

    return Finding(
        verdict, text("en"), text("zh"),
        {"widths": data.widths, "narrow": data.narrow, "lr": data.lr, "seeds": data.seeds,
         "steps": data.steps, "scheme": data.scheme,
         "points": data.points, "sliced_vs_nested_pct": data.sliced_vs_nested_pct,
         "nested_price_pct": data.nested_price_pct,
         "nested_vs_narrow_pct": data.nested_vs_narrow_pct, "status": data.status,
         "interval_text": {p.name: format_ci(estimates[p.name], 2) + "%" for p in parts}},
        ctx.suite_command("width"), "width_control", parts, *C37_COMBINES)
