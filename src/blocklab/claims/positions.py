"""Checks of C21 and C29–C31: extrapolation past the training length, order without positions,
RoPE past 8× with and without scaling, its cost.

C29's exact parts are computed live on small float64 attention probes; its experimental parts,
and all of C21, C30 and C31, read the position suite's summary.
"""

from __future__ import annotations

import re

from blocklab.claims.finding import Context, Finding, claim, missing, untested_part
from blocklab.claims.lang import LANGS
from blocklab.claims.registry import (
    C21_MIN_SEEDS,
    C29_ORDER_PART,
    C29_UNIGRAM_PART,
    C31_ABSOLUTE_FLOPS_PART,
    C31_ALIBI_FLOPS_PART,
    C31_ALIBI_PARAMS_PART,
    C31_ROPE_FLOPS_PART,
    C31_ROPE_PARAMS_PART,
    C31_ROPE_SDPA_PART,
    C31_SHARE_PCT,
    C31_SHARE_TOKENS,
    COLLAPSE_PCT,
    WORKS_PCT,
    c21_fair_arms,
    c21_plan,
    c30_plan,
    registered,
)
from blocklab.claims.rules import (
    CONDITIONAL,
    CONFIRMED,
    INCONCLUSIVE,
    MIXED,
    REFUTED,
    Estimate,
    Part,
    band_part,
    decided_text,
    majority,
    settle,
)
from blocklab.claims.text import WORDING, Template, both, say, verdict_word
from blocklab.experiments.suites.base import format_ci
from blocklab.experiments.suites.position.runs import SIZES as POSITION_SIZES
from blocklab.experiments.suites.position.summary import (
    OrderProbe,
    PositionArm,
    PositionCost,
    PositionData,
    SchemeCost,
)
from blocklab.experiments.summaries import RATIO_METHOD, Interval, TimeRatio

TEXT: dict[str, Template] = WORDING["POSITIONS"]


def _listed(parts: list[Part], lang: str) -> str:
    """The parts' texts (`_part_text`) joined, or 'none'."""
    return say(TEXT["sep"], lang).join(_part_text(p) for p in parts) or say(TEXT["none"], lang)


# --- C21: extrapolation past the training length ----------------------------------------------
C21_COMBINES = WORDING["COMBINES"]["C21"]


def _grade(arm: PositionArm, mult: str) -> str:
    """The band of `arm` at `mult` by its 95% CI (collapses: it cannot run there at all)."""
    pct = arm.extrapolated_vs_sliding_pct.get(mult)  # keyed by the multiples the arm was read at
    if pct is None or isinstance(pct, str):
        return "collapses"
    if pct.mean is None or pct.n < C21_MIN_SEEDS or not pct.resolved:
        return "unclear"
    if pct.ci_high <= WORKS_PCT:
        return "works"
    if pct.ci_low > COLLAPSE_PCT:
        return "collapses"
    if pct.ci_low > WORKS_PCT and pct.ci_high <= COLLAPSE_PCT:
        return "degrades"
    return "unclear"


_ARM_AT = re.compile(r": (\S+) at \d+×$")


def band_arms(part: str, metric: str, arms: list[str]) -> list[str]:
    """The arm a C21 or C30 part reads, named in its rule's metric ("…: <arm> at <k>×"); a
    scaled or fine-tuned arm (rope+yarn+ft…) is read off the longest planned arm it extends."""
    found = _ARM_AT.search(metric)
    name = found.group(1) if found else ""
    base = [a for a in arms if name == a or name.startswith(a + "+")]
    return [max(base, key=len)] if base else []


