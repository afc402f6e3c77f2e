"""Two blocklab processes on one machine: a results folder is run by one at a time, a timed run
never shares the machine with another blocklab run, Ctrl-C says what was kept, and a full disk
names the file it could not write."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from blocklab.cli import main
from blocklab.errors import Busy, LockUnavailable
from blocklab.experiments import locks, suites
from blocklab.experiments.locks import OthersCpu, machine_lock, suite_locks
from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import ResultStore
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.base import RunSpec, Suite, run_suite
from blocklab.report.build import _stored_runs

from .conftest import OWNER, USER, finish, needs_root, plain_suite, run_as, start_as


@pytest.fixture(autouse=True)
def own_lock(tmp_path, monkeypatch):
    """A machine lock of each test's own: what these tests hold, wait for and measure is theirs
    alone, whatever the other test workers train or time meanwhile."""
    monkeypatch.setenv("BLOCKLAB_MACHINE_LOCK", str(tmp_path / "machine.lock"))


# `blocklab suite toy` (conftest's toy suite) in a process of its own: its first run says it
# started (it holds the folder) and waits for the file `go`.
_TOY_SUITE = """
import sys, time
from pathlib import Path
sys.path.insert(0, {here!r})
from conftest import toy_suite
from blocklab.cli import main
from blocklab.experiments import suites

def before(arm, seed):
    (Path({gate!r}) / "started").touch()
    while not (Path({gate!r}) / "go").exists():
        time.sleep(0.05)

suites.get_suite = lambda name: toy_suite(before)
sys.exit(main(["suite", "toy", "--tiny", "--seeds", "2", "--results", {results!r}, "--json",
               "--jobs", "1"]))
"""


def test_two_suites_started_together_run_each_run_once(tmp_path):
    results, gate = tmp_path / "runs", tmp_path / "gate"
    gate.mkdir()
    code = _TOY_SUITE.format(here=str(Path(__file__).parent), gate=str(gate),
                             results=str(results))

    def start() -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    first = start()
    deadline = time.monotonic() + 120
    while not (gate / "started").exists():  # the first holds the folder, in its first run
        assert time.monotonic() < deadline and first.poll() is None, first.communicate()
        time.sleep(0.05)
    second = start()
    said = second.stderr.readline()  # the second waits for the folder and says so
    (gate / "go").touch()
    outs = [p.communicate(timeout=120) for p in (first, second)]
    assert first.returncode == 0 and second.returncode == 0, outs
    assert said.startswith("waiting for") and str(results / "toy") in said, said
    assert "waiting for" not in outs[0][1]
    first_summary, later = (json.loads(out) for out, _ in outs)
    # ... and found every run stored
    assert later["notes"][0].startswith("4 of 4 runs were already stored"), later["notes"]
    assert first_summary["run_ids"] == later["run_ids"] and len(later["run_ids"]) == 4
    stored = sorted(p.name for p in (results / "toy" / "tiny").glob("*.json"))
    assert stored == sorted([f"{r}.json" for r in later["run_ids"]] + ["summary.json"])


def test_no_wait_refuses_a_folder_in_use(tmp_path, capsys):
    with suite_locks(tmp_path, ["ffn"]):
        code = main(["suite", "ffn", "--tiny", "--results", str(tmp_path), "--no-wait"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert str(tmp_path / "ffn") in err[0] and f"pid {os.getpid()}" in err[0]
    with pytest.raises(Busy), suite_locks(tmp_path, ["ffn"]), \
            suite_locks(tmp_path, ["ffn"], wait=False):
        pass  # a second hold, even from this process, is refused


def _holding(lock: str, seconds: float, env=None) -> subprocess.Popen:
    """A child process that holds `lock` (a call of blocklab.experiments.locks) for `seconds`,
    returned once it holds it."""
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from blocklab.experiments import locks
        with locks.{lock}:
            print("held", flush=True)
            time.sleep({seconds})
        """)], stdout=subprocess.PIPE, text=True, env=env)
    assert child.stdout.readline().strip() == "held"
    return child


def test_a_suite_lock_is_released_when_its_holder_dies(tmp_path):
    holder = _holding(f"suite_locks({str(tmp_path)!r}, ['ffn'])", 60)
    with pytest.raises(Busy), suite_locks(tmp_path, ["ffn"], wait=False):
        pass
    holder.kill()
    holder.wait()
    with suite_locks(tmp_path, ["ffn"], wait=False):
        pass


