"""Fixtures shared across the test packages."""

import pytest
import torch


@pytest.fixture(scope="module")
def one_thread():
    """One torch thread for a module of tiny-tensor tests: one thread is fastest there, and it
    cannot stall waiting for a second OpenMP thread that another process has pushed off the
    CPU. Modules opt in with `pytestmark = pytest.mark.usefixtures("one_thread")`."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
