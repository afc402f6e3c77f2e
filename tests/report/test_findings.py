"""The findings a reader sees first (`report.findings`): at most eight plain sentences and six
numbers to use, each number the one its ClaimResult holds (read here from the evidence or the
part, not through the module), a sentence left out or saying "undecided" when its claim has no
results or decides nothing, the same sentences and numbers in English and Chinese, and no
statistical terms.

The claims that need no training run live; the experimental ones are ClaimResults built here
from their registered parts (`registry.registered`), each part with a value of its own, so a
number taken from the wrong part shows."""

import re
from dataclasses import replace

import pytest

from blocklab.claims import claim_sources, run_claims
from blocklab.claims.catalogue import SCALE_DEPENDENT, SUITE_OF
from blocklab.claims.ledger import ClaimResult
from blocklab.claims.registry import registered
from blocklab.claims.rules import Estimate, Part
from blocklab.experiments.scale import Scale
from blocklab.experiments.suites.position.runs import SIZES as POSITION_SIZES
from blocklab.report.findings import findings

NO_TRAINING = [c for c in sorted(claim_sources()) if c not in SUITE_OF and c not in SCALE_DEPENDENT]
EXPERIMENTAL = ["C16", "C18", "C19", "C21", "C30"]
FT = POSITION_SIZES["quick"].finetune
FT_ARMS = {"none": f"rope+ft{FT.factor}x", "ntk": f"rope+ntk+ft{FT.factor}x",
           "yarn": f"rope+yarn+ft{FT.factor}x"}
SMALL = Scale("d 64 × 2 layers", 131392, 307200, "d 64 × 2 层").to_dict()
STEP_MODEL = {"d_model": 128, "n_layers": 4, "seq_len": 128, "batch_size": 8}


@pytest.fixture(scope="module")
def no_training() -> list[ClaimResult]:
    return run_claims(NO_TRAINING)


def measured(cid: str, verdicts: dict[str, tuple[float, str]], evidence=None) -> ClaimResult:
    """`cid` with every registered part: those named in `verdicts` with (value, verdict), the
    others with a value of their own (1.1, 2.2, …) and inconclusive."""
    parts = []
    for i, (name, rule) in enumerate(registered(cid, "quick").items(), start=1):
        value, verdict = verdicts.get(name, (1.1 * i, "inconclusive"))
        parts.append(Part(name, rule, Estimate(value, value - 1, value + 1, 8), verdict, "why"))
    return ClaimResult(cid, f"claim {cid}", f"论断 {cid}", "000.txt", "section", "inconclusive",
                       "summary", "摘要", evidence or {}, f"blocklab suite for {cid}", None,
                       parts=parts, scale=SMALL)


def experiments() -> dict[str, ClaimResult]:
    return {
        "C16": measured("C16", {"swiglu": (-1.8512, "confirmed"), "geglu": (0.1952, "inconclusive"),
                                "glu": (1.6484, "not-reproduced-at-this-scale")}),
        "C18": measured("C18", {
            "the norm needs about 7% fewer FLOPs": (35.0, "not-reproduced-at-this-scale"),
            "a training step needs about 7% fewer FLOPs": (0.0036204, "refuted"),
            "nearly the same quality": (-0.0103153, "inconclusive")},
            {"compute": {"steps": [{"model": "norm-cost quick"}, {"model": "meta-llama-3-8b"}]},
             "step_time": {"blocklab/2": {"threads": 2, "model": STEP_MODEL, "ratio": 0.97},
                           "blocklab/1": {"threads": 1, "model": STEP_MODEL, "ratio": 0.9912},
                           "like-for-like/1": {"threads": 1, "model": STEP_MODEL,
                                               "ratio": 1.0942}}}),
        "C19": measured("C19", {
            "pre-norm trains without warmup": (0.10166, "not-reproduced-at-this-scale"),
            "post-norm needs warmup": (0.03612, "inconclusive"),
            "post-norm gradients vanish in the lower layers": (-1.05574, "confirmed")}),
        "C21": measured("C21", {"ALiBi works at 2×": (0.0614, "confirmed"),
                                "ALiBi works at 4×": (0.0526, "confirmed"),
                                "ALiBi works at 8×": (0.1325, "confirmed"),
                                "RoPE works at 2×": (5.0369, "inconclusive"),
                                "RoPE works at 4×": (13.0754, "not-reproduced-at-this-scale")}),
        "C30": measured("C30", {
            f"RoPE + yarn after a {FT.steps}-step fine-tune works at 16×": (3.2053, "confirmed"),
            "warning (no scaling): plain RoPE drops clearly at 16×": (32.5383, "confirmed")},
            {"finetune": {"steps": FT.steps, "factor": FT.factor, "arms": FT_ARMS}}),
    }