@claim("C21", suite="position", scale_dependent=True, arms=band_arms)
def c21(ctx: Context) -> Finding:
    summary = ctx.required("position")
    data = summary.data
    arms = data.arms
    mults = [str(m) for m in data.mults if str(m) != "1"]
    grades = {name: {m: _grade(arm, m) for m in mults} for name, arm in arms.items()}
    learned, sinusoidal = c21_fair_arms(ctx.size)
    rules = registered("C21", ctx.size)
    parts = Part.decided_together([band_part(p.name, arms.get(p.arm), p.mult, p.want,
                                             rules[p.name]) for p in c21_plan(ctx.size)
                                   if p.arm in arms and p.mult in mults])
    verdict = settle([p.verdict for p in parts], majority)
    failed = [p for p in parts if p.verdict in ("not-reproduced-at-this-scale",
                                                "contradicted-at-this-scale")]

    held = [p for p in parts if p.verdict == "confirmed"]
    unclear = [p for p in parts if p.verdict == INCONCLUSIVE]
    en, zh = (say(TEXT["c21"], lang, L=data.L, seeds=summary.seeds, works=WORKS_PCT,
                  collapses=COLLAPSE_PCT, held=_listed(held, lang),
                  failed=_listed(failed, lang), unclear=_listed(unclear, lang),
                  learned=learned, sinusoidal=sinusoidal) for lang in LANGS)
    return Finding(
        verdict, en, zh,
        {"grades": grades, "fair_arms": {"learned": learned, "sinusoidal": sinusoidal},
         "thresholds_pct": {"works": WORKS_PCT, "collapses": COLLAPSE_PCT}},
        ctx.suite_command("position"), "position_extrapolation", parts, *C21_COMBINES)


# --- C29: order without positions ----------------------------------------------------------------
# Float64 probes: an exact identity holds to rounding (~1e-16 relative), so 1e-12 is generous;
# a broken one misses by O(1) on N(0, 1) inputs, so 1e-3 separates the two by nine decades.
EXACT_TOL = 1e-12
BROKEN_TOL = 1e-3
C29_COMBINES = WORDING["COMBINES"]["C29"]


def attention_outputs(attn, x, *, causal: bool):
    """W_o softmax(q kᵀ · scale [+ causal mask]) v of blocklab `Attention` `attn` without
    positions, from its own projections. x: [B, T, d_model] -> [B, T, d_model]."""
    import torch.nn.functional as F

    B, T, _ = x.shape
    H, hd = attn.n_heads, attn.head_dim
    q = attn.q_proj(x).view(B, T, H, hd).transpose(1, 2)  # (B, H, T, hd)
    k = attn.k_proj(x).view(B, T, H, hd).transpose(1, 2)
    v = attn.v_proj(x).view(B, T, H, hd).transpose(1, 2)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=attn.scale)
    return attn.o_proj(y.transpose(1, 2).reshape(B, T, H * hd))  # (B, T, d_model)


def _probe(seed: int, d_model: int = 16, n_heads: int = 2, T: int = 8):
    import torch

    from blocklab.nn import Attention

    torch.manual_seed(seed)
    attn = Attention(d_model, n_heads, n_heads, d_model // n_heads).double().eval()
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, T, d_model, generator=g, dtype=torch.float64)
    perm = torch.randperm(T, generator=g)
    while bool((perm == torch.arange(T)).all()):
        perm = torch.randperm(T, generator=g)
    return attn, x, perm


def equivariance_error(causal: bool, seed: int = 0) -> float:
    """max |f(P x) − P f(x)| for attention f without positions (float64, d_model 16, 2 heads,
    8 tokens, a random non-identity permutation P): 0 up to rounding when equivariant."""
    import torch

    attn, x, perm = _probe(seed)
    with torch.no_grad():
        moved = attention_outputs(attn, x[:, perm], causal=causal)
        base = attention_outputs(attn, x, causal=causal)[:, perm]
    return float((moved - base).abs().max())


