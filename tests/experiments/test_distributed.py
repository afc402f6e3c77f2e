"""Data-parallel training: the torchrun environment, the row split, and a 2-rank gloo run under
torchrun against a single process with the same global batch."""

import json
import socket
import subprocess
import sys

import pytest
import torch

from blocklab.cli import main
from blocklab.experiments import distributed

TORCHRUN = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"}
# A tiny run that logs layer statistics (reduced over ranks) and validates midway.
TINY = ["train", "--d-model", "32", "--n-layers", "2", "--n-heads", "2", "--steps", "8",
        "--batch-size", "4", "--seq-len", "32", "--eval-every", "4", "--threads", "1",
        "--no-progress", "--json"]


def test_torchrun_rank_from_the_environment(monkeypatch):
    assert distributed.torchrun_rank({}) is None
    assert distributed.torchrun_rank(TORCHRUN) == distributed.Rank(1, 2, 1)
    with pytest.raises(ValueError, match=r"together; only \['RANK'\]"):
        distributed.torchrun_rank({"RANK": "0"})
    with pytest.raises(ValueError, match="RANK=2, WORLD_SIZE=2"):
        distributed.torchrun_rank({**TORCHRUN, "RANK": "2"})
    with pytest.raises(ValueError, match="must be integers"):
        distributed.torchrun_rank({**TORCHRUN, "RANK": "x"})
    # outside torchrun nothing is initialised
    for name in TORCHRUN:
        monkeypatch.delenv(name, raising=False)
    with distributed.process_group("cpu") as rank:
        assert rank is None and not distributed.active()
    assert distributed.rank_and_world_size() == (0, 1) and distributed.is_main()
    assert distributed.describe() == {}


def test_ranks_take_disjoint_slices_that_make_up_the_global_batch():
    batch = torch.arange(12).reshape(6, 2)  # 6 rows
    slices = [distributed.local_rows(6, rank, 3) for rank in range(3)]
    assert torch.equal(torch.cat([batch[s] for s in slices]), batch)
    assert [(s.start, s.stop) for s in slices] == [(0, 2), (2, 4), (4, 6)]
    assert distributed.local_rows(6, 0, 1) == slice(0, 6)
    with pytest.raises(ValueError, match="batch_size=6 does not split over 4 ranks"):
        distributed.local_rows(6, 0, 4)


def test_indivisible_global_batch_fails_before_joining_the_group(tmp_path, monkeypatch, capsys):
    for name, value in TORCHRUN.items():
        monkeypatch.setenv(name, value)
    assert main([*TINY, "--batch-size", "3", "--out", str(tmp_path)]) == 2
    assert "batch_size=3 does not split over 2 ranks" in capsys.readouterr().err
    assert not distributed.active()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_gloo_ranks_under_torchrun_match_one_process(tmp_path, capsys):
    launch = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
              "--master-addr", "127.0.0.1", "--master-port", str(_free_port()),
              "-m", "blocklab", *TINY, "--out", str(tmp_path / "ddp")]
    done = subprocess.run(launch, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["status"] == "ok"  # one summary: rank 0 alone prints
    assert [p.name for p in (tmp_path / "ddp").iterdir()] == ["result.json"]

    assert main([*TINY, "--out", str(tmp_path / "single")]) == 0
    capsys.readouterr()
    ddp = json.loads((tmp_path / "ddp" / "result.json").read_text())
    single = json.loads((tmp_path / "single" / "result.json").read_text())
    assert ddp["run_id"] == single["run_id"]  # the same experiment
    assert ddp["environment"]["world_size"] == 2 and ddp["environment"]["backend"] == "gloo"
    a, b = ddp["curves"], single["curves"]
    assert a["step"] == b["step"] == list(range(8))

    def close(x, y):  # float32 rounding of a mean of means vs one mean
        torch.testing.assert_close(torch.tensor(x, dtype=torch.float64),
                                   torch.tensor(y, dtype=torch.float64), rtol=0, atol=1e-5)

    close(a["train_loss"], b["train_loss"])  # the global batch's loss at every step
    close(a["grad_norm"], b["grad_norm"])
    close(a["residual_rms"]["layer"], b["residual_rms"]["layer"])
    close(a["layer_grad_norms"]["layer"], b["layer_grad_norms"]["layer"])
    assert a["val_step"] == b["val_step"] == [4, 8]
    close(a["val"]["32"], b["val"]["32"])
    close(ddp["final"]["val_loss"], single["final"]["val_loss"])
