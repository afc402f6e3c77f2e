"""The HTML report: the claims ledger on top, then the numbers and plots behind it.

    from blocklab.experiments.options import RunRequest
    from blocklab.report import build_report
    index, doc = build_report(RunRequest(Path("runs"), "quick"), "report", lang="en")

`collect` gathers every number the request names into one JSON-able document (written as
report.json); `render_html` and `make_figures` turn that document into one self-contained page
(index.html).
"""

from blocklab.report.build import build_report, collect, write_report

__all__ = ["build_report", "collect", "write_report"]
