"""blocklab.nn.position against Hugging Face Llama RoPE, the RoPE relative-position identity,
hand-written ALiBi slopes and the sinusoidal formula. The interleaved layout is checked against
the half-split one with permuted weights here, and against transformers on a whole model in
tests/interop/test_hf.py.

Tolerances: Hugging Face parity in float32 is exact (same ops, same order); the relative-position
property holds to 1e-9 in float64.
"""

import math

import pytest
import torch
import transformers.models.llama.modeling_llama as modeling_llama
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

from blocklab.nn.position import (
    ALiBi,
    LearnedPositions,
    RotaryEmbedding,
    SinusoidalPositions,
    alibi_slopes,
    apply_rotary,
    permute_rotary_rows,
    rotary_cos_sin,
)
from blocklab.nn.rope_scaling import rope_frequencies

from .conftest import EXACT, hf_llama_config, randn

LAYOUTS = ["half_split", "interleaved"]


# --- Hugging Face parity -------------------------------------------------------------------
@pytest.mark.parametrize("batched_positions", [False, True])
def test_apply_rotary_half_split_matches_hf_apply_rotary_pos_emb(batched_positions):
    B, H, H_kv, T, D = 2, 4, 2, 7, 16
    q, k = randn(B, H, T, D, seed=1), randn(B, H_kv, T, D, seed=2)
    rope = RotaryEmbedding(D, theta=500.0, max_seq_len=32)
    positions = torch.arange(3, 3 + T)
    if batched_positions:
        positions = torch.stack((positions, torch.arange(20, 20 + T)))  # [B, T]
    cos, sin = rope(positions)
    hf_cos, hf_sin = (cos, sin) if batched_positions else (cos.expand(B, T, D), sin.expand(B, T, D))
    expected_q, expected_k = modeling_llama.apply_rotary_pos_emb(q, k, hf_cos, hf_sin)
    out_q, out_k = apply_rotary(q, k, cos, sin, "half_split")
    assert_close(out_q, expected_q, **EXACT)  # dtypes too
    assert_close(out_k, expected_k, **EXACT)


HF_MODULE_CASES = {
    "default": ({}, 64),
    "linear": ({"rope_type": "linear", "factor": 4.0}, 64),
    "yarn": ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}, 256),
    "llama3": ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                "high_freq_factor": 4.0, "original_max_position_embeddings": 64}, 512),
}


@pytest.mark.parametrize("case", sorted(HF_MODULE_CASES))
def test_rotary_embedding_cos_sin_match_hf_llama(case):
    scaling, max_pos = HF_MODULE_CASES[case]
    head_dim, theta = 32, 10000.0
    hf = modeling_llama.LlamaRotaryEmbedding(hf_llama_config(head_dim, theta, scaling, max_pos))
    ours = RotaryEmbedding(head_dim, theta=theta, scaling=scaling or None, max_seq_len=max_pos)
    positions = torch.tensor([[0, 1, 2, 50, 63], [7, 100, 200, max_pos - 1, 3]])
    x = torch.zeros(1, dtype=torch.float32)
    hf_cos, hf_sin = hf(x, positions)
    cos, sin = ours(positions)
    assert ours.attention_factor == hf.attention_scaling
    assert_close(cos, hf_cos, **EXACT)
    assert_close(sin, hf_sin, **EXACT)


