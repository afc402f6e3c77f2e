"""A Hugging Face checkpoint is checked whole: the index against its shards, a stored tied head
against the embedding, one dtype throughout, non-finite weights warned; `save_hf` replaces an
older sharded checkpoint whole. Every checkpoint is a real folder of files in tmp_path."""

import json
import re
import warnings

import pytest
import torch
import transformers
from safetensors.torch import load_file, save_file

from blocklab.config import ModelConfig
from blocklab.errors import CheckpointError, InputError
from blocklab.interop.hf import load_hf, save_hf
from blocklab.nn import DecoderLM

from .conftest import PARITY, hf_model, logits

pytestmark = pytest.mark.usefixtures("one_thread")

INDEX = "model.safetensors.index.json"
EMBED, NORM = "model.embed_tokens.weight", "model.norm.weight"
UP = "model.layers.0.mlp.up_proj.weight"
INV_FREQ = "model.layers.0.self_attn.rotary_emb.inv_freq"


def _tiny(tied=False, seed=0):
    torch.manual_seed(seed)
    return DecoderLM(ModelConfig(vocab_size=32, d_model=16, n_layers=1, n_heads=2, d_ff=24,
                                 tie_embeddings=tied))


def _saved(path, tied=False):
    """A single-file checkpoint of a tiny model in `path`; its tensors by Hugging Face name."""
    save_hf(_tiny(tied), path)
    return load_file(path / "model.safetensors")


def _write(path, tensors):
    save_file(tensors, path / "model.safetensors", metadata={"format": "pt"})


def _shard(path, shards, weight_map):
    """Replace the checkpoint in `path` by `shards` (file name -> tensors) and an index."""
    (path / "model.safetensors").unlink(missing_ok=True)
    for name, tensors in shards.items():
        save_file(tensors, path / name, metadata={"format": "pt"})
    (path / INDEX).write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


def _split(tensors, second=(NORM, EMBED)):
    """The tensors as two shards, s1 and s2 (s2 holds `second`), and the index that says so."""
    s1 = {k: v for k, v in tensors.items() if k not in second}
    s2 = {k: tensors[k] for k in second}
    weight_map = {k: "s1.safetensors" for k in s1} | {k: "s2.safetensors" for k in s2}
    return {"s1.safetensors": s1, "s2.safetensors": s2}, weight_map


