"""The claims ledger: every check of `claims.catalogue.CHECKS` run, each row a verdict with its
evidence, the rules it was graded by and the published results beside it.
"""

from __future__ import annotations

import json
import traceback
from dataclasses import asdict, dataclass, field, is_dataclass, replace
from typing import Any

from blocklab.claims.anchors import anchors, reading
from blocklab.claims.catalogue import CHECKS, SCALE_DEPENDENT, SUITE_OF, planned_hash
from blocklab.claims.finding import Context, Finding, MissingResults, missing, untested_part
from blocklab.claims.registry import RULES, RuleChange, changes, registered
from blocklab.claims.rules import Estimate, Part, Rule
from blocklab.claims.text import CLAIM_TEXT, ERROR, Template, both, claim_sources
from blocklab.errors import InputError, ResultsError
from blocklab.experiments.suites import get_suite
from blocklab.experiments.summaries import mixed_notes


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
    # The scale its suite's graded runs had at the ledger's size (`Scale.to_dict`); None for
    # an analytic claim or a suite whose graded measurements are timings.
    scale: dict[str, Any] | None = None

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
        out["anchors"] = [a.to_dict() for a in anchors(self.id)]  # published results
        out["anchor_reading"] = reading(self.id)
        out["parts"] = [p.to_dict() for p in self.parts]
        out["rule"] = None if self.rule is None else asdict(self.rule)
        out["rule_hash"] = None if self.rule is None else self.rule.hash
        out["estimate"] = None if self.estimate is None else asdict(self.estimate)
        out["rules_changed"] = [asdict(c) for c in self.rules_changed]
        return _plain(out)


# Why a registered part carries no decision, by the claim's verdict.
UNGRADED = {"missing-results": "no results stored: graded by this rule once they are",
            "untestable-here": "not graded: untestable here",
            "error": "not graded: the check failed to run"}


def planned_parts(rules: dict[str, Rule], verdict: str) -> list[Part]:
    """A claim's registered parts with no estimate, for a check that graded none (no results,
    untestable here, or an error): each shows the rule it will be graded by."""
    reason = UNGRADED.get(verdict, f"not graded ({verdict})")
    return [untested_part(name, rule, None, verdict, reason) for name, rule in rules.items()]


def unregistered(claim_id: str, parts: list[Part], rules: dict[str, Rule]) -> list[str]:
    """The parts of a registered claim graded by a rule other than the one registered for
    them (`registry.registered`), or with no registered rule at all; [] for a claim with no
    registered rules (an analytic one)."""
    if claim_id not in RULES:
        return []
    return [p.name for p in parts if p.name not in rules or p.rule.hash != rules[p.name].hash]


def flag_changed_rules(claim_id: str, parts: list[Part], ctx: Context) -> list[Part]:
    """`parts` with every part whose rule differs from the one its runs were planned under (the
    summary's `planned_rules`) flagged in its reason and `planned_under`; runs stored with no
    record say so on every part, never assumed planned under today's rules."""
    suite = SUITE_OF.get(claim_id)
    summary = ctx.summary(suite) if suite and parts else None
    planned = summary.planned_rules if summary is not None else {}
    out = []
    for part in parts:
        then = planned.get(f"{claim_id} {part.name}")
        if summary is not None and not planned and part.decision is not None:
            part = replace(part, reason=f"{part.reason}; no record of the rule its runs were "
                                        "planned under (stored before rules were recorded)")
        elif then is not None and then != (now := planned_hash(claim_id, part.rule)):
            part = replace(part, planned_under=then,
                           reason=f"{part.reason}; rule changed after data: its runs were "
                                  f"planned under rule {then}, graded under {now} (the rule, "
                                  "its decision procedure and its metric's code)")
        out.append(part)
    return out


def claim_ids(ids: list[str] | None) -> list[str]:
    """The claim ids (C16 or c16) upper-cased, every claim's when none are given; unknown or
    repeated ones named as written."""
    sources = claim_sources()
    if not ids:
        return sorted(sources)
    unknown = [i for i in ids if i.upper() not in sources]
    if unknown:
        raise InputError(f"unknown claim id(s) {unknown}; allowed: C01 … C{len(sources):02d}")
    upper = [i.upper() for i in ids]
    repeated = [i for n, i in enumerate(ids) if upper[n] in upper[:n]]
    if repeated:
        raise InputError(f"claim id(s) {repeated} asked for more than once; name each once")
    return upper


