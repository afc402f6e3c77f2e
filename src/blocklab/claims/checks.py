"""The analytic checks of C01–C28, computed live from `blocklab.reference`, `blocklab.verify`,
`blocklab.budget` and small torch probes (the experimental ones sit in the module of the suite
they read).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from blocklab import reference as ref
from blocklab.claims.finding import Check, Context, Finding, claim
from blocklab.claims.lang import LANGS
from blocklab.claims.text import WORDING, Template, both, say

TEXT: dict[str, Template] = WORDING["CHECKS"]


# --- page 000: worked numbers (computed live) ---------------------------------------------------
# {claim: the reference-check groups that hold its checks}; its sentence is WORKED[claim]
WORKED_GROUPS: dict[str, tuple[str, ...]] = {
    "C01": ("worked",),
    "C02": ("worked",),
    "C03": ("worked",),
    "C04": ("worked",),
    "C05": ("worked", "shift-scale"),
    "C06": ("worked", "jacobians"),
    "C07": ("shift-scale",),
    "C08": ("worked",),
    "C09": ("worked", "jacobians", "order"),
}
WORKED: dict[str, Template] = WORDING["WORKED"]


def _worked(claim_id: str, en: str, zh: str, groups: tuple[str, ...]) -> Check:
    """The check of a worked number: confirmed when every reference check of `claim_id` in
    `groups` passes (each group must hold one), the checks as its evidence."""
    def check(ctx: Context) -> Finding:
        from blocklab.verify import run_checks

        ok, checks = True, []
        for group in groups:
            rows = [c for c in run_checks([group]) if c.claim == claim_id]
            ok &= bool(rows) and all(r.passed for r in rows)
            checks += [{"check": r.name, "expected": r.expected, "got": r.got,
                        "max_error": r.max_error, "passed": r.passed} for r in rows]
        if ok:
            return Finding("confirmed", en, zh, {"checks": checks},
                           "blocklab verify --group " + " --group ".join(groups))
        failed = [c["check"] for c in checks if not c["passed"]]
        return Finding("refuted", *both(TEXT["failed"], failed=failed), {"checks": checks},
                       "blocklab verify")

    return check


for _id, _groups in WORKED_GROUPS.items():
    claim(_id)(_worked(_id, *WORKED[_id], _groups))


# Hugging Face's LlamaRMSNorm.forward, the implementation the page's float32 advice describes,
# quoted (Apache-2.0) so that C10's evidence reads the same whatever is installed here:
# transformers 5.24.0, src/transformers/models/llama/modeling_llama.py, lines 62–67.
# tests/nn/test_norm.py compares blocklab's RMSNorm with the installed LlamaRMSNorm directly.
LLAMA_RMSNORM_SOURCE: dict[str, str | list[str]] = {
    "repository": "huggingface/transformers",
    "version": "5.24.0",
    "path": "src/transformers/models/llama/modeling_llama.py",
    "lines": "62-67",
    "excerpt": [
        "def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:",
        "    input_dtype = hidden_states.dtype",
        "    hidden_states = hidden_states.to(torch.float32)",
        "    variance = hidden_states.pow(2).mean(-1, keepdim=True)",
        "    hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)",
        "    return self.weight * hidden_states.to(input_dtype)",
    ],
}


def _llama_rmsnorm_excerpt(hidden_states, weight, variance_epsilon: float):
    """The quoted LlamaRMSNorm.forward, line by line (LLAMA_RMSNORM_SOURCE)."""
    import torch

    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + variance_epsilon)
    return weight * hidden_states.to(input_dtype)


@claim("C10")
def c10(ctx: Context) -> Finding:
    import torch

    from blocklab.nn import RMSNorm

    x = torch.tensor([[300.0, -200.0, 100.0, 50.0]], dtype=torch.float16)
    naive_mean_square = x.pow(2).mean(-1)  # squares overflow float16 (max 65,504)
    norm = RMSNorm(4, eps=1e-6, cast="llama")
    with torch.no_grad():
        y = norm(x)
        quoted = _llama_rmsnorm_excerpt(x, norm.weight.to(x.dtype), 1e-6)
    exact = ref.rmsnorm(x.double().numpy()[0], 1e-6)
    err = float(np.max(np.abs(y.double().numpy()[0] - exact)))
    same = float((y.double() - quoted.double()).abs().max())
    src = LLAMA_RMSNORM_SOURCE
    evidence = {
        "input_fp16": x.tolist()[0],
        "fp16_mean_square": float(naive_mean_square),  # inf: the squares overflow float16
        "fp32_mean_square": float(x.float().pow(2).mean(-1)),
        "output_dtype": str(y.dtype),
        "max_error_vs_float64": err,
        "hugging_face_source": {**src, "blocklab_vs_excerpt_max_abs_diff": same},
    }
    ok = (math.isinf(evidence["fp16_mean_square"]) and y.dtype == torch.float16
          and err < 2e-3 and same == 0.0)
    where = f"{src['repository']} {src['version']}, {src['path']} lines {src['lines']}"
    return Finding(
        "confirmed" if ok else "refuted",
        *both(TEXT["c10"], err=err, where=where, same=same),
        evidence, "python -m pytest tests/nn/test_norm.py -k llama")


@claim("C11")
def c11(ctx: Context) -> Finding:
    import torch

    from blocklab.config import ModelConfig
    from blocklab.interop.hf import hf_to_blocklab_name
    from blocklab.nn import DecoderLM

    # A Llama layer as Hugging Face names it; where does post_attention_layernorm sit?
    mapped = hf_to_blocklab_name("model.layers.0.post_attention_layernorm.weight")
    # ε tiny so that a normalised vector has RMS 1 up to rounding.
    cfg = ModelConfig(vocab_size=64, d_model=32, n_layers=1, n_heads=4, n_kv_heads=2, d_ff=48,
                      final_norm=False, norm_eps=1e-12)
    torch.manual_seed(0)
    model = DecoderLM(cfg).double().eval()
    seen: dict[str, torch.Tensor] = {}
    block = model.layers[0]
    block.ffn.register_forward_hook(lambda m, args, out: seen.__setitem__("mlp_in", args[0]))
    block.register_forward_hook(lambda m, args, out: seen.__setitem__("layer_out", out))
    with torch.no_grad():
        model(torch.randint(0, 64, (2, 7)))

    def token_rms(t: torch.Tensor) -> torch.Tensor:
        return t.pow(2).mean(-1).sqrt()

    mlp_in = token_rms(seen["mlp_in"])
    out = token_rms(seen["layer_out"])
    mlp_dev = float((mlp_in - 1).abs().max())
    out_dev = float((out - 1).abs().max())
    ok = mapped == "layers.0.ffn_norm.weight" and mlp_dev < 1e-4 and out_dev > 1e-2
    return Finding(
        "confirmed" if ok else "refuted",
        *both(TEXT["c11"], mlp_dev=mlp_dev, out_dev=out_dev),
        {"hf_name": "model.layers.0.post_attention_layernorm.weight", "maps_to": mapped,
         "mlp_input_rms_max_deviation_from_1": mlp_dev,
         "layer_output_rms_max_deviation_from_1": out_dev},
        "python -m pytest tests/interop/test_hf.py")


@claim("C14")
def c14(ctx: Context) -> Finding:
    from blocklab.verify import run_checks

    rows = run_checks(["jacobians"])
    worst = max(r.max_error for r in rows)
    ok = all(r.passed for r in rows)
    return Finding(
        "confirmed" if ok else "refuted",
        *both(TEXT["c14"], n=len(rows), worst=worst),
        {"checks": [{"check": r.name, "max_error": r.max_error} for r in rows]},
        "blocklab verify --group jacobians")


@claim("C17")
def c17(ctx: Context) -> Finding:
    z = [-4.0, -2.0, -1.0, -0.5]
    silu_g, relu_g = ref.silu_grad(np.array(z)), ref.relu_grad(np.array(z))
    # silu'(z) = σ(z)(1 + z·σ(−z)) crosses zero where 1 + z·σ(−z) = 0; bisect for it.
    lo, hi = -2.0, -1.0
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if ref.silu_grad(mid) < 0 else (lo, mid)
    zero = (lo + hi) / 2
    ok = bool(np.all(silu_g != 0) and np.all(relu_g == 0))
    return Finding(
        "confirmed" if ok else "refuted",
        *both(TEXT["c17"], z=z, grads=[round(float(g), 4) for g in silu_g], zero=zero),
        {"z": z, "silu_grad": silu_g, "relu_grad": relu_g, "silu_grad_zero_at": zero},
        "python -c 'from blocklab.reference import silu_grad; print(silu_grad(-2.0))'")


@claim("C20")
def c20(ctx: Context) -> Finding:
    from blocklab.verify import rope_gap_by_shift

    gaps = rope_gap_by_shift()
    evidence: dict[str, object] = {"float64_gap_by_shift": gaps}
    summary = ctx.summary("position")
    rel = None if summary is None else summary.data.relative_error
    if rel:  # {dtype: [[shift, max error], ...]} where the position suite ran
        evidence["low_precision_error"] = rel
    worst = max(gaps.values())
    return Finding(
        "confirmed" if worst < 1e-8 else "refuted",
        *(say(TEXT["c20"], lang, worst=worst,
              low_precision=say(TEXT["c20_low_precision"], lang) if rel else "")
          for lang in LANGS),
        evidence, "blocklab verify --group rope", "rope_relative_error" if rel else None)


# --- page 001: budgets (computed live from the zoo) ---------------------------------------------
def zoo_budget(name: str, seq_len: int = 4096) -> dict[str, Any]:
    """`blocklab budget NAME --seq SEQ_LEN --json` of a zoo model."""
    from blocklab.budget import model_budget, resolve_model

    return model_budget(resolve_model(name).config, seq_len=seq_len, label=name)


@dataclass(frozen=True)
class LayerShares:
    """The weight matrices of one layer: attention's, the FFN's, their sum, the FFN's share."""

    attention: int
    ffn: int
    matrices: int
    ffn_share: float


