"""What a suite's summary holds, as frozen dataclasses, and the one loader that reads it back.

A summary is written to `<results>/<suite>/<size>/summary.json` by `run_suite` and read by the
claims ledger and the report. Its numbers live in a typed `data` field, an instance of its
suite's `Suite.data_type` (`FfnData`, `PlacementData`, ..., each in its suite's package), so a
renamed or missing field fails when the file is read, naming the field, instead of quietly
turning a verdict into "no data":

    summary = load_summary("runs", "ffn", "quick", FfnData)  # Summary | None (not run yet)
    summary.data.arms["swiglu"].delta_vs_relu.mean            # typed all the way down

This module holds what every summary shares (`Summary`, `Interval`, `Table`, the parts several
suites use) and the loader, which reads every field through `blocklab.jsonio.decode`
(`ResultsError` with the path of the first mismatch). It imports no suite and needs no PyTorch.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blocklab.errors import InputError, ResultsError

# The sizes a suite runs at and the precisions it may train in (each suite lists its own in
# `Suite.precisions`), the only folders a summary is stored under, are the run options'.
from blocklab.experiments.options import ALL_SIZES, size_folder, suite_command
from blocklab.jsonio import decode, json_safe, parse_json, read_json, shown
from blocklab.precision import PRECISIONS, check_precision

# The layout of summary.json; readers refuse any other (3: typed data, one dataclass per suite;
# 4: the first seed recorded; 6: placement's deep grid for C36; 7: position's order probe,
# cost run and fine-tune settings for C29–C31; 8: quantize's bounds from measured time shares,
# its Amdahl figures kept apart as estimates; 10: tuned arms and largest stable learning
# rates in placement, lr grids that grow at an edge; 11: every timing ratio a geometric mean of
# paired ratios with a Student t interval on their logs, where a median ratio had a bootstrap
# interval, and quantize's speed-ups such ratios with each scheme's per-repeat prefill times).
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
    """Where one arm's learning-rate tuning ended (`experiments.suites.tuning.tune_arm`): the
    grid it was tried on (the registered one, grown at an edge where needed), the chosen rate
    and whether it is interior (a tried rate on each side scored worse)."""

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
    """A ratio of two timings measured in the same interleaved repeats (time of one variant /
    time of the other, e.g. RMSNorm / LayerNorm, or float / int8 for a speed-up): the
    geometric mean of the per-repeat ratios with its 95% Student t interval on their logs,
    mapped back by exp (`RATIO_METHOD`, `paired`)."""

    ratio: float
    ci_low: float
    ci_high: float
    repeats: int

    @classmethod
    def paired(cls, a: Sequence[float], b: Sequence[float]) -> TimeRatio:
        """a[i] / b[i] over repeats i (a[i] and b[i] timed in the same repeat) by
        `blocklab.stats.log_ratio_interval`: exp(mean ln(a_i / b_i)) with
        [exp(low), exp(high)] of the 95% t interval of that mean. At least 2 repeats, every
        timing > 0 (else InputError)."""
        from blocklab.stats import log_ratio_interval

        e = log_ratio_interval(list(a), list(b))
        return cls(ratio=e.value, ci_low=e.ci_low, ci_high=e.ci_high, repeats=e.n)

    def method(self) -> str:
        """'geometric mean of paired ratios, Student t on log ratios, 12 repeats'."""
        return f"{RATIO_METHOD}, {self.repeats} repeats"


@dataclass(frozen=True)
class SeedBlock:
    """Seeds start … stop − 1 run for some arms only, beyond the suite's planned seeds: a block
    the sequential design added for the parts (`parts`, "C16 geglu") still undecided at a
    look."""

    start: int
    stop: int
    arms: list[str]
    parts: list[str]


@dataclass(frozen=True)
class RunCount:
    """How many of a summary's runs share one thing their numbers depend on: a machine
    (`provenance.machine_name`) or an attention kernel."""

    name: str
    runs: int


@dataclass(frozen=True)
class Summary:
    """A suite's summary: tables and notes to show, typed `data` for the ledger and figures.

    seed_blocks: the seeds the sequential design added to some arms (their runs are in
        `run_ids`; `seeds` counts every seed any arm ran)
    planned_rules: {"<claim> <part>": rule hash} of the registered rules when the suite's runs
        were first planned, so a reader can tell a part graded under another rule than its
        data was planned under
    machines: the machines (CPU model and instruction sets) its runs were made on, with how
        many runs each, where there were two or more; [] where all came from one (or none
        was recorded)
    kernels: the attention kernels its bf16 training runs ran (`DecoderLM.backends()`), with
        how many runs each, where they differ; [] otherwise. Both are said in one sentence
        each by `mixed_notes` (in its notes, the ledger and the report)."""

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
    """One sentence for each way a summary's runs were mixed: `machines` and `kernels` as
    `Summary.machines` and `Summary.kernels` hold them (RunCount, or their JSON form), in
    English or Chinese ("zh"); [] when neither names two or more."""
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
    """A Summary from its JSON form (`Summary.to_dict`), its data decoded as `data_type` (its
    suite's `Suite.data_type`); ResultsError on another schema or any field that does not
    match."""
    return _with_data(_summary_fields(doc, where), doc, where, data_type)


def _summary_fields(doc: Any, where: str) -> Summary:
    """The Summary of a JSON form without its data (None): the fields every summary has."""
    if not isinstance(doc, dict):
        raise ResultsError(f"{where}: expected a summary object, found {shown(doc)}")
    found = doc.get("schema")
    if found != SUMMARY_SCHEMA:
        raise ResultsError(f"{where} has summary schema {found!r}; this blocklab reads schema "
                           f"{SUMMARY_SCHEMA}")
    # A field added without a new SUMMARY_SCHEMA (machines, kernels) has a default, at which a
    # summary stored before it reads it (nothing mixed, as far as it says).
    body = {k: v for k, v in doc.items() if k not in ("schema", "data")}
    return decode(Summary, {**body, "data": None}, where)


def _with_data(summary: Summary, doc: dict[str, Any], where: str, data_type: type) -> Summary:
    return dataclasses.replace(summary, data=decode(data_type, doc.get("data"),
                                                    f"{where}.data"))


# Said once wherever tiny results are shown (a suite's printed summary, the claims ledger, the
# report): tiny trains a few steps, so its tables are mostly "—" and grade nothing.
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
    """InputError unless (suite, size, precision) names a summary that can exist: a suite
    named as a plain folder name, a size of ALL_SIZES, a precision of PRECISIONS."""
    if (not isinstance(suite, str) or not suite or suite.startswith(".")
            or any(c in suite for c in "/\\")):
        raise InputError(f"suite {suite!r} is not allowed; expected a plain folder name")
    if not isinstance(size, str) or size not in ALL_SIZES:
        raise InputError(f"size {size!r} is not allowed; expected one of {list(ALL_SIZES)}")
    check_precision(precision)


def load_summary(out_dir: str | Path, suite: str, size: str, data_type: type, *,
                 seed_offset: int = 0, precision: str = "fp32",
                 longer: bool = False) -> Summary | None:
    """The stored summary of `suite` at `size` (seeds from `seed_offset`, trained in
    `precision`) under `out_dir`, typed (its data as `data_type`, the suite's
    `Suite.data_type`); None when that suite, size and precision has not been run.
    `blocklab.experiments.suites.load_summary` reads a registered suite's by its name alone.

    Raises InputError for a suite name (not a plain folder name), size, precision or seed offset
    that no summary can have, and ResultsError, naming the file, the field and the command
    that rewrites it, for a summary that does not parse, was written under another
    `SUMMARY_SCHEMA`, or whose fields do not match this blocklab's: readers never guess at a
    layout they do not know. Whether the runs it lists are still stored is `incomplete`'s
    question.
    """
    _check_key(suite, size, precision)
    path = (Path(out_dir) / suite / size_folder(size, seed_offset, precision, longer)
            / "summary.json")
    if not path.exists():
        return None
    rerun = (f"run `{suite_command(suite, size, out_dir, seed_offset, precision)}` to "
             "rewrite it (stored runs whose provenance matches are reused)")
    try:  # strict JSON: a NaN, an Infinity or a key given twice is a damaged summary
        doc = read_json(path, error=ResultsError)
    except ResultsError as err:
        raise ResultsError(f"{err}; {rerun}") from None
    try:  # whose summary it is, before its data is read as this suite's
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
    `suite` alone, if given), sorted: what `load_summary` can read there, so a reader that
    finds none at the size it was asked for can say which sizes the folder does hold. Read
    from the folder names `size_folder` gives; the runs trained twice as long (`+x2`) and the
    tuning runs are parts of a summary, not summaries, and folders that cannot be listed hold
    nothing readable."""
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
    """Write `summary` to `folder`/summary.json, atomically, as `load_summary` reads it back.

    A summary whose fields do not read back is not written: that is a bug in the suite that
    filled it (a RuntimeError naming the field), not a results error for the user."""
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
    """Why the stored `summary` under `out_dir` cannot be used, or None when it can: every run
    it lists (`run_ids`) must still have a complete result beside it (a file that parses and
    has a status). One rule for every reader (the claims ledger grades such a suite as
    missing-results, the report shows it as failed), so none grades from a summary whose
    evidence is gone; the message names the command that redoes the runs and rewrites it."""
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
