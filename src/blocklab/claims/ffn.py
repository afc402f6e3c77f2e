"""C16: SwiGLU (and GeGLU, GLU) lowers the loss against a ReLU FFN at equal parameters.

Per arm, (arm − relu)/relu of the final validation loss in %, each arm at its own tuned lr; a
contradiction also needs the same arms trained twice as long (`<size>+x2`) to agree.
"""

from __future__ import annotations

from collections.abc import Mapping

from blocklab.claims.finding import (
    Context,
    Finding,
    claim,
    decided_scale,
    trend_word,
)
from blocklab.claims.lr_bias import comparison_bias, lr_bias, unfair_reason
from blocklab.claims.registry import (
    C16_MARGIN_PCT,
    C16_MIN_SEEDS,
    C16_SMALLEST_EFFECT_PCT,
    registered,
)
from blocklab.claims.rules import (
    ALPHA,
    CONTRADICTED,
    MIXED,
    Estimate,
    Part,
    Rule,
    decide,
    decided_text,
    settle,
    with_failed_seeds,
)
from blocklab.claims.text import WORDING, Template, say
from blocklab.experiments.suites.base import format_ci
from blocklab.experiments.suites.ffn.runs import BASELINE
from blocklab.experiments.suites.ffn.summary import FfnData

C16_COMBINES = WORDING["COMBINES"]["C16"]

TEXT: dict[str, Template] = WORDING["FFN"]


def combine_c16(parts: list[Part]) -> str:
    """C16's verdict from its parts (SwiGLU first), by the stated rule `C16_COMBINES`."""
    def decided(verdicts: list[str]) -> str:
        if verdicts[0] == "confirmed" and any(v != "confirmed" for v in verdicts[1:]):
            return MIXED
        return verdicts[0]

    return settle([p.verdict for p in parts], decided)


def c16_longer_agrees(ctx: Context, rules: Mapping[str, Rule], fair: Mapping[str, bool]
                      ) -> dict[str, bool]:
    """{arm: the runs of that arm and ReLU trained twice as long (`<size>+x2`) lie beyond δ
    on the side opposite the claim too}; {} without such runs."""
    longer = ctx.longer_summary("ffn")
    if longer is None:
        return {}
    out = {}
    for arm, rule in rules.items():
        found = longer.data.arms.get(arm)
        if found is None or not found.rel_delta_pct.resolved:
            continue
        again = decide(rule, Estimate.of(found.rel_delta_pct), ALPHA, fair_arms=fair[arm],
                       longer_run_agrees=True)
        out[arm] = again.verdict == CONTRADICTED
    return out


def c16_arms(part: str, metric: str, arms: list[str]) -> list[str]:
    """The arms a C16 part reads: its gated arm (the part is named after it) and ReLU."""
    return [a for a in (part, BASELINE) if a in arms]


def c16_lr_bias(data: FfnData) -> dict[str, float | None]:
    """{arm: the % its and ReLU's tuned rates put into its gap to ReLU} (`lr_bias`: a parabola
    in log lr through each chosen rate and its neighbours; positive = the arm looks worse than
    at both optima); None where a curve gives no optimum to read."""
    d_model = data.size.get("d_model")
    chosen = {t.arm: t.lr for t in data.lr_tuning}
    if BASELINE not in chosen:
        return {}
    base = lr_bias(data.lr_trials, BASELINE, chosen[BASELINE], d_model)
    loss = data.arms[BASELINE].val_loss.mean if BASELINE in data.arms else None
    return {arm: comparison_bias(lr_bias(data.lr_trials, arm, lr, d_model), base, loss)
            for arm, lr in chosen.items() if arm != BASELINE}


def c16_unfair(arm: str, interior: Mapping[str, bool], bias: float | None) -> str | None:
    """Why the lr bias of `arm` and ReLU cannot be read (`unfair_reason`)."""
    edge = [a for a in (arm, BASELINE) if not interior.get(a)]
    return unfair_reason(f"{' and '.join(edge)} tuned at the grid's edge" if edge else None,
                         bias)