def citing(found, cid: str) -> list[str]:
    """The English sentences about `cid`, less the count of the claims that need no training
    (which names every wrong one)."""
    return [s.text for s in found.sentences if cid in s.claims and not s.text.startswith("Of ")]


def numbers(text: str) -> list[str]:
    return sorted(re.findall(r"[+-]?\d+(?:\.\d+)?", text))


@pytest.fixture(scope="module")
def everything(no_training) -> list[ClaimResult]:
    return [*no_training, *experiments().values()]


def test_the_claims_that_need_no_training_are_counted_and_read_from_their_evidence(
        no_training):
    """The count names the wrong ones; the FFN shares are the counts in the evidence (and one
    left out leaves its neighbour's clause standing); the wrong pairings say what holds."""
    by_id = {r.id: r for r in no_training}
    wrong = [r.id for r in no_training if r.verdict == "refuted"]
    hold = sum(r.verdict == "confirmed" for r in no_training)
    assert wrong, "the pages have wrong arithmetic or configs: the sentence must name them"
    found = findings(no_training, "en")
    assert found.sentences[0].text.startswith(
        f"Of the {len(NO_TRAINING)} claims that need no training")
    assert f"{hold} hold and {len(wrong)} are wrong ({', '.join(wrong)})" in found.sentences[0].text
    zh = findings(no_training, "zh").sentences[0].text
    assert f"{hold} 条成立，{len(wrong)} 条有误（{'、'.join(wrong)}）" in zh
    flops = by_id["C23"].evidence["gflops"]
    prefill = f"{100 * flops['ffn'] / flops['total']:.1f}%"
    layer = by_id["C15"].evidence["meta_llama_3_8b"]
    weights = f"{100 * layer['ffn'] / layer['matrices']:.1f}%"
    example = by_id["C15"].evidence["page_example"]
    page_example = f"{100 * example['ffn'] / example['matrices']:.1f}%"
    (text,) = citing(found, "C23")
    assert f"does {prefill} of a prefill's FLOPs, not the page's 99%" in text
    assert f"holds {weights} of a layer's weights, not the {page_example}" in text
    use = {u.claim: u.value for u in found.use}
    assert use["C23"] == prefill and use["C15"] == weights
    c34 = by_id["C34"]
    refuted = [p for p in c34.parts if p.verdict == "refuted"]
    checkable = [p for p in c34.parts if p.verdict != "untestable-here"]
    (text,) = citing(found, "C34")
    assert text.startswith(f"{len(refuted)} of the {len(checkable)} pairings")
    for part in refuted:  # the check's reason names what holds instead
        assert part.reason in text
    # C23 left out: its neighbour's clause stands alone
    found = findings([r for r in no_training if r.id != "C23"], "en")
    assert not citing(found, "C23") and "C23" not in {u.claim for u in found.use}
    (text,) = citing(found, "C15")
    assert text.startswith("Llama-3-8B's FFN holds") and "(C15)." in text


@pytest.mark.parametrize("cid, said", [
    ("C16", ["d 64 × 2 layers, 307k tokens",
             "−1.85% with SwiGLU (better, as the page says)",  # a true minus
             "+0.20% with GeGLU (undecided)", "+1.65% with GLU"]),
    ("C18", ["35% fewer FLOPs than LayerNorm per norm but only 0.0036% fewer per "
             "meta-llama-3-8b training step, neither is the page's “about 7%”",
             "took 0.99× LayerNorm's time (d 128 × 4 layers)",  # the fused kernels, 1 thread
             "−0.010 nats (undecided)"]),
    ("C19", ["+0.102 nats (so here it did need warmup)",
             "+0.036 nats more than pre-norm (undecided)",
             f"{2 ** -1.05574:.2f}× the gradient of its last (it fades"]),
    ("C21", ["ALiBi +0.06% at 2×, +0.05% at 4× and +0.13% at 8× (works at each)",
             "RoPE +5.04% at 2× (undecided) and +13.08% at 4× (does not work at this size)"]),
    ("C30", [f"a {FT.steps}-step fine-tune, read at 16×",
             "+3.2% (works), against +32.5% for plain RoPE"]),
])
def test_each_training_sentence_quotes_its_parts_estimates(cid, said):
    (text,) = citing(findings(list(experiments().values()), "en"), cid)
    for words in said:
        assert words in text, words