# --- interleaved layout ------------------------------------------------------------------------
def test_interleaved_with_meta_weights_equals_half_split_with_permuted_weights():
    # Partial rotary (8 of 16 channels); the whole head is checked against transformers in
    # tests/interop/test_hf.py.
    B, T, d_model, n_heads, head_dim, rotary_dim = 2, 6, 24, 3, 16, 8
    x = randn(B, T, d_model, seed=5)
    w_q, w_k = (
        randn(n_heads * head_dim, d_model, seed=6),
        randn(n_heads * head_dim, d_model, seed=7),
    )
    prf = rotary_dim / head_dim
    positions = torch.arange(10, 10 + T)

    def heads(x, w):  # [B, T, d_model] -> [B, H, T, head_dim]
        return (x @ w.T).view(B, T, n_heads, head_dim).transpose(1, 2)

    def rotate(layout, w_q, w_k):
        cos, sin = RotaryEmbedding(head_dim, partial_rotary_factor=prf, layout=layout)(positions)
        return apply_rotary(heads(x, w_q), heads(x, w_k), cos, sin, layout)

    q_meta, k_meta = rotate("interleaved", w_q, w_k)
    permuted = [
        permute_rotary_rows(w, n_heads, head_dim, "half_split", rotary_dim) for w in (w_q, w_k)
    ]
    q_hf, k_hf = rotate("half_split", *permuted)

    # Same vectors up to the channel order in each head: half-split c*r/2 + i <- interleaved 2i + c.
    order = torch.cat((torch.arange(0, rotary_dim, 2), torch.arange(1, rotary_dim, 2)))
    order = torch.cat((order, torch.arange(rotary_dim, head_dim)))
    assert_close(q_hf, q_meta[..., order], atol=1e-5, rtol=1e-5)
    assert_close(k_hf, k_meta[..., order], atol=1e-5, rtol=1e-5)
    # Hence the same attention scores.
    assert_close(
        q_hf @ k_hf.transpose(-1, -2), q_meta @ k_meta.transpose(-1, -2), atol=1e-4, rtol=1e-5
    )


@pytest.mark.parametrize("shape", [(2 * 8, 12), (2 * 8,)])
@pytest.mark.parametrize("rotary_dim", [None, 4])
def test_permutations_are_inverse_and_match_hf_conversion(shape, rotary_dim):
    n_heads, head_dim = 2, 8
    w = randn(*shape, seed=8)
    permuted = permute_rotary_rows(w, n_heads, head_dim, "half_split", rotary_dim)
    assert torch.equal(permute_rotary_rows(permuted, n_heads, head_dim, "interleaved", rotary_dim),
                       w)
    if rotary_dim is None and len(shape) == 2:
        # transformers' convert_llama_weights_to_hf.py permute(), written out here.
        hf = w.view(n_heads, head_dim // 2, 2, shape[1]).transpose(1, 2).reshape(shape)
        assert torch.equal(permuted, hf)


# --- RoPE properties ---------------------------------------------------------------------------
def _scores(q, k, cos, sin, layout):
    q_rot, k_rot = apply_rotary(q, k, cos, sin, layout)
    return (q_rot[..., 0, :] * k_rot[..., 1, :]).sum(-1)  # query at slot 0, key at slot 1


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(0, 10**6),
    n=st.integers(0, 10**6),
    shift=st.integers(0, 10**6),
    layout=st.sampled_from(LAYOUTS),
    seed=st.integers(0, 2**16),
)
def test_rope_score_depends_only_on_offset_float64(m, n, shift, layout, seed):
    D = 16
    q, k = (
        randn(1, 2, 2, D, dtype=torch.float64, seed=seed),
        randn(1, 2, 2, D, dtype=torch.float64, seed=seed + 1),
    )
    inv_freq = rope_frequencies(D, 10000.0)[0].double()
    before = _scores(q, k, *rotary_cos_sin(torch.tensor([m, n]), inv_freq, layout), layout)
    after = _scores(
        q, k, *rotary_cos_sin(torch.tensor([m + shift, n + shift]), inv_freq, layout), layout
    )
    assert after.dtype == torch.float64
    assert_close(after, before, atol=1e-9, rtol=0.0)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_partial_rotary_leaves_the_rest_untouched(layout):
    B, H, T, head_dim, prf = 2, 3, 5, 32, 0.25
    q, k = randn(B, H, T, head_dim, seed=9), randn(B, H, T, head_dim, seed=10)
    positions = torch.arange(T) * 7
    rope = RotaryEmbedding(head_dim, partial_rotary_factor=prf, layout=layout)
    assert rope.rotary_dim == 8
    cos, sin = rope(positions)
    assert cos.shape == (T, 8)
    out_q, out_k = apply_rotary(q, k, cos, sin, layout)
    assert torch.equal(out_q[..., 8:], q[..., 8:]) and torch.equal(out_k[..., 8:], k[..., 8:])
    # The rotated part is ordinary RoPE on an 8-channel head (same frequencies: theta^(-2i/8)).
    full = RotaryEmbedding(8, layout=layout)
    expected_q, _ = apply_rotary(q[..., :8], k[..., :8], *full(positions), layout)
    assert_close(out_q[..., :8], expected_q, **EXACT)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_apply_rotary_computes_in_float32_and_casts_back(dtype):
    q, k = randn(2, 2, 6, 16, seed=13).to(dtype), randn(2, 2, 6, 16, seed=14).to(dtype)
    cos, sin = RotaryEmbedding(16, partial_rotary_factor=0.5)(torch.arange(100, 106))
    out_q, out_k = apply_rotary(q, k, cos, sin)
    ref_q, ref_k = apply_rotary(q.float(), k.float(), cos, sin)
    assert_close(out_q, ref_q.to(dtype), **EXACT)  # one rounding, at the end; dtypes too
    assert_close(out_k, ref_k.to(dtype), **EXACT)


