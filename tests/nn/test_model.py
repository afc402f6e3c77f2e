"""blocklab.nn.model: KV-cache decoding against the full recompute, generate(), every FFN × norm
× placement, and the config options DecoderLM refuses."""

import itertools
import logging
import math
from unittest import mock

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from blocklab.config import FFNS, NORMS, PLACEMENTS, ModelConfig
from blocklab.errors import InputError
from blocklab.nn import DecoderLM, KVCache

F32 = dict(atol=1e-5, rtol=1e-5)
TINY = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=48,
            max_seq_len=32)


pytestmark = pytest.mark.usefixtures("one_thread")


def _model(seed=0, std=0.3, packed_gate_up=False, packed_qkv=False, **changes):
    """A tiny model with large random weights, so that logits are far from uniform and greedy
    decoding has no near-ties for rounding to flip."""
    model = DecoderLM(ModelConfig(**{**TINY, **changes}), packed_gate_up=packed_gate_up,
                      packed_qkv=packed_qkv)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * std + (1.0 if p.dim() == 1 else 0.0))
    return model.eval()


def _ids(batch=2, length=12, seed=1):
    return torch.randint(0, TINY["vocab_size"], (batch, length),
                         generator=torch.Generator().manual_seed(seed))


SCHEMES = {
    "rope": dict(position="rope"),
    "rope_interleaved_partial": dict(position="rope", rope_layout="interleaved",
                                     partial_rotary_factor=0.5),
    "alibi": dict(position="alibi"),
    "learned": dict(position="learned"),
    "sinusoidal": dict(position="sinusoidal"),
    "none": dict(position="none"),
    "mha": dict(position="rope", n_kv_heads=4),
    "mqa": dict(position="rope", n_kv_heads=1),
    "window": dict(position="rope", sliding_window=4),
    "fused_gqa": dict(position="rope", packed_qkv=True, packed_gate_up=True),
    "gemma_like": dict(position="rope", placement="sandwich", norm_unit_offset=True,
                       norm_cast="gemma", embed_scale=True, attn_logit_softcap=5.0,
                       final_logit_softcap=10.0, qk_norm=True, tie_embeddings=True),
}


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
@pytest.mark.parametrize("max_len", [None, 12])
def test_cache_decode_equals_full_recompute(scheme, max_len):
    model = _model(**SCHEMES[scheme])
    ids = _ids()
    with torch.no_grad():
        full = model(ids)
        cache = KVCache(model.config.n_layers, max_len=max_len)
        # a prompt, single tokens, then a chunk of several past a non-empty cache
        bounds = [0, 5, 6, 7, 8, 12]
        steps = [model(ids[:, a:b], cache=cache) for a, b in itertools.pairwise(bounds)]
    assert cache.length == 12
    # One-token and full-sequence attention sum in different orders: float32 rounding of the
    # logits' scale (|logits| ~ 6 here), so atol is relative to the largest logit.
    assert_close(torch.cat(steps, dim=1), full, rtol=1e-5, atol=5e-6 * full.abs().max().item())


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_greedy_generate_with_cache_equals_recompute(scheme):
    model = _model(**SCHEMES[scheme])
    prompt = _ids(length=4)
    cached = model.generate(prompt, max_new_tokens=10, use_cache=True)
    recomputed = model.generate(prompt, max_new_tokens=10, use_cache=False)
    assert cached.shape == (2, 14)
    assert torch.equal(cached[:, :4], prompt)
    assert torch.equal(cached, recomputed)
    # Every generated token is the argmax of the full recompute at the step before it.
    with torch.no_grad():
        logits = model(cached[:, :-1])
    assert torch.equal(logits[:, 3:].argmax(-1), cached[:, 4:])


@pytest.mark.parametrize("ffn, norm, placement",
                         list(itertools.product(sorted(FFNS), NORMS, PLACEMENTS)))
