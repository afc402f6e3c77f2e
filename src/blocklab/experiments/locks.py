"""Locks that keep blocklab processes out of each other's way on one machine.

    suite_locks(results, ["ffn", "position"])   one process at a time plans and runs a suite in
                                                 a results folder (`<results>/<suite>/.lock`); a
                                                 second one waits, saying so, or refuses
                                                 (`wait=False`, the CLI's --no-wait), then plans
                                                 again and finds the first one's runs stored
    machine_lock(exclusive=False)                held shared while runs train; exclusive while a
                                                 run measures time, so a timing never shares the
                                                 machine with another blocklab run
    OthersCpu()                                  how much of the machine other processes used
                                                 while a timed run ran (recorded in its result)

Both are `flock` locks on files, so a process that dies (even by SIGKILL) releases them, and
forked worker processes share their parent's. The machine lock lives in the temporary folder
(`$BLOCKLAB_MACHINE_LOCK` names another file). Locks are advisory: only blocklab honours them.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from blocklab.errors import Busy

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no locking
    fcntl = None  # type: ignore[assignment]

Echo = Callable[[str], None]


def _open(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)


def _holder(fd: int) -> str:
    """Who holds the lock, as its holder wrote it ("pid 123: blocklab suite ffn")."""
    try:
        text = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        return "another process"
    return text or "another process"


def _stamp(fd: int) -> None:
    import sys

    argv = [Path(sys.argv[0]).name, *sys.argv[1:]] if sys.argv else []
    text = f"pid {os.getpid()}: {' '.join(argv)}"
    os.ftruncate(fd, 0)
    os.pwrite(fd, text[:200].encode("utf-8", "replace"), 0)


@contextlib.contextmanager
def suite_locks(results: str | Path, suites: Sequence[str], *, wait: bool = True,
                echo: Echo | None = None) -> Iterator[None]:
    """Hold the lock of each suite's folder under `results` (taken in name order, so two
    processes asking for overlapping sets cannot deadlock). A held lock: wait for it (saying
    which process holds it, through `echo`) or, with `wait=False`, raise `Busy`."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    fds: list[int] = []
    try:
        for name in sorted(set(suites)):
            folder = Path(results) / name
            fd = _open(folder / ".lock")
            fds.append(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(fd)
                if not wait:
                    raise Busy(f"{folder} is in use by {holder}; wait for it to finish, "
                               "drop --no-wait to wait, or use another --results folder") from None
                if echo is not None:
                    echo(f"waiting for {holder} to finish with {folder} …")
                fcntl.flock(fd, fcntl.LOCK_EX)
            _stamp(fd)
        yield
    finally:
        for fd in fds:
            os.close(fd)  # closing releases the lock


def machine_lock_path() -> Path:
    named = os.environ.get("BLOCKLAB_MACHINE_LOCK")
    return Path(named) if named else Path(tempfile.gettempdir()) / "blocklab-machine.lock"


@dataclass
class _Held:
    fd: int | None = None
    mode: str | None = None  # "shared" or "exclusive"
    depth: int = 0


# This process's hold on the machine lock: nested requests reuse it (an exclusive hold covers
# a shared request), since a second flock of the same file from this process would wait on
# itself.
_HELD = _Held()


@contextlib.contextmanager
def machine_lock(exclusive: bool = False, *, echo: Echo | None = None) -> Iterator[None]:
    """Hold the machine lock shared (training) or exclusive (timing) for the block; waits,
    saying so through `echo`, while another blocklab process holds it the other way."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    want = "exclusive" if exclusive else "shared"
    if _HELD.mode == "exclusive" or _HELD.mode == want:
        _HELD.depth += 1
        try:
            yield
        finally:
            _HELD.depth -= 1
        return
    before = (_HELD.fd, _HELD.mode, _HELD.depth)
    fd = _HELD.fd if _HELD.fd is not None else _open(machine_lock_path())
    flag = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    try:
        fcntl.flock(fd, flag | fcntl.LOCK_NB)
    except BlockingIOError:
        if echo is not None:
            echo("waiting for other blocklab runs on this machine to finish before "
                 + ("timing alone …" if exclusive else "starting (a timing is running) …"))
        fcntl.flock(fd, flag)
    _HELD.fd, _HELD.mode, _HELD.depth = fd, want, 1
    try:
        yield
    finally:
        fd0, mode0, depth0 = before
        if mode0 is None:
            os.close(fd)
            _HELD.fd, _HELD.mode, _HELD.depth = None, None, 0
        else:  # back to the shared hold this block was nested in
            fcntl.flock(fd, fcntl.LOCK_SH)
            _HELD.fd, _HELD.mode, _HELD.depth = fd0, mode0, depth0


def _busy_and_total_s() -> tuple[float, float] | None:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is already inside user
    return (total - idle) / tick, total / tick


class OthersCpu:
    """Measures what share of the machine's CPU other processes used over a block:

        others = (machine busy CPU seconds − this process's own) / (wall seconds × cores)

    0 on a quiet machine, 0.5 when another process kept one of two cores busy. None where
    /proc/stat cannot be read."""

    def __enter__(self) -> OthersCpu:
        self._machine = _busy_and_total_s()
        self._own = _own_cpu_s()
        self._wall = time.perf_counter()
        self.share: float | None = None
        return self

    def __exit__(self, *exc) -> None:
        after = _busy_and_total_s()
        if self._machine is None or after is None:
            return
        wall = time.perf_counter() - self._wall
        capacity = after[1] - self._machine[1]  # all cores' seconds, as the kernel counts them
        if wall <= 0 or capacity <= 0:
            return
        others = (after[0] - self._machine[0]) - (_own_cpu_s() - self._own)
        self.share = round(min(1.0, max(0.0, others / capacity)), 4)

    def record(self) -> dict[str, float | int | None]:
        """What a timed result keeps: others' share and the 1-minute load at the end."""
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        return {"others_cpu_share": self.share, "loadavg_1min": load,
                "cores": os.cpu_count()}


def _own_cpu_s() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


# A timing taken while other processes used more than this share of the machine is flagged:
# half a core on a 2-core machine, where a single-threaded timing starts to compete for its
# core. Below it is the machine's own background (on the 2-core machine the quick report ran
# on, a quiet machine's timed runs read 1-11%, kernel threads and shells included).
BUSY_SHARE = 0.25


def is_busy(record: object) -> bool:
    """Whether a timed result's `machine_load` record says the machine was busy."""
    if not isinstance(record, dict):
        return False
    share = record.get("others_cpu_share")
    return isinstance(share, int | float) and share > BUSY_SHARE


__all__ = ["BUSY_SHARE", "OthersCpu", "is_busy", "machine_lock", "machine_lock_path",
           "suite_locks"]