@pytest.mark.parametrize(("other", "exclusive", "said"), [
    ("shared", True, "waiting for other blocklab runs on this machine to finish before timing"),
    ("exclusive", False, "waiting for other blocklab runs on this machine to finish before "
                         "starting (a timing is running)"),
    ("shared", False, None),  # two processes train side by side
])
def test_timing_and_training_wait_for_each_other_and_say_so(other, exclusive, said):
    child = _holding(f"machine_lock(exclusive={other == 'exclusive'})", 1.5)
    echoed: list[str] = []
    start = time.monotonic()
    with machine_lock(exclusive=exclusive, echo=echoed.append):
        waited = time.monotonic() - start
    child.wait()
    if said is None:
        assert waited < 0.5 and echoed == [], (waited, echoed)
    else:
        assert waited > 0.5, waited
        assert echoed and echoed[0].startswith(said)


def test_machine_lock_nests_within_one_process():
    with machine_lock():
        with machine_lock(exclusive=True):  # converts, then back to shared
            assert locks._HELD.mode == "exclusive"
            with machine_lock():  # covered by the exclusive hold
                assert locks._HELD.mode == "exclusive"
        assert locks._HELD.mode == "shared"
    assert locks._HELD.mode is None and locks._HELD.fd is None


def test_others_cpu_sees_a_busy_process_and_flags_it():
    burner = subprocess.Popen([sys.executable, "-c",
                               "import time\nt=time.time()\nwhile time.time()-t<1.5: pass"])
    time.sleep(0.2)
    with OthersCpu() as others:
        time.sleep(1.0)
    burner.wait()
    # One core of os.cpu_count() kept busy by someone else.
    assert others.share is not None and others.share > 0.5 / os.cpu_count()
    assert set(others.record()) == {"others_cpu_share", "loadavg_1min", "cores"}
    assert locks.is_busy({"others_cpu_share": 0.5})  # one of two cores
    assert not locks.is_busy({"others_cpu_share": 0.1})  # a machine's background
    assert not locks.is_busy(None)


def _suite(specs: list[RunSpec]) -> Suite:
    return plain_suite("fake", lambda options, tuned=(): specs)


def test_ctrl_c_says_how_many_runs_were_kept(tmp_path, monkeypatch, capsys):
    def stop(progress):
        raise KeyboardInterrupt

    specs = [RunSpec(f"r{i}", "a", i, {"i": i}, lambda progress: RunResult("ok"))
             for i in range(2)] + [RunSpec("r2", "a", 2, {"i": 2}, stop)]
    monkeypatch.setattr(suites, "get_suite", lambda name: _suite(specs))
    assert main(["suite", "fake", "--tiny", "--seeds", "1", "--results", str(tmp_path),
                 "--no-progress", "--jobs", "1"]) == 130
    folder = tmp_path / "fake" / "tiny"
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"interrupted: 2 run(s) finished before the interruption are kept in {folder}; the "
        "same command runs only what is missing")
    assert len(list(folder.glob("*.json"))) == 2