def score_asymmetry(seed: int = 0, tied: bool = False) -> float:
    """max |S − Sᵀ| / max |S| for one head's raw scores S_ij = q_i · k_j (float64); `tied`:
    W_k = W_q."""
    import torch

    attn, x, _ = _probe(seed)
    with torch.no_grad():
        if tied:
            attn.k_proj.weight.copy_(attn.q_proj.weight)
            attn.k_proj.bias = None if attn.k_proj.bias is None else attn.q_proj.bias
        hd = attn.head_dim
        q, k = attn.q_proj(x)[0, :, :hd], attn.k_proj(x)[0, :, :hd]  # head 0: [T, hd]
        s = q @ k.T  # (T, T)
    return float((s - s.T).abs().max() / s.abs().max())


def _order_row(o: OrderProbe) -> dict[str, object]:
    """One arm's order probe as C29's evidence shows it: each interval without its sd."""
    shown = {"tv": o.tv, "kl": o.kl, "loss_minus_unigram": o.loss_minus_unigram}
    return {**{k: {"mean": iv.mean, "ci_low": iv.ci_low, "ci_high": iv.ci_high, "n": iv.n}
               for k, iv in shown.items()}, "prefix_len": o.prefix_len, "prefixes": o.prefixes}


# Its experimental parts read the decoder trained without positions.
@claim("C29", suite="position", arms=lambda part, metric, arms: ["none"], subsection=True)
def c29(ctx: Context) -> Finding:
    bidirectional = equivariance_error(causal=False)
    causal = equivariance_error(causal=True)
    asymmetry, tied = score_asymmetry(), score_asymmetry(tied=True)
    evidence: dict[str, object] = {
        "bidirectional_equivariance_error": bidirectional, "causal_equivariance_error": causal,
        "score_asymmetry": asymmetry, "score_asymmetry_tied_wq_wk": tied,
        "tolerances": {"exact": EXACT_TOL, "broken": BROKEN_TOL},
        "probe": "float64, d_model 16, 2 heads, 8 tokens, one random permutation"}
    summary = ctx.summary("position")
    order = {} if summary is None else summary.data.order
    none = order.get("none")
    empty = Interval(0)
    rules = registered("C29", ctx.size)
    parts = Part.decided_together([
        (C29_ORDER_PART, rules[C29_ORDER_PART], Estimate.of(none.tv if none else empty)),
        (C29_UNIGRAM_PART, rules[C29_UNIGRAM_PART],
         Estimate.of(none.loss_minus_unigram if none else empty))])
    if order:
        evidence["order_probe"] = {arm: _order_row(o) for arm, o in order.items()}
    holds = bidirectional <= EXACT_TOL
    breaks = causal > BROKEN_TOL
    verdict = "refuted" if not holds else "conditional" if breaks else "confirmed"

    rope = order.get("rope")
    command = ctx.suite_command("position")
    trained = (TEXT["c29_untrained"], {"command": command}) if none is None else (
        TEXT["c29_trained"], {"seeds": none.tv.n, "tv_none": format_ci(none.tv, 3),
                              "reversed": none.prefix_len - 1, "prefix": none.prefix_len,
                              "tv_rope": "not run" if rope is None else format_ci(rope.tv, 3),
                              "gap": format_ci(none.loss_minus_unigram, 3)})
    en, zh = (say(TEXT["c29"], lang, bidirectional=bidirectional, causal=causal,
                  asymmetry=asymmetry, tied=tied, trained=say(trained[0], lang, **trained[1]))
              for lang in LANGS)
    return Finding(
        verdict, en, zh,
        evidence, "blocklab claims C29 && " + command, "position_order",
        parts, *C29_COMBINES)


# --- C30: RoPE to 8–16× with NTK / YaRN, and the warning past 8× read both ways ---------------
# The page's warning "RoPE 外推超过 8x 训练长度时质量会明显下降" has no qualifier: it is graded
# read both ways, each reading a group of parts of its own.
C30_READINGS: dict[str, Template] = WORDING["C30_READINGS"]
C30_COMBINES = WORDING["COMBINES"]["C30"]