def test_every_ffn_norm_placement_trains(ffn, norm, placement):
    cfg = ModelConfig(vocab_size=32, d_model=16, n_layers=1, n_heads=2, d_ff=24, ffn=ffn,
                      norm=norm, placement=placement, max_seq_len=16)
    model = DecoderLM(cfg)
    ids = _ids(batch=2, length=6) % 32
    logits = model(ids)
    assert logits.shape == (2, 6, 32) and logits.dtype == torch.float32
    loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 32),
                                             ids[:, 1:].reshape(-1))
    loss.backward()
    assert torch.isfinite(loss)
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name


@pytest.mark.parametrize("field, value, match", [
    ("causal", False, "causal"), ("pooler", True, "pooler"),
    ("type_vocab_size", 2, "type_vocab_size"),
    ("n_experts", 2, "n_experts=2: MoE layers are counted by blocklab.budget but not built"),
    ("nope_every", 2, "nope_every=2.*not built by blocklab.nn"),
])
def test_unsupported_options_raise_naming_the_field(field, value, match):
    with pytest.raises(ValueError, match=match):
        DecoderLM(ModelConfig(**{**TINY, field: value}))


def test_default_init_and_final_softcap():
    model = DecoderLM(ModelConfig(**{**TINY, "d_model": 128, "n_heads": 4}))
    weight = model.layers[0].attention.q_proj.weight
    assert abs(weight.std().item() - 0.02) < 0.002
    assert torch.equal(model.layers[0].attn_norm.weight, torch.ones(128))
    capped = _model(final_logit_softcap=2.0)
    with torch.no_grad():
        assert capped(_ids()).abs().max() < 2.0


def test_explicit_positions_shift_rope_scores_only_through_differences():
    # Claim C20 at model level: without absolute positions, shifting every position by the same
    # offset leaves the logits unchanged (RoPE and ALiBi see only m - n).
    for position in ("rope", "alibi"):
        model = _model(position=position)
        ids = _ids(length=6)
        with torch.no_grad():
            base = model(ids)
            shifted = model(ids, positions=torch.arange(6) + 11)
        assert_close(shifted, base, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("scheme", ["rope", "alibi", "learned", "gemma_like"])
def test_forward_is_one_graph_for_torch_compile(scheme):
    """Positions the model makes itself are not read back, so dynamo captures one graph."""
    import torch._dynamo
    torch._dynamo.reset()
    explained = torch._dynamo.explain(_model(**SCHEMES[scheme]))(_ids())
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), \
        [b.reason for b in explained.break_reasons]


def test_compiled_model_matches_eager_and_reports_its_warm_up(caplog):
    eager = _model(position="rope")
    compiled = DecoderLM(eager.config, backend="compiled")
    compiled.load_state_dict(eager.state_dict())
    assert list(compiled.state_dict()) == list(eager.state_dict())
    ids = _ids()
    with caplog.at_level(logging.INFO, logger="blocklab.nn.model"):
        seconds = compiled.warm_up(ids)
    assert seconds > 0
    assert "DecoderLM warm-up (compiled)" in caplog.text
    assert all(p.grad is None for p in compiled.parameters())  # warm-up leaves no gradients
    for model in (eager, compiled):
        model.zero_grad()
        model(ids).square().mean().backward()
    assert_close(compiled(ids), eager(ids), **F32)
    for (name, p), q in zip(compiled.named_parameters(), eager.parameters(), strict=True):
        assert_close(p.grad, q.grad, **F32, msg=name)
    # The id check runs eagerly before the graph: the same InputError, never an index error.
    with pytest.raises(InputError, match="holds token id 64"):
        compiled(torch.full_like(ids, 64))


# --- generate() checks every argument before it builds a cache or computes a token ----------
LEARNED = dict(position="learned", max_seq_len=8)
PROMPT = torch.tensor([[1, 2, 3, 4]])