def _refused(path, *needles, **kwargs):
    with pytest.raises(CheckpointError) as caught:
        load_hf(path, **kwargs)
    message = str(caught.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message, message
    return message


def _no_warnings(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args, **kwargs)


# --- the index against its shards --------------------------------------------------------------
def test_consistent_sharded_checkpoint_loads_as_the_single_file(tmp_path):
    tensors = _saved(tmp_path / "one")
    _saved(tmp_path / "two")
    _shard(tmp_path / "two", *_split(tensors))
    one, two = load_hf(tmp_path / "one"), _no_warnings(load_hf, tmp_path / "two")
    for (name, a), b in zip(one.state_dict().items(), two.state_dict().values(), strict=True):
        assert torch.equal(a, b), name


S1, S2 = "s1.safetensors", "s2.safetensors"


@pytest.mark.parametrize("edit, extra, needles", [
    (lambda s: s[S2].pop(NORM), {}, (NORM, S2, "do not hold")),
    (lambda s: None, {INV_FREQ: S2}, (INV_FREQ, S2, "do not hold")),
    (lambda s: s[S1].update({NORM: s[S2].pop(NORM)}), {},  # the index still says s2
     (NORM, "in shard s1.safetensors", "names shard s2.safetensors")),
    (lambda s: s[S1].update({INV_FREQ: torch.ones(4)}), {}, (INV_FREQ, S1, "does not name it")),
    (lambda s: s[S1].update({NORM: s[S2][NORM] * 3}), {},
     (NORM, "more than one shard", "s1.safetensors, s2.safetensors")),
], ids=["index names a tensor its shard lacks", "index names a tensor no shard holds",
        "tensor in another shard than the index says", "tensor the index does not name",
        "tensor in two shards"])
def test_an_index_its_shards_contradict_is_refused(tmp_path, edit, extra, needles):
    shards, weight_map = _split(_saved(tmp_path))
    edit(shards)
    _shard(tmp_path, shards, weight_map | extra)
    _refused(tmp_path, INDEX, *needles)


def test_single_file_beside_an_index_is_refused(tmp_path):
    tensors = _saved(tmp_path)
    (tmp_path / INDEX).write_text(json.dumps({"weight_map": dict.fromkeys(tensors,
                                                                          "model.safetensors")}))
    _refused(tmp_path, str(tmp_path), "both model.safetensors and " + INDEX)


# --- a tied head stored beside the embedding -------------------------------------------------
def test_tied_head_equal_to_the_embedding_is_dropped_one_that_differs_refused(tmp_path):
    tensors = _saved(tmp_path, tied=True)
    _write(tmp_path, tensors | {"lm_head.weight": tensors[EMBED].clone()})
    model = _no_warnings(load_hf, tmp_path)
    assert model.lm_head.weight is model.embed_tokens.weight
    assert torch.equal(model.embed_tokens.weight, tensors[EMBED])
    head = tensors[EMBED] + 0.5  # differs: refused, and loads untied when the config says so
    _write(tmp_path, tensors | {"lm_head.weight": head})
    _refused(tmp_path, "lm_head.weight", "max abs difference 0.5", "tie_word_embeddings: true",
             "set tie_word_embeddings to false")
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(config | {"tie_word_embeddings": False}))
    model = load_hf(tmp_path)
    assert torch.equal(model.lm_head.weight, head)
    assert torch.equal(model.embed_tokens.weight, tensors[EMBED])


# --- one dtype --------------------------------------------------------------------------------
def test_mixed_dtypes_are_refused_without_dtype_one_dtype_is_kept(tmp_path):
    tensors = _saved(tmp_path)
    _write(tmp_path, tensors | {EMBED: tensors[EMBED].bfloat16()})
    message = _refused(tmp_path, "bfloat16 (model.embed_tokens.weight)", "float32 (", "dtype=")
    assert re.search(r"and \d+ more", message)

    model = load_hf(tmp_path, dtype=torch.float32)  # asked for: everything is cast to it
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert torch.equal(model.norm.weight, tensors[NORM])
    assert torch.equal(model.embed_tokens.weight, tensors[EMBED].bfloat16().float())
    assert {p.dtype for p in load_hf(tmp_path, dtype=torch.bfloat16).parameters()} == \
        {torch.bfloat16}
    _write(tmp_path, {k: v.bfloat16() for k, v in tensors.items()})  # one dtype: kept
    assert {p.dtype for p in _no_warnings(load_hf, tmp_path).parameters()} == {torch.bfloat16}


def test_float8_weights_are_checked_and_cast_when_asked(tmp_path):
    """float8 has no isfinite or comparison kernels: the checks widen it, never crash on it."""
    tensors = _saved(tmp_path, tied=True)
    f8 = {k: v.to(torch.float8_e4m3fn) for k, v in tensors.items()}
    _write(tmp_path, f8 | {"lm_head.weight": f8[EMBED].clone()})
    _refused(tmp_path, "float8_e4m3fn", "pass dtype=")
    model = _no_warnings(load_hf, tmp_path, dtype=torch.bfloat16)
    assert torch.equal(model.embed_tokens.weight, f8[EMBED].bfloat16())
    f8[UP].view(-1)[:2] = float("nan")
    _write(tmp_path, f8)
    with pytest.warns(RuntimeWarning, match=f"{UP}: 2 NaN, 0 inf"):
        load_hf(tmp_path, dtype=torch.float32)