def c30_parts(data: PositionData, size: str = "quick") -> dict[str, list[Part]]:
    """C30's parts by group (C30_READINGS' keys) as planned at `size`, where this summary read
    the multiple and ran the arm."""
    rules = registered("C30", size)
    tuned = set() if data.finetune is None else set(data.finetune.arms.values())
    planned = {key: [p for p in group if int(p.mult) in data.mults
                     and ("+ft" not in p.arm or p.arm in tuned)]
               for key, group in c30_plan(size).items()}
    specs = {key: [band_part(p.name, data.arms.get(p.arm), p.mult, p.want, rules[p.name])
                   for p in group] for key, group in planned.items()}
    # Holm's correction over every part of the claim, then back into the groups.
    decided = iter(Part.decided_together([s for group in specs.values() for s in group]))
    return {key: [next(decided) for _ in group] for key, group in specs.items()}


def combine_c30(groups: dict[str, list[Part]]) -> str:
    """C30_COMBINES over the groups of `c30_parts`."""
    keys = list(groups)
    sizes = [len(groups[k]) for k in keys]
    if not any(sizes):
        return "untestable-here"  # nothing read past 8× at this size
    every_group = all(sizes)

    def decided(verdicts: list[str]) -> str:
        by: dict[str, list[str]] = {}
        at = 0
        for key, size in zip(keys, sizes, strict=True):
            by[key], at = verdicts[at:at + size], at + size
        core = by.get("scaled", []) + by.get("warning_plain", [])
        if sum(v != "confirmed" for v in core) > len(core) / 2:
            return "not-reproduced-at-this-scale"
        if every_group and all(v == CONFIRMED for v in verdicts):
            return CONFIRMED
        # the warning has no qualifier: one reading of it, holding in full beside the
        # statement, is the condition the claim holds under
        whole = [k for k in ("warning_plain", "warning_scaled")
                 if by.get(k) and all(v == CONFIRMED for v in by[k])]
        if whole and by.get("scaled") and all(v == CONFIRMED for v in by["scaled"]):
            return CONDITIONAL
        return MIXED

    return settle([p.verdict for key in keys for p in groups[key]], decided)


READING_STATUS: dict[str, Template] = WORDING["READING_STATUS"]


def reading_status(parts: list[Part]) -> str:
    """A key of READING_STATUS for one group of parts."""
    if not parts:
        return "not read"
    held = sum(p.verdict == "confirmed" for p in parts)
    graded = sum(p.verdict != INCONCLUSIVE for p in parts)
    if held == len(parts):
        return "holds"
    if held:
        return "partly"
    return "fails" if graded else "unclear"


def _part_text(p: Part) -> str:
    """'<name>: <reason>'; a part decided without a test shows its estimate after it."""
    read = p.decision is not None and p.decision.interval is not None
    shown = "" if read or p.estimate.value is None else f" ({decided_text(p, 3, '%')})"
    return f"{p.name}: {p.reason}{shown}"


