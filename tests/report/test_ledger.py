"""The ledger as a learner reads it: one line per claim after an introduction that says how
to read it (what each verdict means, why the levels differ, which rules were edited after the
data), what more seeds would decide, and each claim's section: a forest plot per experimental
claim, one line of words per part, the rest folded under details.

Built from small hand-written report documents (the shape `build.collect` writes), so these
tests train nothing and run no claim check."""

import html
import importlib.util
import io
import json
import re
import sys

import markupsafe
import pytest
from jinja2.utils import Namespace
from matplotlib.image import imread

from blocklab.claims import run_claims
from blocklab.claims.catalogue import part_arms
from blocklab.claims.registry import C18_FLOPS_PART, C36_IDENTITY_PART, C36_STABLE_PART
from blocklab.claims.text import VERDICT_EN, VERDICT_MEANING, VERDICTS
from blocklab.experiments.suites import SUITE_MODULES
from blocklab.report.build import decision_budget, ladders
from blocklab.report.figures import (
    FIGURES,
    Figure,
    experimental_rows,
    fig_forest,
    fig_ledger_overview,
    forest_key,
    make_figures,
    normalised,
)
from blocklab.report.html import (
    VERDICT_ORDER,
    _macros,
    design_words,
    environment,
    lead_and_rest,
    line_words,
    open_parts,
)
from blocklab.report.palette import VERDICT_STYLES

from ..claims.test_ladder import MEANS, _fake_rungs


def rule(claimed=-1.5, delta=0.5, margin=0.25, test="effect", threshold=0.0, min_seeds=5,
         metric="(val loss swiglu − relu)/relu at equal parameters and tokens, % "
                "(negative = better)", max_seeds=20):
    return {"metric": metric, "smallest_effect": delta, "margin": margin,
            "min_seeds": min_seeds, "max_seeds": max_seeds, "claimed": claimed,
            "threshold": threshold, "test": test,
            "decides": "confirmed when the 95% CI lies wholly beyond b"}


def part(name, decision, value, low, high, n=5, seeds_needed=None, the_rule=None,
         reason="the 95% CI lies wholly below -0.5 on the claimed side", level=0.05,
         interval=None):
    """A ledger part; `interval` (low, high, coverage): the one its decision read, else none
    stored (a part decided without a test, or a document from before intervals were kept)."""
    out = {"name": name, "decision": decision, "verdict": decision, "reason": reason,
           "estimate": {"value": value, "ci_low": low, "ci_high": high, "n": n, "sd": 0.4},
           "looks": [n] if n else [], "rule": the_rule or rule(), "rule_hash": "abc123def456",
           "p_value": 0.01, "level": level, "boundary": -0.5,
           "interval": None if interval is None else dict(
               zip(("low", "high", "confidence"), interval, strict=True))}
    if decision == "inconclusive":
        out["detectable_effect"] = 0.6
        out["seeds_needed"] = seeds_needed
    return out


def row(cid, verdict, parts, command, summary="The finding. More words follow here."):
    return {"id": cid, "claim": f"claim {cid}", "claim_zh": f"论断 {cid}", "page": "000.md",
            "section": "Some section", "verdict": verdict, "summary": summary,
            "summary_zh": "发现。后面还有更多的话。", "evidence": {"x": 1}, "command": command,
            "figure": None, "error": None, "parts": parts,
            "combines": "the claim takes the SwiGLU part's verdict",
            "combines_zh": "论断取 SwiGLU 部分的判定",
            "brief": {"en": {"statement": f"statement {cid}", "found": f"found {cid}"},
                      "zh": {"statement": f"说法 {cid}", "found": f"发现 {cid}"}}}


SUITE = "blocklab suite ffn --size quick --results runs"


def costs(*arms: str, seconds: float = 10.0, seeds: int = 5) -> list[dict]:
    return [{"arm": arm, "seed": seed, "wall_time_s": seconds, "timed": False}
            for arm in arms for seed in range(seeds)]


def open_part(name, seeds_needed, **kwargs):
    """An inconclusive part, −0.6 [−1.5, 0.3], that `seeds_needed` seeds would likely decide."""
    return part(name, "inconclusive", -0.6, -1.5, 0.3, seeds_needed=seeds_needed, **kwargs)


