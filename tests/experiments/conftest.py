"""Tiny model and training configs shared by the experiment tests (one thread: fast and
bit-reproducible even when other processes share the CPU), toy suites, and what they import
from here."""

import json
import os
import select
import shutil
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from blocklab.config import ModelConfig
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites import base
from blocklab.experiments.summaries import Interval, Summary, Table
from blocklab.experiments.trainer import TrainConfig


@pytest.fixture(scope="session")  # frozen configs: one for every test
def tiny_model():
    return ModelConfig(vocab_size=256, d_model=32, n_layers=2, n_heads=2, max_seq_len=256)


@pytest.fixture(scope="session")
def tiny_train():
    return TrainConfig(steps=8, batch_size=4, seq_len=32, lr=3e-3, eval_every=4, eval_batches=1,
                       log_every=2, threads=1)


@dataclass(frozen=True)
class Nothing:
    """A summary with nothing to summarise."""


def plain_suite(name: str, plan, **kwargs):
    """A suite of `plan` (options, tuned -> specs) whose summary holds `Nothing`."""
    return base.Suite(name, name, plan, lambda options, results: Summary(
        name, options.size, len(options.seeds), [], data=Nothing()), Nothing, **kwargs)


@dataclass(frozen=True)
class ToyData:
    diff: Interval


def toy_suite(before=None):
    """Arms a and b × the seeds: run a/s measures s + 1, b/s measures s (a paired difference of
    1). Each run first calls `before(arm, seed)`; a result it returns is the run's."""
    def plan(options, tuned=()):
        specs = []
        for arm in ("a", "b"):
            for seed in options.seeds:
                def execute(progress, arm=arm, seed=seed):
                    said = before(arm, seed) if before else None
                    return said or RunResult("ok", wall_time_s=0.5, extra={
                        "value": seed + (1.0 if arm == "a" else 0.0)})

                specs.append(base.RunSpec(f"{arm}/{seed}", arm, seed,
                                          {"arm": arm, "seed": seed, "size": options.size},
                                          execute))
        return specs

    def summarise(options, results):
        a, b = ([r.extra["value"] for s, r in results if s.arm == arm] for arm in "ab")
        diff = base.paired_difference(a, b)
        table = Table("toy", ["Δ"], [[base.format_ci(diff)]])
        return Summary("toy", options.size, len(options.seeds), [table], data=ToyData(diff))

    return base.Suite("toy", "a toy", plan, summarise, ToyData)


# --- another user: files it owns, a child that becomes it --------------------------------------
needs_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="needs root: files owned by another user, and a child that becomes a third (setuid)")
OWNER, USER = 4242, 65534  # the lock file's owner (another user) and the user who runs


def start_as(uid: int, job) -> tuple[int, int]:
    """Fork a child that becomes user `uid` and runs `job()`; (pid, pipe) for `finish`."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            try:
                out = {"ok": job()}
            except Exception as err:  # noqa: BLE001 - reported to the parent as it is
                out = {"error": type(err).__name__, "message": str(err)}
            os.write(write, json.dumps(out).encode())
        finally:
            os._exit(0)
    os.close(write)
    return pid, read


def finish(pid: int, read: int, timeout_s: float = 60) -> dict:
    if not select.select([read], [], [], timeout_s)[0]:  # a hang fails the test, not CI
        os.kill(pid, signal.SIGKILL)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    return json.loads(data or b'{"error": "the child died or hung"}')


def run_as(uid: int, job) -> dict:
    return finish(*start_as(uid, job))


@pytest.fixture
def shared_tmp(monkeypatch):
    """A folder like /tmp (every user may write, sticky; pytest's tmp_path is root's alone)
    with the machine lock named in it."""
    folder = Path(tempfile.mkdtemp(prefix="blocklab-shared-"))
    folder.chmod(0o1777)
    monkeypatch.setenv("BLOCKLAB_MACHINE_LOCK", str(folder / "machine.lock"))
    yield folder
    shutil.rmtree(folder)
