"""The claims ledger: every claim of the two pages with a verdict and its evidence.

    from blocklab.claims import run_claims
    for row in run_claims(["C02", "C23"]):
        print(row.id, row.verdict, row.summary)
"""

from blocklab.claims.catalogue import CHECKS
from blocklab.claims.finding import Context, Finding
from blocklab.claims.ledger import ClaimResult, run_claims
from blocklab.claims.text import CLAIM_TEXT, VERDICT_ZH, VERDICTS, claim_sources

__all__ = ["CHECKS", "CLAIM_TEXT", "VERDICTS", "VERDICT_ZH", "ClaimResult", "Context", "Finding",
           "claim_sources", "run_claims"]