# --- positions past the cache (claim C26: no NaN) ---------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(
    "scaling",
    [None, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16}],
)
def test_positions_far_past_cache_extend_it(layout, scaling):
    max_seq_len = 16
    rope = RotaryEmbedding(32, layout=layout, scaling=scaling, max_seq_len=max_seq_len)
    early = rope(torch.arange(max_seq_len))
    positions = torch.tensor([[0, 5, 10 * max_seq_len - 1], [159, 100, 17]])  # up to 10x
    cos, sin = rope(positions)
    assert cos.shape == sin.shape == (2, 3, 32)
    assert torch.isfinite(cos).all() and torch.isfinite(sin).all()
    assert rope.cos_cached.shape[0] >= 10 * max_seq_len
    fresh = RotaryEmbedding(32, layout=layout, scaling=scaling, max_seq_len=10 * max_seq_len)
    fresh_cos, fresh_sin = fresh(positions)
    assert_close(cos, fresh_cos, **EXACT)
    assert_close(sin, fresh_sin, **EXACT)
    direct = rotary_cos_sin(positions, fresh.inv_freq, layout, fresh.attention_factor)
    assert_close(cos, direct[0], **EXACT)
    # Extending does not change what earlier positions get.
    later = rope(torch.arange(max_seq_len))
    assert_close(later[0], early[0], **EXACT)
    assert_close(later[1], early[1], **EXACT)


def test_cache_grows_geometrically_stays_float32_and_out_of_the_state_dict():
    rope = RotaryEmbedding(8, max_seq_len=10)
    rope(torch.tensor([10]))
    assert rope.cos_cached.shape[0] == 20
    rope(torch.tensor([1000]))
    assert rope.cos_cached.shape[0] == 1001
    cos, sin = RotaryEmbedding(16, max_seq_len=8).to(torch.bfloat16)(torch.arange(6))
    assert cos.dtype == sin.dtype == torch.float32
    assert_close(cos, RotaryEmbedding(16, max_seq_len=8)(torch.arange(6))[0], **EXACT)
    assert RotaryEmbedding(16).state_dict() == {}
    assert ALiBi(4).state_dict() == {}


Q8, Q4, CS8 = torch.zeros(1, 1, 2, 8), torch.zeros(1, 1, 2, 4), torch.zeros(2, 8)


@pytest.mark.parametrize(
    "call, fragment",
    [
        (lambda: RotaryEmbedding(16, layout="neox"), "'neox'"),
        (lambda: RotaryEmbedding(16, scaling={"rope_type": "su"}), "'su'"),
        (lambda: RotaryEmbedding(16, max_seq_len=0), "0"),
        (lambda: RotaryEmbedding(16)(torch.tensor([3, -1])), "-1"),
        (lambda: RotaryEmbedding(16)(torch.tensor([0.0, 1.0])), "float32"),
        (lambda: RotaryEmbedding(16)(torch.zeros(1, 1, 1, dtype=torch.long)), "(1, 1, 1)"),
        (lambda: apply_rotary(Q8, Q8, CS8, CS8, "x"), "'x'"),
        (lambda: apply_rotary(Q4, Q4, CS8, CS8), "(1, 1, 2, 4)"),
        (lambda: permute_rotary_rows(torch.zeros(10, 4), 2, 4, "half_split"), "(10, 4)"),
        (lambda: permute_rotary_rows(torch.zeros(8, 4), 2, 4, "half_split", rotary_dim=3), "3"),
        (lambda: alibi_slopes(0), "0"),
        (lambda: SinusoidalPositions(7), "7"),
    ],
)
def test_bad_arguments_raise_one_line(call, fragment):
    with pytest.raises(ValueError) as info:
        call()
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


