"""The HTML report: the claims ledger on top, then the numbers and plots behind it.

    from blocklab.report import build_report
    index, doc = build_report("report", results="runs", size="quick", lang="en")

`collect` gathers every number into one JSON-able document (written as report.json);
`render_html` and `make_figures` turn that document into one self-contained page (index.html).
"""

from blocklab.report.build import build_report, collect, write_report

__all__ = ["build_report", "collect", "write_report"]