def ffn_budget(*parts):
    """What more seeds would decide C16's `parts` on one worker, every ffn run 10 s."""
    ledger = [row("C16", "inconclusive", list(parts), SUITE)]
    return decision_budget(ledger, {"ffn": {"run_costs": costs("relu", "swiglu", "geglu")}},
                           workers=1)


@pytest.fixture(scope="module")
def doc():
    c16 = row("C16", "inconclusive", [
        part("swiglu", "confirmed", -1.42, -2.01, -0.83, level=0.0036,
             interval=(-2.31, -0.53, 0.9964)),
        part("geglu", "not-reproduced-at-this-scale", -0.1, -0.3, 0.1,
             reason="the 90% CI [-0.27, +0.07] lies inside ±0.25 (no effect)",
             interval=(-0.27, 0.07, 0.9)),
        open_part("glu", 12, reason="the 95% CI straddles the claim's boundary; …"),
    ], SUITE)
    c18 = row("C18", "inconclusive", [
        part("nearly the same quality", "inconclusive", 0.01, -0.03, 0.05, n=3,
             seeds_needed=4, the_rule=rule(claimed=0.0, delta=0.02, margin=0.02,
                                           test="equivalence", min_seeds=3,
                                           metric="Δ val loss RMS − LN, nats/token")),
    ], "blocklab suite norm-cost --size quick --results runs")
    c21 = row("C21", "inconclusive", [
        part("ALiBi works at 2×", "inconclusive", 3.0, None, None, n=1,
             the_rule=rule(claimed=5.0, delta=5.0, margin=0.0, test="at-most", threshold=5.0,
                           min_seeds=3, metric="loss past L vs sliding, %: alibi at 2×")),
    ], "blocklab suite position --size quick --results runs")
    c34 = row("C34", "refuted", [  # configs graded in parts: not an experiment
        part("PaLM uses GeGLU", "refuted", 0.0, None, None, n=1, level=None,
             reason="PaLM uses SwiGLU, per its paper"),
    ], "blocklab budget palm --json")
    c02 = row("C02", "confirmed", [], "blocklab verify --group worked")
    stored = {"ffn": costs("relu", "swiglu", "geglu", "glu", seconds=60.0)
              + [{"arm": "timing", "seed": 0, "wall_time_s": 30.0, "timed": True}],
              "norm-cost": costs("layernorm", "rmsnorm", seeds=3)}
    ledger = [c02, c16, c18, c21, c34]
    suites = {name: {"summary": None, "command": f"blocklab suite {name}", "runs": [],
                     "busy_timings": [], "run_costs": stored.get(name, []), "error": None}
              for name in SUITE_MODULES}
    return {"generated": {"size": "quick", "results": "runs", "seed_offset": 0},
            "ledger": ledger, "suites": suites,
            "rope": {"float64_gap_by_shift": {}, "command": "blocklab verify --group rope"},
            "decision_budget": decision_budget(ledger, suites, workers=2)}


@pytest.fixture(scope="module")
def drawn(doc):
    return make_figures(doc)


# Pieces of the page: the page template's macros, each rendered alone.
def ledger_section(doc, figures, lang):
    return str(_macros(doc, figures, lang).ledger_section(Namespace(n=0, shown=[], key=None)))


def claim_article(row, figures, lang, doc):
    return str(_macros(doc, figures, lang).claim_article(row, Namespace(n=0, shown=[], key=None)))


def evidence_cell(row, figures, lang, doc):
    return str(_macros(doc, figures, lang).evidence_cell(row, 1))


def part_line(part, lang, budget=None):
    return str(_macros({}, {}, lang).part_line(line_words(part, lang, budget), 1))


def budget_sentence(doc, lang):
    return str(_macros(doc, {}, lang).budget_sentence(doc.get("decision_budget")))


def _css() -> str:
    """The page's style sheet (templates/page.css.j2) as the page inlines it."""
    return environment().get_template("page.css.j2").render(verdict_styles=VERDICT_STYLES)


def _words(page: str) -> str:
    """The text of a piece of the page, as a reader reads it (tags gone, entities read)."""
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def _pixels(png: bytes):
    image = imread(io.BytesIO(png), format="png")
    return {"#{:02x}{:02x}{:02x}".format(*(round(255 * c) for c in px[:3]))
            for line in image for px in line}


