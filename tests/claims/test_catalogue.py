"""The catalogue: every claim declared once beside its check, and what is derived from it."""

import dataclasses
import re
from pathlib import Path

import pytest

from blocklab.claims import catalogue
from blocklab.claims.catalogue import SPECS, SUITE_OF, part_arms
from blocklab.claims.finding import DECLARED, Finding, claim
from blocklab.claims.registry import RULES, registered
from blocklab.claims.sequential import _planned_arms
from blocklab.claims.text import CLAIM_TEXT, claim_sources, claims_markdown
from blocklab.experiments.options import RunRequest


def test_every_claim_is_declared_once_and_every_registered_claim_has_a_suite():
    listed = set(re.findall(r"^- (C\d\d) ", claims_markdown(), flags=re.M))
    assert len(listed) == 37 and listed == set(claim_sources())
    assert listed == set(SPECS) == set(CLAIM_TEXT) and list(SPECS) == sorted(SPECS)
    assert set(SUITE_OF) == set(RULES)  # a claim's parts are graded on its suite's runs
    assert all(spec.id == cid for cid, spec in SPECS.items())


@pytest.mark.parametrize("size", ["tiny", "quick", "full"])
@pytest.mark.parametrize("claim_id", sorted(SUITE_OF))
def test_every_part_measured_on_seeds_reads_planned_arms(claim_id, size):
    suite = SUITE_OF[claim_id]
    planned = _planned_arms(RunRequest(Path("runs"), size), [suite])[0][suite]
    seeded = {name: rule for name, rule in registered(claim_id, size).items()
              if rule.max_seeds is not None}
    for name, rule in seeded.items():
        arms = part_arms(claim_id, name, rule.metric, planned)
        assert arms and set(arms) <= set(planned), (claim_id, name, size)


def _check(ctx):
    return Finding("untestable-here", "s", "s")


def test_a_claim_or_part_that_reads_no_arms_is_refused(monkeypatch):
    with pytest.raises(TypeError, match="claim C99 reads suite 'ffn' but gives no arms"):
        claim("C99", suite="ffn")(_check)
    with pytest.raises(TypeError, match="claim C99 gives an arms function but no suite"):
        claim("C99", arms=lambda part, metric, arms: arms)(_check)
    assert "C99" not in DECLARED
    # a part measured on seeds that reads no arm is an error where it is graded
    spec = dataclasses.replace(SPECS["C16"], arms=lambda part, metric, arms: [])
    monkeypatch.setitem(catalogue.SPECS, "C16", spec)
    with pytest.raises(LookupError, match=r"C16 part 'glu' reads none of suite 'ffn'"):
        part_arms("C16", "glu", "m", ["glu", "relu"])
    assert part_arms("C16", "glu", "m", ["glu", "relu"], seeded=False) == []