def run_claims(ids: list[str] | None = None, ctx: Context | None = None) -> list[ClaimResult]:
    """Run the checks for `ids` (`claim_ids`; all when None). A check that raises, or grades a
    part by a rule not registered for it, gets the state "error" (never a verdict; the CLI
    exits 1); one that grades no part shows its registered parts with their rules."""
    ctx = ctx or Context()
    sources = claim_sources()
    out = []
    for cid in claim_ids(ids):
        head = (cid, *CLAIM_TEXT[cid], sources[cid]["page"], sources[cid]["section"])
        rules = registered(cid, ctx.size)
        try:
            found = CHECKS[cid](ctx)
        except MissingResults as gap:
            found = missing(ctx, gap.suite)
        except Exception as err:  # noqa: BLE001 - shown as the error it is, never as a verdict
            out.append(_failed(head, f"{type(err).__name__}: {err}",
                               {"traceback": traceback.format_exc()},
                               planned_parts(rules, ERROR)))
            continue
        stray = unregistered(cid, found.parts, rules)
        if stray:
            out.append(_failed(head, f"{cid} graded part(s) {stray} by a rule not registered "
                               f"for them at size {ctx.size!r} (blocklab.claims.registry; a bug "
                               "in the check)", {}, planned_parts(rules, ERROR)))
            continue
        error = scale_error(cid, found)
        if error:
            out.append(_failed(head, error, {}, []))
            continue
        parts = flag_changed_rules(cid, list(found.parts), ctx) or planned_parts(
            rules, found.verdict)
        out.append(ClaimResult(*head, found.verdict, found.summary, found.summary_zh,
                               _plain(found.evidence), found.command, found.figure, None, parts,
                               found.combines, found.combines_zh))
    return [_mixed(replace(row, scale=_scale(row.id, ctx)), ctx) for row in out]


def scale_error(claim_id: str, found: Finding) -> str | None:
    """Why `found`'s verdict is a bug in its check, or None. A claim that depends on scale may
    be refuted only by a part an exact check refuted (a count has no scale; a run here refutes
    nothing); a claim that does not depend on scale is never left "at this scale"."""
    if claim_id in SCALE_DEPENDENT:
        if found.verdict == "refuted" and not any(p.verdict == "refuted" for p in found.parts):
            return (f"{claim_id} depends on scale, so a run here may not refute it; its check "
                    "returned 'refuted' (a bug in the check)")
    elif found.verdict.endswith("-at-this-scale"):
        return (f"{claim_id} does not depend on scale, so no verdict of it is 'at this scale'; "
                f"its check returned {found.verdict!r} (a bug in the check)")
    return None


# A check that raised, as the ledger words it, (English, Chinese).
FAILED: Template = ("The check failed to run: {error}", "检查运行失败：{error}")


def _failed(head: tuple[str, ...], error: str, evidence: dict, parts: list[Part]) -> ClaimResult:
    """The row of a check in the state "error" (never a verdict)."""
    return ClaimResult(*head, ERROR, *both(FAILED, error=error), evidence, "", None, error,
                       parts)


def _mixed(row: ClaimResult, ctx: Context) -> ClaimResult:
    """`row` with its evidence ending in the sentences that say its suite's runs came from
    more than one machine or ran other bf16 attention kernels (`summaries.mixed_notes`, from
    the summary's `machines` and `kernels`), in English and Chinese; as it was otherwise."""
    suite = SUITE_OF.get(row.id)
    if suite is None or row.error is not None:
        return row
    try:
        summary = ctx.summary(suite)
    except (InputError, ResultsError):  # its check said so already
        return row
    if summary is None or not (summary.machines or summary.kernels):
        return row
    en = " ".join(mixed_notes(summary.machines, summary.kernels, "en"))
    zh = "".join(mixed_notes(summary.machines, summary.kernels, "zh"))
    return replace(row, summary=f"{row.summary} {en}".strip(),
                   summary_zh=f"{row.summary_zh}{zh}")


def _scale(claim_id: str, ctx: Context) -> dict[str, Any] | None:
    """The scale of the runs `claim_id` is graded on at the ledger's size, or None."""
    suite = SUITE_OF.get(claim_id)
    scale_of = get_suite(suite).scale if suite else None
    scale = None if scale_of is None else scale_of(ctx.size, claim_id)
    return None if scale is None else scale.to_dict()


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