# --- figures -------------------------------------------------------------------------------------
def test_every_experimental_claim_gets_a_forest_plot_in_its_verdicts_colours(doc, drawn):
    """A forest plot per experimental claim, each part drawn in its verdict's colour (the
    chip's: test_one_line_per_claim_links_to_its_section_in_the_shared_words_and_colours);
    the overview normalises by the boundary and the band."""
    assert [r["id"] for r in experimental_rows(doc)] == ["C16", "C18", "C21"]
    for cid in ("C16", "C18", "C21"):
        fig = drawn[forest_key(cid)]
        assert fig.error is None and fig.png[:8] == b"\x89PNG\r\n\x1a\n", cid
        assert fig.command == f"blocklab claims {cid} --json --size quick --results runs"
    assert forest_key("C34") not in drawn and forest_key("C02") not in drawn
    overview = drawn["ledger_overview"]
    assert overview.error is None and overview.png
    assert fig_ledger_overview({**doc, "ledger": doc["ledger"][:1]}) is None
    confirmed_only = {**doc, "ledger": [row("C16", "confirmed", [
        part("swiglu", "confirmed", -1.42, -2.01, -0.83)], SUITE)]}
    seen = _pixels(fig_forest(confirmed_only, "C16"))
    assert VERDICT_STYLES["confirmed"].colour in seen
    assert VERDICT_STYLES["inconclusive"].colour not in seen
    assert VERDICT_STYLES["not-reproduced-at-this-scale"].colour not in seen
    swiglu = doc["ledger"][1]["parts"][0]  # claimed −1.5 %, δ 0.5: the boundary at −0.5
    value, low, high = normalised(swiglu)  # the interval its decision read: [−2.31, −0.53]
    assert value == pytest.approx(1.42 / 0.5) and low == pytest.approx(0.53 / 0.5)
    assert high == pytest.approx(2.31 / 0.5)
    band = doc["ledger"][2]["parts"][0]  # equivalence ±0.02: the band is [−1, 1]
    assert normalised(band)[1:] == (pytest.approx(-1.5), pytest.approx(2.5))
    bound = doc["ledger"][3]["parts"][0]  # at most 5 %: the bound at 1, holding to its right
    assert normalised(bound)[0] == pytest.approx(1 + 2 / 5)


# --- words ---------------------------------------------------------------------------------------
def test_one_line_of_words_per_part(doc):
    confirmed, absent, open_ = doc["ledger"][1]["parts"]
    line = part_line(confirmed, "en")
    assert line.count("<li") == 1 and "<br" not in line
    words = re.sub(r"<[^>]+>", "", line)
    # the interval its decision read, labelled with its coverage, never the 95% one
    assert words == ("confirmed1. swiglu: −1.42% [−2.31, −0.53] (99.64% CI, n=5), claimed "
                     "−1.5%; the 99.64% CI lies beyond −0.5")
    assert 'class="d v-confirmed"' in line
    assert "no effect: the 90% CI lies inside ±0.25" in part_line(absent, "en")
    budget = doc["decision_budget"]["parts"][0]
    assert "about 12 seeds would decide it (+7, about 7.0 min here)" in part_line(
        open_, "en", budget)
    assert "约 12 个种子可判定" in part_line(open_, "zh", budget)