# --- non-finite weights -----------------------------------------------------------------------
def test_non_finite_weights_warn_with_counts(tmp_path):
    tensors = _saved(tmp_path)
    tensors[UP].view(-1)[:3] = float("nan")
    tensors[NORM][:2] = torch.tensor([float("inf"), -float("inf")])
    _write(tmp_path, tensors)
    with pytest.warns(RuntimeWarning) as caught:
        load_hf(tmp_path)
    message = str(caught[0].message)
    assert f"{UP}: 3 NaN, 0 inf" in message and f"{NORM}: 0 NaN, 2 inf" in message
    assert "\n" not in message and "more" not in message

    for name in tensors:
        tensors[name].view(-1)[0] = float("nan")
    _write(tmp_path, tensors)
    with pytest.warns(RuntimeWarning, match=rf"and {len(tensors) - 4} more"):
        load_hf(tmp_path)


# --- save_hf replaces an older checkpoint whole -----------------------------------------------
def test_save_hf_replaces_an_older_sharded_checkpoint(tmp_path):
    hf_model("llama", num_hidden_layers=1).save_pretrained(tmp_path, max_shard_size="2KB")
    old = json.loads((tmp_path / INDEX).read_text())["weight_map"].values()
    assert len(set(old)) > 1
    (tmp_path / "README.md").write_text("kept")
    model = _tiny(seed=1)
    save_hf(model, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == \
        ["README.md", "config.json", "generation_config.json", "model.safetensors"]
    ids = torch.randint(0, 32, (1, 6), generator=torch.Generator().manual_seed(0))
    want = logits(model, ids)
    assert torch.equal(logits(load_hf(tmp_path), ids), want)
    back = transformers.AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    torch.testing.assert_close(logits(back, ids), want, **PARITY)


def test_save_hf_removes_only_the_safetensors_files_the_old_index_names_inside(tmp_path):
    folder = tmp_path / "ckpt"
    (folder / "sub").mkdir(parents=True)
    outside = tmp_path / "outside.safetensors"
    for file in (outside, folder / "notes.txt", folder / "sub" / "s.safetensors",
                 folder / "model-00001-of-00002.safetensors", folder / "other.safetensors"):
        file.write_text("x")
    (folder / INDEX).write_text(json.dumps({"weight_map": {
        "a": "../outside.safetensors", "b": "notes.txt", "c": "sub/s.safetensors",
        "d": "model-00001-of-00002.safetensors", "e": "model.safetensors",
        "f": "model-00002-of-00002.safetensors"}}))  # (already gone)
    save_hf(_tiny(), folder)
    assert outside.exists() and not (folder / "sub" / "s.safetensors").exists()
    # kept: notes.txt (not a .safetensors file), other.safetensors (not named by the index)
    assert sorted(p.name for p in folder.iterdir()) == \
        ["config.json", "model.safetensors", "notes.txt", "other.safetensors", "sub"]
    _no_warnings(load_hf, folder)  # the new model.safetensors was kept


@pytest.mark.parametrize("index", ["{not json", json.dumps({"metadata": {}})])
def test_save_hf_refuses_an_unreadable_old_index_before_writing(tmp_path, index):
    (tmp_path / INDEX).write_text(index)
    (tmp_path / "model-00001-of-00001.safetensors").write_text("x")
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(CheckpointError) as caught:
        save_hf(_tiny(), tmp_path)
    message = str(caught.value)
    assert str(tmp_path / INDEX) in message and "\n" not in message
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_save_hf_path_must_be_a_folder(tmp_path):
    file = tmp_path / "file"
    file.write_text("x")
    for path in (file, file / "below"):
        with pytest.raises(InputError, match=re.escape(repr(str(path))) + ".*must be a folder") \
                as caught:
            save_hf(_tiny(), path)
        assert isinstance(caught.value, ValueError) and "\n" not in str(caught.value)
    assert file.read_text() == "x"
    save_hf(_tiny(), tmp_path / "new" / "deeper")  # created when missing
    assert sorted(p.name for p in (tmp_path / "new" / "deeper").iterdir()) == \
        ["config.json", "model.safetensors"]
