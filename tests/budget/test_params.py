"""Parameter counts: a small config by hand, what DecoderLM cannot build (learned positions with
token types, a pooler), and bucket identities; each feature DecoderLM builds is counted against
its tensors in test_against_torch.py."""

from hypothesis import given, settings
from hypothesis import strategies as st

from blocklab.budget.params import count_params
from blocklab.config import ModelConfig

# vocab 10, d 8, 2 layers, 2 heads of 4, 1 KV head, d_ff 12, SwiGLU, RMSNorm, pre-norm, untied.
TINY = dict(vocab_size=10, d_model=8, n_layers=2, n_heads=2, n_kv_heads=1, d_ff=12,
            ffn="swiglu", max_seq_len=16)


def test_tiny_by_hand():
    p = count_params(ModelConfig(**TINY))
    # q [8, 8], k and v [4, 8], o [8, 8]
    assert (p.layer["q_proj"], p.layer["k_proj"], p.layer["v_proj"], p.layer["o_proj"]) == (
        64, 32, 32, 64)
    assert p.layer["gate_proj"] == p.layer["up_proj"] == p.layer["down_proj"] == 96
    assert p.layer["attn_norm"] == p.layer["ffn_norm"] == 8
    assert p.per_layer == 64 + 32 + 32 + 64 + 3 * 96 + 16 == 496
    assert p.total == 80 + 2 * 496 + 8 + 80 == 1160
    assert p.buckets() == {"embedding": 80, "attention": 384, "ffn": 576, "norm": 40,
                           "lm_head": 80, "other": 0}
    # Learned positions, token types, an embedding norm and a pooler: what DecoderLM cannot build.
    cfg = ModelConfig(**{**TINY, "ffn": "gelu"}, position="learned", type_vocab_size=2,
                      embed_norm=True, norm="layernorm", pooler=True, final_norm=False,
                      placement="post", tie_embeddings=True, causal=False)
    p = count_params(cfg)
    assert p.model["position_embedding"] == 16 * 8
    assert p.model["token_type_embedding"] == 2 * 8
    assert p.model["embed_norm"] == 16
    buckets = p.buckets()
    assert buckets["embedding"] == 80 + 128 + 16 + 16
    assert buckets["other"] == p.model["pooler"] == 8 * 8 + 8
    assert buckets["lm_head"] == 0 and p.model["final_norm"] == 0


@given(d_heads=st.integers(1, 4), n_heads=st.sampled_from([1, 2, 4]), group=st.sampled_from(
       [1, 2]), n_layers=st.integers(1, 3), d_ff=st.integers(1, 40),
       ffn=st.sampled_from(["relu", "swiglu", "geglu"]), norm=st.sampled_from(
       ["rmsnorm", "layernorm"]), placement=st.sampled_from(["pre", "post", "sandwich"]),
       position=st.sampled_from(["rope", "learned", "none"]), bias=st.booleans(),
       tie=st.booleans(), qk=st.booleans())
@settings(max_examples=60, deadline=None)
def test_buckets_and_components_sum_to_total(d_heads, n_heads, group, n_layers, d_ff, ffn, norm,
                                             placement, position, bias, tie, qk):
    n_kv = max(1, n_heads // group)
    cfg = ModelConfig(vocab_size=7, d_model=2 * d_heads * n_heads, n_heads=n_heads,
                      n_kv_heads=n_kv, n_layers=n_layers, d_ff=d_ff, ffn=ffn, norm=norm,
                      placement=placement, position=position, attn_bias=bias, ffn_bias=bias,
                      tie_embeddings=tie, qk_norm=qk, max_seq_len=9)
    p = count_params(cfg)
    assert sum(p.buckets().values()) == p.total
    assert sum(p.components().values()) == p.total
    assert p.total == p.n_layers * p.per_layer + sum(p.model.values())