@pytest.fixture
def nothing_computed(monkeypatch):
    """`nothing_computed()`: how many KV caches were built and forward passes run, inside
    blocklab.nn.model."""
    cache = mock.Mock(wraps=KVCache)
    forward = mock.create_autospec(DecoderLM.forward, side_effect=DecoderLM.forward)
    monkeypatch.setattr("blocklab.nn.model.KVCache", cache)
    monkeypatch.setattr(DecoderLM, "forward", forward)

    def counts():
        return {"caches": cache.call_count, "forwards": forward.call_count}

    return counts


BAD_GENERATE = {  # id: (prompt, kwargs, what the message must name)
    "empty prompt": (torch.zeros(1, 0, dtype=torch.long), {}, r"input_ids \(the prompt\) is empty"),
    "empty batch": (torch.zeros(0, 3, dtype=torch.long), {}, r"input_ids \(the prompt\) is empty"),
    "list prompt": ([[1, 2, 3]], {}, r"input_ids \(the prompt\) must be a tensor, got list"),
    "1-D prompt": (torch.tensor([1, 2]), {}, r"input_ids \(the prompt\) must be \[B, T\]"),
    "3-D prompt": (PROMPT[None], {}, r"input_ids \(the prompt\) must be \[B, T\].*\(1, 1, 4\)"),
    "float prompt": (PROMPT.float(), {}, r"input_ids \(the prompt\) must be an integer"),
    "bool prompt": (PROMPT > 2, {}, r"input_ids \(the prompt\) must be an integer"),
    "negative id": (PROMPT - 2, {}, r"input_ids \(the prompt\) holds token id -1"),
    "id = vocab": (PROMPT + 60, {}, r"input_ids \(the prompt\) holds token id 64.*\[0, 64\)"),
    "prompt on another device": (PROMPT.to("meta"), {}, r"input_ids \(the prompt\) is on meta"),
    "max_new_tokens -1": (PROMPT, {"max_new_tokens": -1}, r"max_new_tokens=-1"),
    "max_new_tokens True": (PROMPT, {"max_new_tokens": True}, r"max_new_tokens=True"),
    "max_new_tokens 1.5": (PROMPT, {"max_new_tokens": 1.5}, r"max_new_tokens=1\.5"),
    "max_new_tokens '3'": (PROMPT, {"max_new_tokens": "3"}, r"max_new_tokens='3'"),
    "max_new_tokens None": (PROMPT, {"max_new_tokens": None}, r"max_new_tokens=None"),
    "max_new_tokens 2**60": (PROMPT, {"max_new_tokens": 2**60}, r"max_new_tokens=1152921"),
    "temperature '0.5'": (PROMPT, {"temperature": "0.5"}, r"temperature='0\.5'"),
    "temperature None": (PROMPT, {"temperature": None}, r"temperature=None"),
    "temperature True": (PROMPT, {"temperature": True}, r"temperature=True"),
    "temperature -1": (PROMPT, {"temperature": -1.0}, r"temperature=-1\.0"),
    "temperature inf": (PROMPT, {"temperature": math.inf}, r"temperature=inf"),
    "temperature nan": (PROMPT, {"temperature": math.nan}, r"temperature=nan"),
    "temperature 10**400": (PROMPT, {"temperature": 10**400}, r"temperature=1000.*401 chars"),
    "temperature tensor": (PROMPT, {"temperature": torch.tensor(0.5)}, r"temperature=tensor"),
    "generator not one": (PROMPT, {"temperature": 1.0, "generator": 7}, r"generator must be"),
    "use_cache 1": (PROMPT, {"use_cache": 1}, r"use_cache=1"),
}


@pytest.mark.parametrize("case", sorted(BAD_GENERATE))
def test_generate_refuses_a_bad_argument_before_any_work(case, nothing_computed):
    prompt, kwargs, match = BAD_GENERATE[case]
    model = _model()
    with pytest.raises(InputError, match=match) as info:
        model.generate(prompt, **{"max_new_tokens": 3, **kwargs})
    assert type(info.value) is InputError
    assert "\n" not in str(info.value) and "KVCache" not in str(info.value)
    assert nothing_computed() == {"caches": 0, "forwards": 0}


