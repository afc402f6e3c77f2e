"""Fixtures shared across the test packages.

The tests run in one worker process per usable core (pytest-xdist). A test that times the
machine is marked `exclusive`: it runs with no other test beside it (`machine_turn`). Tests
that only lock, signal or kill wait on what they observe, not on the clock.
"""

import contextlib
import fcntl
import json
import os
import subprocess
from pathlib import Path

import pytest
import torch

# `--precision auto` times the machine at hand; pinned, so that no test's numbers depend on a
# timing (tests/nn/test_calibration.py measures).
os.environ.setdefault("BLOCKLAB_CALIBRATION", "static")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "exclusive: times the machine; runs with no other test beside it")


def pytest_collection_modifyitems(config, items):
    """The exclusive tests run last: spread among the others, each would idle the workers."""
    items.sort(key=lambda item: item.get_closest_marker("exclusive") is not None)


def _shared_folder(tmp_path_factory) -> Path:
    """A folder every worker of this test session sees."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextlib.contextmanager
def _flock(path: Path, mode: int):
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)  # releases the lock


@pytest.fixture(autouse=True)
def machine_turn(request, tmp_path_factory):
    """A shared turn for every test, an exclusive one for a test marked `exclusive`: a
    readers-writer flock whose turnstile keeps shared turns from starving an exclusive one."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    folder = _shared_folder(tmp_path_factory)
    turnstile, turn = folder / "turnstile.lock", folder / "turn.lock"
    if request.node.get_closest_marker("exclusive"):
        with _flock(turnstile, fcntl.LOCK_EX), _flock(turn, fcntl.LOCK_EX):
            yield
        return
    with contextlib.ExitStack() as held:
        with _flock(turnstile, fcntl.LOCK_EX):
            held.enter_context(_flock(turn, fcntl.LOCK_SH))
        with _one_thread_each():
            yield


@contextlib.contextmanager
def _one_thread_each():
    """One torch thread for a test beside other workers, and for the commands it starts: a
    second OpenMP thread pushed off its core stalls every op (12.4 s against 0.3 s)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("OMP_NUM_THREADS", "1")
            yield
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="session", autouse=True)
def own_machine_lock(tmp_path_factory):
    """A machine lock of the tests' own (subprocesses inherit it): a blocklab run elsewhere
    neither waits for the tests nor makes them wait."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BLOCKLAB_MACHINE_LOCK",
                     str(_shared_folder(tmp_path_factory) / "machine.lock"))
        yield


@pytest.fixture(scope="session")
def tiny_runs(tmp_path_factory) -> Path:
    """Every registered suite run at --size tiny into one folder, once per test session (the
    first worker runs them, the others wait). Read it, never write to it: copy it first.
    `echo.txt` holds what the run said, a line each."""
    from blocklab.experiments.executors import ParallelExecutor
    from blocklab.experiments.options import RunRequest
    from blocklab.experiments.suites import SUITE_MODULES, run_suites

    shared = _shared_folder(tmp_path_factory)
    folder, done = shared / "tiny-runs", shared / "tiny-runs.done"
    with _flock(shared / "tiny-runs.lock", fcntl.LOCK_EX):
        if not done.exists():
            lines: list[str] = []
            errors = run_suites(RunRequest(folder, "tiny"), list(SUITE_MODULES),
                                executor=ParallelExecutor(2), progress=False,
                                echo=lines.append)
            assert not errors, errors
            (folder / "echo.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
            done.touch()
    return folder


@pytest.fixture(scope="module")
def unrun(tmp_path_factory):
    """Every claim with no suite results stored: the analytic ones graded live, the others
    missing-results."""
    from blocklab.claims import Context, run_claims
    from blocklab.experiments.options import RunRequest

    return run_claims(None, Context(RunRequest(tmp_path_factory.mktemp("none"), "quick")))


@contextlib.contextmanager
def figures_unrasterized():
    """Every figure built as the report builds it, but not rasterized (placeholder PNG bytes):
    for tests of the page's words; rasterizing is about 6 s of a tiny report's 8."""
    from blocklab.report import figures

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(figures, "_png", lambda fig: b"\x89PNG unrasterized")
        yield


@pytest.fixture
def unrasterized():
    """`figures_unrasterized` for one test."""
    with figures_unrasterized():
        yield


@pytest.fixture(scope="module")
def unrasterized_in_module():
    """`figures_unrasterized` for a module's fixtures and tests."""
    with figures_unrasterized():
        yield


@pytest.fixture(scope="module")
def one_thread():
    """One torch thread for a module of tiny-tensor tests (fastest, and no stall on a second
    OpenMP thread): `pytestmark = pytest.mark.usefixtures("one_thread")`."""
    with _one_thread_each():
        yield


class _Processes:
    """Processes as Linux's /proc shows them, for tests that stop a command mid-run."""

    @staticmethod
    def children(pid: int) -> list[int]:
        """The processes whose parent is `pid`."""
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(stat.parent.name))
        return found

    @staticmethod
    def alive(pid: int) -> bool:
        """Running (a zombie waiting for its new parent to reap it has exited)."""
        try:
            state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        return state != "Z"


@pytest.fixture
def processes() -> _Processes:
    return _Processes()


@pytest.fixture
def measuring(monkeypatch, tmp_path):
    """Calibration measuring (not pinned) into a cache of this test's own: the cache folder."""
    from blocklab.nn import calibration

    monkeypatch.setenv("BLOCKLAB_CALIBRATION", "measure")
    monkeypatch.setenv("BLOCKLAB_CACHE_DIR", str(tmp_path))
    calibration._MEMO.clear()
    yield tmp_path
    calibration._MEMO.clear()


@pytest.fixture
def started(monkeypatch):
    """The options each `blocklab suite` run starts with; the run itself stops there."""
    import typer

    import blocklab.experiments.suites as suites

    seen = []

    def run_suite(suite, options, *args, **kwargs):
        seen.append(options)
        raise typer.Exit(0)

    monkeypatch.setattr(suites, "run_suite", run_suite)
    return seen


@pytest.fixture
def one_line_exit_2(capsys):
    """`one_line_exit_2(run, *needles, main=cli.main) -> line`: the command was refused as bad
    input: exit 2, nothing on stdout, one `error: ` line on stderr holding every needle. `run`
    is an argv for `main` here, or a finished `python -m blocklab` (its CompletedProcess)."""

    def check(run: list[str] | subprocess.CompletedProcess, *needles: str, main=None) -> str:
        if isinstance(run, subprocess.CompletedProcess):
            code, out, err = run.returncode, run.stdout, run.stderr
        else:
            if main is None:
                from blocklab.cli import main
            code = main(run)
            out, err = capsys.readouterr()
        lines = err.strip().splitlines()
        assert code == 2 and out == "", (code, out, err)
        assert len(lines) == 1 and lines[0].startswith("error: "), err
        assert "Traceback" not in err
        for needle in needles:
            assert needle in lines[0], (needle, lines[0])
        return lines[0]

    return check


# Plain helpers, imported as `from .conftest import ...` by the tests beside this file.
LLAMA_HF = {"model_type": "llama", "vocab_size": 256, "hidden_size": 64,
            "intermediate_size": 176, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "max_position_embeddings": 128, "rms_norm_eps": 1e-5,
            "hidden_act": "silu", "tie_word_embeddings": False}


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    """`blocklab ARGV` run in this process: (exit code, stdout, stderr)."""
    from blocklab.cli import main

    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def write_json(tmp_path: Path, data, name: str = "config.json") -> str:
    """`data` (a JSON value, or text as it is) written to tmp_path/name; its path."""
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)