def test_each_training_number_to_use_is_its_parts_estimate():
    use = {u.claim: u for u in findings(list(experiments().values()), "en").use}
    assert use["C16"].value == "−1.85%"
    assert use["C18"].value == "0.99×"
    assert use["C21"].value == "+0.13%" and "8×" in use["C21"].label
    assert use["C30"].value == "+3.2% vs +32.5%" and "16×" in use["C30"].label


def test_a_claim_without_results_drops_its_sentence_and_item(unrun, no_training):
    missing = [r for r in unrun if r.id in EXPERIMENTAL]
    assert {r.verdict for r in missing} == {"missing-results"}
    for lang in ("en", "zh"):
        found = findings([*no_training, *missing], lang)
        cited = {c for s in found.sentences for c in s.claims}
        assert not cited & set(EXPERIMENTAL)
        assert not {u.claim for u in found.use} & set(EXPERIMENTAL)
    failed = replace(experiments()["C16"], verdict="error", error="ValueError: broken")
    found = findings([*no_training, failed], "en")
    assert not citing(found, "C16") and "C16" not in {u.claim for u in found.use}


def test_an_undecided_part_is_said_undecided_and_one_with_no_verdict_to_say_is_left_out():
    results = experiments()
    results["C16"] = measured("C16", {"swiglu": (0.0072, "inconclusive")})
    results["C30"] = measured("C30", {
        f"RoPE + yarn after a {FT.steps}-step fine-tune works at 16×": (6.0, "inconclusive")},
        results["C30"].evidence)
    found = findings(list(results.values()), "en")
    assert "+0.01% with SwiGLU (undecided)" in citing(found, "C16")[0]
    assert "+6.0% (undecided)" in citing(found, "C30")[0]
    use = {u.claim: u.value for u in found.use}
    assert use["C16"] == "+0.01% (undecided)"
    assert use["C30"].endswith("(undecided)")
    results["C19"] = measured("C19", {
        "pre-norm trains without warmup": (0.1, "untestable-here"),
        "post-norm needs warmup": (0.05, "untestable-here"),
        "post-norm gradients vanish in the lower layers": (-1.0, "untestable-here")})
    assert not citing(findings(list(results.values()), "en"), "C19")


JARGON = re.compile(r"Holm|δ|O'Brien|Fleming|\bCI\b|confidence|interval|α|p-value|\bp =|TOST|"
                    r"equivalence|sequential|log2|置信|区间|显著", re.IGNORECASE)


def test_at_most_eight_sentences_and_six_items_the_same_in_both_languages_without_jargon(
        everything):
    """Each sentence cites the claims it names, in order; each item links to its row; English
    and Chinese say the same with the same numbers; no statistical terms."""
    en, zh = findings(everything, "en"), findings(everything, "zh")
    for found in (en, zh):
        assert 1 <= len(found.sentences) <= 8
        for sentence in found.sentences:
            assert sentence.claims, sentence.text
            assert re.findall(r"C\d\d", sentence.text) == list(sentence.claims), sentence.text
        assert 3 <= len(found.use) <= 6
        assert all(u.anchor == f"#{u.claim}" and u.value and u.label for u in found.use)
        shown = [s.text for s in found.sentences] + [u.label + u.value for u in found.use]
        assert not [t for t in shown if JARGON.search(t)]
    assert [s.claims for s in en.sentences] == [s.claims for s in zh.sentences]
    for a, b in zip(en.sentences, zh.sentences, strict=True):
        assert numbers(a.text) == numbers(b.text), (a.text, b.text)
    assert [(u.claim, u.anchor) for u in en.use] == [(u.claim, u.anchor) for u in zh.use]
    for a, b in zip(en.use, zh.use, strict=True):
        assert numbers(a.label + a.value) == numbers(b.label + b.value), (a, b)
    assert all(re.search("[\u4e00-\u9fff]", s.text) for s in zh.sentences)
