"""The claims ledger: one check per claim id, each returning a verdict with its evidence.

A check is a function `check(ctx) -> Finding`, registered with `@claim("Cxx")`. Analytic checks
compute live (reference maths, budgets, small torch probes); experimental checks read the stored
suite summaries under `ctx.results` and, when a summary is missing, say so and name the command
that produces it instead of guessing.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, is_dataclass, replace
from pathlib import Path
from typing import Any

from blocklab.claims.registry import RULES, SUITE_OF, RuleChange, changes, registered
from blocklab.claims.rules import (
    Estimate,
    Part,
    Rule,
)
from blocklab.claims.text import CLAIM_TEXT, ERROR, VERDICTS, claim_sources
from blocklab.errors import InputError
from blocklab.experiments.options import SIZES, check_seed_offset, suite_command
from blocklab.experiments.summaries import (
    DATA_TYPES,
    Interval,
    Summary,
    incomplete,
    load_summary,
    stored_keys,
)


def scale_text(d_model: int | None = None, depth: int | None = None, steps: int | None = None,
               batch: int | None = None, seq_len: int | None = None, zh: bool = False,
               note: str = "") -> str:
    """The scale a verdict was reached at: width d_model, depth, and training tokens
    (steps × batch × seq_len), each where known; '' when none is."""
    bits = []
    if d_model is not None:
        bits.append(f"d_model {d_model}" if not zh else f"宽度 d_model {d_model}")
    if depth is not None:
        bits.append(f"{depth} layers" if not zh else f"{depth} 层")
    if steps is not None and batch is not None and seq_len is not None:
        tokens = steps * batch * seq_len
        bits.append(f"{tokens:,} training tokens ({steps} steps × {batch} × {seq_len})" if not zh
                    else f"训练 {tokens:,} 个 token（{steps} 步 × {batch} × {seq_len}）")
    if note:
        bits.append(note)
    if not bits:
        return ""
    return (" Reached at this scale: " + ", ".join(bits) + "." if not zh else
            "判定所依据的规模：" + "，".join(bits) + "。")


def ci_text(stats: Interval, digits: int = 3, unit: str = "") -> str:
    """An interval as the findings write it (`format_ci`), then `unit`."""
    from blocklab.experiments.suites.base import format_ci

    return format_ci(stats, digits) + unit


TREND_ZH = {"grows": "增大", "shrinks": "缩小", "shows no resolved trend": "无可分辨的趋势"}


def trend_word(change: Interval, grows_when: str) -> str:
    """'grows' / 'shrinks' when the 95% CI of a change across sizes excludes 0 (`grows_when`:
    the side, 'below' or 'above', on which the effect grows), else no resolved trend."""
    if change.ci_low is None or change.ci_high is None:
        return "shows no resolved trend"
    side = "below" if change.ci_high < 0 else "above" if change.ci_low > 0 else None
    if side is None:
        return "shows no resolved trend"
    return "grows" if side == grows_when else "shrinks"


DECIDED = ("confirmed", "refuted", "conditional", "contradicted-at-this-scale",
           "not-reproduced-at-this-scale")


@dataclass(frozen=True)
class Finding:
    """What a check found: verdict, a sentence in each language, numbers, how to reproduce.

    Experimental checks also give their graded `parts` (the first is the headline) and
    `combines`, the stated rule that turns the parts' verdicts into the claim's.
    """

    verdict: str
    summary: str
    summary_zh: str
    # Any JSON object: a dict, or a TypedDict of the check's fixed shape, whose values may be
    # dataclass rows; the ledger only writes it out (`_plain`), as ClaimResult.evidence.
    evidence: Mapping[str, object] = field(default_factory=dict)
    command: str = ""
    figure: str | None = None  # key of a report figure that shows the evidence
    parts: list[Part] = field(default_factory=list)
    combines: str = ""
    combines_zh: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise InputError(f"verdict {self.verdict!r} is not allowed; expected one of "
                             f"{list(VERDICTS)}")


@dataclass(frozen=True)
class ClaimResult:
    id: str
    claim: str
    claim_zh: str
    page: str
    section: str
    verdict: str
    summary: str
    summary_zh: str
    evidence: dict[str, Any]
    command: str
    figure: str | None
    error: str | None = None
    parts: list[Part] = field(default_factory=list)
    combines: str = ""
    combines_zh: str = ""

    @property
    def rule(self) -> Rule | None:
        """The registered rule of the headline part (None for analytic claims)."""
        return self.parts[0].rule if self.parts else None

    @property
    def estimate(self) -> Estimate | None:
        return self.parts[0].estimate if self.parts else None

    @property
    def rules_changed(self) -> list[RuleChange]:
        """The edits to this claim's rules made after results had been seen
        (`registry.CHANGED_AFTER_DATA`)."""
        return changes(self.id)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["parts"] = [p.to_dict() for p in self.parts]
        out["rule"] = None if self.rule is None else asdict(self.rule)
        out["rule_hash"] = None if self.rule is None else self.rule.hash
        out["estimate"] = None if self.estimate is None else asdict(self.estimate)
        out["rules_changed"] = [asdict(c) for c in self.rules_changed]
        return _plain(out)


@dataclass
class Context:
    """Where experimental checks find suite results (`<results>/<suite>/<size>/summary.json`)."""

    results: Path = Path("runs")
    size: str = "quick"
    seed_offset: int = 0  # read the suites run from this seed on (`--seed-offset`)
    # read the suites whose models trained in this precision (`--precision`); a suite that
    # measures float32 only (its `precisions`) is read at fp32 and listed in `fp32_only`
    precision: str = "fp32"
    fp32_only: set[str] = field(default_factory=set)
    _cache: dict[str, Summary | None] = field(default_factory=dict)
    # suite -> why its stored summary cannot be used (`incomplete`: runs it lists are gone)
    unusable: dict[str, str] = field(default_factory=dict)

    def summary(self, suite: str) -> Summary | None:
        """The typed summary of `suite` (`load_summary`), None when it has not been run or
        when runs it was made from are no longer stored (the reason kept in `unusable`, the
        rule the report applies too)."""
        if suite not in self._cache:
            found = load_summary(self.results, suite, self.size, seed_offset=self.seed_offset,
                                 precision=self.precision_of(suite))
            reason = (None if found is None
                      else incomplete(self.results, found, self.precision_of(suite)))
            if reason:
                self.unusable[suite] = reason
            self._cache[suite] = None if reason else found
        return self._cache[suite]

    def longer_summary(self, suite: str) -> Summary | None:
        """The summary of `suite`'s runs trained twice as long (`<size>+x2`, run to check a
        would-be contradiction), None when there is none or its runs are gone."""
        key = f"{suite}+x2"
        if key not in self._cache:
            found = load_summary(self.results, suite, self.size, seed_offset=self.seed_offset,
                                 precision=self.precision_of(suite), longer=True)
            self._cache[key] = found
        return self._cache[key]

    def precision_of(self, suite: str) -> str:
        """The precision `suite` is read at: the asked one where the suite trains in it, else
        float32 (the suite measures float32 by design; noted in `fp32_only`)."""
        from blocklab.experiments.suites import get_suite

        if self.precision in get_suite(suite).precisions:
            return self.precision
        self.fp32_only.add(suite)
        return "fp32"

    def suite_command(self, suite: str) -> str:
        return suite_command(suite, self.size, self.results, self.seed_offset,
                             self.precision_of(suite))

    def stored_elsewhere(self, suite: str | None = None
                         ) -> dict[tuple[str, int, str], list[str]]:
        """{(size, seed offset, precision): suites} of the summaries under `results` (of
        `suite`, or of every suite) that this context does not read, those of another --size,
        --seed-offset or --precision: what to name when what it reads is missing."""
        keys: dict[tuple[str, int, str], list[str]] = {}
        for name, size, offset, precision in stored_keys(self.results, suite):
            if name not in DATA_TYPES:
                continue  # a folder that is no suite's
            if (size, offset, precision) != (self.size, self.seed_offset,
                                              self.precision_of(name)):
                keys.setdefault((size, offset, precision), []).append(name)
        return keys


def claims_command(results: str | Path, size: str, seed_offset: int = 0,
                   precision: str = "fp32") -> str:
    """The `blocklab claims` command that reads the summaries of `size` (from `seed_offset`,
    in `precision`) under `results`."""
    return f"blocklab claims {key_flags(size, seed_offset, precision)} --results {results}"


def key_flags(size: str, seed_offset: int = 0, precision: str = "fp32") -> str:
    """The options that name a summary's folder: `--size tiny --seed-offset 1000`."""
    offset = f" --seed-offset {seed_offset}" if seed_offset else ""
    other = "" if precision == "fp32" else f" --precision {precision}"
    return f"--size {size}{offset}{other}"