def _layer_shares(name: str) -> LayerShares:
    from blocklab.budget import count_params, resolve_model

    layer = count_params(resolve_model(name).config).layer
    attn = sum(v for k, v in layer.items() if k in ("q_proj", "k_proj", "v_proj", "o_proj"))
    ffn = sum(v for k, v in layer.items() if k in ("gate_proj", "up_proj", "down_proj"))
    return LayerShares(attention=attn, ffn=ffn, matrices=attn + ffn,
                       ffn_share=ffn / (attn + ffn))


@claim("C15")
def c15(ctx: Context) -> Finding:
    from blocklab.budget import list_zoo

    page = _layer_shares("page-001-example")
    real = _layer_shares("meta-llama-3-8b")
    zoo = {name: round(_layer_shares(name).ffn_share, 4) for name in list_zoo()}
    # Half a percentage point of slack: GPT-2/BERT sit at exactly 2/3 before rounding.
    outside = {k: v for k, v in zoo.items() if not 2 / 3 - 0.005 <= v <= 3 / 4 + 0.005}
    in_range = 2 / 3 - 0.005 <= real.ffn_share <= 3 / 4 + 0.005
    example_ok = abs(page.matrices - 177e6) / 177e6 < 0.01
    verdict = "confirmed" if in_range and example_ok and not outside else "refuted"
    return Finding(
        verdict,
        *both(TEXT["c15"], page=page, real=real, outside=len(outside), zoo=len(zoo)),
        {"page_example": page, "meta_llama_3_8b": real, "zoo_ffn_share_of_layer_matrices": zoo},
        "blocklab budget page-001-example && blocklab budget meta-llama-3-8b")


