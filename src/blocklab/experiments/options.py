"""What one command asks to run or read, and the options every run of one suite shares: each
one value, checked where it is built.

    request = RunRequest(Path("runs"), "quick", seed_offset=1000)   # built once, in the CLI
    run_suites(request, ["ffn", "placement"])      # the suites, the ledger, the report: read it
    options = request.options(get_suite("ffn"))    # one suite's RunOptions under the request
    run_suite(get_suite("ffn"), options, "runs")   # plan, tune, train, summarise: all read it

`RunRequest` travels whole from the command line to the suites, the sequential design, the
ledger, the report and the estimator, and renders the commands that repeat it; `RunOptions`
travels unchanged through planning to the trainer's `TrainConfig`. Nothing on the way checks
either again. This module needs no PyTorch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from blocklab.checks import is_int, real, refusal
from blocklab.errors import InputError
from blocklab.experiments.ladder import RUNGS
from blocklab.precision import Precision, check_precision

SIZES = ("tiny", "quick", "full")  # every suite has these
# With the ladder's rungs (`blocklab.experiments.ladder`): the quick size at 2×, 4×, 8× the
# training compute, which the suites with a ladder have (`Suite.default_seeds` lists a suite's).
ALL_SIZES = SIZES + RUNGS
# What a suite's training run must reach to count as trained, registered by size before any
# data (`TrainConfig.learn_margin`): its final validation loss a quarter of the way from the
# unigram reference (token frequencies) to the bigram one (one token of context, free); short
# of it the run "did_not_learn", a failure counted apart and never read as a measurement. A
# quarter: on the stdlib corpus the bigram lies 0.76 nats below the unigram (3.21 → 2.45), so
# a run must win 0.19 nats that no training gives. None at tiny: its runs of a few steps are
# plumbing checks, and nothing is read from them as a finding.
LEARN_MARGIN: dict[str, float | None] = {"tiny": None, "quick": 0.25, "full": 0.25,
                                         **dict.fromkeys(RUNGS, 0.25)}
BACKENDS = ("reference", "fast", "compiled")  # `blocklab.nn.backends.BACKENDS` (tested equal)
# Each seed is a set of full training runs; past this the plan alone would not fit in memory
# and the runs would take centuries on any machine blocklab targets.
MAX_SEEDS = 1000
# Seeds are drawn from [0, MAX_SEED_OFFSET + MAX_SEEDS): a disjoint set needs only an offset.
MAX_SEED_OFFSET = 10**9


# Each check names the value as its caller does: the library by field (`seed offset -1`), the
# command line by option (`--seed-offset -1`), so one rule serves both doors.
def check_size(size: str, what: str = "size") -> str:
    """`size` if it is one of ALL_SIZES; InputError otherwise."""
    if size not in ALL_SIZES:
        raise refusal(f"{what} {size!r}", f"one of {list(ALL_SIZES)}")
    return size


def check_seed_offset(seed_offset: int, what: str = "seed offset") -> int:
    """`seed_offset` if it is an integer in [0, MAX_SEED_OFFSET]; InputError otherwise."""
    if not is_int(seed_offset, 0, MAX_SEED_OFFSET):
        raise refusal(f"{what} {seed_offset!r}", f"an integer in [0, {MAX_SEED_OFFSET}]")
    return seed_offset


def check_device_name(device: str, what: str = "device") -> str:
    """`device` if it names a device a run may train on, "cpu", "cuda" or "cuda:<index>";
    InputError otherwise. Whether this machine has it is the trainer's `check_device`."""
    kind, colon, index = device.partition(":") if isinstance(device, str) else ("", "", "")
    if not (device == "cpu" or (kind == "cuda" and (not colon or index.isdigit()))):
        raise refusal(f"{what} {device!r}", "cpu, cuda or cuda:<index>")
    return device


