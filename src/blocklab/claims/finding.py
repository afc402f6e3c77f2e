"""What a claim's check is: `check(ctx) -> Finding`, reading suite results through its
`Context`, declared with `@claim` as one `ClaimSpec` beside it (collected by `catalogue`); the
helpers every check writes its findings with, and the finding of missing results.

    @claim("C16", suite="ffn", scale_dependent=True, arms=c16_arms)
    def c16(ctx: Context) -> Finding: ...
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from blocklab.claims.lang import LANGS
from blocklab.claims.rules import Estimate, Part, Rule
from blocklab.claims.text import VERDICTS, WORDING, Template, both, say
from blocklab.errors import InputError
from blocklab.experiments.options import RunRequest
from blocklab.experiments.suites import SUITE_MODULES, get_suite, load_summary
from blocklab.experiments.suites.base import format_ci
from blocklab.experiments.summaries import Interval, Summary, incomplete, stored_keys

# The sentences every check shares, (English, Chinese), filled by `say`.
TEXT: dict[str, Template] = WORDING["FINDING"]


# The verdicts that decide a claim (each names the scale it was reached at, where it has one).
DECIDED = ("confirmed", "refuted", "conditional", "mixed", "contradicted-at-this-scale",
           "not-reproduced-at-this-scale")


def decided_scale(verdict: str, size: Mapping[str, Any], lang: str, note: str = "",
                  **given: int | None) -> str:
    """The scale a verdict in DECIDED was reached at, in `lang` ('' for any other verdict):
    width d_model, depth n_layers and training tokens (steps × batch_size × seq_len), each
    where `size` (a suite's size settings) holds it or `given` (depth=, steps=) replaces it,
    then `note`; '' when none is known."""
    if verdict not in DECIDED:
        return ""
    d_model, depth, steps, batch, seq_len = (
        {"d_model": size.get("d_model"), "depth": size.get("n_layers"),
         "steps": size.get("steps"), "batch": size.get("batch_size"),
         "seq_len": size.get("seq_len")} | given).values()
    bits = []
    if d_model is not None:
        bits.append(say(TEXT["width"], lang, d_model=d_model))
    if depth is not None:
        bits.append(say(TEXT["depth"], lang, depth=depth))
    if steps is not None and batch is not None and seq_len is not None:
        bits.append(say(TEXT["tokens"], lang, tokens=steps * batch * seq_len, steps=steps,
                        batch=batch, seq_len=seq_len))
    if note:
        bits.append(note)
    if not bits:
        return ""
    return say(TEXT["scale"], lang, bits=say(TEXT["scale_sep"], lang).join(bits))


def untested_part(name: str, rule: Rule, value: float | None, verdict: str, reason: str,
                  n: int = 1) -> Part:
    """A part decided without a test (an exact count, an analytic fact, a reading not made):
    `value` with no interval, from `n` readings (none without a value)."""
    return Part(name, rule, Estimate(value, None, None, 0 if value is None else n), verdict,
                reason)


def ci_n_text(stats: Interval, digits: int, unit: str = "") -> str:
    """'+m<unit> [+lo, +hi] (n=k)', '+m<unit> (n=k)' without an interval, or '—'."""
    text = format_ci(stats, digits, unit)
    return f"{text} (n={stats.n})" if stats.resolved else text


TREND_ZH = {"grows": "增大", "shrinks": "缩小", "shows no resolved trend": "无可分辨的趋势"}


def trend_word(change: Interval, grows_when: str, lang: str = "en") -> str:
    """'grows' / 'shrinks' in `lang` when the 95% CI of a change across sizes excludes 0
    (`grows_when`: the side, 'below' or 'above', on which the effect grows), else no resolved
    trend."""
    side = None if not change.resolved else (
        "below" if change.ci_high < 0 else "above" if change.ci_low > 0 else None)
    word = ("shows no resolved trend" if side is None else
            "grows" if side == grows_when else "shrinks")
    return TREND_ZH[word] if lang == "zh" else word


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


class MissingResults(Exception):
    """A check's suite has no usable summary (`Context.required`)."""

    def __init__(self, suite: str) -> None:
        super().__init__(suite)
        self.suite = suite


@dataclass
class Context:
    """Where experimental checks find suite results: the summaries `request` names
    (`<results>/<suite>/<size>/summary.json`, the folder of its seed offset and precision).
    A suite that measures float32 only (its `precisions`) is read at fp32 and listed in
    `fp32_only`."""

    request: RunRequest = field(default_factory=lambda: RunRequest(Path("runs"), "quick"))
    fp32_only: set[str] = field(default_factory=set)
    _cache: dict[str, Summary | None] = field(default_factory=dict)
    # suite -> why its stored summary cannot be used (`incomplete`: runs it lists are gone)
    unusable: dict[str, str] = field(default_factory=dict)

    @property
    def results(self) -> Path:
        return self.request.results

    @property
    def size(self) -> str:
        return self.request.size

    @property
    def seed_offset(self) -> int:
        return self.request.seed_offset

    @property
    def precision(self) -> str:
        return self.request.precision

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

    def required(self, suite: str) -> Summary:
        """`summary(suite)`, or MissingResults where it is None: the ledger then records
        the `missing` finding in place of the check's."""
        found = self.summary(suite)
        if found is None:
            raise MissingResults(suite)
        return found

    def longer_summary(self, suite: str) -> Summary | None:
        """The summary of `suite`'s runs trained twice as long (`<size>+x2`, run to check a
        would-be contradiction), None when there is none or its runs are gone."""
        key = f"{suite}+x2"
        if key not in self._cache:
            self._cache[key] = load_summary(self.results, suite, self.size,
                                            seed_offset=self.seed_offset,
                                            precision=self.precision_of(suite), longer=True)
        return self._cache[key]

    def precision_of(self, suite: str) -> str:
        """The precision `suite` is read at: the request's where the suite trains in it, else
        float32 (the suite measures float32 by design; noted in `fp32_only`)."""
        chosen = self.request.precision_of(get_suite(suite))
        if chosen != self.precision:
            self.fp32_only.add(suite)
        return chosen

    def suite_command(self, suite: str) -> str:
        """The command that runs `suite` under the request (at the precision it is read at)."""
        self.precision_of(suite)  # noted in `fp32_only`, as every read of a suite is
        return self.request.suite_command(get_suite(suite))

    def stored_elsewhere(self, suite: str | None = None) -> dict[RunRequest, list[str]]:
        """{request: suites} of the summaries under `results` (of `suite`, or all) stored at
        another size, seed offset or precision, keyed by the request that reads them."""
        keys: dict[RunRequest, list[str]] = {}
        for name, size, offset, precision in stored_keys(self.results, suite):
            if name not in SUITE_MODULES:
                continue  # a folder that is no suite's
            if (size, offset, precision) != (self.size, self.seed_offset,
                                              self.precision_of(name)):
                other = replace(self.request, size=size, seed_offset=offset,
                                precision=precision)
                keys.setdefault(other, []).append(name)
        return keys


Check = Callable[[Context], Finding]
# (part name, the part's rule metric, the suite's planned arms) -> the arms whose runs the part
# is estimated from
Arms = Callable[[str, str, list[str]], list[str]]


@dataclass(frozen=True)
class ClaimSpec:
    """One claim as its check declares it (`@claim`), read through `claims.catalogue`."""

    id: str
    check: Check
    suite: str | None = None  # whose runs its registered parts are graded on; None: analytic
    # A claim a small model here can test but not settle: it may be "not reproduced" or
    # "contradicted at this scale", and refuted only by a part an exact count refutes; a claim
    # that is not is never "at this scale" (`ledger.scale_error` holds every check to this).
    scale_dependent: bool = False
    # which of the suite's arms each part reads: what one more seed of it costs
    arms: Arms | None = None
    subsection: bool = False  # a subsection of its own in the report's "more claims"

    def __post_init__(self) -> None:
        if self.suite is not None and self.arms is None:
            raise TypeError(f"claim {self.id} reads suite {self.suite!r} but gives no arms "
                            "function: say which of its arms each part reads (arms=...)")
        if self.suite is None and self.arms is not None:
            raise TypeError(f"claim {self.id} gives an arms function but no suite: arms are "
                            "a suite's (suite=...)")


# Every ClaimSpec declared so far, in the order the check modules were imported: read them
# through `claims.catalogue.SPECS`, which imports every check module first.
DECLARED: dict[str, ClaimSpec] = {}


def claim(claim_id: str, *, suite: str | None = None, scale_dependent: bool = False,
          arms: Arms | None = None, subsection: bool = False) -> Callable[[Check], Check]:
    """Declare the decorated function as the check of `claim_id` (`ClaimSpec`, validated
    here: a claim with a suite must say which arms its parts read, one without must not)."""
    def register(fn: Check) -> Check:
        if claim_id in DECLARED:
            raise InputError(f"claim {claim_id} registered twice")
        DECLARED[claim_id] = ClaimSpec(claim_id, fn, suite, scale_dependent, arms, subsection)
        return fn

    return register


def missing(ctx: Context, suite: str) -> Finding:
    """The finding of an experimental check whose suite has not been run, or whose stored
    summary lists runs that are gone (`Context.unusable`)."""
    command = ctx.suite_command(suite)
    reason = ctx.unusable.get(suite)
    where = {"suite": suite, "results": ctx.results, "size": ctx.size}
    if reason:
        return Finding("missing-results", *both(TEXT["incomplete"], reason=reason, **where),
                       {"incomplete": reason}, command)
    # The folder may hold this suite at another size, seed offset or precision: say how to
    # read those, rather than only how to run these.
    held = list(ctx.stored_elsewhere(suite))
    en, zh = (say(TEXT["missing"], lang, command=command, **where)
              + "".join(say(TEXT["stored_elsewhere"], lang, suite=suite, flags=other.flags(),
                            command=other.claims_command()) for other in held)
              for lang in LANGS)
    return Finding(
        "missing-results", en, zh,
        {"stored": [{"size": other.size, "seed_offset": other.seed_offset,
                     "precision": other.precision, "command": other.claims_command()}
                    for other in held]}
        if held else {},
        command)
