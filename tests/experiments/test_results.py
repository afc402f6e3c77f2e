"""Run ids, the result store, atomic writes and resuming an interrupted grid."""

import json
import os
import time

import pytest

from blocklab.config import ModelConfig
from blocklab.experiments import results as rs
from blocklab.experiments.results import ResultStore, run_id
from blocklab.experiments.run_result import RunLabel, RunResult
from blocklab.experiments.trainer import TrainConfig

from .conftest import OWNER, USER, needs_root, run_as


def test_run_id_is_stable_and_ignores_cosmetic_fields_and_the_backend():
    model, train = ModelConfig(d_model=64, n_heads=4), TrainConfig(steps=5)
    rid = run_id(model, train, "stdlib")
    assert len(rid) == 12 and rid == run_id(model, train, "stdlib")
    assert rid == run_id(model.to_dict(), train.to_dict(), "stdlib")
    assert rid == run_id(model.replace(name="x"), train.replace(threads=1), "stdlib")
    assert len({rid, run_id(model, train.replace(seed=1), "stdlib"),
                run_id(model, train.replace(lr=2e-3), "stdlib"),
                run_id(model.replace(ffn="relu", d_ff=None), train, "stdlib"),
                run_id(model, train, "shakespeare")}) == 5
    # the ids issued before precision existed: fp32 hashes as a config without the key
    old = {k: v for k, v in train.to_dict().items() if k not in ("precision", "backend")}
    assert rid == run_id(model, old, "stdlib")
    assert rid == run_id(model, train.replace(backend="compiled"), "stdlib")  # speed only
    assert rid != run_id(model, train.replace(precision="bf16"), "stdlib")  # other values
    assert rs.added_identity(precision="fp32") == {}  # a timing's payload follows the same rule
    assert rs.added_identity(precision="bf16") == {"precision": "bf16"}


def test_store_save_load_has_and_iter(tmp_path):
    store = ResultStore(tmp_path)
    assert not store.has("abc") and list(store.iter_results()) == []
    store.save("abc", RunResult("ok", extra={"x": float("nan"), "t": (1, 2)}))
    assert store.has("abc")
    assert store.load("abc") == RunResult("ok", extra={"x": None, "t": [1, 2]})
    (tmp_path / "summary.json").write_text('{"suite": "ffn"}')  # beside the runs: no run
    assert [rid for rid, _ in store.iter_results()] == ["abc"]
    assert tmp_path / "summary.json" not in store.damaged
    with pytest.raises(FileNotFoundError, match="no complete result"):
        store.load("gone")
    with pytest.raises(ValueError):
        store.path_for("../escape")


def test_a_stored_run_is_parsed_once_and_every_reader_gets_its_own_copy(monkeypatch,
                                                                         tmp_path):
    reads = []
    monkeypatch.setattr(rs, "read_json", lambda path, **kw: reads.append(path) or
                        json.loads(path.read_text()))
    store = ResultStore(tmp_path)
    stored = RunResult("ok", model_config={"d_model": 64}, extra={"losses": [1.0, 2.0]},
                       run=RunLabel("relu seed 0", "relu", 0, "abc"))
    settled = time.time_ns() - 10**9  # (a file written this instant is not kept yet)
    os.utime(store.save("abc", stored), ns=(settled, settled))
    first = store.load("abc")
    # A caller that fills in or edits its result (as a suite stamps provenance) ...
    first.provenance = {"code": "x"}
    first.model_config["d_model"] = 1
    first.extra["losses"].append(3.0)
    first.run.seed = 7
    # ... changes nothing another reader sees: a new store, `has`, `iter_results` alike.
    again = ResultStore(tmp_path)
    assert again.has("abc") and again.load("abc") == stored
    assert [r for _, r in again.iter_results()] == [stored]
    assert again.load("abc") is not again.load("abc")
    assert reads == [tmp_path / "abc.json"]
    changed = RunResult("diverged", run=RunLabel("relu seed 0", "relu", 0, "abc"))
    os.utime(store.save("abc", changed), ns=(settled, settled))  # a new file: read again
    assert again.load("abc") == changed and again.load("abc") == changed and len(reads) == 2