# --- ALiBi ---------------------------------------------------------------------------------------
EIGHT = [2.0**-h for h in range(1, 9)]  # 1/2 ... 1/256


@pytest.mark.parametrize("n_heads, expected", [
    (8, EIGHT),
    (16, [2.0 ** -(h / 2) for h in range(1, 17)]),  # ratio 2^(-1/2)
    # Not a power of two: the 8 of 8 heads, then every other slope of 16 heads.
    (12, EIGHT + [2**-0.5, 2**-1.5, 2**-2.5, 2**-3.5]),
    (1, [1 / 256]), (2, [1 / 16, 1 / 256]), (3, [1 / 16, 1 / 256, 1 / 4]),
])
def test_alibi_slopes_by_hand(n_heads, expected):
    assert_close(alibi_slopes(n_heads), torch.tensor(expected), **EXACT)


def test_alibi_bias_shape_sign_values_decoding_and_batches():
    n_heads, T = 4, 5
    bias = ALiBi(n_heads)(torch.arange(T), torch.arange(T))
    slopes = [2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8]
    # slope · (j − i): 0 on the diagonal, the more negative the farther back the key
    expected = torch.tensor(
        [[[[s * (j - i) for j in range(T)] for i in range(T)] for s in slopes]], dtype=torch.float32
    )
    assert_close(bias, expected, **EXACT)  # [1, H, T, T] float32
    alibi = ALiBi(8)  # decoding one query, and batched positions
    one_query = alibi(torch.tensor([99]), torch.arange(100))
    assert one_query.shape == (1, 8, 1, 100)
    full = alibi(torch.arange(100), torch.arange(100))
    assert_close(one_query[..., 0, :], full[..., 99, :], **EXACT)
    q_pos = torch.tensor([[3, 4], [10, 11]])
    k_pos = torch.tensor([[0, 1, 2, 3, 4], [7, 8, 9, 10, 11]])
    batched = alibi(q_pos, k_pos)
    assert batched.shape == (2, 8, 2, 5)
    assert_close(batched[0], batched[1], **EXACT)  # only offsets matter


# --- absolute positions --------------------------------------------------------------------------
def test_sinusoidal_matches_hand_formula():
    d_model, base = 8, 10000.0
    positions = [0, 1, 2, 17, 511, 4096, 100_000]
    expected = torch.tensor(
        [
            [
                math.sin(p / base ** (c / d_model))
                if c % 2 == 0
                else math.cos(p / base ** ((c - 1) / d_model))
                for c in range(d_model)
            ]
            for p in positions
        ],
        dtype=torch.float64,
    )
    table = SinusoidalPositions(d_model, base)(torch.tensor(positions))
    assert table.shape == (len(positions), d_model) and table.dtype == torch.float32
    assert_close(table.double(), expected, atol=1e-7, rtol=0.0)
    assert_close(table[0], torch.tensor([0.0, 1.0] * (d_model // 2)), **EXACT)
    batched = SinusoidalPositions(d_model, base)(torch.tensor([[0, 3], [17, 100_000]]))
    assert batched.shape == (2, 2, d_model)
    assert_close(batched[1], table[[3, 6]], **EXACT)


def test_learned_positions_lookup_and_limit():
    learned = LearnedPositions(max_seq_len=8, d_model=4)
    out = learned(torch.tensor([[0, 7], [3, 3]]))
    assert out.shape == (2, 2, 4)
    assert_close(out[0, 1], learned.embedding.weight[7], **EXACT)
    with pytest.raises(ValueError) as info:
        learned(torch.arange(9))
    message = str(info.value)
    assert message.startswith("position 8 exceeds learned table of max_seq_len=8; ")
    assert "\n" not in message