@claim("C30", suite="position", scale_dependent=True, arms=band_arms, subsection=True)
def c30(ctx: Context) -> Finding:
    summary = ctx.required("position")
    data = summary.data
    groups = c30_parts(data, ctx.size)
    parts = [p for group in groups.values() for p in group]
    verdict = combine_c30(groups)
    status = {key: reading_status(group) for key, group in groups.items()}
    held = [p for p in parts if p.verdict == "confirmed"]
    failed = [p for p in parts if p.verdict == "not-reproduced-at-this-scale"]
    unclear = [p for p in parts if p.verdict == INCONCLUSIVE]
    longest = max(data.mults)
    ft = data.finetune
    evidence = {
        "parts": {p.name: {"reading": key, "verdict": p.verdict, "mean_pct": p.estimate.value,
                           "ci_low": p.estimate.ci_low, "ci_high": p.estimate.ci_high,
                           "n": p.estimate.n} for key, group in groups.items() for p in group},
        "readings": {key: {"says": C30_READINGS[key][0], "status": status[key]}
                     for key in groups},
        "thresholds_pct": {"works": WORKS_PCT, "collapses": COLLAPSE_PCT},
        "L": data.L, "mults": data.mults,
        "finetune": None if ft is None else {"factor": ft.factor, "scale": ft.scale,
                                             "steps": ft.steps, "lr": ft.lr, "arms": ft.arms}}

    def text(lang: str) -> str:
        finetune = (say(TEXT["c30_no_finetune"], lang) if ft is None else
                    say(TEXT["c30_finetune"], lang, steps=ft.steps, factor=ft.factor,
                        scale=ft.scale))
        readings = say(TEXT["sep"], lang).join(
            say(TEXT["c30_reading"], lang, says=say(C30_READINGS[k], lang),
                status=say(READING_STATUS[status[k]], lang)) for k in groups)
        short = "" if longest >= 16 else say(TEXT["c30_short"], lang, longest=longest)
        return say(TEXT["c30"], lang, L=data.L, seeds=summary.seeds, longest=longest,
                   works=WORKS_PCT, collapses=COLLAPSE_PCT, finetune=finetune,
                   readings=readings, held=_listed(held, lang), failed=_listed(failed, lang),
                   unclear=_listed(unclear, lang), n_held=len(held), n_failed=len(failed),
                   n_unclear=len(unclear), verdict=verdict_word(verdict, lang), short=short)

    return Finding(
        verdict, text("en"), text("zh"),
        evidence, ctx.suite_command("position"), "position_scaling", parts, *C30_COMBINES)


# --- C31: what RoPE costs ------------------------------------------------------------------------
# Timings are reported, never graded: at the suite's toy shape they measure per-op overhead,
# and even at the realistic shape they depend on this machine and its load.
C31_ROPE_PARTS = (C31_ROPE_PARAMS_PART, C31_ROPE_FLOPS_PART, C31_ROPE_SDPA_PART)
C31_COMBINES = both(WORDING["COMBINES"]["C31"], share=C31_SHARE_PCT)


def zoo_params() -> dict[str, int]:
    """count_params of Llama 3 8B's shape with each position scheme (a 4,096-row table)."""
    from blocklab.budget import resolve_model
    from blocklab.budget.params import count_params

    base = resolve_model("meta-llama-3-8b").config
    return {p: count_params(base.replace(position=p, max_seq_len=4096)).total
            for p in ("none", "learned", "sinusoidal", "rope", "alibi")}


def position_flops(cfg, seq_len: int) -> dict[str, int]:
    """FLOPs each position scheme adds to a prefill of `seq_len` tokens, batch 1, of `cfg`'s
    shape (whatever `cfg.position` is), counted as `registry.C31_COUNTS` says:

        rope        n_layers · T · (n_heads + n_kv_heads) · rotary_dim · 3
        alibi       n_layers · H · T² (one add per score element: SDPA adds the whole [H, T, T]
                    bias) + H · T² (slope × distance, built once per forward)
        learned     T · d_model (one add per input element)
        sinusoidal  T · d_model · 3 (the add, plus the angle and its sin or cos, on demand)
        absolute    the larger of learned and sinusoidal
    """
    from blocklab.budget.flops import elementwise_flops

    T, H, layers = seq_len, cfg.n_heads, cfg.n_layers
    rope = cfg.replace(position="rope", max_seq_len=max(cfg.max_seq_len, T))
    out = {"rope": elementwise_flops(rope, 1, T)["rope"],  # blocklab.budget's own count
           "alibi": layers * H * T * T + H * T * T,
           "learned": T * cfg.d_model, "sinusoidal": 3 * T * cfg.d_model}
    out["absolute"] = max(out["learned"], out["sinusoidal"])
    return out