def seed_range(seeds: int, seed_offset: int = 0) -> range:
    """The seeds a suite runs: `seeds` of them from `seed_offset` on, each checked (a bool
    would pass range() as 0 or 1)."""
    if not is_int(seeds, 1, MAX_SEEDS):
        raise refusal(f"seeds={seeds!r}", f"an integer in [1, {MAX_SEEDS}]")
    return range(check_seed_offset(seed_offset), seed_offset + seeds)


def size_folder(size: str, seed_offset: int = 0, precision: str = "fp32",
                longer: bool = False) -> str:
    """The folder name of a suite's results at `size`: seeds from `seed_offset` on, runs in
    bfloat16, and the runs trained twice as long that check a would-be contradiction
    (`longer`), are kept apart from the default seeds in float32 (`quick`, `quick+seeds1000`,
    `quick+bf16`, `quick+x2`), so their summaries never mix."""
    folder = size if check_seed_offset(seed_offset) == 0 else f"{size}+seeds{seed_offset}"
    folder = folder if precision == "fp32" else f"{folder}+{precision}"
    return f"{folder}+x2" if longer else folder


def suite_command(suite: str, size: str, out_dir: str | Path, seed_offset: int = 0,
                  precision: str = "fp32") -> str:
    """The command that runs `suite` and (re)writes its summary: the one renderer of it."""
    offset = f" --seed-offset {seed_offset}" if seed_offset else ""
    bf16 = "" if precision == "fp32" else f" --precision {precision}"
    return f"blocklab suite {suite} --size {size}{offset}{bf16} --results {out_dir}"


class SuiteTraits(Protocol):
    """What options need of a suite (`blocklab.experiments.suites.base.Suite` is one)."""

    name: str
    precisions: tuple[str, ...]
    default_seeds: Mapping[str, int]


@dataclass(frozen=True)
class RunOptions:
    """What every run of one invocation shares: the suite `size`, the evaluation `seeds` (a
    range from the seed offset), the `precision` models train in, the `backend` each op runs
    and the `device` (like the backend, it changes speed and rounding, not which run it is).
    Checked when built: a bad value is an InputError naming it and what is allowed."""

    size: str = "quick"
    seeds: range = range(1)
    precision: Precision = "fp32"
    backend: str = "fast"
    device: str = "cpu"

    def __post_init__(self) -> None:
        check_size(self.size, "suite size")
        if not isinstance(self.seeds, range) or self.seeds.step != 1:
            raise refusal(f"seeds={self.seeds!r}", "a range of consecutive seeds")
        seed_range(len(self.seeds), self.seeds.start)
        check_precision(self.precision)
        if self.backend not in BACKENDS:
            raise refusal(f"backend={self.backend!r}", f"one of {list(BACKENDS)}")
        check_device_name(self.device)

    @classmethod
    def for_suite(cls, suite: SuiteTraits, size: str = "quick", seeds: int | None = None, *,
                  seed_offset: int = 0, precision: str = "fp32",
                  backend: str = "fast", device: str = "cpu") -> RunOptions:
        """The options of `suite` at `size`: its default number of seeds for None, from
        `seed_offset` on; a size or precision the suite lacks is refused."""
        sizes = list(suite.default_seeds)
        if size not in sizes:  # (a list: any value can be compared, a dict key must hash)
            check_size(size, "suite size")  # no size at all
            raise InputError(f"suite {suite.name} has no size {size!r} (a ladder rung); its "
                             f"sizes are {sizes}")
        if precision not in suite.precisions:
            raise refusal(f"suite {suite.name}: precision={precision!r}",
                          f"one of {list(suite.precisions)}")
        count = suite.default_seeds[size] if seeds is None else seeds
        return cls(size, seed_range(count, seed_offset), precision, backend, device)

    @property
    def seed_offset(self) -> int:
        return self.seeds.start

    def with_seeds(self, seeds: range) -> RunOptions:
        """The same options on other seeds (a seed block the sequential design adds)."""
        return replace(self, seeds=seeds)

    def folder(self, *, longer: bool = False, tuning: bool = False) -> str:
        """The folder these options' results live in under a suite's folder. Tuning runs
        have one folder per seed offset (a replication re-tunes on seeds of its own) and per
        precision (each tunes its own rates)."""
        if tuning:
            return size_folder(f"{self.size}+tuning", self.seed_offset, self.precision)
        return size_folder(self.size, self.seed_offset, self.precision, longer)

    def notes(self) -> list[str]:
        """What a summary under these options says about them (nothing at the defaults)."""
        if self.precision == "fp32":
            return []
        return [f"every model trained in {self.precision} (bfloat16 compute, float32 weights "
                "and optimizer state)"]

    def command(self, suite: str, out_dir: str | Path) -> str:
        """The command that runs `suite` under these options and rewrites its summary."""
        return suite_command(suite, self.size, out_dir, self.seed_offset, self.precision)