# --- a damaged result file: named, run again, nothing else touched -------------------------------
# (how the file is damaged, what `damaged` says of it after the path); every way strict JSON is
# broken is refused by the one reader (tests/test_strict_json.py)
DAMAGE = {
    "cut short": (lambda t: t[: len(t) // 2], "malformed JSON"),
    "a list": (lambda t: "[" + t + "]", "a run result is an object with a 'status'"),
    "not UTF-8": (lambda t: t.encode("utf-16"), "not UTF-8 text"),
}


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_a_damaged_result_file_is_named_and_run_again(tmp_path, kind):
    damage, message = DAMAGE[kind]
    store = ResultStore(tmp_path)
    store.save("aaa", RunResult("ok", extra={"val": 1.5}))
    store.save("bbb", RunResult("ok", extra={"val": 2.5}))
    other = (tmp_path / "bbb.json").read_bytes()
    path = tmp_path / "aaa.json"
    damaged = damage(path.read_text())
    path.write_bytes(damaged if isinstance(damaged, bytes) else damaged.encode("utf-8",
                                                                               "surrogatepass"))
    assert not store.has("aaa") and store.has("bbb")
    assert list(store.damaged) == [path]
    assert store.damaged[path].startswith(f"{path}: {message}"), store.damaged[path]
    assert "\n" not in store.damaged[path]
    with pytest.raises(FileNotFoundError, match=message.split(":")[0]):
        store.load("aaa")
    assert [rid for rid, _ in store.iter_results()] == ["bbb"]
    store.save("aaa", RunResult("ok", extra={"val": 1.5}))  # run again: replaced whole
    assert store.load("aaa") == RunResult("ok", extra={"val": 1.5})
    assert (tmp_path / "bbb.json").read_bytes() == other
    assert sorted(p.name for p in tmp_path.iterdir()) == ["aaa.json", "bbb.json"]


def test_a_result_path_that_is_no_file(tmp_path):
    """A folder, a link to nothing or a pipe where a result belongs is damaged, not a run to
    wait on (reading a pipe would never end); a folder cannot be replaced, so saving there
    says what to move."""
    store = ResultStore(tmp_path)
    (tmp_path / "dir.json").mkdir()
    (tmp_path / "link.json").symlink_to(tmp_path / "nowhere.json")
    os.mkfifo(tmp_path / "fifo.json")
    for name in ("dir", "link", "fifo"):
        assert not store.has(name)
        path = tmp_path / f"{name}.json"
        assert store.damaged[path] == f"{path}: not a regular file"
    assert not store.has("missing") and tmp_path / "missing.json" not in store.damaged
    store.save("link", RunResult("ok"))
    store.save("fifo", RunResult("ok"))
    assert store.has("link") and store.has("fifo")
    with pytest.raises(rs.ResultsError, match=f"{tmp_path / 'dir.json'} is a folder where"):
        store.save("dir", RunResult("ok"))


@needs_root
def test_a_result_file_this_user_may_not_read_is_named_and_run_again(shared_tmp):
    """In a results folder shared by users, a run another user stored unreadable (mode 0600)
    is damaged for this one: named, and run again in its place; the rest is untouched."""
    folder = shared_tmp
    folder.chmod(0o777)  # a shared results folder, not sticky: its runs may be replaced
    store = ResultStore(folder)
    store.save("aaa", RunResult("ok", extra={"val": 1.5}))
    store.save("bbb", RunResult("ok", extra={"val": 2.5}))
    os.chown(folder / "aaa.json", OWNER, OWNER)
    (folder / "aaa.json").chmod(0o600)
    other = (folder / "bbb.json").read_bytes()

    def look() -> list:
        mine = ResultStore(folder)
        said = [mine.has("aaa"), mine.has("bbb"), [str(p) for p in mine.damaged],
                list(mine.damaged.values())]
        mine.save("aaa", RunResult("ok", extra={"val": 1.5}))
        return said

    assert run_as(USER, look) == {"ok": [
        False, True, [str(folder / "aaa.json")],
        [f"{folder / 'aaa.json'}: cannot read it (Permission denied)"]]}
    assert (folder / "aaa.json").stat().st_uid == USER and store.has("aaa")
    assert (folder / "bbb.json").read_bytes() == other


def test_a_file_holding_another_runs_result_is_not_that_run(tmp_path):
    """A result names the run it is (a lone training run its run id, a suite's run
    `run.run_id`): under another run's name it is not read, says why and is run again."""
    store = ResultStore(tmp_path)
    store.save("bbbbbbbbbbbb", RunResult("ok", run_id="bbbbbbbbbbbb"))
    store.save("cccccccccccc", RunResult("ok", run=RunLabel("c/0", "c", 0, "cccccccccccc")))
    for key, source in (("aaaaaaaaaaaa", "bbbbbbbbbbbb"), ("dddddddddddd", "cccccccccccc")):
        store.path_for(key).write_bytes(store.path_for(source).read_bytes())
    assert store.has("bbbbbbbbbbbb") and store.has("cccccccccccc")
    assert not store.has("aaaaaaaaaaaa") and not store.has("dddddddddddd")
    path = store.path_for("aaaaaaaaaaaa")
    assert store.damaged[path] == (f"{path} did not match its name: it holds the result of "
                                   "run bbbbbbbbbbbb")
    assert [rid for rid, _ in store.iter_results()] == ["bbbbbbbbbbbb", "cccccccccccc"]
    # one stored before results named their run (no id to check) still reads, as it did
    store.save("eeeeeeeeeeee", RunResult("ok", run=RunLabel("e/0", "e", 0)))
    assert store.has("eeeeeeeeeeee")