def flop_shares(seq_len: int = C31_SHARE_TOKENS) -> dict[str, dict[str, float]]:
    """{scheme: {"flops", "share"}} for rope, alibi and absolute in a `seq_len`-token prefill
    of Llama 3 8B's shape, batch 1: `position_flops` over the whole prefill's (matmuls,
    elementwise, and the scheme's own where blocklab.budget does not count it)."""
    from blocklab.budget import resolve_model
    from blocklab.budget.flops import elementwise_flops, prefill_flops

    base = resolve_model("meta-llama-3-8b").config
    out = {}
    for scheme, position in (("rope", "rope"), ("alibi", "alibi"), ("absolute", "sinusoidal")):
        cfg = base.replace(position=position, max_seq_len=max(base.max_seq_len, seq_len))
        added = position_flops(cfg, seq_len)[scheme]
        counted = elementwise_flops(cfg, 1, seq_len)["total"]  # holds RoPE's rotation for rope
        total = prefill_flops(cfg, 1, seq_len).total + counted + (0 if scheme == "rope" else added)
        out[scheme] = {"flops": added, "share": added / total}
    return out


def alibi_share_bound() -> float:
    """ALiBi's share of a prefill of Llama 3 8B's shape at any length: (n_layers + 1)·H·T²
    over more than the causal score matmuls' n_layers · 4·H·head_dim · T(T+1)/2, so below
    (n_layers + 1) / (2 · n_layers · head_dim)."""
    from blocklab.budget import resolve_model

    cfg = resolve_model("meta-llama-3-8b").config
    return (cfg.n_layers + 1) / (2 * cfg.n_layers * cfg.head_dim)


def sdpa_mismatches(rope: SchemeCost, none: SchemeCost) -> list[str]:
    """What differs between RoPE's SDPA calls and no positions' (masks, kernels), and which
    calls flash refuses; [] when RoPE calls SDPA exactly as no positions does."""
    found = [what for what, a, b in (
        ("training mask", rope.masks_train, none.masks_train),
        ("decode mask", rope.masks_decode, none.masks_decode),
        ("training kernels", rope.kernels_train, none.kernels_train),
        ("decode kernels", rope.kernels_decode, none.kernels_decode)) if a != b]
    found += [f"flash refuses the {what} call" for what, ok in (
        ("training", rope.flash_train), ("decode", rope.flash_decode)) if ok is not True]
    return found


def c31_parts(cost: PositionCost) -> list[Part]:
    """C31's parts in registered order, every one a count decided without a test."""
    rules = registered("C31")
    zoo, shares = zoo_params(), flop_shares()
    parts = []
    for name, scheme in ((C31_ROPE_PARAMS_PART, "rope"), (C31_ALIBI_PARAMS_PART, "alibi")):
        added = (zoo[scheme] - zoo["none"], cost.params[scheme] - cost.params["none"])
        worst = max(added, key=abs)
        parts.append(untested_part(
            name, rules[name], worst, CONFIRMED if worst == 0 else REFUTED,
            f"adds {added[0]:,} at Llama 3 8B's shape and {added[1]:,} in the suite's model"))
    for name, scheme in ((C31_ROPE_FLOPS_PART, "rope"), (C31_ALIBI_FLOPS_PART, "alibi"),
                         (C31_ABSOLUTE_FLOPS_PART, "absolute")):
        pct = 100 * shares[scheme]["share"]
        parts.append(untested_part(
            name, rules[name], pct, CONFIRMED if pct <= C31_SHARE_PCT else REFUTED,
            f"{shares[scheme]['flops']:,} FLOPs, {pct:.4f}% of a {C31_SHARE_TOKENS:,}-token "
            f"prefill (at most {C31_SHARE_PCT:g}%)"))
    rope, none = cost.schemes.get("rope"), cost.schemes.get("none")
    if rope is None or none is None or not (rope.kernels_train and none.kernels_train):
        sdpa = untested_part(C31_ROPE_SDPA_PART, rules[C31_ROPE_SDPA_PART], None, INCONCLUSIVE,
                             "the cost run recorded no SDPA kernels for rope and none")
    else:
        differ = sdpa_mismatches(rope, none)
        sdpa = untested_part(
            C31_ROPE_SDPA_PART, rules[C31_ROPE_SDPA_PART], len(differ),
            REFUTED if differ else CONFIRMED, "; ".join(differ) or "the same masks and kernels "
            "in training and decode, and the flash backend accepts both calls")
    by_name = {p.name: p for p in [*parts, sdpa]}
    return [by_name[name] for name in rules]  # the registered order: RoPE's three first