CHECKS: dict[str, Callable[[Context], Finding]] = {}
# Claims about training and speed that a small model on this machine can test but not settle:
# their checks may say "not reproduced" or "contradicted at this scale", never "refuted". (C31
# is decided by exact counts at a real model's shape, so a wrong count refutes it.)
SCALE_DEPENDENT = frozenset({"C13", "C16", "C18", "C19", "C21", "C22", "C30", "C32", "C36"})


def claim(claim_id: str) -> Callable[[Callable[[Context], Finding]], Callable[[Context], Finding]]:
    def register(fn: Callable[[Context], Finding]) -> Callable[[Context], Finding]:
        if claim_id in CHECKS:
            raise InputError(f"claim {claim_id} registered twice")
        CHECKS[claim_id] = fn
        return fn

    return register


def register_checks() -> None:
    """Import the modules whose `@claim` functions fill CHECKS: the analytic checks of C01–C28
    in `checks`, the others by the suite or topic they read (`placement` C12, C13, C19; `ffn`
    C16; `norm_cost` C18; `positions` C21, C29–C31; `quantization` C32–C33; `models` C34–C35;
    `depth` C36)."""
    from blocklab.claims import (  # noqa: F401
        checks,
        depth,
        ffn,
        models,
        norm_cost,
        placement,
        positions,
        quantization,
    )