def test_evidence_cell_puts_pictures_and_lines_first_and_folds_the_rest(doc, drawn):
    """The lead, the forest plot, the part lines, then the details; the rules edited after the
    data are counted in view, never folded, each edit in full under details; the scale tested
    here opens the details, the papers at theirs after it."""
    cell = evidence_cell(doc["ledger"][1], drawn, "en", doc)
    lead = cell.index('<p class="lead">The finding.')
    plot = cell.index('<figure id="fig-forest_c16" class="forest">')
    lines = cell.index('<ul class="part-lines">')
    fold = cell.index('<details class="more"><summary>details</summary>')
    assert lead < plot < lines < fold
    folded = cell[fold:]
    assert "More words follow here." in folded  # the summary's remainder
    assert "rule abc123def456" in folded and "confirmed when the 95% CI" in folded
    assert "combined: the claim takes the SwiGLU part" in folded
    assert "<pre>" in folded  # the numbers
    assert 'class="changed"' not in cell and 'class="scale"' not in cell
    row = {**doc["ledger"][1], "rules_changed": [
               {"date": "2026-12-01", "claims": ["C16"], "what": "δ raised from 1% to 10%"}],
           "scale": {"text": "d 64 × 2 layers, 131k parameters", "text_zh": "d 64 × 2 层"},
           "anchors": [{"source": "Shazeer 2020", "secondary": False, "model": "T5-base",
                        "scale": "220M parameters", "setting": "C4", "metric": "log-ppl",
                        "result": "SwiGLU -2.4%"},
                       {"source": "Narang 2021", "secondary": True, "model": "T5", "scale": "",
                        "setting": "C4", "metric": "loss", "result": "SwiGLU -2.7%"}],
           "anchor_reading": "A small gain is what the trend predicts."}
    for lang, count, words, tested, papers, secondary in (
            ("en", "Rules edited after the data: 1 (latest 2026-12-01)",
             "Rule changed after the data were seen (2026-12-01): δ raised",
             "Tested here at d 64 × 2 layers, 131k parameters.",
             "Published, each at its own scale", "(read in a copy of the table)"),
            ("zh", "结果公布后修改的规则：1 处（最近 2026-12-01）",
             "结果公布后修改的规则（2026-12-01）：δ raised", "本地测试规模：d 64 × 2 层。",
             "已发表的结果（各在其自身规模）", "(转引自他处的表格)")):
        cell = evidence_cell(row, {}, lang, doc)
        fold = cell.index('<details class="more">')
        folded = cell[fold:]
        assert '<p class="changed">' + count in cell[:fold]
        assert '<p class="changed">' + words in folded
        assert folded.index('<p class="scale">' + tested) < folded.index(papers)
        assert "Shazeer 2020: T5-base, 220M parameters; C4; log-ppl: SwiGLU -2.4%" in folded
        assert "Narang 2021 " + secondary in folded
        assert "A small gain is what the trend predicts." in folded


def test_lead_is_the_first_sentence_within_three_lines():
    assert lead_and_rest("One. Two three.", "en") == ("One.", "Two three.")
    assert lead_and_rest("一。二。", "zh") == ("一。", "二。")
    long = "A clause; " * 60 + "end. Next."
    lead, rest = lead_and_rest(long, "en")
    assert len(lead) <= 242 and lead.endswith("…") and rest.endswith("Next.")


# --- what more seeds would decide -----------------------------------------------------------------
def test_budget_prices_the_inconclusive_parts_from_stored_wall_time(doc):
    budget = doc["decision_budget"]
    priced = {(p["claim"], p["part"]): p for p in budget["parts"]}
    assert set(priced) == {("C16", "glu"), ("C18", "nearly the same quality")}
    glu = priced[("C16", "glu")]
    # glu against relu: 2 runs of 60 s per seed, 7 more seeds, two workers
    assert glu["arms"] == ["glu", "relu"] and glu["extra_seeds"] == 7
    assert glu["seed_cost_s"] == pytest.approx(120.0)
    assert glu["seconds"] == pytest.approx(7 * 120.0 / 2)
    quality = priced[("C18", "nearly the same quality")]
    assert quality["seconds"] == pytest.approx(1 * 20.0 / 2)
    # a part with one seed has no spread to size it by: listed apart, never priced
    assert [(p["claim"], p["part"]) for p in budget["unsized"]] == [("C21", "ALiBi works at 2×")]
    # what the runner runs for them (`looks_seconds`): glu goes look by look to 14, the first
    # look of its design (5, 8, 11, 14, …) past the 12 seeds it needs, with relu: 6 runs of
    # 60 s a look on 2 workers; C18's 3 → 5 (4 runs of 10 s) rides in the first look
    assert budget["seconds"] == pytest.approx((180.0 + 20.0) + 180.0 + 180.0)