@dataclass(frozen=True)
class RunRequest:
    """What one command asks to run or read, built once (in the CLI) and passed whole.

    results: the folder of suite results (`<results>/<suite>/<size>/`)
    size: tiny, quick or full, or a ladder rung (rung1–rung3) of a suite that has one
    seed_offset: every suite runs its default number of seeds from this one on
    precision: what the suites that train models train in (`precision_of`)
    budget_s: the wall-clock seconds the sequential design may spend on further looks (None:
        no limit; 0, the default: the planned seeds only, as every command but `report`)
    device: where the models train (cpu, cuda, cuda:<index>); it names no folder

    Checked when built: a bad value is a one-line InputError naming it and what is allowed."""

    results: Path
    size: str
    seed_offset: int = 0
    precision: Precision = "fp32"
    budget_s: float | None = 0.0
    device: str = "cpu"

    def __post_init__(self) -> None:
        if not isinstance(self.results, Path):  # a str names the same folder
            object.__setattr__(self, "results", Path(self.results))
        check_size(self.size)
        check_seed_offset(self.seed_offset)
        check_precision(self.precision)
        check_device_name(self.device)
        if not (self.budget_s is None or (real(self.budget_s) and self.budget_s >= 0)):
            raise refusal(f"budget_s={self.budget_s!r}",
                          "seconds, a finite number >= 0, or None (no limit)")

    def precision_of(self, suite: SuiteTraits) -> Precision:
        """The precision `suite` runs and is read in: the request's where the suite trains in
        it, else float32 (norm-cost and quantize measure float32 kernels and int8 against
        float32)."""
        return self.precision if self.precision in suite.precisions else "fp32"

    def device_of(self, suite: SuiteTraits) -> str:
        """Where `suite`'s models train: the request's device where the suite trains in bf16
        too (ffn, placement, position, width), else this CPU (norm-cost and quantize measure
        this CPU's float32 kernels and int8 paths)."""
        return self.device if "bf16" in suite.precisions else "cpu"

    def options(self, suite: SuiteTraits) -> RunOptions:
        """`suite`'s options under this request: its default seeds from the seed offset, in
        `precision_of(suite)`, on `device_of(suite)`."""
        return RunOptions.for_suite(suite, self.size, seed_offset=self.seed_offset,
                                    precision=self.precision_of(suite),
                                    device=self.device_of(suite))

    def flags(self) -> str:
        """The options that name this request's folders: `--size tiny --seed-offset 1000`."""
        offset = f" --seed-offset {self.seed_offset}" if self.seed_offset else ""
        other = "" if self.precision == "fp32" else f" --precision {self.precision}"
        return f"--size {self.size}{offset}{other}"

    def suite_command(self, suite: SuiteTraits) -> str:
        """The command that runs `suite` under this request and rewrites its summary."""
        return self.options(suite).command(suite.name, self.results)

    def claims_command(self) -> str:
        """The `blocklab claims` command that reads what this request names."""
        return f"blocklab claims {self.flags()} --results {self.results}"

    def report_command(self, out: str | Path) -> str:
        """The `blocklab report` command that runs this request and writes its report to `out`."""
        return f"blocklab report {self.flags()} --out {out} --results {self.results}"