@claim("C23")
def c23(ctx: Context) -> Finding:
    doc = zoo_budget("meta-llama-3-8b", 4096)
    pre = doc["flops"]["prefill"]
    share = pre["ffn_share"]
    gf = {k: pre[k] / 1e9 for k in ("attention_proj", "attention_scores", "ffn", "lm_head",
                                    "total")}
    return Finding(
        "confirmed" if share >= 0.95 else "refuted",
        *both(TEXT["c23"], gf=gf, share=share),
        {"gflops": gf, "ffn_share": share, "page": {"attention_gflops": 68.7,
                                                     "ffn_gflops": 5897, "ffn_share": 0.99}},
        "blocklab budget meta-llama-3-8b --seq 4096", "prefill_split")


@claim("C24")
def c24(ctx: Context) -> Finding:
    contexts = [1024, 4096, 16384, 65536]
    docs = [zoo_budget("meta-llama-3-8b", t) for t in contexts]
    scores = [d["flops"]["decode"]["attention_scores"] for d in docs]
    ffn = [d["flops"]["decode"]["ffn"] for d in docs]
    intensity = docs[1]["memory"]["intensity"]
    decode_i, balance = intensity["decode_flops_per_byte"], intensity["balance_flops_per_byte"]
    linear = all(abs(s / scores[0] - t / contexts[0]) / (t / contexts[0]) < 0.01
                 for s, t in zip(scores, contexts, strict=True))
    ok = linear and len(set(ffn)) == 1 and decode_i < balance
    return Finding(
        "confirmed" if ok else "refuted",
        *both(TEXT["c24"], growth=scores[-1] / scores[0], first=contexts[0], last=contexts[-1],
               ffn_g=ffn[0] / 1e9, intensity=decode_i, balance=balance),
        {"contexts": contexts, "decode_score_flops": scores, "decode_ffn_flops": ffn,
         "intensity": intensity},
        "blocklab budget meta-llama-3-8b --seq 65536", "decode_split")


