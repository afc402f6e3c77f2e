"""Run ids, the result store, atomic writes and resuming an interrupted grid."""

import json
import math

import pytest

from blocklab.config import ModelConfig
from blocklab.experiments import results as rs
from blocklab.experiments import trainer as tr
from blocklab.experiments.results import ResultStore, run_id
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.trainer import TrainConfig


def test_run_id_is_stable_and_ignores_cosmetic_fields():
    model, train = ModelConfig(d_model=64, n_heads=4), TrainConfig(steps=5)
    rid = run_id(model, train, "stdlib")
    assert len(rid) == 12 and rid == run_id(model, train, "stdlib")
    assert rid == run_id(model.to_dict(), train.to_dict(), "stdlib")
    assert rid == run_id(model.replace(name="x"), train.replace(threads=1), "stdlib")
    assert len({rid, run_id(model, train.replace(seed=1), "stdlib"),
                run_id(model, train.replace(lr=2e-3), "stdlib"),
                run_id(model.replace(ffn="relu", d_ff=None), train, "stdlib"),
                run_id(model, train, "shakespeare")}) == 5


def test_run_id_counts_precision_but_not_backend():
    model, train = ModelConfig(d_model=64, n_heads=4), TrainConfig(steps=5)
    rid = run_id(model, train, "stdlib")
    # the ids issued before precision existed: fp32 hashes as a config without the key
    old = {k: v for k, v in train.to_dict().items() if k not in ("precision", "backend")}
    assert rid == run_id(model, old, "stdlib")
    assert rid == run_id(model, train.replace(backend="compiled"), "stdlib")  # speed only
    assert rid != run_id(model, train.replace(precision="bf16"), "stdlib")  # other values


def test_store_save_load_has_and_iter(tmp_path):
    store = ResultStore(tmp_path)
    assert not store.has("abc") and list(store.iter_results()) == []
    store.save("abc", RunResult("ok", extra={"x": float("nan"), "t": (1, 2)}))
    assert store.has("abc")
    assert store.load("abc") == RunResult("ok", extra={"x": None, "t": [1, 2]})
    (tmp_path / "half.json").write_text('{"status": "o')  # a torn write
    (tmp_path / "nostatus.json").write_text('{"final": {}}')
    assert not store.has("half") and not store.has("nostatus")
    assert [rid for rid, _ in store.iter_results()] == ["abc"]
    with pytest.raises(FileNotFoundError):
        store.load("half")
    with pytest.raises(ValueError):
        store.path_for("../escape")


def test_json_safe_writes_strict_json():
    text = rs.result_json({"a": [1.0, math.inf, -math.inf, math.nan], "b": {2: (3,)}})
    assert json.loads(text) == {"a": [1.0, None, None, None], "b": {"2": [3]}}


def test_result_is_written_atomically(monkeypatch, tmp_path, tiny_model, tiny_train):
    out = tmp_path / "result.json"
    out.write_text('{"status": "ok", "old": true}\n')

    def crash(src, dst):
        raise OSError("disk full")

    import blocklab.config

    monkeypatch.setattr(blocklab.config.os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        tr.run(tiny_model, tiny_train.replace(steps=1), out_path=out)
    assert json.loads(out.read_text()) == {"status": "ok", "old": True}  # old file intact
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]  # no temp file left


def test_interrupted_grid_resumes_by_skipping_done_runs(monkeypatch, tmp_path, tiny_model,
                                                        tiny_train):
    store = ResultStore(tmp_path)
    grid = [tiny_train.replace(steps=2, seed=seed) for seed in range(3)]
    done = tr.run_stored(store, tiny_model, grid[0], "stdlib")
    key_torn = run_id(tiny_model, grid[1], "stdlib")
    store.path_for(key_torn).write_text('{"status": ')  # interrupted mid-write (not atomic)

    trained = []
    real_run = tr.run

    def counting(model_config, train_config, *args, **kwargs):
        trained.append(train_config.seed)
        return real_run(model_config, train_config, *args, **kwargs)

    monkeypatch.setattr(tr, "run", counting)
    results = [tr.run_stored(store, tiny_model, cfg, "stdlib") for cfg in grid]
    assert trained == [1, 2]  # seed 0 was skipped
    assert results[0] == done
    assert [r.train_config["seed"] for r in results] == [0, 1, 2]
    assert sorted(rid for rid, _ in store.iter_results()) == sorted(
        run_id(tiny_model, cfg, "stdlib") for cfg in grid)
    assert all(r.run_id == run_id(tiny_model, cfg, "stdlib")
               for r, cfg in zip(results, grid, strict=True))


def test_reading_results_needs_no_torch():
    import subprocess
    import sys

    code = ("import sys; from blocklab.experiments import ResultStore, run_id; "
            "assert 'torch' not in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_results_module_imports_neither_trainer_nor_torch():
    """The store keeps results and never trains: `results` imports nothing from the trainer."""
    import subprocess
    import sys

    code = ("import sys, blocklab.experiments.results; "
            "assert 'blocklab.experiments.trainer' not in sys.modules, 'trainer'; "
            "assert 'torch' not in sys.modules, 'torch'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_added_identity_is_the_one_rule_of_id_compatibility(tiny_train):
    assert rs.added_identity(precision="fp32") == {}  # ids made before precision existed
    assert rs.added_identity(precision="bf16") == {"precision": "bf16"}
    with pytest.raises(TypeError, match=r"not an added identity field: \['seed'\]"):
        rs.added_identity(seed="3")
    # train configs follow the same rule
    assert "precision" not in rs.train_identity(tiny_train)
    assert rs.train_identity(tiny_train.replace(precision="bf16"))["precision"] == "bf16"
