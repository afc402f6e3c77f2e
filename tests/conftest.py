"""Fixtures shared across the test packages."""

import os

import pytest
import torch


@pytest.fixture(scope="session", autouse=True)
def own_machine_lock(tmp_path_factory):
    """The tests' timed runs take a machine lock of their own, so a blocklab run elsewhere on
    the machine neither waits for the tests nor makes them wait (subprocesses inherit it)."""
    before = os.environ.get("BLOCKLAB_MACHINE_LOCK")
    os.environ["BLOCKLAB_MACHINE_LOCK"] = str(tmp_path_factory.mktemp("lock") / "machine.lock")
    yield
    if before is None:
        os.environ.pop("BLOCKLAB_MACHINE_LOCK", None)
    else:
        os.environ["BLOCKLAB_MACHINE_LOCK"] = before


@pytest.fixture(scope="module")
def one_thread():
    """One torch thread for a module of tiny-tensor tests: one thread is fastest there, and it
    cannot stall waiting for a second OpenMP thread that another process has pushed off the
    CPU. Modules opt in with `pytestmark = pytest.mark.usefixtures("one_thread")`."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
