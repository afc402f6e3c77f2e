"""`jsonio.write_atomic` leaves the old file or the new one, and no temporary, however it is
stopped: an interrupt can arrive between any two statements (a signal handler raises
KeyboardInterrupt there: Ctrl-C, or SIGTERM in `blocklab.cli`)."""

from __future__ import annotations

import os

import pytest

from blocklab import jsonio
from blocklab.jsonio import write_atomic


def _interrupt_after(monkeypatch, name: str, target=os) -> None:
    real = getattr(target, name)

    def call_then_interrupt(*args, **kwargs):
        real(*args, **kwargs)
        raise KeyboardInterrupt  # as a signal handler would, right after the call returned

    monkeypatch.setattr(target, name, call_then_interrupt)


@pytest.mark.parametrize("step", ["open", "fsync", "replace"])
def test_an_interrupt_after_any_step_leaves_no_temporary(tmp_path, monkeypatch, step):
    path = tmp_path / "result.json"
    path.write_text("old")
    _interrupt_after(monkeypatch, step, jsonio.os)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(path, "new")
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]
    # the reader sees the old file or the new one, never a part
    assert path.read_text() == ("new" if step == "replace" else "old")


def test_a_name_taken_by_another_writer_is_never_removed(tmp_path, monkeypatch):
    path = tmp_path / "result.json"
    taken = tmp_path / ".result.json.aaaaaaaaaaaa.tmp"
    taken.write_text("another writer's")
    names = iter(["aaaaaaaaaaaa", "bbbbbbbbbbbb"])
    monkeypatch.setattr(jsonio.secrets, "token_hex", lambda n: next(names))
    _interrupt_after(monkeypatch, "open", jsonio.os)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(path, "new")
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == [taken.name]
    assert taken.read_text() == "another writer's"


def test_the_file_is_made_as_open_makes_it_and_the_umask_is_left_alone(tmp_path, monkeypatch):
    old = os.umask(0o027)
    try:
        calls = []
        monkeypatch.setattr(jsonio.os, "umask", lambda *a: calls.append(a) or 0o027)
        write_atomic(tmp_path / "a.txt", "x")
        monkeypatch.undo()
        (tmp_path / "b.txt").write_text("x")
    finally:
        os.umask(old)
    assert calls == [] and (tmp_path / "a.txt").read_text() == "x"
    assert (os.stat(tmp_path / "a.txt").st_mode & 0o777) == (
        os.stat(tmp_path / "b.txt").st_mode & 0o777) == 0o640
