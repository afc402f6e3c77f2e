"""blocklab.nn.calibration: the fastest candidate, measured once per machine and shape, kept on
disk, reused, overridable."""

import json
from types import SimpleNamespace

import pytest
import torch

from blocklab.errors import InputError
from blocklab.nn import calibration


@pytest.fixture
def slow(monkeypatch):
    """A candidate that takes `seconds` on the clock calibration reads (a fake one: a real
    sleep's margin is lost on a loaded machine)."""
    now = [0.0]
    monkeypatch.setattr(calibration, "time", SimpleNamespace(perf_counter=lambda: now[0]))

    def taking(seconds):
        def run():
            now[0] += seconds
        return run
    return taking


def _never():
    raise AssertionError("a kept answer must not be measured again")


def test_the_faster_candidate_wins_and_is_kept_on_disk(measuring, slow):
    key = {"shape": [2, 3]}
    assert calibration.fastest("op", key, {"slow": slow(0.004), "quick": slow(0)},
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


def test_another_shape_or_another_machine_is_measured_anew(measuring, monkeypatch, slow):
    calibration.fastest("op", {"n": 1}, {"a": slow(0.003), "b": slow(0)}, default="a")
    assert calibration.fastest("op", {"n": 2}, {"a": slow(0), "b": slow(0.003)},
                               default="a") == "a"
    calibration._MEMO.clear()
    monkeypatch.setattr(calibration, "machine_key", lambda: "another-cpu")
    assert calibration.fastest("op", {"n": 1}, {"a": slow(0), "b": slow(0.003)},
                               default="b") == "a"


def test_a_damaged_or_stale_file_is_measured_again_and_rewritten(measuring, slow):
    key = {"n": 3}
    folder = measuring / "calibration" / calibration.machine_key()
    folder.mkdir(parents=True)
    path = folder / f"{calibration.question('op', key)}.json"
    path.write_text("{not json")
    assert calibration.fastest("op", key, {"a": slow(0.003), "b": slow(0)},
                               default="a") == "b"
    assert json.loads(path.read_text())["fastest"] == "b"
    # a file that measured other candidates does not answer for these
    calibration._MEMO.clear()
    assert calibration.fastest("op", key, {"a": slow(0.003), "c": slow(0)},
                               default="a") == "c"


def test_static_returns_the_default_untimed_and_bad_settings_raise(measuring, monkeypatch):
    monkeypatch.setenv("BLOCKLAB_CALIBRATION", "static")
    assert calibration.fastest("op", {}, {"a": _never, "b": _never}, default="b") == "b"
    assert not (measuring / "calibration").exists()
    with pytest.raises(InputError, match="default='c' is not one of"):
        calibration.fastest("op", {}, {"a": _never, "b": _never}, default="c")
    monkeypatch.setenv("BLOCKLAB_CALIBRATION", "fastest")
    with pytest.raises(InputError, match="BLOCKLAB_CALIBRATION='fastest' is not allowed"):
        calibration.mode()
