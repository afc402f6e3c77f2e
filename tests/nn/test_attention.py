"""blocklab.nn.attention against a naive per-head loop in float64; KV-cache decoding against the
full recompute is checked on the whole model (test_model.py)."""

import math

import pytest
import torch
from torch.testing import assert_close

from blocklab.nn.attention import Attention, KVCache, LayerCache, attention_mask
from blocklab.nn.norm import RMSNorm
from blocklab.nn.position import ALiBi, RotaryEmbedding

from .conftest import F64, randn

D, H, HKV, HD = 24, 4, 2, 8


pytestmark = pytest.mark.usefixtures("one_thread")


def _attention(dtype=torch.float64, seed=0, qk_norm=False, **kwargs):
    torch.manual_seed(seed)
    if qk_norm:
        kwargs.update(q_norm=RMSNorm(HD), k_norm=RMSNorm(HD))
    attn = Attention(D, H, kwargs.pop("n_kv_heads", HKV), HD, kwargs.pop("qkv_bias", True),
                     kwargs.pop("out_bias", True), **kwargs).to(dtype)
    with torch.no_grad():  # biases start at zero; make them count
        for p in attn.parameters():
            p.copy_(randn(*p.shape, dtype=dtype, seed=p.numel()) * 0.3)
    return attn


def _naive(attn, x, rope=None, bias=None):
    """softmax(scale · q_h k_gᵀ (+ softcap, bias, window, causal)) v_g per head h, g = h // group,
    one query at a time with Python loops: independent of SDPA, masks and repeat_kv."""
    B, T, _ = x.shape
    group = attn.n_heads // attn.n_kv_heads
    q = (x @ attn.q_proj.weight.T + attn.q_proj.bias).view(B, T, attn.n_heads, HD)
    k = (x @ attn.k_proj.weight.T + attn.k_proj.bias).view(B, T, attn.n_kv_heads, HD)
    v = (x @ attn.v_proj.weight.T + attn.v_proj.bias).view(B, T, attn.n_kv_heads, HD)
    if attn.q_norm is not None:
        q, k = attn.q_norm(q), attn.k_norm(k)
    if rope is not None:
        cos, sin = (t.to(x.dtype) for t in rope)
        half = HD // 2

        def rot(t):
            a, b = t[..., :half], t[..., half:]
            c, s = cos[None, :, None, :half], sin[None, :, None, :half]
            return torch.cat((a * c - b * s, b * c + a * s), dim=-1)

        q, k = rot(q), rot(k)
    out = torch.zeros(B, T, attn.n_heads, HD, dtype=x.dtype)
    for b in range(B):
        for h in range(attn.n_heads):
            g = h // group
            for i in range(T):
                lo = 0 if attn.sliding_window is None else max(0, i - attn.sliding_window + 1)
                keys = range(lo, i + 1)
                s = torch.stack([q[b, i, h] @ k[b, j, g] for j in keys]) * attn.scale
                if attn.logit_softcap is not None:
                    s = attn.logit_softcap * torch.tanh(s / attn.logit_softcap)
                if bias is not None:
                    s = s + bias[0, h, i, lo:i + 1].to(x.dtype)
                w = torch.softmax(s, dim=0)
                out[b, i, h] = sum(w[n] * v[b, j, g] for n, j in enumerate(keys))
    return out.reshape(B, T, -1) @ attn.o_proj.weight.T + attn.o_proj.bias


VARIANTS = {
    "mha": dict(n_kv_heads=H),
    "gqa": dict(),
    "mqa": dict(n_kv_heads=1),
    "window": dict(sliding_window=3),
    "softcap": dict(logit_softcap=2.0),
    "scale": dict(scale=0.5),
    "qk_norm": dict(qk_norm=True),
    "softcap_window": dict(logit_softcap=1.5, sliding_window=4),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_attention_matches_naive_loop_float64(name):
    attn = _attention(**VARIANTS[name])
    x = randn(2, 7, D, dtype=torch.float64, seed=1)
    assert_close(attn(x), _naive(attn, x), **F64)


@pytest.mark.parametrize("softcap", [None, 2.0])
def test_attention_with_rope_and_alibi_matches_naive(softcap):
    attn = _attention(logit_softcap=softcap)
    x = randn(1, 6, D, dtype=torch.float64, seed=2)
    positions = torch.arange(6)
    rope = RotaryEmbedding(HD)(positions)
    assert_close(attn(x, rope=rope), _naive(attn, x, rope=rope), **F64)
    bias = ALiBi(H)(positions, positions)
    assert_close(attn(x, bias=bias), _naive(attn, x, bias=bias), **F64)


def test_attention_mask_window_counts_itself():
    # Window 3 at index 5 sees keys 3, 4, 5 (Hugging Face's `kv_idx > q_idx - window`).
    allowed = attention_mask(1, 8, past=5, sliding_window=3)
    assert allowed[0].nonzero().flatten().tolist() == [3, 4, 5]
    assert attention_mask(3, 3, past=0).tolist() == [[True, False, False], [True, True, False],
                                                     [True, True, True]]


def test_caches_hold_one_slot_per_layer_and_a_preallocated_one_raises_when_full():
    attn = _attention(torch.float32)
    layer = LayerCache(max_len=4)
    attn(torch.randn(1, 3, D), cache=layer)
    with pytest.raises(ValueError, match="max_len=4"):
        attn(torch.randn(1, 2, D), cache=layer)
    cache = KVCache(3, max_len=8)
    assert len(cache) == 3 and cache.length == 0
    cache[0].update(torch.zeros(1, 2, 5, 4), torch.zeros(1, 2, 5, 4))
    assert cache.length == 5 and cache[1].length == 0


@pytest.mark.parametrize("make, match", [
    (lambda: KVCache(0), "n_layers"),
    (lambda: KVCache(2, max_len=0), "max_len"),
    (lambda: Attention(D, 4, 3, HD), "n_kv_heads=3"),
    (lambda: Attention(D, 4, 2, HD, rope_layout="meta"), "rope_layout='meta'"),
    (lambda: Attention(D, 4, 2, HD, q_norm=RMSNorm(HD)), "q_norm and k_norm"),
])
def test_bad_arguments_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_default_scale_and_dtype():
    attn = _attention(torch.bfloat16)
    assert attn.scale == pytest.approx(1 / math.sqrt(HD))
    y = attn(torch.randn(1, 4, D, dtype=torch.bfloat16))
    assert y.dtype == torch.bfloat16 and y.shape == (1, 4, D)


@pytest.mark.parametrize("n_kv_heads", [H, HKV])
def test_packed_qkv_computes_the_same_function(n_kv_heads):
    plain = _attention(n_kv_heads=n_kv_heads, qk_norm=True)
    fused = _attention(n_kv_heads=n_kv_heads, qk_norm=True, packed_qkv=True)
    state = plain.state_dict()
    for kind in ("weight", "bias"):
        state[f"qkv_proj.{kind}"] = torch.cat([state.pop(f"{p}_proj.{kind}") for p in "qkv"])
    fused.load_state_dict(state)
    x = randn(2, 5, D, dtype=torch.float64, seed=5)
    rope = RotaryEmbedding(HD)(torch.arange(5))
    assert_close(fused(x, rope=rope), plain(x, rope=rope), **F64)