def test_budget_prices_an_arm_shared_by_parts_once_and_a_part_beyond_reach_apart():
    budget = ffn_budget(open_part("swiglu", 9), open_part("geglu", 7))
    # the runner's looks on one worker: relu, swiglu and geglu 5 → 8 (geglu needs 7), then
    # relu and swiglu 8 → 11 (swiglu needs 9); relu run once per seed for both parts
    assert budget["seconds"] == pytest.approx(10.0 * (9 + 6))
    assert sum(p["seconds"] for p in budget["parts"]) == pytest.approx(10.0 * (8 + 4))
    # a part beyond reach is counted apart
    budget = ffn_budget(open_part("swiglu", 9),
                        open_part("geglu", 5000, the_rule=rule(max_seeds=10_000)))
    assert [p["within_reach"] for p in budget["parts"]] == [True, False]
    assert budget["within_reach"] == 1 and budget["beyond_reach"] == 1
    # swiglu and relu to 11 (the look past the 9 swiglu needs); geglu's 4,995 seeds left out
    assert budget["seconds"] == pytest.approx(6 * 20.0)
    assert budget["beyond_seconds"] == pytest.approx(4995 * 20.0)
    text = budget_sentence({"decision_budget": budget}, "en")
    assert "these 1 inconclusive parts would likely be decided" in text
    assert "1 more would take longer than 2 hours each here (about 1,665 minutes in all)" in text


def test_part_arms_name_the_compared_runs():
    arms = ["relu", "swiglu", "geglu", "init/pre/xavier/2", "init/pre/gpt2/2",
            "init/pre/xavier/4", "train/pre/6/0", "train/post/12/0", "train/post/12/100",
            "train/pre/12/0", "train/pre/12/100", "sweep/pre/12/0", "sweep/pre/12/33",
            "sweep/post/12/0", "sweep/post/12/33", "deep/pre/50/10", "deep/post/50/10",
            "rope", "rope+ntk"]

    def arms_of(claim_id, p):
        return part_arms(claim_id, p["name"], p["rule"]["metric"], arms)

    # the deepest depth; each part only the arms its estimate reads; C36's identity term the
    # deepest xavier probes
    for claim_id, name, want in (
            ("C16", "geglu", ["geglu", "relu"]),
            ("C12", "pre-norm, gpt2 init", ["init/pre/gpt2/2"]),
            ("C19", "post-norm needs warmup",
             ["train/post/12/0", "train/post/12/100", "train/pre/12/0", "train/pre/12/100"]),
            ("C19", "pre-norm trains without warmup", ["train/pre/12/0", "train/pre/12/100"]),
            ("C19", "pre-norm is stable without warmup", ["sweep/pre/12/0", "sweep/pre/12/33"]),
            ("C19", "post-norm more expressive", ["train/post/12/100", "train/pre/12/100"]),
            ("C36", C36_STABLE_PART, ["deep/pre/50/10", "deep/post/50/10"]),
            ("C36", C36_IDENTITY_PART, ["init/pre/xavier/4"])):
        assert arms_of(claim_id, part(name, "inconclusive", 0, 0, 0)) == want, name
    ntk = part("RoPE works at 8× with ntk scaling", "inconclusive", 0, 0, 0,
               the_rule=rule(metric="100·(loss past L − sliding)/sliding, %: rope+ntk at 8×"))
    assert arms_of("C21", ntk) == ["rope+ntk"]
    tuned = part("RoPE + yarn after a 40-step fine-tune works at 8×", "inconclusive", 0, 0, 0,
                 the_rule=rule(metric="loss past L vs sliding, %: rope+yarn+ft4x at 8×"))
    assert arms_of("C30", tuned) == ["rope"]  # read off the rope run it extends
    # a claim no spec declares reads no arm unless its part is measured on seeds (a part
    # measured on seeds that names none: tests/claims/test_catalogue.py)
    assert part_arms("C99", "x", ntk["rule"]["metric"], arms, seeded=False) == []
    with pytest.raises(LookupError, match="C99 part"):
        arms_of("C99", ntk)