@pytest.mark.parametrize("use_cache", [True, False])
def test_generate_past_a_learned_table_is_refused_up_front(use_cache, nothing_computed):
    model = _model(**LEARNED)
    # The last new token is never fed back: a 4-token prompt reads positions 0 … 3 + n − 1.
    with pytest.raises(InputError, match=r"max_new_tokens=6 after a 4-token prompt reads "
                                         r"position 8.*max_seq_len=8.*at most 5 new tokens"):
        model.generate(PROMPT, 6, use_cache=use_cache)
    with pytest.raises(InputError, match=r"input_ids \(the prompt\) has 9 tokens.*"
                                         r"max_seq_len=8"):
        model.generate(torch.zeros(1, 9, dtype=torch.long), 0, use_cache=use_cache)
    assert nothing_computed() == {"caches": 0, "forwards": 0}
    out = model.generate(PROMPT, 5, use_cache=use_cache)  # exactly fills the table
    assert out.shape == (1, 9)


def test_generate_zero_new_tokens_returns_a_copy_without_a_cache(nothing_computed):
    model = _model()
    out = model.generate(PROMPT, 0)
    assert torch.equal(out, PROMPT) and out is not PROMPT
    assert nothing_computed() == {"caches": 0, "forwards": 0}


def test_sampling_numpy_numbers_and_extreme_temperatures():
    model = _model()
    prompt = _ids(length=3)  # sampling is reproducible with a generator
    runs = [model.generate(prompt, 8, temperature=1.0,
                           generator=torch.Generator().manual_seed(7)) for _ in range(2)]
    assert torch.equal(runs[0], runs[1])
    other = model.generate(prompt, 8, temperature=1.0, generator=torch.Generator().manual_seed(8))
    assert not torch.equal(runs[0], other)
    greedy = model.generate(PROMPT, np.int64(3))
    assert greedy.shape == (1, 7) and greedy.dtype == torch.long
    sampled = model.generate(PROMPT, 3, temperature=np.float32(0.5),
                             generator=torch.Generator().manual_seed(0))
    assert sampled.shape == (1, 7)
    greedy = model.generate(_ids(length=4), 6)
    # A temperature so small that logits / temperature overflows float32 still samples the
    # argmax (softmax of the max-shifted logits), with no NaN reaching multinomial.
    tiny = model.generate(_ids(length=4), 6, temperature=1e-300,
                          generator=torch.Generator().manual_seed(0))
    assert torch.equal(tiny, greedy)
    # A huge one samples uniformly: still valid token ids.
    huge = model.generate(_ids(length=4), 6, temperature=1e300,
                          generator=torch.Generator().manual_seed(0))
    assert huge.shape == (2, 10) and 0 <= huge.min() and huge.max() < TINY["vocab_size"]


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_generate_with_nan_weights_raises_instead_of_picking_tokens(temperature):
    model = _model()
    with torch.no_grad():
        model.lm_head.weight[5, 0] = float("nan")
    with pytest.raises(InputError, match=r"logits are not finite.*at 3 of 3 steps, first at "
                                         r"step 0"):
        model.generate(PROMPT, 3, temperature=temperature,
                       generator=torch.Generator().manual_seed(0))


def test_narrow_integer_ids_give_the_long_ids_logits_and_others_are_refused():
    model = _model()
    ids = _ids(length=6)
    with torch.no_grad():
        for dtype in (torch.uint8, torch.int8, torch.int16, torch.int32):
            assert torch.equal(model(ids.to(dtype)), model(ids)), dtype
    with pytest.raises(InputError, match=r"got dtype torch.uint16; allowed: \['int64'"):
        model(torch.zeros(1, 3, dtype=torch.uint16))
    with pytest.raises(InputError, match="holds token id -1"):
        model(torch.tensor([[1, -1]], dtype=torch.int8))
    with pytest.raises(InputError, match=r"input_ids is on meta, the model on cpu"):
        model(PROMPT.to("meta"))
