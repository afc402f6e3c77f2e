"""Sliding-window layouts read and written as transformers 5 reads them: which layers a window
applies to (Qwen2/Qwen3 `use_sliding_window`, `max_window_layers`, `layer_types`; Mistral's
window on every layer and its 4096 default; Gemma 2's alternation). Each layout is a tiny
random checkpoint written by `save_pretrained`: `load_hf` must give transformers' logits at a
length past the window (float32, max abs diff 1e-5), and what `save_hf` writes must load in
`AutoModelForCausalLM` with the same logits and the same windowed layers."""

import json

import pytest
import torch
import transformers
from torch.testing import assert_close

from blocklab.config import ModelConfig
from blocklab.errors import ConfigError
from blocklab.interop.hf import load_hf, save_hf
from blocklab.interop.hf_config import from_hf, to_hf
from blocklab.nn import DecoderLM

from .conftest import PARITY, hf_model, logits, tiny_ids
from .conftest import TINY as BASE

pytestmark = pytest.mark.usefixtures("one_thread")

WINDOW = 5
TINY = dict(BASE, num_hidden_layers=3, max_position_embeddings=64)
SW = "sliding_attention"
FULL = "full_attention"

# name -> (model_type, config keys beyond TINY, the layers transformers windows)
LAYOUTS = {
    "mistral window": ("mistral", dict(sliding_window=WINDOW), [0, 1, 2]),
    "mistral no window": ("mistral", dict(sliding_window=None), []),
    "qwen2 off": ("qwen2", dict(use_sliding_window=False, sliding_window=WINDOW), []),
    "qwen2 max_window_layers=0": ("qwen2", dict(use_sliding_window=True, sliding_window=WINDOW,
                                                max_window_layers=0), [0, 1, 2]),
    "qwen2 max_window_layers=1": ("qwen2", dict(use_sliding_window=True, sliding_window=WINDOW,
                                                max_window_layers=1), [1, 2]),
    "qwen2 max_window_layers=3": ("qwen2", dict(use_sliding_window=True, sliding_window=WINDOW,
                                                max_window_layers=3), []),
    # layer_types outrank max_window_layers (which would window layers 1 and 2)
    "qwen2 layer_types": ("qwen2", dict(use_sliding_window=True, sliding_window=WINDOW,
                                        max_window_layers=1, layer_types=[SW, FULL, SW]), [0, 2]),
    "qwen3 max_window_layers=2": ("qwen3", dict(use_sliding_window=True, sliding_window=WINDOW,
                                                max_window_layers=2, head_dim=32), [2]),
    "qwen3 layer_types": ("qwen3", dict(use_sliding_window=True, sliding_window=WINDOW,
                                        layer_types=[FULL, SW, FULL], head_dim=32), [1]),
}


def _hf_windowed(model):
    """The layers a transformers model windows, read off its own config the way its attention
    reads it (every layer in Mistral when a window is set; `layer_types` in Qwen)."""
    config = model.config
    if config.sliding_window is None:
        return []
    if config.model_type == "mistral":
        return list(range(config.num_hidden_layers))
    return [i for i, t in enumerate(config.layer_types) if t == SW]


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_layout_loads_and_round_trips_as_transformers(name, tmp_path):
    model_type, keys, windowed = LAYOUTS[name]
    hf = hf_model(model_type, num_hidden_layers=3, max_position_embeddings=64, **keys)
    hf.save_pretrained(tmp_path / "hf")
    assert _hf_windowed(hf) == windowed  # the table above is transformers' reading
    ids = tiny_ids()
    expected = logits(hf, ids)

    ours = load_hf(tmp_path / "hf")
    cfg = ours.config
    assert [i for i in range(cfg.n_layers) if cfg.attention_window(i)] == windowed
    assert [layer.attention.sliding_window for layer in ours.layers] == [
        WINDOW if i in windowed else None for i in range(cfg.n_layers)]
    assert_close(logits(ours, ids), expected, **PARITY)

    save_hf(ours, tmp_path / "back", model_type=hf.config.model_type)
    back = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "back").eval()
    assert _hf_windowed(back) == windowed
    assert_close(logits(back, ids), expected, **PARITY)
    assert load_hf(tmp_path / "back").config == cfg


def test_windows_change_the_logits_here():
    """The layouts above can tell a windowed layer from a full one at this length: windowing
    one more layer moves the logits far beyond the parity tolerance."""
    torch.manual_seed(0)
    base = ModelConfig(vocab_size=128, d_model=64, n_layers=3, n_heads=4, n_kv_heads=2,
                       d_ff=96, sliding_window=WINDOW, layer_types=(FULL, SW, FULL))
    model = DecoderLM(base).eval()
    other = DecoderLM(base.replace(layer_types=(SW, SW, FULL))).eval()
    other.load_state_dict(model.state_dict())
    ids = tiny_ids()
    assert (logits(model, ids) - logits(other, ids)).abs().max() > 1e-2


