"""C34 and C35 against hand computations from the configs (not from blocklab.budget)."""

import pytest

import blocklab.claims.models as models
from blocklab.claims.finding import Context
from blocklab.claims.ledger import run_claims


def _row(finding, pairing):
    return next(r for r in finding.evidence["pairings"] if r.pairing == pairing)


def test_c34_one_verdict_per_pairing_each_a_part_read_from_the_configs_and_gpt3s_paper():
    c34 = models.c34(Context())
    verdicts = {r.pairing: r.verdict for r in c34.evidence["pairings"]}
    assert verdicts == {
        "GPT-2/BERT use a plain FFN": "holds",
        "GPT-2/BERT use absolute positions": "holds",
        "PaLM uses GeGLU": "fails",  # the PaLM paper, §2: SwiGLU
        "Llama and Qwen use SwiGLU": "holds",
        "MPT uses ALiBi": "holds",
        "GLM uses ALiBi": "fails",  # ChatGLM and GLM-130B use RoPE
        "Llama, Qwen and DeepSeek use RoPE": "holds",
        "Llama 3, Qwen2 and Qwen3 combine pre-norm, SwiGLU and RoPE": "holds",
        "Llama 4 combines pre-norm, SwiGLU and RoPE": "partly",  # NoPE every 4th layer
        "Claude 4 combines pre-norm, SwiGLU and RoPE": "untestable",  # nothing public
        "Llama, Qwen and GPT-3 use pre-norm": "holds",  # GPT-3: its paper, §2.1
    }
    assert c34.summary and c34.summary_zh and c34.command.startswith("blocklab budget")
    (row,) = run_claims(["C34"], Context())
    for shown in row.evidence["pairings"]:  # each row as the ledger's JSON holds it
        assert list(shown) == ["pairing", "models", "says", "source", "verdict", "per_model"]
    # a wrong pairing is refuted (the claim, mixed: test_claims.py::test_analytic_verdicts)
    parts = {p.name: p.verdict for p in c34.parts}
    assert [p.name for p in c34.parts] == [r.pairing for r in c34.evidence["pairings"]]
    assert parts["PaLM uses GeGLU"] == parts["GLM uses ALiBi"] == "refuted"
    assert parts["Claude 4 combines pre-norm, SwiGLU and RoPE"] == "untestable-here"
    assert parts["Llama 4 combines pre-norm, SwiGLU and RoPE"] == "mixed"  # 36 of 48 layers
    assert parts["Llama, Qwen and GPT-3 use pre-norm"] == "confirmed"
    assert sum(v == "confirmed" for v in parts.values()) == 7
    for p in c34.parts:
        assert p.rule is models.C34_RULES[p.name] and p.rule.decides == models.C34_DECIDES
    # 10 of the 11 Llama/Qwen configs and GPT-3's paper: 11 models, all pre-norm.
    pre = next(p for p in c34.parts if p.name == "Llama, Qwen and GPT-3 use pre-norm")
    assert (pre.estimate.value, pre.estimate.n) == (1.0, 11)
    claude = next(p for p in c34.parts if p.name.startswith("Claude 4"))
    assert claude.estimate.value is None and claude.estimate.n == 0
    # The evidence lists what holds and what is wrong, in both languages.
    assert ("7 of the 10 pairings a public config or paper can check hold and 2 are wrong: the "
            "claim holds only in part") in c34.summary
    hold, wrong = c34.summary.split("Hold: ")[1].split(". Wrong: ")
    assert "Llama, Qwen and GPT-3 use pre-norm" in hold and "PaLM" not in hold
    assert "PaLM uses GeGLU (PaLM uses SwiGLU" in wrong and "GLM uses ALiBi (" in wrong
    assert "Untestable here: Claude 4 combines pre-norm, SwiGLU and RoPE" in c34.summary
    assert "错误：PaLM 用 GeGLU" in c34.summary_zh and "此处无法检验：Claude 4" in c34.summary_zh
    assert "refuted" in c34.combines and "mixed" in c34.combines and "untestable" in c34.combines
    # mosaicml/mpt-7b config.json: attn_config.alibi = true.
    assert "position=alibi" in _row(c34, "MPT uses ALiBi").says["mpt-7b"]
    # THUDM chatglm2-6b: RotaryEmbedding on half of each head.
    assert "position=rope" in _row(c34, "GLM uses ALiBi").says["chatglm2-6b"]
    # Llama 4 Scout: no_rope_layers has a 0 at layers 3, 7, ..., 47: 36 of 48 rotate.
    says = _row(c34, "Llama 4 combines pre-norm, SwiGLU and RoPE").says
    assert "in 36 of 48 layers" in says["llama-4-scout-17b-16e"]
    assert "SwiGLU" in _row(c34, "PaLM uses GeGLU").says["PaLM"]
    # GPT-3 released no config: Brown et al. 2020, §2.1 keeps GPT-2's "pre-normalization"
    # layout, which GPT-2's config.json (openai-community/gpt2) shows.
    row = _row(c34, "Llama, Qwen and GPT-3 use pre-norm")
    assert "GPT-3 (no config released)" in row.models
    assert "Brown et al. 2020" in row.source and "arXiv:2005.14165" in row.source
    assert "pre-normalization" in row.says["GPT-3"]
    assert "gpt2 config.json" in row.says["GPT-3"]
    assert "placement=pre" in row.says["GPT-3"]
    assert row.per_model["GPT-3"] == "holds"
    assert all(row.per_model[m] == "holds" for m in models.LLAMA + models.QWEN)
    claude = _row(c34, "Claude 4 combines pre-norm, SwiGLU and RoPE")
    assert claude.models == ["Claude 4 (no config or paper released)"]
    assert claude.per_model == {} and claude.source == "none public"


