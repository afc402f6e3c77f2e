"""blocklab.nn.calibration: the fastest candidate, measured once per machine and shape, kept on
disk, reused, overridable."""

import json
import time

import pytest
import torch

from blocklab.errors import InputError
from blocklab.nn import calibration


def _slow(seconds):
    return lambda: time.sleep(seconds)


def _never():
    raise AssertionError("a kept answer must not be measured again")


def test_the_faster_candidate_wins_and_is_kept_on_disk(measuring):
    key = {"shape": [2, 3]}
    assert calibration.fastest("op", key, {"slow": _slow(0.004), "quick": _slow(0)},
                               default="slow") == "quick"
    [stored] = (measuring / "calibration" / calibration.machine_key()).glob("op-*.json")
    record = json.loads(stored.read_text())
    assert record["fastest"] == "quick" and record["key"] == key
    assert record["median_s"]["slow"] > record["median_s"]["quick"]
    # the memo answers in-process; a fresh process (memo dropped) reads the file
    assert calibration.fastest("op", key, {"slow": _never, "quick": _never},
                               default="slow") == "quick"
    calibration._MEMO.clear()
    assert calibration.fastest("op", key, {"slow": _never, "quick": _never},
                               default="slow") == "quick"


def test_measuring_leaves_the_global_random_stream_where_it_was(measuring):
    """A run seeded before a measurement draws the same numbers afterwards whether this
    process measured (the candidates draw inputs, one even reseeds) or not."""
    def draws():
        torch.randn(1000)

    def reseeds():
        torch.manual_seed(123)
        torch.randn(10)

    torch.manual_seed(7)
    expected = torch.randn(5)
    torch.manual_seed(7)
    calibration.fastest("rng", {}, {"a": draws, "b": reseeds}, default="a")
    assert torch.equal(torch.randn(5), expected)


def test_another_shape_or_another_machine_is_measured_anew(measuring, monkeypatch):
    calibration.fastest("op", {"n": 1}, {"a": _slow(0.003), "b": _slow(0)}, default="a")
    assert calibration.fastest("op", {"n": 2}, {"a": _slow(0), "b": _slow(0.003)},
                               default="a") == "a"
    calibration._MEMO.clear()
    monkeypatch.setattr(calibration, "machine_key", lambda: "another-cpu")
    assert calibration.fastest("op", {"n": 1}, {"a": _slow(0), "b": _slow(0.003)},
                               default="b") == "a"


def test_a_damaged_or_stale_file_is_measured_again_and_rewritten(measuring):
    key = {"n": 3}
    folder = measuring / "calibration" / calibration.machine_key()
    folder.mkdir(parents=True)
    path = folder / f"{calibration.question('op', key)}.json"
    path.write_text("{not json")
    assert calibration.fastest("op", key, {"a": _slow(0.003), "b": _slow(0)},
                               default="a") == "b"
    assert json.loads(path.read_text())["fastest"] == "b"
    # a file that measured other candidates does not answer for these
    calibration._MEMO.clear()
    assert calibration.fastest("op", key, {"a": _slow(0.003), "c": _slow(0)},
                               default="a") == "c"


def test_static_returns_the_default_untimed_and_bad_settings_raise(monkeypatch, tmp_path):
    monkeypatch.setenv("BLOCKLAB_CALIBRATION", "static")
    monkeypatch.setenv("BLOCKLAB_CACHE_DIR", str(tmp_path))
    assert calibration.fastest("op", {}, {"a": _never, "b": _never}, default="b") == "b"
    assert not (tmp_path / "calibration").exists()
    with pytest.raises(InputError, match="default='c' is not one of"):
        calibration.fastest("op", {}, {"a": _never, "b": _never}, default="c")
    monkeypatch.setenv("BLOCKLAB_CALIBRATION", "fastest")
    with pytest.raises(InputError, match="BLOCKLAB_CALIBRATION='fastest' is not allowed"):
        calibration.mode()
