"""Locks that keep blocklab processes out of each other's way on one machine.

    suite_locks(results, ["ffn"])   one process at a time plans and runs a suite in a results
                                    folder (`<results>/<suite>/.lock`); another waits, saying
                                    so, or refuses (`wait=False`, --no-wait)
    machine_lock(exclusive=False)   shared while runs train, exclusive while a run measures
                                    time, so a timing never shares the machine with a run
    OthersCpu()                     the share of the machine other processes used meanwhile

Both are `flock` locks (a process that dies releases them; forked workers share their
parent's). The machine lock is /tmp/blocklab-machine.lock whatever $TMPDIR says, so every user
and shell finds it ($BLOCKLAB_MACHINE_LOCK names another); it is made 0666 and held read-only
where it is another user's (flock needs no write access). A lock file that cannot be opened is
one `LockUnavailable` naming it and what to do.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from blocklab.errors import Busy, LockUnavailable

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no locking
    fcntl = None  # type: ignore[assignment]

Echo = Callable[[str], None]


_FLAGS = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)  # (a FIFO must not hang)


def _open(path: Path, *, write: bool, everyone: bool, fix: str) -> tuple[int, bool]:
    """A descriptor of the lock file `path` and whether it is writable (for the holder's
    stamp): read-write where `write` asks and the mode allows, else read-only; a missing file
    is made (0666 whatever the umask where `everyone` shares it). LockUnavailable names the
    file and `fix` otherwise. An existing file is never opened with O_CREAT: in a sticky /tmp
    Linux refuses that for another user's file (fs.protected_regular)."""
    fd = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):  # a file where a folder should be
        raise LockUnavailable(f"cannot open the lock file {path} (a file stands in its "
                              f"folder's path, {path.parent}); {fix}") from None
    except OSError as err:
        raise LockUnavailable(f"cannot open the lock file {path} (its folder cannot be made: "
                              f"{err.strerror or err}); {fix}") from None
    try:
        for _ in range(100):
            if write:
                with contextlib.suppress(PermissionError, FileNotFoundError):
                    fd, writable = os.open(path, os.O_RDWR | _FLAGS), True
            if fd is None:
                with contextlib.suppress(FileNotFoundError):
                    fd, writable = os.open(path, os.O_RDONLY | _FLAGS), False
            if fd is None:
                access = os.O_RDWR if write else os.O_RDONLY
                # (another process may create it meanwhile: then open that one)
                with contextlib.suppress(FileExistsError):
                    fd = os.open(path, access | os.O_CREAT | os.O_EXCL | _FLAGS, 0o666)
                    writable = write
                    if everyone:
                        os.fchmod(fd, 0o666)
            if fd is not None:
                break
        else:  # neither there to open nor absent to create, 100 times: a link to nothing
            raise LockUnavailable(f"cannot open the lock file {path} (a link to nothing); "
                                  f"{fix}")
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError as err:
        if fd is not None:
            os.close(fd)
        raise LockUnavailable(f"cannot open the lock file {path} ({err.strerror or err}"
                              f"{_owner(path)}); {fix}") from None
    if not regular:  # a folder or a FIFO: flock on it would lock something else than a file
        os.close(fd)
        raise LockUnavailable(f"the lock file {path} is not a regular file; {fix}")
    return fd, writable


def _owner(path: Path) -> str:
    """", owned by <user>" when `path` exists and is another user's, else ""."""
    try:
        uid = os.stat(path).st_uid
    except OSError:
        return ""
    if uid == os.getuid():
        return ""
    try:
        import pwd

        return f", owned by {pwd.getpwuid(uid).pw_name}"
    except (ImportError, KeyError):
        return f", owned by uid {uid}"


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
    """Hold each suite folder's lock (in name order: no deadlock); wait for a held one, saying
    who holds it through `echo`, or with `wait=False` raise `Busy`."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    fds: list[int] = []
    stamped: list[int] = []
    try:
        for name in sorted(set(suites)):
            folder = Path(results) / name
            fd, writable = _open(folder / ".lock", write=True, everyone=False, fix=(
                "its owner can make it readable (chmod a+r), or use another --results folder"))
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
            if writable:  # (another user's lock is held read-only: "another process")
                _stamp(fd)
                stamped.append(fd)
        yield
    finally:
        for fd in fds:
            if fd in stamped:  # a holder that could not stamp must not read as this one
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)
            os.close(fd)  # closing releases the lock


# /tmp, never $TMPDIR, which differs between users and shells (each would lock its own file).
SHARED_MACHINE_LOCK = (Path("/tmp/blocklab-machine.lock") if os.name == "posix"
                       else Path(tempfile.gettempdir()) / "blocklab-machine.lock")


def machine_lock_path() -> Path:
    named = os.environ.get("BLOCKLAB_MACHINE_LOCK")
    return Path(named) if named else SHARED_MACHINE_LOCK


@dataclass
class _Held:
    fd: int | None = None
    mode: str | None = None  # "shared" or "exclusive"


# This process's hold on the machine lock, reused by nested requests (a second flock of the
# file from this process would wait on itself).
_HELD = _Held()


@contextlib.contextmanager
def machine_lock(exclusive: bool = False, *, echo: Echo | None = None) -> Iterator[None]:
    """Hold the machine lock shared (training) or exclusive (timing) for the block; waits,
    saying so through `echo`, while another blocklab process holds it the other way."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    want = "exclusive" if exclusive else "shared"
    if _HELD.mode == "exclusive" or _HELD.mode == want:  # covered by this process's hold
        yield
        return
    outer = _HELD.mode  # None, or the shared hold this block is nested in
    if _HELD.fd is not None:
        fd = _HELD.fd
    else:  # read-only: no one writes in it, and every user can open it so
        fd, _ = _open(machine_lock_path(), write=False, everyone=True, fix=(
            "set $BLOCKLAB_MACHINE_LOCK to a file every blocklab user on this machine can "
            "open (all must name the same one, so that timed runs stay alone)"))
    flag = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    try:
        fcntl.flock(fd, flag | fcntl.LOCK_NB)
    except BlockingIOError:
        if echo is not None:
            echo("waiting for other blocklab runs on this machine to finish before "
                 + ("timing alone …" if exclusive else "starting (a timing is running) …"))
        fcntl.flock(fd, flag)
    _HELD.fd, _HELD.mode = fd, want
    try:
        yield
    finally:
        if outer is None:
            os.close(fd)
            _HELD.fd, _HELD.mode = None, None
        else:  # back to the shared hold this block was nested in
            fcntl.flock(fd, fcntl.LOCK_SH)
            _HELD.mode = outer


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
    """`share` of the machine's CPU other processes used over the block (None without
    /proc/stat): (machine busy CPU seconds − this process's own) / (wall seconds × cores)."""

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


# A timing taken while others used more than this share is flagged: half a core of two, where a
# single-threaded timing starts to compete (a quiet 2-core machine's timed runs read 1-11%).
BUSY_SHARE = 0.25


def is_busy(record: object) -> bool:
    """Whether a timed result's `machine_load` record says the machine was busy."""
    if not isinstance(record, dict):
        return False
    share = record.get("others_cpu_share")
    return isinstance(share, int | float) and share > BUSY_SHARE


__all__ = ["BUSY_SHARE", "SHARED_MACHINE_LOCK", "OthersCpu", "is_busy", "machine_lock",
           "machine_lock_path", "suite_locks"]
