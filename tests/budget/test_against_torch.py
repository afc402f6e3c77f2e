"""The calculator against the real `blocklab.nn.DecoderLM`: parameters against the module's
tensors, FLOPs against `torch.utils.flop_counter.FlopCounterMode`.

What FlopCounterMode counts: mm/addmm/bmm (2 FLOPs per multiply-add, a bias add in addmm not
counted) and, for the CUDA flash/efficient/cuDNN attention kernels, QKᵀ and AV over all T_q·T_k
pairs whatever `is_causal` says, so it is compared with our non-causal count. It does not count
norms, activations, the gate product, softmax, RoPE, residual adds or embedding lookups; neither
do we. On CPU the default SDPA kernel (`_scaled_dot_product_flash_attention_for_cpu`) has no
formula registered in torch 2.13 and counts as 0, so these tests force the MATH backend, which
decomposes attention into two bmm calls that are counted in full (causal or not).
"""

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from blocklab.budget import count_params, decode_flops, prefill_flops
from blocklab.config import FFNS, ModelConfig
from blocklab.nn import DecoderLM, KVCache

BASE = dict(vocab_size=37, d_model=24, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=40,
            max_seq_len=32)

CONFIGS = {
    **{f"ffn-{name}": dict(ffn=name) for name in FFNS},
    "layernorm": dict(norm="layernorm"),
    "layernorm-no-bias": dict(norm="layernorm", norm_bias=False),
    "rmsnorm-unit-offset": dict(norm_unit_offset=True, norm_cast="gemma"),
    "post-norm": dict(placement="post", final_norm=False),
    "sandwich": dict(placement="sandwich", embed_scale=True),
    "no-final-norm": dict(final_norm=False),
    "pos-none": dict(position="none"),
    "pos-learned": dict(position="learned", norm="layernorm", ffn="gelu_tanh", attn_bias=True,
                        attn_out_bias=True, ffn_bias=True, tie_embeddings=True),  # GPT-2-like
    "pos-sinusoidal": dict(position="sinusoidal"),
    "pos-alibi": dict(position="alibi"),
    "rope-interleaved-partial": dict(rope_layout="interleaved", head_dim=8,
                                     partial_rotary_factor=0.5),
    "qwen2-biases": dict(attn_bias=True, attn_out_bias=False, tie_embeddings=True),
    "qwen3-qk-norm": dict(qk_norm=True, head_dim=8),
    "gemma2-like": dict(placement="sandwich", head_dim=8, n_kv_heads=2, ffn="geglu_tanh",
                        norm_unit_offset=True, embed_scale=True, tie_embeddings=True,
                        attn_logit_softcap=50.0, final_logit_softcap=30.0),
    "mqa-embed-norm": dict(n_kv_heads=1, embed_norm=True, norm="layernorm"),
    "sliding-window": dict(sliding_window=64),  # wider than T: same count as full attention
}

B, T = 2, 12


def _bucket(name: str) -> str:
    if name.startswith(("embed_tokens", "position", "embed_norm")):
        return "embedding"
    if name.startswith("lm_head"):
        return "lm_head"
    if ".attention." in name and "_proj" in name:
        return "attention"
    if ".ffn." in name:
        return "ffn"
    return "norm"  # attn_norm, ffn_norm, *_post_norm, q_norm, k_norm, final norm


def _model(overrides):
    torch.manual_seed(0)
    cfg = ModelConfig(**{**BASE, **overrides})
    return cfg, DecoderLM(cfg).eval()


@pytest.mark.parametrize("overrides", CONFIGS.values(), ids=CONFIGS.keys())
def test_params_equal_module_numel(overrides):
    cfg, model = _model(overrides)
    # named_parameters() yields a tied tensor once, under its first name (embed_tokens.weight).
    buckets = dict.fromkeys(["embedding", "attention", "ffn", "norm", "lm_head", "other"], 0)
    for name, p in model.named_parameters():
        buckets[_bucket(name)] += p.numel()
    counts = count_params(cfg)
    assert counts.total == sum(p.numel() for p in model.parameters())
    assert counts.buckets() == buckets


def _counted(model, ids, **kwargs):
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter, \
            torch.no_grad():
        model(ids, **kwargs)
    per_module = {k: sum(v.values()) for k, v in counter.get_flop_counts().items()}
    layers = range(model.config.n_layers)
    proj = sum(per_module.get(f"DecoderLM.layers.{i}.attention.{p}_proj", 0)
               for i in layers for p in "qkvo")
    attention = sum(per_module.get(f"DecoderLM.layers.{i}.attention", 0) for i in layers)
    ffn = sum(per_module.get(f"DecoderLM.layers.{i}.ffn", 0) for i in layers)
    parts = {"attention_proj": proj, "attention_scores": attention - proj, "ffn": ffn,
             "lm_head": per_module.get("DecoderLM.lm_head", 0)}
    return counter.get_total_flops(), parts


@pytest.mark.parametrize("overrides", CONFIGS.values(), ids=CONFIGS.keys())
def test_prefill_flops_match_flop_counter(overrides):
    cfg, model = _model(overrides)
    ids = torch.randint(0, cfg.vocab_size, (B, T))
    total, got = _counted(model, ids)
    ours = prefill_flops(cfg, B, T, causal=False)  # FlopCounterMode counts all T² pairs
    assert ours.total == total  # both count matmuls only, 2 FLOPs per multiply-add
    assert got == {k: getattr(ours, k) for k in got}


@pytest.mark.parametrize("name", ["ffn-swiglu", "pos-learned", "qwen3-qk-norm", "gemma2-like"])
def test_decode_step_flops_match_flop_counter(name):
    cfg, model = _model(CONFIGS[name])
    cache = KVCache(cfg.n_layers)
    with torch.no_grad():
        model(torch.randint(0, cfg.vocab_size, (B, T - 1)), cache=cache)
    total, got = _counted(model, torch.randint(0, cfg.vocab_size, (B, 1)), cache=cache)
    ours = decode_flops(cfg, B, T)  # one query attending T keys: T−1 cached and itself
    assert ours.total == total
    assert got == {k: getattr(ours, k) for k in got}


def test_default_cpu_kernel_is_not_counted():
    """Without the MATH backend, the CPU flash kernel counts 0 in torch 2.13 (or, should a
    later torch register it, the full count): our projection, FFN and head counts still hold."""
    cfg, model = _model(CONFIGS["ffn-swiglu"])
    ids = torch.randint(0, cfg.vocab_size, (B, T))
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(ids)
    ours = prefill_flops(cfg, B, T, causal=False)
    assert counter.get_total_flops() in (ours.total, ours.total - ours.attention_scores_full)
