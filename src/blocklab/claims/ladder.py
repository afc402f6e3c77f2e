"""A headline claim on the ladder of sizes (`blocklab.experiments.ladder`): each rung's parts
decided by the engine at that rung's scale, where each part is first decided, the effect
against training compute with the rung as the unit, and the published results beside it at
their own compute.

    ladder = read_ladder("C16", Path("runs"), {"quick": "bf16", "rung1": "bf16"})
    ladder.rungs[1].result.parts          # C16's parts at rung1, decided by the engine
    ladder.trends[0].appears              # the smallest rung that decides SwiGLU − ReLU
    ladder.trends[0].fit.slope            # its % per rung (2× training compute)

A rung is read exactly as the ledger reads a size. The trend is a line through the rung means
in rungs above the quick size, the rung the unit of replication (`trend.fit_line`); where it
meets the page's statement is read only inside the rungs measured. No PyTorch.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from blocklab.claims.anchors import Anchor, anchors, short_source
from blocklab.claims.catalogue import SUITE_OF
from blocklab.claims.finding import Context
from blocklab.claims.lang import LANGS
from blocklab.claims.ledger import ClaimResult, run_claims
from blocklab.claims.registry import C16_PRECISION_RULES, LADDER_CLAIMS, registered
from blocklab.claims.rules import (
    CONFIRMED,
    NOT_REPRODUCED,
    Estimate,
    Part,
    Rule,
    claimed_boundary,
    claimed_side,
    confidence_text,
)
from blocklab.claims.text import WORDING, Template, say, verdict_word
from blocklab.claims.trend import LineFit, Meeting, fit_line, meets
from blocklab.errors import InputError
from blocklab.experiments import ladder as rule
from blocklab.experiments.options import RunOptions, RunRequest
from blocklab.experiments.results import ResultStore
from blocklab.experiments.scale import flops_text
from blocklab.experiments.suites import get_suite, load_summary
from blocklab.experiments.suites.base import mean_ci, suite_dir
from blocklab.experiments.suites.ffn.runs import BASELINE
from blocklab.experiments.suites.norm_cost.runs import SIZES as NORM_SIZES
from blocklab.experiments.suites.position.runs import SIZES as POSITION_SIZES
from blocklab.experiments.suites.tuning import counted_loss
from blocklab.experiments.summaries import Interval, incomplete

SIZES = (rule.BASE, *rule.RUNGS)  # the ladder's rungs, cheapest first


@dataclass(frozen=True)
class Rung:
    """One rung: its size, compute multiple over quick, precision, and the claim as the ledger
    grades it there (None: no results stored)."""

    size: str
    multiple: int
    precision: str
    result: ClaimResult | None

    @property
    def flops(self) -> float | None:
        return None if self.result is None or self.result.scale is None else \
            float(self.result.scale["flops"])

    def part(self, name: str) -> Part | None:
        return None if self.result is None else next(
            (p for p in self.result.parts if p.name == name), None)

    def estimate(self, part: str) -> Interval | None:
        """The part's estimate over this rung's seeds (95% Student-t, with its sd)."""
        found = self.part(part)
        if found is None or found.estimate.value is None:
            return None
        e = found.estimate
        return Interval(e.n, e.value, e.ci_low, e.ci_high, e.sd)


DECIDED = (CONFIRMED, NOT_REPRODUCED)  # what "the page's statement is decided" means here


@dataclass(frozen=True)
class Appearance:
    """The smallest rung that decides a part, with the estimate and the deciding interval."""

    size: str
    multiple: int
    flops: float | None
    verdict: str
    value: float
    low: float
    high: float
    confidence: float


def first_decided(part: str, rungs: list[Rung], verdicts: tuple[str, ...] = DECIDED
                  ) -> Appearance | None:
    """The cheapest rung that gives `part` one of `verdicts`, None when no stored rung does."""
    for rung in rungs:
        found = rung.part(part)
        if found is None or found.verdict not in verdicts:
            continue
        d = found.decision
        if d is None or d.interval is None or found.estimate.value is None:
            continue
        return Appearance(rung.size, rung.multiple, rung.flops, found.verdict,
                          found.estimate.value, d.interval.low, d.interval.high,
                          d.interval.confidence)
    return None


@dataclass(frozen=True)
class PartTrend:
    """One part across the rungs: where it is first decided and first confirmed, the line
    through the rung means (None below three rungs) and where it reaches the boundary."""

    part: str
    boundary: float
    fit: LineFit | None
    meeting: Meeting | None
    rungs: int  # rungs with results for this part
    appears: Appearance | None = None
    confirmed: Appearance | None = None

    def direction(self, towards: float | None) -> str:
        """'grows' / 'shrinks' (the slope's interval wholly towards the claim's side or away),
        'drifts' (a band, `towards` None, whose slope's interval excludes 0), else 'none'."""
        if self.fit is None:
            return "none"
        if towards is None:
            return "drifts" if self.fit.slope_low > 0 or self.fit.slope_high < 0 else "none"
        low, high = sorted((self.fit.slope_low * towards, self.fit.slope_high * towards))
        return "grows" if low > 0 else "shrinks" if high < 0 else "none"

    @property
    def line_fits(self) -> bool | None:
        """False where the lack-of-fit test rejects a line at 5%; None where untestable."""
        if self.fit is None or self.fit.lack_of_fit is None:
            return None
        return self.fit.lack_of_fit.p >= 0.05


@dataclass(frozen=True)
class Ladder:
    claim: str
    rungs: list[Rung]
    trends: list[PartTrend]
    anchors: list[Anchor]
    base_flops: float | None  # the quick rung's training compute (the x axis's origin)
    seed_offset: int = 0
    # the precision check at the quick rung (`precision_parts`); [] until both are stored
    precision: list[Part] = field(default_factory=list)

    def x_of(self, flops: float) -> float | None:
        """`flops` in rungs above the quick size (`experiments.ladder.rungs_above`)."""
        if self.base_flops is None or not flops > 0:
            return None
        return rule.rungs_above(flops, self.base_flops)


def read_ladder(claim_id: str, results: Path, precisions: dict[str, str],
                seed_offset: int = 0) -> Ladder:
    """Every rung of `claim_id`'s ladder graded from `results` (each in `precisions[size]`,
    fp32 where not given), and each part's trend over the rungs with results."""
    if claim_id not in LADDER_CLAIMS:
        raise InputError(f"claim {claim_id!r} has no ladder; the claims measured on one are "
                         f"{list(LADDER_CLAIMS)}")
    rungs = []
    for size in SIZES:
        precision = precisions.get(size, "fp32")
        ctx = Context(RunRequest(results, size, seed_offset, precision))
        (graded,) = run_claims([claim_id], ctx)
        stored = graded.verdict != "missing-results" and graded.parts and any(
            p.estimate.n for p in graded.parts)
        rungs.append(Rung(size, rule.multiple(size), precision, graded if stored else None))
    base = rungs[0].flops
    if base is None:  # the quick rung's compute from any rung's (multiples are exact)
        base = next((r.flops / r.multiple for r in rungs if r.flops is not None), None)
    # the parts read over seeds (an analytic count has min_seeds 1)
    trends = [_trend(part, r, rungs, base) for part, r in registered(claim_id, "quick").items()
              if r.min_seeds >= 2]
    checked = precision_parts(results, seed_offset) if claim_id in PRECISION_CHECKED else []
    return Ladder(claim_id, rungs, trends, anchors(claim_id), base, seed_offset, checked)


def _trend(part: str, part_rule: Rule, rungs: list[Rung], base: float | None) -> PartTrend:
    # a claimed band: its upper edge until a slope says which way the line leaves it
    equivalence = part_rule.test == "equivalence"
    boundary = part_rule.claimed + part_rule.margin if equivalence else \
        claimed_boundary(part_rule)
    points = [(rule.rungs_above(rung.flops, base), found) for rung in rungs
              if (found := rung.estimate(part)) is not None and rung.flops is not None and base]
    appears, confirmed = first_decided(part, rungs), first_decided(part, rungs, (CONFIRMED,))
    if len({x for x, _ in points}) < 3:
        return PartTrend(part, boundary, None, None, len(points), appears, confirmed)
    fit = fit_line(points)
    xs = [x for x, _ in points]
    if equivalence:  # where the line would leave the band, on its way out
        boundary = part_rule.claimed + math.copysign(part_rule.margin, fit.slope)
    return PartTrend(part, boundary, fit, meets(fit, boundary, min(xs), max(xs)), len(points),
                     appears, confirmed)


def ladder_dict(ladder: Ladder) -> dict:
    """The ladder as `blocklab ladder --json` gives it; `x`: a compute in rungs above quick."""
    rungs = [{"size": r.size, "multiple": r.multiple, "precision": r.precision,
              "flops": r.flops, "x": None if r.flops is None else ladder.x_of(r.flops),
              "scale": None if r.result is None else r.result.scale,
              "verdict": None if r.result is None else r.result.verdict,
              "error": None if r.result is None else r.result.error,
              "parts": [] if r.result is None else [p.to_dict() for p in r.result.parts]}
             for r in ladder.rungs]
    rules = registered(ladder.claim, "quick")
    bands = {name: [r.claimed - r.margin, r.claimed + r.margin] if r.test == "equivalence"
             else None for name, r in rules.items()}
    trends = [{"part": t.part, "boundary": t.boundary, "band": bands[t.part],
               "unit": part_unit(ladder.claim, rules[t.part]),
               "fit": None if t.fit is None else t.fit.to_dict(),
               "meeting": None if t.meeting is None else t.meeting.to_dict(),
               "direction": t.direction(claimed_side(rules[t.part])),
               "line_fits": t.line_fits,
               "appears": _appearance(ladder, t.appears),
               "confirmed": _appearance(ladder, t.confirmed),
               "rungs_with_results": t.rungs}
              for t in ladder.trends]
    papers = [{**a.to_dict(), "x": None if a.flops is None else ladder.x_of(a.flops)}
              for a in ladder.anchors]
    return {"claim": ladder.claim, "base_flops": ladder.base_flops,
            "rule": f"{_RULE_TEXT}; {lr_rule(ladder.claim)}", "axis": AXES[ladder.claim],
            "seed_offset": ladder.seed_offset,
            "precision_check": [p.to_dict() for p in ladder.precision],
            "changes": rung_changes(ladder.claim, [r.precision for r in ladder.rungs]),
            "rungs": rungs, "trends": trends, "anchors": papers}


def _appearance(ladder: Ladder, seen: Appearance | None) -> dict | None:
    if seen is None:
        return None
    return {**asdict(seen), "x": None if seen.flops is None else ladder.x_of(seen.flops)}


def rung_changes(claim_id: str, precisions: list[str]) -> dict[str, list[str]]:
    """What moves from rung to rung (width, heads, batch, training tokens) and what is held,
    {"en": [...], "zh": [...]}, read from the suite's own sizes."""
    suite = get_suite(SUITE_OF[claim_id])
    scales = [suite.scale(size, "") for size in SIZES]
    shapes = [suite.shape(size) if suite.shape is not None else None for size in SIZES]

    def arrow(values: list) -> str:
        return " → ".join(str(v) for v in values)

    def lines(lang: str) -> list[str]:
        out = []
        if all(shapes):
            out.append(say(TEXT["rungs_shape"], lang,
                           widths=arrow([cfg.d_model for cfg, _, _ in shapes]),
                           heads=arrow([cfg.n_heads for cfg, _, _ in shapes]),
                           head_dim=shapes[0][0].head_dim,
                           batches=arrow([batch for _, batch, _ in shapes])))
        out.append(say(TEXT["rungs_size"], lang,
                       params=arrow([f"{s.params / 1e6:.2f}M" for s in scales]),
                       tokens=arrow([f"{s.tokens / 1e6:.2f}M" for s in scales])))
        held = (say(TEXT["one_precision"], lang, precision=precisions[0])
                if len(set(precisions)) == 1 else
                say(TEXT["precisions"], lang, precisions=arrow(precisions)))
        out.append(say(TEXT["rungs_held"], lang, precision=held))
        return out

    return {lang: lines(lang) for lang in LANGS}


_RULE_TEXT = (f"each rung {rule.STEP}× the training compute (6 · parameters · tokens) of the "
              "one below: width and batch × compute^(1/4) at the quick size's depth, the "
              "training tokens filling the compute; one precision, warmup and evaluation "
              "interval a fixed share of the steps")
# The claims whose ladder carries the precision check (`precision_parts`).
PRECISION_CHECKED = ("C16",)
# Each ladder's parts' unit, and its y axis: what their effects are, in that unit.
UNITS = {"C16": "%", "C18": "nats", "C21": "%", "C30": "%"}  # C19: each part's own
AXES = {"C16": "Δ% of validation loss vs ReLU (negative = better)",
        "C18": "Δ validation loss RMSNorm − LayerNorm (nats/token)",
        "C21": "loss past L vs sliding windows of L, same tokens (%)",
        "C30": "loss past L vs sliding windows of L, same tokens (%)",
        "C19": "effect, in the unit its panel names"}


def part_unit(claim_id: str, part_rule: Rule) -> str:
    """The claim's unit (`UNITS`), or the one a C19 part's metric names (else log2)."""
    if claim_id in UNITS:
        return UNITS[claim_id]
    return next((word for word in ("nats", "doublings") if word in part_rule.metric), "log2")


def lr_rule(claim_id: str) -> str:
    """How each rung sets its arms' learning rate, read from the suites' sizes."""
    if claim_id == "C16":
        return "every arm tuned at every rung"
    if claim_id == "C19":
        return ("every training arm tuned at every rung; the stable-lr ladder moved down by "
                "the width ratio (Adam's stable lr ∝ 1 / width)")
    if claim_id == "C18":
        return (f"both norms at the registered lr {NORM_SIZES[rule.BASE].quality.lr:g} at "
                "every rung (the comparison shares one lr)")
    base = POSITION_SIZES[rule.BASE].train.lr_grid.base
    return (f"every arm at the registered lr {base[len(base) // 2]:g} at every rung (each "
            "part compares an arm with itself; no tuning)")


_DIRECTION: dict[str, Template] = WORDING["DIRECTION"]

TEXT: dict[str, Template] = WORDING["LADDER"]


def rung_line(rung: dict, lang: str = "en") -> str:
    """One rung in words: scale, precision, each part's estimate, deciding interval, verdict."""
    zh = lang == "zh"
    if not rung["parts"]:
        return say(TEXT["rung_empty"], lang, size=rung["size"], multiple=rung["multiple"])
    scale = rung["scale"]["text_zh" if zh else "text"] if rung["scale"] else ""
    bits = []
    for part in rung["parts"]:
        e, iv = part["estimate"], part.get("interval")
        value = "—" if e["value"] is None else f"{e['value']:+.2f}"
        decided = "" if not iv else say(TEXT["rung_interval"], lang, low=iv["low"],
                                        high=iv["high"],
                                        confidence=confidence_text(iv["confidence"]))
        bits.append(f"{part['name']} {value}{decided} → {verdict_word(part['verdict'], lang)}")
    return f"{rung['size']} ({scale}, {rung['precision']}): {say(TEXT['sep'], lang).join(bits)}"


def precision_line(parts: list[dict], lang: str = "en") -> str | None:
    """The precision check as `rung_line` writes a rung; None before both are stored."""
    if not parts:
        return None
    line = rung_line({"size": "quick", "multiple": 1, "parts": parts, "precision": "bf16 − fp32",
                      "scale": {"text": "each gap to ReLU, bf16 minus fp32, same seeds",
                                "text_zh": "各自相对 ReLU 的差距，bf16 减 fp32，相同种子"}}, lang)
    return say(TEXT["precision_check"], lang, line=line)


def _unit(trend: dict) -> tuple[str, int]:
    unit = trend.get("unit", "%")
    return (unit if unit == "%" else f" {unit}"), {"%": 2, "nats": 4}.get(unit, 3)


def appears_line(trend: dict, rungs: list[dict], papers: list[dict], lang: str = "en") -> str:
    """The lead sentence: where a part is first decided (and confirmed), with the deciding
    interval, or that no rung decides it; then the published results at their compute."""
    u, digits = _unit(trend)
    name, seen = trend["part"], trend.get("appears")
    stored = [r for r in rungs if any(p["name"] == name for p in r["parts"])]

    def where(at: dict) -> str:
        flops = ("" if not at["flops"] else
                 say(TEXT["where_flops"], lang, flops=f"{flops_text(at['flops'])} FLOPs"))
        return say(TEXT["where"], lang, size=at["size"], multiple=at["multiple"], flops=flops)

    def decided(at: dict) -> str:
        verdict = verdict_word(at["verdict"], lang)
        span = (f"{at['value']:+.{digits}f}{u} [{at['low']:+.{digits}f}, {at['high']:+.{digits}f}]")
        return say(TEXT["decided"], lang, verdict=verdict, span=span,
                   confidence=confidence_text(at["confidence"]))

    if seen:
        text = say(TEXT["first_decided"], lang, name=name, where=where(seen),
                   decided=decided(seen))
        later = trend.get("confirmed")
        if later and later["size"] != seen["size"]:
            text += say(TEXT["confirmed_at"], lang, where=where(later), decided=decided(later))
    elif stored:
        top = stored[-1]
        reach = f"{flops_text(top['flops'])} FLOPs" if top.get("flops") else top["size"]
        text = say(TEXT["undecided"], lang, name=name, stored=len(stored), reach=reach)
    else:
        text = say(TEXT["no_results"], lang, name=name)
    # the published results for the part, at their training compute where given
    shown = [f"{short_source(p['source'])} "
             + (say(TEXT["paper_at"], lang, flops=flops_text(p["flops"])) if p.get("flops") else
                say(TEXT["paper_no_compute"], lang))
             + f": {p['effects'][name]:+g}{u}" for p in papers
             if name in (p.get("effects") or {})]
    if shown:
        text += say(TEXT["published"], lang, papers=say(TEXT["sep"], lang).join(shown))
    return text + say(TEXT["end"], lang)


def trend_line(trend: dict, lang: str = "en") -> str:
    """One part's trend in words: the slope with its interval, whether a line fits, and where
    it reaches the page's boundary inside the rungs measured."""
    u, digits = _unit(trend)
    fit, name = trend["fit"], trend["part"]
    if fit is None:
        return say(TEXT["no_trend"], lang, name=name, k=trend["rungs_with_results"])
    text = say(TEXT["trend"], lang, name=name, slope=fit["slope"], low=fit["slope_low"],
               high=fit["slope_high"], digits=digits, u=u, step=rule.STEP, rungs=fit["rungs"],
               df=fit["df"], n=fit["n"],
               effect="the effect " if trend["direction"] != "none" else "",
               words=say(_DIRECTION[trend["direction"]], lang, k=fit["rungs"]))
    lack = fit.get("lack_of_fit")
    if lack:
        text += (say(TEXT["line_fits" if lack["p"] >= 0.05 else "line_misfits"], lang)
                 + say(TEXT["lack_of_fit"], lang, df1=lack["df1"], df2=lack["df2"], f=lack["f"],
                       p=lack["p"]))
    meeting = trend["meeting"]
    if meeting and meeting["at"] is not None and meeting["low"] is not None \
            and not meeting["extrapolated"]:
        edge = say(TEXT["edge_band" if trend.get("band") else "edge_page"], lang)
        text += say(TEXT["meeting"], lang, edge=edge, threshold=meeting["threshold"], u=u,
                    at=meeting["at"], span=f"[{meeting['low']:.1f}, {meeting['high']:.1f}]")
    return text + say(TEXT["end"], lang)


def seed_gaps(results: Path, size: str, precision: str, seed_offset: int = 0
              ) -> dict[str, dict[int, float]]:
    """{arm: {seed: 100 · (loss_arm − loss_relu) / loss_relu}} of the ffn summary's counted
    runs at `size` in `precision`; {} without a usable summary."""
    summary = load_summary(results, "ffn", size, seed_offset=seed_offset, precision=precision)
    if summary is None or incomplete(results, summary, precision):
        return {}
    suite = get_suite("ffn")
    options = RunOptions.for_suite(suite, size, summary.seeds, seed_offset=seed_offset,
                                   precision=precision)
    store = ResultStore(suite_dir(results, suite, options))
    losses: dict[tuple[str, int], float] = {}
    for run_id in summary.run_ids:
        result = store.load(run_id)
        run, loss = result.run, counted_loss(result)
        # the graded runs only (tuning, sensitivity and trend runs are labelled otherwise)
        if run is not None and loss is not None and run.label == f"ffn {run.arm} seed {run.seed}":
            losses[(run.arm, run.seed)] = loss
    out: dict[str, dict[int, float]] = {}
    for (arm, seed), loss in losses.items():
        base = losses.get((BASELINE, seed))
        if arm != BASELINE and base is not None:
            out.setdefault(arm, {})[seed] = 100 * (loss - base) / base
    return out


def precision_parts(results: Path, seed_offset: int = 0) -> list[Part]:
    """The precision check at quick (`registry.C16_PRECISION_RULES`): per gated arm, its gap
    to ReLU in bf16 minus fp32, paired by seed, decided with Holm; [] until both are stored."""
    fp32 = seed_gaps(results, "quick", "fp32", seed_offset)
    bf16 = seed_gaps(results, "quick", "bf16", seed_offset)
    if not fp32 or not bf16:
        return []
    specs = []
    for arm, part_rule in C16_PRECISION_RULES.items():
        seeds = sorted(set(fp32.get(arm, {})) & set(bf16.get(arm, {})))
        found = mean_ci([bf16[arm][s] - fp32[arm][s] for s in seeds])
        specs.append((arm, part_rule, Estimate.of(found)))
    return Part.decided_together(specs)
