"""What a suite's summary holds, as frozen dataclasses, and the one loader that reads it back.

`run_suite` writes `<results>/<suite>/<size>/summary.json`; the ledger and the report read it.
Its numbers live in `data`, an instance of the suite's `Suite.data_type`, decoded field by field
(`blocklab.jsonio.decode`), so a renamed or missing field fails when read, naming it:

    summary = load_summary("runs", "ffn", "quick", FfnData)  # Summary | None (not run yet)
    summary.data.arms["swiglu"].delta_vs_relu.mean            # typed all the way down

No suite imports and no PyTorch here.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blocklab.errors import InputError, ResultsError
from blocklab.experiments.options import ALL_SIZES, check_size, size_folder, suite_command
from blocklab.jsonio import decode, json_safe, parse_json, read_json, shown
from blocklab.precision import PRECISIONS, check_precision

# The layout of summary.json; readers refuse any other (11: timing ratios as geometric means of
# paired ratios with a Student t interval on their logs).
SUMMARY_SCHEMA = 11


@dataclass(frozen=True)
class Interval:
    """Mean of `n` values with its two-sided 95% Student-t interval; the bounds and `sd` are
    None with fewer than two values, and `mean` too with none."""

    n: int
    mean: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    sd: float | None = None

    @property
    def resolved(self) -> bool:
        """Whether the interval has bounds (n ≥ 2)."""
        return self.ci_low is not None and self.ci_high is not None


@dataclass(frozen=True)
class Table:
    """A summary table: a title, column names, rows of cells (str/int/float/None), a caption."""

    title: str
    columns: list[str]
    rows: list[list[Any]]
    caption: str = ""


# --- parts of more than one suite's data -------------------------------------------------------
@dataclass(frozen=True)
class LrTrial:
    """One tuning run: an arm at one learning rate of the grid on one tuning seed."""

    arm: str
    lr: float
    seed: int
    status: str
    val_loss: float | None  # None when the run does not count (not ok, or above entropy)
    d_model: int  # the model width tuned (the suite's own, or a scale-trend width)


@dataclass(frozen=True)
class ArmTuning:
    """Where one arm's lr tuning ended: the grid tried (grown at an edge where needed), the
    chosen rate and whether it is interior (a tried rate on each side scored worse)."""

    arm: str
    grid: tuple[float, ...]
    lr: float
    interior: bool
    extended: int  # points added beyond the registered grid

    def words(self) -> str:
        where = "interior" if self.interior else "at the grid's edge"
        grown = f", grid extended by {self.extended}" if self.extended else ""
        return f"{self.arm} {self.lr:g} ({where}{grown})"


# How every TimeRatio is made (`TimeRatio.paired`), as tables and notes name it.
RATIO_METHOD = "geometric mean of paired ratios, Student t on log ratios"


@dataclass(frozen=True)
class TimeRatio:
    """A ratio of two timings from the same interleaved repeats (e.g. float / int8): the
    geometric mean of the per-repeat ratios with its 95% t interval (`RATIO_METHOD`)."""

    ratio: float
    ci_low: float
    ci_high: float
    repeats: int

    @classmethod
    def paired(cls, a: Sequence[float], b: Sequence[float]) -> TimeRatio:
        """exp(mean ln(a_i / b_i)) with the exp of its 95% t interval
        (`blocklab.stats.log_ratio_interval`: at least 2 repeats, timings > 0)."""
        from blocklab.stats import log_ratio_interval

        e = log_ratio_interval(list(a), list(b))
        return cls(ratio=e.value, ci_low=e.ci_low, ci_high=e.ci_high, repeats=e.n)

    def method(self) -> str:
        """'geometric mean of paired ratios, Student t on log ratios, 12 repeats'."""
        return f"{RATIO_METHOD}, {self.repeats} repeats"


@dataclass(frozen=True)
class SeedBlock:
    """Seeds start … stop − 1 that the sequential design added for `arms`, for the parts
    (`parts`, "C16 geglu") still undecided at a look."""

    start: int
    stop: int
    arms: list[str]
    parts: list[str]


@dataclass(frozen=True)
class RunCount:
    """How many of a summary's runs share a machine (`provenance.machine_name`) or a kernel."""

    name: str
    runs: int


