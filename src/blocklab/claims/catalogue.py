"""Every claim's spec, collected: what the ledger, the sequential design and the report read
about the claims, derived from what each check declares beside itself (`finding.ClaimSpec`).

    from blocklab.claims.catalogue import SPECS, part_arms
    SPECS["C16"].suite                                 # "ffn"
    part_arms("C16", "swiglu", metric, ["glu", "relu", "swiglu"])  # ["swiglu", "relu"]

Above the check modules. Adding a claim: list it in `CLAIMS.md`, restate it in `text.CLAIM_TEXT`,
write its check with `@claim(...)` and, if experimental, register its rules in `registry.RULES`.
"""

from __future__ import annotations

import hashlib

from blocklab.claims import (  # noqa: F401 - imported for their @claim declarations
    checks,
    depth,
    ffn,
    models,
    norm_cost,
    placement,
    positions,
    quantization,
    width,
)
from blocklab.claims.finding import DECLARED, Check, ClaimSpec
from blocklab.claims.registry import registered
from blocklab.claims.rules import Rule

SPECS: dict[str, ClaimSpec] = dict(sorted(DECLARED.items()))
CHECKS: dict[str, Check] = {cid: spec.check for cid, spec in SPECS.items()}
# The suite whose runs each experimental claim's parts are graded on.
SUITE_OF: dict[str, str] = {cid: spec.suite for cid, spec in SPECS.items()
                            if spec.suite is not None}
# Claims a run here may not refute (`ClaimSpec.scale_dependent`).
SCALE_DEPENDENT = frozenset(cid for cid, spec in SPECS.items() if spec.scale_dependent)
# Claims with a subsection of their own in the report's "more claims" section, in id order.
SUBSECTION_CLAIMS = tuple(cid for cid, spec in SPECS.items() if spec.subsection)


def part_arms(claim_id: str, part: str, metric: str, arms: list[str], *,
              seeded: bool = True) -> list[str]:
    """The arms (of the suite's `arms`) whose runs `part` of `claim_id` is estimated from; a
    `seeded` part naming none is a bug in its arms function (LookupError)."""
    spec = SPECS.get(claim_id)
    found = [] if spec is None or spec.arms is None else spec.arms(part, metric, arms)
    found = [a for a in found if a in arms]
    if seeded and not found:
        suite = None if spec is None else spec.suite
        raise LookupError(f"{claim_id} part {part!r} reads none of suite {suite!r}'s arms "
                          f"{arms}: a part measured on seeds must name the arms it is "
                          "estimated from (a bug in the arms function beside its check)")
    return found


def planned_hash(claim_id: str, rule: Rule) -> str:
    """The hash a part's runs are recorded under: 12 hex digits of the sha256 of its
    `Rule.hash` and its suite's `metric_version` (the rule's own for an analytic claim)."""
    suite = SUITE_OF.get(claim_id)
    if suite is None:
        return rule.hash
    from blocklab.experiments.suites import get_suite

    text = f"{rule.hash}\n{get_suite(suite).metric_version}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def suite_rules(size: str) -> dict[str, dict[str, str]]:
    """{suite: {"<claim> <part>": `planned_hash`}} of the rules grading each suite at `size`."""
    out: dict[str, dict[str, str]] = {}
    for claim_id, suite in SUITE_OF.items():
        for name, rule in registered(claim_id, size).items():
            out.setdefault(suite, {})[f"{claim_id} {name}"] = planned_hash(claim_id, rule)
    return out