def combine_c31(parts: list[Part]) -> str:
    """C31_COMBINES over `c31_parts`."""
    is_rope = [p.name in C31_ROPE_PARTS for p in parts]

    def decided(verdicts: list[str]) -> str:
        held = [v == "confirmed" for v in verdicts]
        if not all(h for h, r in zip(held, is_rope, strict=True) if r):
            return "refuted"
        return CONFIRMED if all(held) else MIXED

    return settle([p.verdict for p in parts], decided)


def _ratio_pct(ratio: TimeRatio) -> str:
    """A reported time ratio as an overhead, 100·(r − 1) %, with its 95% interval."""
    low, high = 100 * (ratio.ci_low - 1), 100 * (ratio.ci_high - 1)
    return f"{100 * (ratio.ratio - 1):+.1f}% [{low:+.1f}, {high:+.1f}]"


def _timings_text(cost: PositionCost, d_model: int | None, lang: str) -> str:
    """The reported timings in `lang`: the toy shape's, then the realistic shape's."""
    toy = cost.schemes
    width = "" if d_model is None else say(TEXT["c31_width"], lang, d_model=d_model)
    sep = say(TEXT["sep"], lang)
    per = sep.join(say(TEXT["c31_toy_scheme"], lang, scheme=s,
                       train=_ratio_pct(toy[s].train_vs_none),
                       decode=_ratio_pct(toy[s].decode_vs_none))
                   for s in ("rope", "alibi") if s in toy)
    text = say(TEXT["c31_toy"], lang, width=width, L=cost.L, batch=cost.batch_size,
               repeats=cost.repeats, threads=cost.threads, schemes=per, method=RATIO_METHOD)
    real = cost.realistic
    if real is None:
        return text + say(TEXT["c31_no_real"], lang)
    shown = sep.join(say(TEXT["c31_real_scheme"], lang, scheme=s,
                         prefill=_ratio_pct(real.prefill_vs_none[s]),
                         decode=_ratio_pct(real.decode_vs_none[s]))
                     for s in ("rope", "alibi") if s in real.prefill_vs_none)
    label = (real.label if lang != "zh" else
             {"realistic shape": "真实形状下"}.get(real.label, f"{real.label}："))
    return text + say(TEXT["c31_real"], lang, label=label, d_model=real.d_model,
                      heads=real.n_heads, layers=real.n_layers, batch=real.batch_size,
                      threads=real.threads, repeats=real.repeats, tokens=real.prompt_tokens,
                      prefill_ms=real.prefill_ms["none"], decode_ms=real.decode_ms["none"],
                      schemes=shown)


def _timings_row(cost: PositionCost) -> dict[str, object]:
    """C31's timings as its evidence shows them, ratios as [ratio, ci_low, ci_high]."""
    def ratio(r: TimeRatio) -> list[float]:
        return [r.ratio, r.ci_low, r.ci_high]

    toy = {"label": "per-op overhead at a toy shape", "L": cost.L, "batch_size": cost.batch_size,
           "decode_tokens": cost.decode_tokens, "repeats": cost.repeats, "threads": cost.threads,
           "schemes": {name: {"train_ms": c.train_ms, "decode_ms": c.decode_ms,
                              "train_ratio": ratio(c.train_vs_none),
                              "decode_ratio": ratio(c.decode_vs_none)}
                       for name, c in cost.schemes.items()}}
    real = cost.realistic  # `ShapeTiming`'s fields, each "<x>_vs_none" as "<x>_ratio"
    return {"toy_shape": toy, "realistic_shape": None if real is None else {
        k.replace("_vs_none", "_ratio"): ({s: ratio(r) for s, r in v.items()}
                                          if k.endswith("_vs_none") else v)
        for k, v in vars(real).items()}}


