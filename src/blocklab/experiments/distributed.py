"""Data-parallel training under `torchrun`: the process group, and which rows each rank trains on.

    torchrun --nproc-per-node 2 -m blocklab train --batch-size 16 ...

`process_group(device)` joins torchrun's group (gloo on CPU; NCCL on CUDA, each rank on
cuda:LOCAL_RANK); `train` then runs DistributedDataParallel, the single-process run up to float
rounding:

    data      every rank draws the global batch `sample_batch(seed, step)` and trains on its
              own contiguous batch_size / world_size rows (`local_rows`)
    gradient  DDP averages equal-sized slices' means: the global mean, clipped as one
    loss      the logged loss and residual RMS are all_reduce means: the global batch's
    seeds     one seed for every rank: identical initial weights and batch stream
    evaluate  every rank scores every validation window; rank 0 alone writes and shows progress
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from blocklab.errors import InputError

_TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK")


@dataclass(frozen=True)
class Rank:
    """This process's place in the group: global rank, number of ranks, rank on its node."""

    rank: int
    world_size: int
    local_rank: int


def torchrun_rank(environ: Mapping[str, str] = os.environ) -> Rank | None:
    """The rank torchrun gave this process, or None outside it."""
    present = [name for name in _TORCHRUN_VARIABLES if name in environ]
    if not present:
        return None
    if len(present) != len(_TORCHRUN_VARIABLES):
        raise InputError(f"torchrun sets {list(_TORCHRUN_VARIABLES)} together; only {present} "
                         "are set")
    try:
        rank, world_size, local_rank = (int(environ[name]) for name in _TORCHRUN_VARIABLES)
    except ValueError:
        raise InputError("RANK, WORLD_SIZE and LOCAL_RANK must be integers, got "
                         f"{[environ[name] for name in _TORCHRUN_VARIABLES]}") from None
    if not (world_size >= 1 and 0 <= rank < world_size and local_rank >= 0):
        raise InputError(f"RANK={rank}, WORLD_SIZE={world_size}, LOCAL_RANK={local_rank} do "
                         "not describe a process group")
    return Rank(rank, world_size, local_rank)


@contextlib.contextmanager
def process_group(device: str = "cpu") -> Iterator[Rank | None]:
    """Join torchrun's group for the block (a caller's own is used and left open); yield this
    process's `Rank`, None outside torchrun."""
    rank = torchrun_rank()
    if rank is None:
        yield None
        return
    if dist.is_initialized():
        yield rank
        return
    backend = "nccl" if device.startswith("cuda") else "gloo"
    device_id = None
    if backend == "nccl":
        if ":" in device:
            raise InputError(f"device {device!r}: under torchrun each rank uses "
                             "cuda:LOCAL_RANK; pass 'cuda' without an index")
        device_id = torch.device("cuda", rank.local_rank)
        torch.cuda.set_device(device_id)  # so "cuda" means this rank's GPU from here on
    dist.init_process_group(backend, rank=rank.rank, world_size=rank.world_size,
                            device_id=device_id)
    try:
        yield rank
    finally:
        dist.destroy_process_group()


def active() -> bool:
    return dist.is_available() and dist.is_initialized()


def rank_and_world_size() -> tuple[int, int]:
    return (dist.get_rank(), dist.get_world_size()) if active() else (0, 1)


def describe() -> dict[str, int | str]:
    """What a result's environment records about the process group: {} outside one."""
    if not active():
        return {}
    return {"world_size": dist.get_world_size(), "backend": str(dist.get_backend())}


def is_main() -> bool:
    """True on rank 0, and in a process outside any group: the one that writes results."""
    return rank_and_world_size()[0] == 0


def local_rows(batch_size: int, rank: int, world_size: int) -> slice:
    """`rank`'s contiguous slice of batch_size / world_size rows of the global batch."""
    if batch_size % world_size:
        raise InputError(f"batch_size={batch_size} does not split over {world_size} ranks; "
                         f"use a multiple of {world_size} (it is the global batch)")
    per_rank = batch_size // world_size
    return slice(rank * per_rank, (rank + 1) * per_rank)


def mean_over_ranks(tensor: torch.Tensor) -> torch.Tensor:
    """The element-wise mean of `tensor` over all ranks (a new tensor; every rank gets it)."""
    total = tensor.detach().clone()
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    return total / dist.get_world_size()


def data_parallel(model: nn.Module) -> nn.Module:
    """`model` wrapped in DistributedDataParallel inside a process group; `model` otherwise."""
    if not active():
        return model
    from torch.nn.parallel import DistributedDataParallel

    device = next(model.parameters()).device
    # Buffers (RoPE tables, ALiBi slopes) are identical constants on every rank.
    return DistributedDataParallel(model, device_ids=[device] if device.type == "cuda" else None,
                                   forward_sync_buffers=False)