def test_mistral_without_the_key_takes_transformers_default_window():
    keys = dict(model_type="mistral", **TINY)
    assert transformers.MistralConfig(**TINY).sliding_window == 4096
    assert from_hf(keys).sliding_window == 4096


def test_gemma2_alternates_as_transformers_does():
    keys = dict(TINY, num_hidden_layers=4, head_dim=16, sliding_window=WINDOW)
    expected = transformers.Gemma2Config(**keys).layer_types
    cfg = from_hf(dict(model_type="gemma2", **keys))
    assert [t for t in cfg.layer_types] == expected
    assert cfg.windowed_layers == 2
    given = [FULL, FULL, SW, FULL]
    cfg = from_hf(dict(model_type="gemma2", layer_types=given, **keys))
    assert list(cfg.layer_types) == transformers.Gemma2Config(**keys, layer_types=given).layer_types


@pytest.mark.parametrize("keys, needle", [
    (dict(model_type="mistral", sliding_window=WINDOW, layer_types=[FULL, SW, SW]),
     "not read by transformers' mistral"),
    (dict(model_type="qwen2", use_sliding_window=True, layer_types=[SW, FULL]),
     "layer_types=['sliding_attention', 'full_attention'] is not allowed"),
    (dict(model_type="qwen2", use_sliding_window=True, layer_types=[SW, "chunked_attention", SW]),
     "is not allowed"),
    (dict(model_type="qwen3", use_sliding_window=True, max_window_layers=-1), "max_window_layers"),
    # transformers builds no mask for a layer marked sliding without a window, and fails
    (dict(model_type="qwen2", use_sliding_window=False, layer_types=[SW, FULL, SW]),
     "marks sliding layers while use_sliding_window is false"),
    (dict(model_type="gemma2", sliding_window=None), "sliding_window=None"),
    (dict(model_type="qwen2", use_sliding_window=True, sliding_window=0), "sliding_window"),
])
def test_layouts_transformers_would_read_otherwise_are_refused(keys, needle):
    with pytest.raises(ConfigError, match="config.json") as err:
        from_hf({**TINY, "head_dim": 16, **keys})
    assert needle in str(err.value)
    assert "\n" not in str(err.value)


def test_to_hf_writes_every_key_transformers_reads():
    cfg = ModelConfig(vocab_size=128, d_model=64, n_layers=3, n_heads=4, sliding_window=WINDOW,
                      layer_types=(FULL, SW, SW))
    out = to_hf(cfg.replace(attn_bias=True), "qwen2")
    assert (out["use_sliding_window"], out["sliding_window"], out["max_window_layers"],
            out["layer_types"]) == (True, WINDOW, 1, [FULL, SW, SW])
    out = to_hf(cfg.replace(layer_types=(SW, FULL, SW), qk_norm=True), "qwen3")
    assert "max_window_layers" not in out and out["layer_types"] == [SW, FULL, SW]
    with pytest.raises(ConfigError, match="only 2 of 3 layers are windowed"):
        to_hf(cfg, "mistral")
    with pytest.raises(ConfigError, match="llama has none"):
        to_hf(cfg, "llama")
    # A window no layer uses is no window: llama takes it.
    assert "sliding_window" not in to_hf(cfg.replace(layer_types=(FULL,) * 3), "llama")


@pytest.mark.parametrize("value, needle", [
    ((SW, FULL), "one of ['full_attention', 'sliding_attention'] per layer (3 in all)"),
    ((SW, "local", FULL), "per layer"),
    ("sliding_attention", "per layer"),
])
def test_model_config_checks_layer_types(value, needle):
    with pytest.raises(ConfigError, match="ModelConfig.layer_types") as err:
        ModelConfig(n_layers=3, sliding_window=4, layer_types=value)
    assert needle in str(err.value)
    with pytest.raises(ConfigError, match="while sliding_window is None"):
        ModelConfig(n_layers=3, layer_types=(SW, FULL, FULL))
    # JSON gives a list; the config holds a tuple, equal to the one built directly.
    cfg = ModelConfig(n_layers=3, sliding_window=4, layer_types=(SW, FULL, FULL))
    assert ModelConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    # Run ids hash to_dict(): left out at its default, every run stored before the field
    # existed keeps its id; set, it is there.
    assert "layer_types" not in ModelConfig().to_dict()
    assert cfg.to_dict()["layer_types"] == (SW, FULL, FULL)
    # Cut to its first layers, a config keeps their layout; more layers are the caller's to say.
    assert cfg.replace(n_layers=2).layer_types == (SW, FULL)
    with pytest.raises(ConfigError, match="layer_types"):
        cfg.replace(n_layers=4)
