"""Where a suite's runs execute: here one after another, in worker processes on this machine,
or as tasks on a Ray cluster.

An executor is called as `executor(specs, store, progress)`: it runs every spec, saves each
result with `store.save(spec.run_id, result)` as it arrives, and returns {run_id: one-line
error} for the runs that failed without stopping the others (a rerun completes only those).

    execute_in_process   in order, in this process; the first exception stops the suite
    ParallelExecutor     `jobs` forked single-threaded workers on this machine (`--jobs`),
                         then the timed runs alone
    RayExecutor          one Ray task per run, each reserving `num_cpus` CPUs and `num_gpus`
                         GPUs; the driver saves results as `ray.wait` hands them back

    run_suite(ffn, RunOptions.for_suite(ffn, "quick"), "runs", executor=RayExecutor("auto"))

Ray ships each `RunSpec.execute` by cloudpickle (functions of importable modules by name: every
node needs the same blocklab). Only the driver writes results, so the folder need not be shared.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import multiprocessing as mp
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from blocklab.checks import is_int, refusal
from blocklab.errors import InputError
from blocklab.experiments.locks import machine_lock
from blocklab.experiments.results import ResultSink
from blocklab.experiments.suites.base import RunSpec, execute_in_process, say

# The specs being run, set just before the workers fork: they inherit them (closures do not
# pickle) and receive only indices.
_FORKED_SPECS: list[RunSpec] = []


def _worker_start(parent: int) -> None:
    """Each worker: one torch thread, and exit when its parent is gone (a parent killed
    without cleaning up would leave it waiting on the pool's pipes forever)."""
    import threading
    import time

    import torch

    torch.set_num_threads(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)  # no cleanup to do: results are saved by the parent only

    threading.Thread(target=watch, name="blocklab-parent-watch", daemon=True).start()


def _run_forked(index: int) -> dict[str, Any]:
    return _FORKED_SPECS[index].execute(False)


@dataclass(frozen=True)
class ParallelExecutor:
    """Untimed specs in `jobs` forked single-threaded workers (seeded: the serial results but
    the timings), then the timed specs one after another here, alone. A run that raises is
    listed with its error while the others carry on. Without `fork`, all run here in turn.
    """

    jobs: int

    def __post_init__(self) -> None:  # the door of a Python caller; the CLI's is check_threads
        if not is_int(self.jobs, 1, 1024):
            raise InputError(f"--jobs {self.jobs!r} is not allowed; expected an integer in "
                             "[1, 1024]")

    def __call__(self, specs: Sequence[RunSpec], store: ResultSink,
                 progress: bool) -> dict[str, str]:
        untimed = [spec for spec in specs if not spec.timed]
        timed = [spec for spec in specs if spec.timed]
        failed: dict[str, str] = {}
        if self.jobs > 1 and len(untimed) > 1 and "fork" in mp.get_all_start_methods():
            with machine_lock(echo=say):  # shared: no other blocklab process times meanwhile
                failed = self._pool(untimed, store, progress)
        else:
            execute_in_process(untimed, store, progress)
        # Alone: the pool has shut down, and each holds the machine lock exclusively.
        execute_in_process(timed, store, progress)
        return failed

    def _pool(self, specs: list[RunSpec], store: ResultSink, progress: bool) -> dict[str, str]:
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

        global _FORKED_SPECS
        _FORKED_SPECS = list(specs)
        workers = min(self.jobs, len(specs))
        try:
            with ProcessPoolExecutor(workers, mp.get_context("fork"), initializer=_worker_start,
                                     initargs=(os.getpid(),)) as pool:
                pending = {pool.submit(_run_forked, i): spec for i, spec in enumerate(specs)}

                def finished() -> Iterator[tuple[RunSpec, Any, BaseException | None]]:
                    while pending:
                        done, _ = wait(pending, return_when=FIRST_COMPLETED)
                        for future in done:
                            error = future.exception()
                            yield (pending.pop(future), None if error else future.result(),
                                   error)

                return _gather(finished(), f"suite: {len(specs)} runs on {workers} processes",
                               len(specs), store, progress)
        finally:
            _FORKED_SPECS = []


def _gather(finished: Iterable[tuple[RunSpec, Any, BaseException | None]], title: str,
            total: int, store: ResultSink, progress: bool) -> dict[str, str]:
    """Save each (spec, result, error) as it arrives, or list its error in one line; with
    `progress`, one overall bar that names each failure."""
    from rich.markup import escape

    from blocklab.experiments.trainer import make_progress

    failed: dict[str, str] = {}
    with make_progress() if progress else contextlib.nullcontext() as bar:
        overall = bar.add_task(title, total=total, loss="—") if bar is not None else None
        for spec, result, error in finished:
            if error is None:
                store.save(spec.run_id, result)
            else:
                failed[spec.run_id] = _one_line(error)
                if bar is not None:
                    bar.console.print(f"[red]failed[/red] {escape(spec.label)}: "
                                      f"{escape(failed[spec.run_id])}")
            if bar is not None:
                bar.update(overall, advance=1, description=title + (
                    f", {len(failed)} failed" if failed else ""))
    return failed


def _execute(execute: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    """The body of one Ray task: run the spec without a progress bar (the driver shows one)."""
    return execute(False)


def _one_line(error: BaseException) -> str:
    """A failed run's error as one line: "RuntimeError: its first line"."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(": ")


@dataclass(frozen=True)
class RayExecutor:
    """Run each spec as a Ray task; see the module docstring.

    address: as `ray.init(address=...)` takes it ("auto", "HEAD_IP:6379", "local" for a new
        instance for this suite alone; None: Ray's own rule); an instance already initialised
        in this process is used.
    num_cpus, num_gpus: what each run reserves (OMP_NUM_THREADS is set to num_cpus).
    max_retries: reruns of a task whose worker died; a run that raised is never retried.
    """

    address: str | None = None
    num_cpus: float = 1
    num_gpus: float = 0
    max_retries: int = 3

    def __post_init__(self) -> None:
        for name in ("num_cpus", "num_gpus"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise refusal(f"RayExecutor.{name}={value!r}", "a number >= 0")
        if not is_int(self.max_retries, 0, math.inf):
            raise refusal(f"RayExecutor.max_retries={self.max_retries!r}", "an integer >= 0")
        if importlib.util.find_spec("ray") is None:
            raise InputError("the Ray executor needs Ray; install it with: "
                             "pip install 'blocklab[ray]'")

    def __call__(self, specs: Sequence[RunSpec], store: ResultSink,
                 progress: bool) -> dict[str, str]:
        import ray

        started_here = not ray.is_initialized()
        if started_here:
            try:
                ray.init(address=self.address)
            except ConnectionError as err:  # a wrong address, or a cluster token missing here
                raise InputError(f"could not join the Ray cluster at {self.address}: "
                                 f"{str(err).splitlines()[0]}") from err
        try:
            return self._run(specs, store, progress)
        finally:
            if started_here:
                ray.shutdown()

    def _run(self, specs: Sequence[RunSpec], store: ResultSink,
             progress: bool) -> dict[str, str]:
        import ray

        for spec in specs:  # fail before anything starts, naming the run and the culprit
            try:
                ray.cloudpickle.dumps(spec.execute)
            except Exception as err:
                raise InputError(f"run {spec.label!r} cannot be sent to Ray workers: "
                                 f"{type(err).__name__}: {err}") from err
        task = ray.remote(_execute).options(num_cpus=self.num_cpus, num_gpus=self.num_gpus,
                                            max_retries=self.max_retries)
        pending = {task.remote(spec.execute): spec for spec in specs}

        def finished() -> Iterator[tuple[RunSpec, Any, BaseException | None]]:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                try:
                    result, error = ray.get(ready[0]), None
                except ray.exceptions.RayError as err:  # the task's own error, if it raised
                    cause = err.cause if isinstance(err, ray.exceptions.RayTaskError) else None
                    result, error = None, cause or err
                yield pending.pop(ready[0]), result, error

        try:
            return _gather(finished(), f"suite: {len(specs)} runs on Ray", len(specs), store,
                           progress)
        except BaseException:
            # Interrupted, or a result could not be saved: stop what still runs (a rerun
            # resumes from the results saved).
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
