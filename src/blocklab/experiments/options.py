"""What one command asks to run or read, and the options every run of one suite shares, each
checked where it is built and by nothing on the way.

    request = RunRequest(Path("runs"), "quick", seed_offset=1000)   # built once, in the CLI
    run_suites(request, ["ffn", "placement"])      # the suites, the ledger, the report read it
    options = request.options(get_suite("ffn"))    # one suite's RunOptions under the request
    run_suite(get_suite("ffn"), options, "runs")   # plan, tune, train, summarise

No PyTorch here.
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
# With the ladder's rungs (`blocklab.experiments.ladder`), which only some suites have.
ALL_SIZES = SIZES + RUNGS
# What a training run must reach to count as trained (`TrainConfig.learn_margin`), registered
# before any data: a quarter of the way from the unigram to the bigram reference (on stdlib
# 3.21 → 2.45 nats, so 0.19 nats no training gives). None at tiny: its runs are plumbing checks.
LEARN_MARGIN: dict[str, float | None] = {"tiny": None, "quick": 0.25, "full": 0.25,
                                         **dict.fromkeys(RUNGS, 0.25)}
BACKENDS = ("reference", "fast", "compiled")  # `blocklab.nn.backends.BACKENDS` (tested equal)
# Past this the plan alone would not fit in memory, and the runs would take centuries.
MAX_SEEDS = 1000
# Seeds are drawn from [0, MAX_SEED_OFFSET + MAX_SEEDS): a disjoint set needs only an offset.
MAX_SEED_OFFSET = 10**9


# The checks of RunRequest and RunOptions, each an InputError naming the value: `what` is how
# the caller names it ("suite size 'huge'").
def check_size(size: str, what: str = "size") -> str:
    if size not in ALL_SIZES:
        raise refusal(f"{what} {size!r}", f"one of {list(ALL_SIZES)}")
    return size


def check_seed_offset(seed_offset: int) -> int:
    if not is_int(seed_offset, 0, MAX_SEED_OFFSET):
        raise refusal(f"seed offset {seed_offset!r}", f"an integer in [0, {MAX_SEED_OFFSET}]")
    return seed_offset


def check_device_name(device: str) -> str:
    """Whether this machine has the device is `trainer.check_device`'s question."""
    kind, colon, index = device.partition(":") if isinstance(device, str) else ("", "", "")
    if not (device == "cpu" or (kind == "cuda" and (not colon or index.isdigit()))):
        raise refusal(f"device {device!r}", "cpu, cuda or cuda:<index>")
    return device


def seed_range(seeds: int, seed_offset: int = 0) -> range:
    """`seeds` seeds from `seed_offset` on, both checked (a bool would pass range())."""
    if not is_int(seeds, 1, MAX_SEEDS):
        raise refusal(f"seeds={seeds!r}", f"an integer in [1, {MAX_SEEDS}]")
    return range(check_seed_offset(seed_offset), seed_offset + seeds)


def size_folder(size: str, seed_offset: int = 0, precision: str = "fp32",
                longer: bool = False) -> str:
    """The folder of a suite's results at `size`: other seeds, bf16 and the runs trained twice
    as long (`longer`) each apart (`quick`, `quick+seeds1000`, `quick+bf16`, `quick+x2`)."""
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
    """What every run of one invocation shares: `size`, the `seeds` (a range from the seed
    offset), `precision`, `backend` and `device` (the last two change speed, not which run it
    is). A bad value is an InputError naming it and what is allowed."""

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
        """The options of `suite` at `size` (`seeds` None: its default count); a size or
        precision the suite lacks is refused."""
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
        """The folder of these options' results under a suite's (tuning: one per seed offset
        and precision)."""
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

    results: the folder of suite results; size: tiny, quick, full or a ladder rung;
    seed_offset: the first seed; precision: what the training suites train in (`precision_of`);
    budget_s: seconds the sequential design may spend on further looks (None: no limit; 0: the
    planned seeds only); device: where the models train (it names no folder)."""

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
        """The request's precision where `suite` trains in it, else float32."""
        return self.precision if self.precision in suite.precisions else "fp32"

    def device_of(self, suite: SuiteTraits) -> str:
        """The request's device for a suite that trains in bf16 too, else this CPU (norm-cost
        and quantize measure this CPU's kernels)."""
        return self.device if "bf16" in suite.precisions else "cpu"

    def options(self, suite: SuiteTraits) -> RunOptions:
        """`suite`'s options under this request."""
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
