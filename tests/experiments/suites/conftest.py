"""Stand-ins the suites' tests share, imported from here: a run's final metrics, a spec for a
bare result, and a result as a store reads it back."""

import json
import math

from blocklab.experiments.results import result_json
from blocklab.experiments.run_result import FinalMetrics, RunResult
from blocklab.experiments.suites.base import RunSpec


def final_metrics(val_loss: float | None, entropy: float = 3.3,
                  val_bpb: float | None = None) -> FinalMetrics:
    """A finished run's final metrics: `val_loss` against the unigram `entropy` (nats)."""
    return FinalMetrics(val_loss=val_loss, val_loss_se=None, val_windows=1, val_tokens=16,
                        val_loss_tail=val_loss, val_loss_tail_n=1, val_bpb=val_bpb,
                        val_loss_by_length={}, per_position_loss={}, train_loss=val_loss,
                        unigram_entropy=entropy, unigram_entropy_bpb=entropy / math.log(2),
                        params=100)


def bare_spec(arm: str, label: str | None = None) -> RunSpec:
    """A spec of `arm` at seed 0 whose run does nothing (for results made by hand)."""
    return RunSpec(label or arm, arm, 0, {}, lambda progress: RunResult(status="ok"))


def stored(result: RunResult) -> RunResult:
    """`result` as a store reads it back."""
    return RunResult.from_dict(json.loads(result_json(result)))