def test_the_budget_promises_only_what_the_designs_can_run():
    """A part that needs more seeds than its design's max_seeds, or has a fixed design, is
    never extended by the sequential runner: listed apart with the redesign it would need,
    never counted in what more minutes would decide."""
    fixed = part(C18_FLOPS_PART, "inconclusive", 6.0, 5.0, 7.0, n=3, seeds_needed=4,
                 the_rule=rule(max_seeds=None, min_seeds=3, metric="exact FLOPs"))
    past = open_part("geglu", 51, the_rule=rule(max_seeds=10))
    within = open_part("swiglu", 9, the_rule=rule(max_seeds=10))
    ledger = [row("C18", "inconclusive", [fixed], "blocklab suite norm-cost --size quick"),
              row("C16", "inconclusive", [past, within], SUITE)]
    stored = {"norm-cost": {"run_costs": costs("layernorm", "rmsnorm", seeds=3)},
              "ffn": {"run_costs": costs("relu", "swiglu", "geglu")}}
    budget = decision_budget(ledger, stored, workers=1)
    assert [p["part"] for p in budget["parts"]] == ["swiglu"]
    assert {p["part"]: p["redesign"] for p in budget["beyond_design"]} == {
        C18_FLOPS_PART: "a sequential design to 4 seeds (fixed at 3 now)",
        "geglu": "max_seeds 10 → 51"}
    text = budget_sentence({"decision_budget": budget}, "en")
    assert "these 1 inconclusive parts would likely be decided" in text
    assert "2 more would need more seeds than their registered designs allow" in text
    assert "past its design: max_seeds 10 → 51" in text


def test_budget_sentence_at_the_top_of_the_ledger(doc, drawn):
    text = budget_sentence(doc, "en")
    assert ("With about 9.3 more minutes on this machine (2 worker processes), these 2 "
            "inconclusive parts would likely be decided") in text
    assert "1 other inconclusive part(s) cannot be priced yet" in text
    assert "<td>glu</td>" in text and "<td>nearly the same quality</td>" in text
    zh = budget_sentence(doc, "zh")
    assert "再运行约 9.3 分钟，这 2 个尚无定论的部分很可能得到判定" in zh
    section = ledger_section(doc, drawn, "en")
    assert section.index('<p class="budget">') < section.index('<ol class="ledger">') \
        < section.index('id="fig-ledger_overview"')


def test_one_line_per_claim_links_to_its_section_in_the_shared_words_and_colours(doc):
    section = ledger_section(doc, {}, "en")
    lines = re.findall(r'<li id="(C\d\d)">(.*?)</li>', section)
    assert [cid for cid, _ in lines] == [r["id"] for r in doc["ledger"]]
    c16 = dict(lines)["C16"]
    # its id links to its section, its verdict is a symbol and the word claims.text gives it,
    # then the page's statement in brief and what was found (claims.brief)
    assert c16.startswith('<a class="id" href="#claim-C16">C16</a> <span class="badge '
                          'v-inconclusive" title="The seeds spent decide neither way')
    assert ">? inconclusive</span>" in c16
    assert _words(c16).endswith("statement C16 · found C16")
    zh = ledger_section(doc, {}, "zh")
    assert "? 尚无定论</span>" in zh and "说法 C16 · 发现 C16" in _words(zh)
    article = claim_article(doc["ledger"][1], {}, "en", doc)
    assert article.startswith('<article class="claim" id="claim-C16"><h3>C16 ')
    assert '<a href="#C16">↑ Claims ledger</a>' in article  # and back, from its details
    # the verdict words from claims.text, symbols and colours from report.palette, each
    # meaning stated once, in the ledger's introduction; mixed is a verdict of its own
    assert set(VERDICT_ORDER) == set(VERDICTS) and "mixed" in VERDICT_ORDER
    css = _css()
    for verdict in VERDICT_ORDER:
        meaning = str(markupsafe.escape(VERDICT_MEANING[verdict][0]))
        chip = (f'<span class="badge v-{verdict}" title="{meaning}">'
                f"{VERDICT_STYLES[verdict].symbol} {VERDICT_EN[verdict]}</span>")
        assert f"<dt>{chip}</dt><dd>{meaning}</dd>" in section, verdict
        assert f".v-{verdict} {{ background: {VERDICT_STYLES[verdict].tint}; color: " \
               f"{VERDICT_STYLES[verdict].colour};" in css
    assert section.count("<dd>") == len(VERDICT_ORDER)