@dataclass(frozen=True)
class Summary:
    """A suite's summary: tables and notes to show, typed `data` for the ledger and figures.

    seed_blocks: seeds the sequential design added to some arms (`seeds` counts every seed)
    planned_rules: {"<claim> <part>": rule hash} of the rules when the runs were first planned
    machines, kernels: the machines its runs were made on and the attention kernels its bf16
        runs ran, with their runs, where there are two or more ([] otherwise; `mixed_notes`)
    """

    suite: str
    size: str
    seeds: int
    tables: list[Table]
    notes: list[str] = field(default_factory=list)
    data: Any = None  # an instance of the suite's `Suite.data_type`
    runs: int = 0
    wall_time_s: float = 0.0
    run_ids: list[str] = field(default_factory=list)  # the stored results it summarises
    first_seed: int = 0  # seeds first_seed … first_seed + seeds − 1 (`--seed-offset`)
    seed_blocks: list[SeedBlock] = field(default_factory=list)
    planned_rules: dict[str, str] = field(default_factory=dict)
    machines: list[RunCount] = field(default_factory=list)
    kernels: list[RunCount] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SUMMARY_SCHEMA, **dataclasses.asdict(self)}


# What `mixed_notes` says of runs from several machines, or bf16 runs of several attention
# kernels, by (kind, lang).
_MIXED = {
    ("machines", "en"): "These {total} runs were made on {count} different machines (CPU model "
                        "or instruction sets), whose timings and bf16 kernels may differ: "
                        "{listed}.",
    ("machines", "zh"): "这 {total} 次运行来自 {count} 台不同的机器（CPU 型号或指令集不同），"
                        "其计时与 bf16 内核可能因机器而异：{listed}。",
    ("kernels", "en"): "Its {total} bf16 training runs ran different attention kernels, whose "
                       "bfloat16 numbers differ, compared together here: {listed}.",
    ("kernels", "zh"): "其 {total} 次 bf16 训练运行使用了不同的注意力内核（其 bfloat16 数值"
                       "因内核而异），在此一并比较：{listed}。",
}


def mixed_notes(machines: list[Any], kernels: list[Any], lang: str = "en") -> list[str]:
    """One sentence for each of `machines`, `kernels` (RunCounts or their JSON) naming two or
    more, in English or Chinese ("zh")."""
    zh = lang == "zh"
    out = []
    for kind, items in (("machines", machines), ("kernels", kernels)):
        found = [(i["name"], i["runs"]) if isinstance(i, dict) else (i.name, i.runs)
                 for i in items]
        if len(found) > 1:
            listed = ("；" if zh else "; ").join(
                f"{name}（{n} 次运行）" if zh else f"{name} ({n} run{'s' * (n != 1)})"
                for name, n in found)
            out.append(_MIXED[kind, "zh" if zh else "en"].format(
                total=sum(n for _, n in found), count=len(found), listed=listed))
    return out


# --- reading -----------------------------------------------------------------------------------
def summary_from_dict(doc: Any, where: str, data_type: type) -> Summary:
    """A Summary from `Summary.to_dict`'s form, data as `data_type`; ResultsError on another
    schema or any field that does not match."""
    return _with_data(_summary_fields(doc, where), doc, where, data_type)


def _summary_fields(doc: Any, where: str) -> Summary:
    """The Summary of a JSON form without its data (None): the fields every summary has."""
    if not isinstance(doc, dict):
        raise ResultsError(f"{where}: expected a summary object, found {shown(doc)}")
    found = doc.get("schema")
    if found != SUMMARY_SCHEMA:
        raise ResultsError(f"{where} has summary schema {found!r}; this blocklab reads schema "
                           f"{SUMMARY_SCHEMA}")
    # Fields added without a new SUMMARY_SCHEMA (machines, kernels) read at their defaults.
    body = {k: v for k, v in doc.items() if k not in ("schema", "data")}
    return decode(Summary, {**body, "data": None}, where)


def _with_data(summary: Summary, doc: dict[str, Any], where: str, data_type: type) -> Summary:
    return dataclasses.replace(summary, data=decode(data_type, doc.get("data"),
                                                    f"{where}.data"))


# Said wherever tiny results are shown: tiny trains a few steps and grades nothing.
TINY_NOTE = ("size tiny is a smoke test of the machinery (a few training steps): its numbers "
             "decide nothing; run --quick or --full for evidence")
TINY_NOTE_ZH = ("tiny 规模只是对流程的冒烟测试（只训练几步）：其数字不能说明任何结论；"
                "证据请用 --quick 或 --full")


def size_note(size: str, lang: str = "en") -> str | None:
    """The one line to show beside results of `size` (TINY_NOTE for tiny), else None."""
    if size != "tiny":
        return None
    return TINY_NOTE_ZH if lang == "zh" else TINY_NOTE


def _check_key(suite: Any, size: Any, precision: Any) -> None:
    """InputError unless (suite, size, precision) names a summary that can exist."""
    if (not isinstance(suite, str) or not suite or suite.startswith(".")
            or any(c in suite for c in "/\\")):
        raise InputError(f"suite {suite!r} is not allowed; expected a plain folder name")
    check_size(size)
    check_precision(precision)