@claim("C16", suite="ffn", scale_dependent=True, arms=c16_arms)
def c16(ctx: Context) -> Finding:
    data = ctx.required("ffn").data
    arms = data.arms
    from blocklab.experiments.suites.ffn.runs import PAGE_GAIN_PCT, page_gain_text

    rules = registered("C16", ctx.size)  # one part per arm, SwiGLU first
    page = {arm: PAGE_GAIN_PCT[arm] for arm in rules}  # gains over ReLU, %
    # rel_delta_pct: (arm − relu)/relu in %; negative = better
    rows = {arm: {"rel_delta_pct": arms[arm].rel_delta_pct, "page_gain_pct": list(page[arm]),
                  "val_loss": arms[arm].val_loss} for arm in page}
    specs = [(arm, rules[arm], Estimate.of(arms[arm].rel_delta_pct)) for arm in page]
    # Fair arms: each compared arm (and ReLU) at its own lr from the grid, tuned on seeds the
    # CI never sees, with its optimum inside the grid (at an edge a better lr may lie beyond
    # it). A contradiction also needs the same arms trained twice as long on the same seeds to
    # lie beyond δ on the same side (`blocklab.claims.sequential.run_longer` runs them).
    interior = {t.arm: t.interior for t in data.lr_tuning}
    fair = {arm: bool(interior.get(arm)) and bool(interior.get("relu")) for arm in page}
    longer = c16_longer_agrees(ctx, rules, fair)
    bias = c16_lr_bias(data)
    unfair = [c16_unfair(arm, interior, bias.get(arm)) for arm in page]
    parts = Part.decided_together(specs, fair_arms=[fair[arm] for arm in page],
                                  longer_run_agrees=[longer.get(arm, False) for arm in page],
                                  unfair=unfair, bias=[bias.get(arm) for arm in page])
    parts = [with_failed_seeds(p, {a: arms[a].status for a in (arm, "relu")})
             for p, arm in zip(parts, page, strict=True)]
    verdict = combine_c16(parts)
    graded = ", ".join(f"{p.name} {decided_text(p, 3, '%')} → {p.verdict}" for p in parts)
    seeds, steps = data.seeds, data.steps
    lrs = ", ".join(f"{arm} {arms[arm].lr:g}" for arm in ("relu", *page) if arm in arms)
    again = data.sensitivity
    shift = "; ".join(f"{arm} {format_ci(arms[arm].rel_delta_pct, 2)}% → "
                      f"{format_ci(again.rel_delta_pct[arm], 2)}%"
                      for arm in again.rel_delta_pct if arm != "relu" and arm in arms)
    shown_bias = ", ".join(f"{arm} {'—' if bias.get(arm) is None else f'{bias[arm]:+.2f}%'}"
                           for arm in page)
    edges = (min(data.lr_grid), max(data.lr_grid)) if data.lr_grid else ()
    points = ", ".join(
        f"d={p.d_model}: {format_ci(p.rel_delta_pct, 2)}%"
        + (" (an lr at the grid's edge)" if any(lr in edges for lr in p.lrs.values()) else "")
        for p in data.trend)

    def text(lang: str) -> str:
        sep = say(TEXT["list_sep"], lang)
        if not again.rel_delta_pct:  # a size that trains only the graded arms
            sensitivity = say(TEXT["sensitivity_full_only"], lang, init=again.init)
        else:
            sensitivity = (say(TEXT["sensitivity"], lang, init=again.init, lr=again.lr,
                               shift=shift) if shift else "")
        trend = "" if len(data.trend) < 2 else say(
            TEXT["trend"], lang, points=points,
            change=format_ci(data.trend_change, 2) + say(TEXT["points"], lang),
            direction=trend_word(data.trend_change, "below", lang))
        return say(TEXT["c16"], lang, seeds=seeds, steps=steps, init=data.init,
                   grid=", ".join(f"{lr:g}" for lr in data.lr_grid), lrs=lrs, graded=graded,
                   claimed=sep.join(page_gain_text(a).lstrip("+") for a in page),
                   min_seeds=C16_MIN_SEEDS, smallest=C16_SMALLEST_EFFECT_PCT,
                   margin=C16_MARGIN_PCT,
                   edge=(say(TEXT["edge"], lang, arms=sep.join(data.lr_at_edge))
                         if data.lr_at_edge else ""),
                   bias=say(TEXT["bias"], lang, shown=shown_bias), sensitivity=sensitivity,
                   trend=trend, size=_size_text(data.size),
                   scale=decided_scale(verdict, data.size, lang, steps=steps))

    return Finding(
        verdict, text("en"), text("zh"),
        {"arms": rows, "seeds": seeds, "steps": steps, "init": data.init,
         "lr": {arm: arm_data.lr for arm, arm_data in arms.items()},
         "lr_grid": data.lr_grid, "sensitivity": again, "trend": data.trend,
         "trend_change": data.trend_change,
         "unigram_entropy": data.unigram_entropy, "lr_bias_pct": bias},
        ctx.suite_command("ffn"), "ffn_variants", parts, *C16_COMBINES)


def _size_text(size: Mapping[str, object]) -> str:
    """The suite size's model and training settings (its values only formatted)."""
    keys = (("d_model", "d={}"), ("n_layers", "{} layers"), ("seq_len", "T={}"),
            ("batch_size", "B={}"), ("lr", "lr={}"))
    return ", ".join(fmt.format(size[k]) for k, fmt in keys if k in size)