def test_c34_combines_its_pairings_by_the_stated_rule():
    def rows(*verdicts):
        return [models.PairingRow("p", [], {}, "", v, {}) for v in verdicts]

    assert models.combine_c34(rows("holds", "fails", "untestable")) == "mixed"
    assert models.combine_c34(rows("fails", "fails", "untestable")) == "refuted"
    assert models.combine_c34(rows("fails", "partly")) == "mixed"
    assert models.combine_c34(rows("holds", "partly")) == "mixed"
    assert models.combine_c34(rows("holds", "untestable")) == "mixed"
    assert models.combine_c34(rows("untestable")) == "untestable-here"
    assert models.combine_c34(rows("holds", "holds")) == "confirmed"


def test_c35_formula_and_exact_shares_by_hand_and_its_verdict_by_tolerance():
    c35 = models.c35(Context())
    # meta-llama-3-8b, from config.json: d = 4096, d_ff = 14336, 32 heads, 8 KV heads of 128,
    # no biases, 2 RMSNorms; the formula 3·14336 / (3·14336 + 4·4096).
    d, m, kv = 4096, 14336, 8 * 128
    ffn = 3 * d * m
    attn = 2 * d * d + 2 * d * kv
    exact = ffn / (ffn + attn + 2 * d)
    row = c35.evidence["models"]["meta-llama-3-8b"]
    assert row.formula_share == pytest.approx(43008 / (43008 + 16384), abs=5e-5)
    assert row.exact_share == pytest.approx(exact, abs=5e-5)
    assert row.difference_points == pytest.approx(100 * (exact - 43008 / 59392), abs=0.01)
    assert row.main_cause == "attention_shape" and not row.holds
    # GPT-2: plain FFN 2·768·3072 + biases 3072 + 768; attention 4·768² + 4·768 biases;
    # 2 LayerNorms of gain and bias.
    d, m = 768, 3072
    ffn, attn, norms = 2 * d * m + m + d, 4 * d * d + 4 * d, 4 * d
    gpt2 = c35.evidence["models"]["gpt2"]
    assert gpt2.exact_share == pytest.approx(ffn / (ffn + attn + norms), abs=5e-5)
    assert gpt2.main_cause == "ffn_form"
    # Llama 4 Scout: 16 routed + 1 shared expert of 8192, router [16, 5120]; GQA 40/8 × 128.
    d, m = 5120, 8192
    ffn = 17 * 3 * d * m + 16 * d
    attn = 2 * d * 40 * 128 + 2 * d * 8 * 128
    scout = c35.evidence["models"]["llama-4-scout-17b-16e"]
    assert scout.exact_share == pytest.approx(ffn / (ffn + attn + 2 * d), abs=5e-5)
    assert scout.formula_share == pytest.approx(3 * m / (3 * m + 4 * d), abs=5e-5)
    assert scout.main_cause == "ffn_form"
    rows = c35.evidence["models"]
    # Llama-2-7B is MHA with d_ff = 11008, no biases: the formula is exact up to its norms.
    assert rows["llama-2-7b"].holds and abs(rows["llama-2-7b"].difference_points) < 0.01
    held = [n for n, r in rows.items() if r.holds]
    assert all(abs(rows[n].difference_points) <= 2.0 for n in held)
    # every model off the formula departs from its own assumptions: the named condition
    assert c35.verdict == "conditional" and 0 < len(held) < len(rows)
    assert {r.main_cause for r in rows.values() if not r.holds} <= set(models.C35_ASSUMPTIONS)
    assert "the claim is conditional on them" in c35.summary


def test_c35_verdict_names_its_condition_or_is_mixed():
    assert models.c35_verdict(["a"], []) == "confirmed"
    assert models.c35_verdict([], ["ffn_form"]) == "refuted"
    assert models.c35_verdict(["a"], ["ffn_form", "attention_shape"]) == "conditional"
    assert models.c35_verdict(["a"], ["ffn_form", "biases"]) == "mixed"