def test_cli_names_the_file_a_full_disk_stopped(tmp_path, monkeypatch, capsys):
    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    out = tmp_path / "run"
    code = main(["train", "--steps", "1", "--d-model", "16", "--n-layers", "1", "--n-heads",
                 "1", "--seq-len", "8", "--batch-size", "1", "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert err[-1].startswith("error: [Errno 28]") and str(out / "result.json") in err[-1]
    assert not list(out.iterdir())  # no temporary file left behind


@pytest.mark.parametrize("argv,option", [
    (["suite", "ffn", "--tiny", "--results", "{file}"], "--results"),
    (["suite", "ffn", "--tiny", "--results", "{file}/sub"], "--results"),
    (["report", "--tiny", "--out", "{file}"], "--out"),
    (["report", "--tiny", "--results", "{file}"], "--results"),
    (["report", "--tiny", "--plan", "--results", "{file}"], "--results"),
])
def test_a_results_or_out_folder_that_is_a_file(tmp_path, one_line_exit_2, argv, option):
    file = tmp_path / "taken"
    file.write_text("not a folder")
    line = one_line_exit_2([a.replace("{file}", str(file)) for a in argv], str(file), "file")
    assert line.startswith(f"error: {option} ")
    assert not (tmp_path / "ffn").exists()


def test_a_busy_timing_is_flagged_in_the_summary_and_the_report(tmp_path, monkeypatch):
    class Busy:
        def __enter__(self):
            self.share = 0.4
            return self

        def __exit__(self, *exc):
            return None

        def record(self):
            return {"others_cpu_share": self.share, "loadavg_1min": 1.0, "cores": 2}

    monkeypatch.setattr(locks, "OthersCpu", Busy)
    specs = [RunSpec("kernel timing", "a", 0, {"t": 1}, lambda progress: RunResult("ok"),
                     timed=True),
             RunSpec("training", "a", 0, {"t": 2}, lambda progress: RunResult("ok"))]
    summary = run_suite(_suite(specs), RunOptions("tiny", range(1)), tmp_path, progress=False)
    assert any("kernel timing (40%)" in note for note in summary.notes), summary.notes
    _, _, flagged = _stored_runs(ResultStore(tmp_path / "fake" / "tiny"), summary.run_ids, "")
    assert flagged == [{"label": "kernel timing", "others_cpu_share": 0.4}]


# --- locks for every user ------------------------------------------------------------------------
# The machine lock lives in /tmp, shared by every user; a lock file another user made must serve
# this one too. The tests make files another user owns and run the locking code as a third user,
# in a forked child that drops root (a fork, so nothing is exec'd that the user could not read).
def _others_lock(path, mode: int) -> None:
    path.write_text("")
    os.chown(path, OWNER, OWNER)
    path.chmod(mode)


def _train_then_time() -> str:
    with machine_lock(), machine_lock(exclusive=True):
        return "held"


@needs_root
@pytest.mark.parametrize("mode", [0o644, 0o444, 0o666, 0o600])
def test_another_users_machine_lock_serves_this_user_if_it_can_open_it(shared_tmp, mode):
    """flock needs no write access: a lock the first user made (0644 under umask 022) is held
    read-only by the others; one this user cannot open (0600) is one line."""
    path = shared_tmp / "machine.lock"
    _others_lock(path, mode)
    assert run_as(USER, _train_then_time) == ({"ok": "held"} if mode != 0o600 else {
        "error": "LockUnavailable", "message":
        f"cannot open the lock file {path} (Permission denied, owned by uid {OWNER}); set "
        "$BLOCKLAB_MACHINE_LOCK to a file every blocklab user on this machine can open (all "
        "must name the same one, so that timed runs stay alone)"})
    info = path.stat()
    assert (info.st_uid, info.st_mode & 0o777, path.read_text()) == (OWNER, mode, "")


@needs_root
def test_a_machine_lock_made_under_a_strict_umask_is_still_shared(shared_tmp):
    """Whoever makes the lock first makes it 0666 whatever their umask (open's mode is cut by
    it), so the next user can use it."""
    path = shared_tmp / "machine.lock"

    def make() -> str:
        os.umask(0o077)
        return _train_then_time()

    assert run_as(OWNER, make) == {"ok": "held"}
    assert path.stat().st_uid == OWNER and path.stat().st_mode & 0o777 == 0o666
    assert run_as(USER, _train_then_time) == {"ok": "held"}


@needs_root
def test_another_users_suite_lock_serves_this_user(shared_tmp):
    """A results folder shared between users: the folder's lock, made by one, is held by the
    other read-only (it cannot stamp it), and who holds it is still said right."""
    with suite_locks(shared_tmp, ["ffn"]):  # made by root, 0644 under umask 022
        pass
    lock = shared_tmp / "ffn" / ".lock"
    (shared_tmp / "ffn").chmod(0o777)
    assert lock.read_bytes() == b""  # a released lock names no holder

    def hold(seconds: float = 0) -> str:
        with suite_locks(shared_tmp, ["ffn"], wait=False):
            time.sleep(seconds)
            return "held"

    assert run_as(USER, hold) == {"ok": "held"}
    with suite_locks(shared_tmp, ["ffn"]):
        out = run_as(USER, hold)
    assert out["error"] == "Busy" and f"pid {os.getpid()}" in out["message"], out
    child = start_as(USER, lambda: hold(2.0))
    time.sleep(0.7)
    with pytest.raises(Busy, match="in use by another process"):
        hold()  # not by this process, whose stamp is gone
    assert finish(*child) == {"ok": "held"}
    lock.chmod(0o600)
    out = run_as(USER, hold)
    assert out["error"] == "LockUnavailable", out
    assert out["message"].startswith(f"cannot open the lock file {lock} (Permission denied, "
                                     "owned by root)")
    assert "--results" in out["message"]


@pytest.mark.parametrize("make, reason", [
    (lambda p: p.mkdir(), "is not a regular file"),
    (lambda p: os.mkfifo(p), "is not a regular file"),  # opened without waiting for a writer
    (lambda p: p.symlink_to(p.parent / "nowhere" / "x"), "(a link to nothing)"),
    (lambda p: p.parent.joinpath("file").write_text("") or None, "a file stands in its folder"),
])
def test_a_machine_lock_path_that_is_no_lock_file(tmp_path, monkeypatch, make, reason):
    path = tmp_path / "machine.lock"
    make(path)
    if "folder" in reason:
        path = tmp_path / "file" / "machine.lock"
    monkeypatch.setenv("BLOCKLAB_MACHINE_LOCK", str(path))
    with pytest.raises(LockUnavailable) as err, machine_lock():
        pass
    assert str(path) in str(err.value) and reason in str(err.value)
    assert "$BLOCKLAB_MACHINE_LOCK" in str(err.value)
    assert locks._HELD.fd is None


@pytest.mark.parametrize("argv", [
    ["train", "--steps", "1"],
    ["suite", "ffn", "--tiny", "--seeds", "1", "--no-progress", "--jobs", "1"],
])
def test_cli_says_a_lock_it_cannot_open_on_one_line(tmp_path, monkeypatch, one_line_exit_2,
                                                    argv):
    (tmp_path / "file").write_text("")
    path = tmp_path / "file" / "machine.lock"
    monkeypatch.setenv("BLOCKLAB_MACHINE_LOCK", str(path))
    monkeypatch.chdir(tmp_path)
    results = ["--results", str(tmp_path / "runs")] if argv[0] == "suite" else []
    line = one_line_exit_2([*argv, *results], "$BLOCKLAB_MACHINE_LOCK")
    assert line.startswith(f"error: cannot open the lock file {path}")


# --- one machine lock, whatever each shell's TMPDIR -----------------------------------------------
def _without_named_lock(tmpdir) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "BLOCKLAB_MACHINE_LOCK"}
    return {**env, "TMPDIR": str(tmpdir)}


@pytest.fixture
def two_tmpdirs(monkeypatch):
    """Two shells' temporary folders, and no $BLOCKLAB_MACHINE_LOCK: the default lock."""
    monkeypatch.delenv("BLOCKLAB_MACHINE_LOCK", raising=False)
    parent = Path(tempfile.mkdtemp(prefix="blocklab-tmpdirs-"))
    parent.chmod(0o755)  # (each may be another user's TMPDIR: it must reach them)
    folders = [parent / "a", parent / "b"]
    for folder in folders:
        folder.mkdir()
        folder.chmod(0o777)
    yield folders
    shutil.rmtree(parent)


def test_two_shells_with_other_tmpdirs_share_the_machine_lock(two_tmpdirs):
    """One path whatever $TMPDIR, so a timing waits for a training run started in another
    shell (test_timing_and_training_wait_for_each_other_and_say_so)."""
    show = "from blocklab.experiments.locks import machine_lock_path as p; print(p())"
    paths = [subprocess.run([sys.executable, "-c", show], env=_without_named_lock(folder),
                            capture_output=True, text=True, check=True).stdout.strip()
             for folder in two_tmpdirs]
    assert paths == ["/tmp/blocklab-machine.lock"] * 2  # /tmp: every user's, whatever TMPDIR


@needs_root
def test_another_user_with_another_tmpdir_waits_on_the_same_lock(two_tmpdirs):
    """Another user, in a shell of its own TMPDIR, finds the lock this user holds (made 0666,
    or held read-only where it is another user's), and its timing waits."""
    def time_alone() -> dict:
        os.environ["TMPDIR"] = str(two_tmpdirs[1])
        tempfile.tempdir = None  # (gettempdir caches its answer)
        said: list[str] = []
        start = time.monotonic()
        with machine_lock(exclusive=True, echo=said.append):
            return {"path": str(locks.machine_lock_path()), "waited": time.monotonic() - start,
                    "said": said}

    trains = _holding("machine_lock()", 1.5, env=_without_named_lock(two_tmpdirs[0]))
    out = run_as(USER, time_alone)
    trains.wait()
    assert out.get("ok", {}).get("path") == "/tmp/blocklab-machine.lock", out
    assert out["ok"]["waited"] > 0.5 and "waiting for" in out["ok"]["said"][0], out