@claim("C25")
def c25(ctx: Context) -> Finding:
    from blocklab.budget import resolve_model
    from blocklab.budget.memory import layer_activation_elements

    cfg = resolve_model("meta-llama-3-8b").config
    counts = {p: layer_activation_elements(cfg.replace(placement=p), 1, 4096)["total_fused"]
              for p in ("pre", "post", "sandwich")}
    same = counts["pre"] == counts["post"]
    # Equal counts refute the contrast; unequal ones would leave its statements split (nothing
    # is saved for a backward pass at inference in either placement): mixed.
    return Finding(
        "refuted" if same else "mixed",
        *both(TEXT["c25"], counts=counts),
        {"layer_activation_elements": counts}, "blocklab budget meta-llama-3-8b --json")


def c26_verdict(extended_finite: bool, fp16_angles_nan: bool) -> str:
    """C26 from what was run: conditional when only float16 angles give NaN (the precision's
    NaN, not the table's)."""
    if not extended_finite:
        return "confirmed"
    return "conditional" if fp16_angles_nan else "refuted"


@claim("C26")
def c26(ctx: Context) -> Finding:
    import torch

    from blocklab.nn import RotaryEmbedding

    rope = RotaryEmbedding(64, max_seq_len=16)
    far = torch.arange(0, 100_000, 997)
    cos, sin = rope(far)
    finite = bool(torch.isfinite(cos).all() and torch.isfinite(sin).all())
    # Where NaN really comes from: angles m·θ_i formed in float16 overflow past 65,504.
    pos16 = torch.tensor([60_000.0, 70_000.0], dtype=torch.float16)
    angles16 = pos16 * torch.tensor(1.0, dtype=torch.float16)
    nan16 = torch.isnan(torch.cos(angles16)).tolist()
    return Finding(
        c26_verdict(finite, any(nan16)),
        *both(TEXT["c26"], finite=finite, nan16=nan16),
        {"extended_positions_finite": finite, "fp16_cos_nan_at": {"60000": nan16[0],
                                                                   "70000": nan16[1]}},
        "python -m pytest tests/nn/test_position.py -k far")


LONG_CONTEXT = 32_768  # tokens: a zoo model trained for at least this is a long-context one