def test_the_introduction_says_which_rules_were_edited_and_why_the_levels_differ(doc):
    """The ledger never says its claims are graded by rules registered before the data without
    saying, in the same sentence, how many were edited after it; the levels shown are the
    deciding ones, and the ledger says once why they vary."""
    edits = [{"date": "2026-12-01", "claims": ["C16", "C18"], "what": "δ raised"},
             {"date": "2026-12-02", "claims": ["C16"], "what": "margin widened"}]
    ledger = [{**r, "rules_changed": [e for e in edits if r["id"] in e["claims"]]}
              for r in doc["ledger"]]
    for lang, words in (("en", "but 2 edits to the rules of 2 claims were made after the data "
                                "had been seen"),
                        ("zh", "其中 2 条论断的规则在看到数据之后被修改了 2 处")):
        section = ledger_section({**doc, "ledger": ledger}, {}, lang)
        provenance = re.search(r'<p class="provenance">(.*?)</p>', section).group(1)
        assert words in _words(provenance)
        assert _words(section).count("registered before the data" if lang == "en"
                                     else "数据之前登记") == 1
    section = _words(ledger_section(doc, {}, "en"))
    assert "none was edited after the data had been seen" in section
    # C16's swiglu was read at 99.64%, geglu's band at 90%, the others at the stored 95%
    assert "so the levels differ (90% to 99.64%): Holm's correction shares" in section
    assert section.count("Holm's correction shares") == 1
    one_level = {**doc, "ledger": doc["ledger"][2:]}
    assert "the levels differ" not in ledger_section(one_level, {}, "en")


def test_the_design_sentence_says_budget_looks_runs_why_it_stopped_and_what_is_open(doc):
    """The design's sentence and the box under it count the same parts: the ledger's
    inconclusive ones, which the box lists, whatever the sequential runner had open when it
    stopped (8 then; 3 now)."""
    design = {"budget_s": 1200.0, "workers": 2, "stopped": "every part is decided",
              "looks": [{"runs": 6}, {"runs": 4}], "still_open": [],
              "longer": "run for C16 swiglu"}
    text = design_words(design, "en", 0)
    assert "registered before the data; cap: 20 min) on 2 worker processes" in text
    assert "2 further look(s) added 10 run(s)" in text and "every part is decided" in text
    assert "twice as long for would-be contradictions: run for C16 swiglu" in text
    assert "still inconclusive" not in text
    unbounded = design_words({**design, "budget_s": None}, "zh", 1)
    assert "无，运行每一次查看" in unbounded and "仍有 1 个部分尚无定论" in unbounded
    cut = design_words({**design, "cut": ["C16 glu to n = 8"]}, "en", 0)
    assert "The cap cut: C16 glu to n = 8." in cut
    design = {"budget_s": None, "workers": 2, "stopped": "the cap admits 1 further look",
              "looks": [{"runs": 6}], "still_open": [{}] * 8}
    section = ledger_section({**doc, "sequential": design}, {}, "en")
    listed = section[section.index("<details><summary>which parts"):]
    rows = listed[:listed.index("</table>")].count("<tr><td>")
    assert rows == open_parts(doc["decision_budget"]) == 3
    assert f"{rows} part(s) are still inconclusive: the box below lists each." in section
    assert "8 part(s)" not in section


def test_print_stylesheet_opens_details_and_pins_nothing():
    css = _css()
    assert "sticky" not in css and "position: fixed" not in css
    print_css = css[css.index("@media print"):]
    assert "details::details-content { content-visibility: visible; display: block; }" \
        in print_css


# --- evidence that does not depend on what is installed --------------------------------------
def test_c10_evidence_is_the_same_without_transformers(monkeypatch):
    with_it = run_claims(["C10"])[0]
    monkeypatch.setitem(sys.modules, "transformers", None)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name.startswith("transformers")
                        else real(name, *a))
    without = run_claims(["C10"])[0]
    assert without.verdict == with_it.verdict == "confirmed"
    assert without.summary == with_it.summary and without.evidence == with_it.evidence
    for text in (without.summary, without.summary_zh):
        assert "not installed" not in text and "未安装" not in text
    assert "modeling_llama.py lines 62-67" in without.summary