def missing(ctx: Context, suite: str) -> Finding:
    """The finding of an experimental check whose suite has not been run, or whose stored
    summary lists runs that are gone (`Context.unusable`)."""
    command = ctx.suite_command(suite)
    reason = ctx.unusable.get(suite)
    if reason:
        return Finding(
            "missing-results",
            f"The stored '{suite}' suite results under {ctx.results} ({ctx.size}) are "
            f"incomplete, so nothing is graded from them: {reason}.",
            f"{ctx.results} 下的 '{suite}' 实验结果（{ctx.size}）不完整，因此不据此评判：{reason}。",
            {"incomplete": reason}, command)
    # The folder may hold this suite at another size, seed offset or precision: say how to
    # read those, rather than only how to run these.
    held = [(key, claims_command(ctx.results, *key)) for key in ctx.stored_elsewhere(suite)]
    return Finding(
        "missing-results",
        f"No stored '{suite}' suite results under {ctx.results} ({ctx.size}); run `{command}`."
        + "".join(f" Results of '{suite}' at {key_flags(*key)} are stored there: `{read}`."
                  for key, read in held),
        f"{ctx.results} 下没有 '{suite}' 实验结果（{ctx.size}）；请运行 `{command}`。"
        + "".join(f"该文件夹存有 '{suite}' 在 {key_flags(*key)} 下的结果：`{read}`。"
                  for key, read in held),
        {"stored": [{"size": size, "seed_offset": offset, "precision": precision,
                     "command": read} for (size, offset, precision), read in held]}
        if held else {},
        command)


# Why a registered part carries no decision, by the claim's verdict.
UNGRADED = {"missing-results": "no results stored: graded by this rule once they are",
            "untestable-here": "not graded: untestable here",
            "error": "not graded: the check failed to run"}


def planned_parts(rules: dict[str, Rule], verdict: str) -> list[Part]:
    """A claim's registered parts with no estimate, for a check that graded none (no results,
    untestable here, or an error): each shows the rule it will be graded by."""
    reason = UNGRADED.get(verdict, f"not graded ({verdict})")
    return [Part(name, rule, Estimate(None, None, None, 0), verdict, reason)
            for name, rule in rules.items()]


def unregistered(claim_id: str, parts: list[Part], rules: dict[str, Rule]) -> list[str]:
    """The parts of a registered claim graded by a rule other than the one registered for
    them (`registry.registered`), or with no registered rule at all; [] for a claim with no
    registered rules (an analytic one)."""
    if claim_id not in RULES:
        return []
    return [p.name for p in parts if p.name not in rules or p.rule.hash != rules[p.name].hash]


