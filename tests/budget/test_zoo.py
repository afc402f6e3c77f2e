"""The zoo: every published count reproduced exactly; loading, suggestions, paths, bad input."""

import json

import pytest

from blocklab.budget import count_params, list_zoo, load_zoo, resolve_model
from blocklab.budget.zoo import ZOO_FIELDS

EXPECTED = {"llama-2-7b", "meta-llama-3-8b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b",
            "llama-3.2-1b", "mistral-7b-v0.1", "qwen2.5-0.5b", "qwen2.5-7b", "qwen3-8b",
            "gemma-2-2b", "gpt2", "bert-base-uncased", "page-001-example"}


def test_zoo_lists_the_bundled_models():
    assert EXPECTED <= set(list_zoo())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_computed_total_equals_published_count(name):
    entry = load_zoo(name)
    total = count_params(resolve_model(name).config).total
    if entry.published_params is None:
        # No published count: the entry must say why, and must not claim exactness.
        assert not entry.params_exact
        assert len(entry.params_source) > 20 and "no published" in entry.params_source.lower()
    else:
        assert total == entry.published_params, f"{name}: {total:,} != {entry.published_params:,}"


def test_entries_have_every_field():
    for name in list_zoo():
        entry = load_zoo(name)
        assert all(hasattr(entry, f) for f in ZOO_FIELDS)
        assert isinstance(entry.config, dict) and entry.params_source


def test_unknown_name_suggests_close_names():
    with pytest.raises(ValueError, match="did you mean.*meta-llama-3-8b"):
        load_zoo("llama-3-8b")
    with pytest.raises(ValueError, match="unknown model 'zzz'"):
        resolve_model("zzz")


def test_resolve_path_and_folder(tmp_path):
    hf = load_zoo("qwen3-8b").config
    (tmp_path / "config.json").write_text(json.dumps(hf))
    by_file = resolve_model(str(tmp_path / "config.json"))
    by_dir = resolve_model(str(tmp_path))
    assert by_file.config == by_dir.config == resolve_model("qwen3-8b").config
    assert by_file.entry is None and by_file.source.endswith("config.json")


def test_resolve_modelconfig_json(tmp_path):
    from blocklab.config import ModelConfig

    cfg = ModelConfig(d_model=64, n_heads=4, n_layers=2, vocab_size=100)
    cfg.save(tmp_path / "mine.json")
    assert resolve_model(str(tmp_path / "mine.json")).config == cfg


def test_absent_keys_take_transformers_defaults():
    r = resolve_model("page-001-example")
    assert r.defaults_filled == ("max_position_embeddings",)
    assert r.config.max_seq_len == 2048  # LlamaConfig default


@pytest.mark.parametrize("text, match", [
    ("{not json", "malformed JSON"),
    ("[1, 2]", "JSON object"),
    ('{"model_type": "llama", "vocab_size": 10}', "missing"),
    ('{"model_type": "llama", "vocab_size": 10, "hidden_size": "big", "num_hidden_layers": 2, '
     '"num_attention_heads": 2, "intermediate_size": 8}', "hidden|d_model|positive"),
    ('{"model_type": "t5"}', "unsupported"),
])
def test_bad_config_files(tmp_path, text, match):
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        resolve_model(str(path))


def test_missing_file():
    with pytest.raises(ValueError, match="no such file"):
        resolve_model("/nonexistent/config.json")