# Its parts read the suite's cost run.
@claim("C31", suite="position", arms=lambda part, metric, arms: ["cost"], subsection=True)
def c31(ctx: Context) -> Finding:
    summary = ctx.summary("position")
    if summary is None or summary.data.cost is None:
        return missing(ctx, "position")
    cost = summary.data.cost
    parts = c31_parts(cost)
    verdict = combine_c31(parts)
    zoo, shares, bound = zoo_params(), flop_shares(), alibi_share_bound()
    rope, none, alibi = cost.schemes["rope"], cost.schemes["none"], cost.schemes.get("alibi")
    learned_extra = zoo["learned"] - zoo["none"]
    rope_pct, alibi_pct, abs_pct = (100 * shares[s]["share"]
                                    for s in ("rope", "alibi", "absolute"))
    alibi_vs_rope = shares["alibi"]["flops"] / shares["rope"]["flops"]
    kernel = ", ".join(k.removeprefix("aten::") for k in rope.kernels_train) or "none recorded"
    masks = ", ".join(rope.masks_train) or "none recorded"
    alibi_masks = ", ".join(alibi.masks_train) if alibi is not None else "not run"
    planned = POSITION_SIZES.get(summary.size)
    d_model = planned.model.d_model if planned is not None else None
    evidence = {
        "parts": {p.name: {"verdict": p.verdict, "value": p.estimate.value, "reason": p.reason}
                  for p in parts},
        "zoo_params_llama3_8b": zoo, "suite_params": cost.params,
        "learned_table_params_llama3_8b": learned_extra,
        "prefill_flops_llama3_8b": {"seq_len": C31_SHARE_TOKENS, **shares},
        "alibi_share_bound_any_length": bound, "threshold_pct": C31_SHARE_PCT,
        "sdpa": {name: {"kernels_train": c.kernels_train, "kernels_decode": c.kernels_decode,
                        "masks_train": c.masks_train, "masks_decode": c.masks_decode,
                        "flash_train": c.flash_train, "flash_decode": c.flash_decode}
                 for name, c in cost.schemes.items()},
        "timings_reported_not_graded": _timings_row(cost)}
    sdpa = next(p.verdict for p in parts if p.name == C31_ROPE_SDPA_PART)
    fields = dict(rope_zoo=zoo["rope"] - zoo["none"], rope_suite=rope.params - none.params,
                  alibi_zoo=zoo["alibi"] - zoo["none"],
                  alibi_suite=cost.params["alibi"] - cost.params["none"],
                  sinusoidal_zoo=zoo["sinusoidal"] - zoo["none"], learned=learned_extra,
                  learned_share=learned_extra / zoo["none"], tokens=C31_SHARE_TOKENS,
                  rope_flops=shares["rope"]["flops"], rope_pct=rope_pct,
                  alibi_flops=shares["alibi"]["flops"], alibi_pct=alibi_pct, bound=bound,
                  abs_flops=shares["absolute"]["flops"], abs_pct=abs_pct, share=C31_SHARE_PCT,
                  alibi_vs_rope=alibi_vs_rope, masks=masks, kernel=kernel,
                  alibi_masks=alibi_masks)
    en, zh = (say(TEXT["c31"], lang, sdpa=verdict_word(sdpa, lang),
                  timings=_timings_text(cost, d_model, lang),
                  verdict=verdict_word(verdict, lang), **fields) for lang in LANGS)
    return Finding(
        verdict, en, zh,
        evidence, ctx.suite_command("position"), "position_cost", parts, *C31_COMBINES)