def flag_changed_rules(claim_id: str, parts: list[Part], ctx: Context) -> list[Part]:
    """`parts` with every part whose rule differs from the one its suite's runs were planned
    under (the summary's `planned_rules`) flagged: "rule changed after data: …" added to its
    reason and `planned_under` set. A summary with no record flags nothing."""
    suite = SUITE_OF.get(claim_id)
    summary = ctx.summary(suite) if suite and parts else None
    planned = summary.planned_rules if summary is not None else {}
    out = []
    for part in parts:
        then = planned.get(f"{claim_id} {part.name}")
        if then is not None and then != part.rule.hash:
            part = replace(part, planned_under=then,
                           reason=f"{part.reason}; rule changed after data: its runs were "
                                  f"planned under rule {then}, graded under {part.rule.hash}")
        out.append(part)
    return out


def run_claims(ids: list[str] | None = None, ctx: Context | None = None) -> list[ClaimResult]:
    """Run the checks for `ids` (all when None) in id order. A check that raises gets the state
    "error" with its message (never a verdict), so one broken check neither hides the others
    nor passes for a finding; the CLI then exits 1. So does a check that grades a part by a
    rule other than the one registered for it (`blocklab.claims.registry`). A check that grades
    no part (no results stored, untestable here) shows its registered parts with their rules."""
    register_checks()

    ctx = ctx or Context()
    # Checked once here, not as an error inside every experimental check.
    if ctx.size not in SIZES:
        raise InputError(f"size {ctx.size!r} is not allowed; expected one of {list(SIZES)}")
    check_seed_offset(ctx.seed_offset)
    sources = claim_sources()
    wanted = sorted(sources) if not ids else ids
    unknown = [i for i in wanted if i not in sources]
    if unknown:
        raise InputError(f"unknown claim id(s) {unknown}; allowed: C01 … C{len(sources):02d}")
    repeated = sorted({i for i in wanted if wanted.count(i) > 1})
    if repeated:
        raise InputError(f"claim id(s) {repeated} asked for more than once; name each once")
    out = []
    for cid in wanted:
        en, zh = CLAIM_TEXT[cid]
        src = sources[cid]
        rules = registered(cid, ctx.size)
        try:
            found = CHECKS[cid](ctx)
        except Exception as err:  # noqa: BLE001 - shown as the error it is, never as a verdict
            error = f"{type(err).__name__}: {err}"
            out.append(ClaimResult(cid, en, zh, src["page"], src["section"], ERROR,
                                   f"The check failed to run: {error}",
                                   f"检查运行失败：{error}",
                                   {"traceback": traceback.format_exc()}, "", None, error,
                                   planned_parts(rules, ERROR)))
            continue
        stray = unregistered(cid, found.parts, rules)
        if stray:
            error = (f"{cid} graded part(s) {stray} by a rule not registered for them at size "
                     f"{ctx.size!r} (blocklab.claims.registry; a bug in the check)")
            out.append(ClaimResult(cid, en, zh, src["page"], src["section"], ERROR,
                                   f"The check failed to run: {error}",
                                   f"检查运行失败：{error}", {}, "", None, error,
                                   planned_parts(rules, ERROR)))
            continue
        if cid in SCALE_DEPENDENT and found.verdict == "refuted":
            error = (f"{cid} depends on scale, so a run here may not refute it; its check "
                     "returned 'refuted' (a bug in the check)")
            out.append(ClaimResult(cid, en, zh, src["page"], src["section"], ERROR,
                                   f"The check failed to run: {error}",
                                   f"检查运行失败：{error}", {}, "", None, error))
            continue
        parts = flag_changed_rules(cid, list(found.parts), ctx) or planned_parts(
            rules, found.verdict)
        out.append(ClaimResult(cid, en, zh, src["page"], src["section"], found.verdict,
                               found.summary, found.summary_zh, _plain(found.evidence),
                               found.command, found.figure, None, parts,
                               found.combines, found.combines_zh))
    return out


def _plain(value: Any) -> Any:
    """Evidence as plain JSON types (NumPy scalars and arrays become floats and lists)."""
    return json.loads(json.dumps(value, default=_default))


def _default(obj: Any) -> Any:
    # A dataclass row of evidence becomes the dict of its fields, in field order: the dict a
    # check would have written by hand. Not `json_safe`, which writes a non-finite number as
    # null, while the ledger keeps it (C10's float16 overflow is Infinity).
    if is_dataclass(obj) and not isinstance(obj, type):
        return asdict(obj)
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    raise TypeError(f"cannot serialise {type(obj).__name__}")
