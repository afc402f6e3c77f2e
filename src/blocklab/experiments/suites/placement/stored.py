"""A placement summary's results, sorted by kind, keyed and each decoded once."""

from __future__ import annotations

from dataclasses import dataclass

from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.base import Results
from blocklab.experiments.suites.placement.probes import ProbeRecord
from blocklab.experiments.suites.placement.sweep import StableLr

ProbeKey = tuple[str, str, int, int]  # (placement, init, depth, seed)
ArmKey = tuple[str, int, int, int]  # (placement, depth, warmup, seed)
# (grid: "sweep" or "deep", placement, depth, warmup, seed)
SweepKey = tuple[str, str, int, int, int]


@dataclass(frozen=True)
class Stored:
    """A summary's results, each read once: the finished gradient probes' records, part (b)'s
    training runs, the lr sweeps' records, the tuning runs, and the unigram entropy of the
    training bytes (from the first training run that reports it). A sweep run always ends "ok"
    (a failure raises, and nothing is stored)."""

    probes: dict[ProbeKey, ProbeRecord]
    trained: dict[ArmKey, RunResult]
    swept: dict[SweepKey, StableLr]
    tuned: Results
    unigram_entropy: float | None


def stored_results(results: Results) -> Stored:
    """`results` sorted by kind and keyed; each suite record decoded once."""
    probes: dict[ProbeKey, ProbeRecord] = {}
    trained: dict[ArmKey, RunResult] = {}
    swept: dict[SweepKey, StableLr] = {}
    tuned: Results = []
    entropy = None
    for spec, result in results:
        payload = spec.payload
        if payload["kind"] == "init_gradients":
            if result.status == "ok":
                probes[(payload["placement"], payload["init"], payload["depth"],
                        spec.seed)] = ProbeRecord.of(result, spec.label)
        elif payload["kind"] == "tune":
            tuned.append((spec, result))
        else:
            model, train = payload["model"], payload["train"]
            arm = (model["placement"], model["n_layers"], train["warmup_steps"], spec.seed)
            if payload["kind"] == "train":
                trained[arm] = result
            elif result.status == "ok":
                swept[(payload["kind"], *arm)] = StableLr.of(result, spec.label)
            entropy = entropy or (None if result.final is None
                                  else result.final.unigram_entropy)
    return Stored(probes, trained, swept, tuned, entropy)