def c27_verdict(wavelength_grows: bool, long_context_thetas: list[float]) -> str:
    """C27 from what was computed: conditional (on training at that base) when a larger base
    lengthens the slowest rotation and most long-context RoPE models of the zoo raised it."""
    if not wavelength_grows:
        return "refuted"
    raised = sum(theta > 1e4 for theta in long_context_thetas)
    return "conditional" if raised > len(long_context_thetas) - raised else "inconclusive"


@claim("C27")
def c27(ctx: Context) -> Finding:
    from blocklab.budget import list_zoo, resolve_model
    from blocklab.budget.doctor import rope_longest_wavelength

    configs = {name: resolve_model(name).config for name in list_zoo()}
    rows = [{"model": name, "rope_theta": cfg.rope_theta, "context": cfg.max_seq_len,
             "longest_wavelength": round(rope_longest_wavelength(cfg.rope_theta, cfg.rotary_dim))}
            for name, cfg in configs.items() if cfg.position == "rope"]
    w10k = rope_longest_wavelength(1e4, 128)
    w1m = rope_longest_wavelength(1e6, 128)
    long_thetas = [r["rope_theta"] for r in rows if r["context"] >= LONG_CONTEXT]
    kept = [r["model"] for r in rows if r["context"] >= LONG_CONTEXT and r["rope_theta"] <= 1e4]
    return Finding(
        c27_verdict(w1m > w10k, long_thetas),
        *(say(TEXT["c27"], lang, w10k=w10k, w1m=w1m, long=len(long_thetas),
              long_context=LONG_CONTEXT, raised=len(long_thetas) - len(kept),
              kept=say(TEXT["c27_sep"], lang).join(kept) or say(TEXT["c27_none"], lang))
          for lang in LANGS),
        {"zoo": rows, "longest_wavelength_theta_1e4": w10k, "longest_wavelength_theta_1e6": w1m},
        "blocklab doctor meta-llama-3-8b --serve-len 131072")


@claim("C28")
def c28(ctx: Context) -> Finding:
    from blocklab.budget import list_zoo, resolve_model
    from blocklab.budget.memory import ffn_branch_elements

    configs = {name: resolve_model(name).config for name in list_zoo()}
    ratios = {name: round(cfg.d_ff / cfg.d_model, 3) for name, cfg in configs.items()}
    base = resolve_model("meta-llama-3-8b").config
    at = {r: ffn_branch_elements(base.replace(d_ff=int(r * base.d_model)), 1, 4096)
          for r in (8 / 3, 3.5, 8.0)}
    top = max(ratios, key=ratios.get)
    at_eight = sorted(name for name, r in ratios.items() if r >= 8.0 - 1e-9)
    growth = at[8.0] / at[8 / 3]
    branch = {f"{k:.3f}": v for k, v in at.items()}
    if at_eight:
        return Finding(
            "confirmed",
            *both(TEXT["c28_at_eight"], models=", ".join(at_eight),
                   verb="uses" if len(at_eight) == 1 else "use", growth=growth),
            {"d_ff_over_d_model": ratios, "at_8x": at_eight, "branch_elements_by_ratio": branch},
            f"blocklab budget {at_eight[0]} --seq 4096")
    # the memory effect holds, and no model here shows the 8× the page names: mixed
    return Finding(
        "mixed",
        *both(TEXT["c28_none"], growth=growth, n=len(ratios), top=top, top_ratio=ratios[top]),
        {"d_ff_over_d_model": ratios, "branch_elements_by_ratio": branch}, "blocklab doctor CONFIG")


@claim("C22", scale_dependent=True)
def c22(ctx: Context) -> Finding:
    summary = ctx.summary("position")
    nearest = f"{ctx.suite_command('position')} (RoPE with YaRN/NTK at up to 8× the train length)"
    evidence: dict[str, object] = {"nearest_test": nearest}
    if summary is not None:
        arms = summary.data.arms
        # each read an Interval (the ledger writes its fields) or the words of a read not made
        evidence["scaled_arms"] = {k: dict(v.loss_beyond_L) for k, v in arms.items()
                                   if "yarn" in k or "ntk" in k or "dynamic" in k}
    return Finding("untestable-here", *TEXT["c22"], evidence, nearest)