def test_the_page_templates_escape_every_value(doc):
    assert environment().autoescape is True
    hostile = row("C16", "confirmed", [part("swiglu", "confirmed", -1.42, -2.01, -0.83)], SUITE,
                  summary="<script>alert(1)</script> uses `x<y`; \"quoted\" & 'single'.")
    hostile["error"] = "<b>bold</b>"
    hostile["brief"]["en"]["found"] = "<i>found</i>"
    article = claim_article(hostile, {}, "en", {**doc, "ledger": [hostile]})
    assert "<script>" not in article and "&lt;script&gt;alert(1)&lt;/script&gt;" in article
    assert "<b>bold</b>" not in article and "&lt;b&gt;bold&lt;/b&gt;" in article
    assert "&amp; &#39;single&#39;" in article
    section = ledger_section({**doc, "ledger": [hostile]}, {}, "en")
    assert "<i>found</i>" not in section and "&lt;i&gt;found&lt;/i&gt;" in section
    line = part_line(part("<img src=x onerror=alert(1)>", "confirmed", -1.42, -2.01, -0.83),
                     "en")
    assert "<img" not in line and "&lt;img src=x" in line


def _ladder_doc(tmp_path, monkeypatch, stored: str | None):
    """The report's ladders read from `<results>/ladder/C16.json` holding `stored`, the rungs
    graded from estimates put in the ledger's place (tests/claims/test_ladder.py), rung3 with
    no results stored."""
    _fake_rungs(monkeypatch, "C16", {size: {"swiglu": mean, "geglu": 0.1, "glu": 0.1}
                                     for size, mean in MEANS.items() if size != "rung3"}, sd=0.2)
    if stored is not None:
        (tmp_path / "ladder").mkdir()
        (tmp_path / "ladder" / "C16.json").write_text(stored)
    return ladders(tmp_path)


def test_the_ladder_shows_each_rung_decided_and_the_trend_in_the_claims_details(
        doc, tmp_path, monkeypatch):
    assert _ladder_doc(tmp_path, monkeypatch, None) == {}  # not run: nothing shown
    rungs = [{"size": s, "precision": "bf16"} for s in ("quick", "rung1", "rung2", "rung3")]
    found = _ladder_doc(tmp_path, monkeypatch, json.dumps({"rungs": rungs, "seed_offset": 0}))
    assert [r["precision"] for r in found["C16"]["rungs"]] == ["bf16"] * 4
    page = {**doc, "ladders": found}
    draw, command = FIGURES["ladder_C16"]  # that figure alone, not every forest plot too
    figures = {"ladder_C16": Figure("ladder_C16", draw(page), command(page))}
    assert figures["ladder_C16"].png.startswith(b"\x89PNG")
    assert figures["ladder_C16"].command == f"blocklab ladder C16 --results {tmp_path}"
    for lang, heading, trend in (
            ("en", "On the ladder of sizes", "swiglu: -0.39% per 2× training compute"),
            ("zh", "规模阶梯", "swiglu：训练算力每 2 倍 -0.39%")):
        cell = evidence_cell(page["ledger"][1], figures, lang, page)
        folded = cell[cell.index('<details class="more">'):]
        assert heading in folded and trend in folded and 'id="fig-ladder_C16"' in folded
        # the lead sentence, before any rung or slope: where each part is first decided
        lead = ("swiglu: first decided at rung1 (2× compute" if lang == "en" else
                "swiglu：最早在 rung1（2× 算力")
        assert lead in folded and folded.index(lead) < folded.index(trend)
        assert ("rung3 (8× compute): no results stored" in folded if lang == "en"
                else "rung3（8× 算力）：尚无结果" in folded)
    other = next(r for r in page["ledger"] if r["id"] != "C16")
    assert "ladder" not in evidence_cell(other, figures, "en", page)


@pytest.mark.parametrize("stored", ["{not json", '{"rungs": [], "seed_offset": 0}',
                                    '{"rungs": [{"size": "quick", "precision": "fp64"}]}'])
def test_a_damaged_ladder_file_is_named_with_the_command_that_rewrites_it(
        doc, tmp_path, monkeypatch, stored):
    found = _ladder_doc(tmp_path, monkeypatch, stored)
    error = found["C16"]["error"]
    assert error.startswith(f"{tmp_path / 'ladder' / 'C16.json'}: cannot be read (")
    assert error.endswith(f"`blocklab ladder C16 --results {tmp_path}` rewrites it from the "
                          "runs stored")
    cell = evidence_cell(doc["ledger"][1], {}, "en", {**doc, "ladders": found})
    assert '<p class="error">' + str(markupsafe.escape(error)) + "</p>" in cell