def load_summary(out_dir: str | Path, suite: str, size: str, data_type: type, *,
                 seed_offset: int = 0, precision: str = "fp32",
                 longer: bool = False) -> Summary | None:
    """The stored summary of `suite` at `size` under `out_dir`, its data as `data_type`; None
    when not run. InputError for a key no summary can have; ResultsError, naming the file, the
    field and the command that rewrites it, for one that does not parse or match.
    """
    _check_key(suite, size, precision)
    path = (Path(out_dir) / suite / size_folder(size, seed_offset, precision, longer)
            / "summary.json")
    if not path.exists():
        return None
    rerun = (f"run `{suite_command(suite, size, out_dir, seed_offset, precision)}` to "
             "rewrite it (stored runs whose provenance matches are reused)")
    try:  # strict JSON; then whose summary it is, before its data is read as this suite's
        doc = read_json(path, error=ResultsError)
        summary = _summary_fields(doc, str(path))
        if (summary.suite, summary.size, summary.first_seed) != (suite, size, seed_offset):
            raise ResultsError(f"{path} holds suite {summary.suite!r} at size "
                               f"{summary.size!r} from seed {summary.first_seed}, not {suite!r} "
                               f"at {size!r} from seed {seed_offset}")
        return _with_data(summary, doc, str(path), data_type)
    except ResultsError as err:
        raise ResultsError(f"{err}; {rerun}") from None


def stored_keys(out_dir: str | Path, suite: str | None = None
                ) -> list[tuple[str, str, int, str]]:
    """(suite, size, seed offset, precision) of every summary stored under `out_dir` (of
    `suite` alone, if given), sorted, from the folder names `size_folder` gives (`+x2` and
    tuning folders are parts of a summary, not summaries)."""
    root = Path(out_dir)
    try:
        suites = [root / suite] if suite is not None else [p for p in root.iterdir()
                                                             if p.is_dir()]
        folders = [f for d in suites if d.is_dir() for f in d.iterdir()]
    except OSError:
        return []
    keys = []
    for folder in folders:
        size, *rest = folder.name.split("+")
        offsets = [r.removeprefix("seeds") for r in rest if r.startswith("seeds")]
        precision = next((r for r in rest if r in PRECISIONS), "fp32")
        if (size not in ALL_SIZES or len(offsets) > 1 or not all(o.isdigit() for o in offsets)
                or not (folder / "summary.json").is_file()):
            continue
        offset = int(offsets[0]) if offsets else 0
        try:  # the one rule of folder names decides: quick+seeds07 or quick+x2 is no key
            if size_folder(size, offset, precision) != folder.name:
                continue
        except InputError:  # a seed offset out of range
            continue
        keys.append((folder.parent.name, size, offset, precision))
    return sorted(keys, key=lambda k: (k[0], ALL_SIZES.index(k[1]), k[2], k[3]))


def save_summary(folder: str | Path, summary: Summary) -> Path:
    """Write `summary` to `folder`/summary.json atomically; one that does not read back is a
    bug in its suite (RuntimeError naming the field) and is not written."""
    from blocklab.jsonio import write_atomic

    text = json.dumps(json_safe(summary.to_dict()), indent=1, allow_nan=False) + "\n"
    try:
        summary_from_dict(parse_json(text, f"summary of {summary.suite}", ResultsError),
                          f"summary of {summary.suite}", type(summary.data))
    except ResultsError as err:
        raise RuntimeError(f"suite {summary.suite} wrote a summary that does not read back: "
                           f"{err}") from err
    path = Path(folder) / "summary.json"
    write_atomic(path, text)
    return path


def incomplete(out_dir: str | Path, summary: Summary, precision: str = "fp32") -> str | None:
    """Why the stored `summary` cannot be used (a run it lists has no complete result), naming
    the command that redoes it; None when it can. The one rule of every reader."""
    from blocklab.experiments.results import ResultStore

    folder = (Path(out_dir) / summary.suite
              / size_folder(summary.size, summary.first_seed, precision))
    store = ResultStore(folder)
    try:
        gone = [store.path_for(run_id) for run_id in summary.run_ids if not store.has(run_id)]
    except InputError as err:  # a run id that is not a file name: the summary is malformed
        raise ResultsError(f"{folder / 'summary.json'}: {err}") from None
    if not gone:
        return None
    command = suite_command(summary.suite, summary.size, out_dir, summary.first_seed, precision)
    first = gone[0].name
    if gone[0] in store.damaged:  # say what is wrong ("final.val_loss: NaN is not strict …")
        first += f", damaged: {store.damaged[gone[0]].removeprefix(f'{gone[0]}: ')}"
    return (f"{folder / 'summary.json'}: a run of the stored summary is missing or unreadable "
            f"({len(gone)} of {len(summary.run_ids)}, first {first}); run `{command}` "
            "to redo it and rewrite the summary")
