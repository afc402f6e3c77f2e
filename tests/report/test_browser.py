"""The report in a real browser: headless Chromium opens index.html from disk (file://).

A copy of the page gets a small inline script at the end of <body> that, on load, writes what
it measured into `document.body.dataset.probe` (JSON). `--dump-dom` prints the DOM after the
load event, so the test reads the measurements back from it. Chromium's console log
(`--enable-logging=stderr`: script errors and console.error) must stay empty, and every image
must decode (the page loads nothing else: tests/report/test_report.py).

Chromium is required where BLOCKLAB_REQUIRE_BROWSER=1 (CI installs it and sets that, so a missing
browser fails CI); elsewhere, without Chromium, the test is skipped with a one-line reason.
"""

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from blocklab.report.figures import experimental_rows

SUITES = ("ffn", "norm-cost", "placement", "position")
# Lines of words in a claim's section, details folded, pictures and parts aside (the claim, the
# summary's first sentence, the count of the rule edits made after the data, the details line).
CLAIM_LINES = 9
LEDGER_LINES = 2  # lines of a claim's line in the ledger at 1280 px (at most 200 characters)

BODY_PROBE = """<script>
window.addEventListener("load", function () {
  var images = Array.prototype.slice.call(document.images);
  document.body.dataset.probe = JSON.stringify({
    images: images.length,
    broken: images.filter(function (i) { return !i.complete || i.naturalWidth === 0; })
                  .map(function (i) { return i.alt || i.src.slice(0, 40); }),
    ledgerLines: Array.prototype.slice.call(document.querySelectorAll("ol.ledger li"))
      .map(function (li) {
        return li.getBoundingClientRect().height / parseFloat(getComputedStyle(li).lineHeight);
      }),
    claims: Array.prototype.slice.call(document.querySelectorAll("article.claim"))
      .map(function (article) {
        var line = parseFloat(getComputedStyle(article).lineHeight);
        var kids = Array.prototype.slice.call(article.children);
        var top = Math.min.apply(null, kids.map(function (k) {
          return k.getBoundingClientRect().top; }));
        var bottom = Math.max.apply(null, kids.map(function (k) {
          return k.getBoundingClientRect().bottom; }));
        // the words of the section: its content less the pictures and the part lines
        var pictures = Array.prototype.slice.call(
          article.querySelectorAll("figure, ul.part-lines"))
          .reduce(function (sum, el) { return sum + el.getBoundingClientRect().height; }, 0);
        var img = article.querySelector("figure.forest img");
        return {
          id: article.id.replace("claim-", ""),
          forest: img ? img.complete && img.naturalWidth > 0 : null,
          forestWidth: img ? img.getBoundingClientRect().width : 0,
          textLines: kids.length ? (bottom - top - pictures) / line : 0,
          partLines: Array.prototype.slice.call(article.querySelectorAll("ul.part-lines li"))
            .map(function (li) {
              var height = li.getBoundingClientRect().height;
              return height / parseFloat(getComputedStyle(li).lineHeight);
            }),
          open: article.querySelectorAll("details[open]").length
        };
      }),
    firstFigureTop: document.querySelector("figure").getBoundingClientRect().top
      + window.scrollY,
    ledgerTop: document.getElementById("ledger").getBoundingClientRect().top + window.scrollY
  });
});
</script>"""


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None and os.path.exists("/usr/bin/chromium"):
        path = "/usr/bin/chromium"
    if path is None:
        reason = ("Chromium is not installed, and this test needs a real browser: apt-get install "
                  "-y --no-install-recommends chromium (.ci/run does this)")
        if os.environ.get("BLOCKLAB_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def run_chromium(profile: Path, *args: str) -> subprocess.CompletedProcess:
    command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run", "--no-default-browser-check",
               "--hide-scrollbars", f"--user-data-dir={profile}", "--enable-logging=stderr",
               "--v=0", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)


def test_report_in_headless_chromium(tiny_report, tmp_path):
    report, doc = tiny_report
    page = report.read_text(encoding="utf-8")
    probed = tmp_path / "probed.html"
    probed.write_text(page.replace("</body>", BODY_PROBE + "</body>", 1), encoding="utf-8")

    done = run_chromium(tmp_path / "profile", "--window-size=1280,1000", "--dump-dom",
                        probed.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<body[^>]* data-probe="([^"]*)"', done.stdout)
    assert found, f"the probe did not run; stderr: {done.stderr[-2000:]}"
    probe = json.loads(html.unescape(found.group(1)))

    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], console
    assert probe["images"] >= 8
    assert probe["broken"] == [], f"images that did not decode: {probe['broken']}"

    # The page's lead figure (first on the page: test_report) stands within the first two
    # screens and above the ledger; the ledger gives each claim a line or two.
    assert probe["firstFigureTop"] < min(2000, probe["ledgerTop"])
    tall = [h for h in probe["ledgerLines"] if h > LEDGER_LINES + 0.5]  # the chip pads a line
    assert tall == [], f"ledger lines taller than {LEDGER_LINES} lines: {tall}"

    # Each claim's section: a forest plot for every experimental claim and no other, and no
    # section longer than CLAIM_LINES besides its part lines.
    experimental = {r["id"] for r in experimental_rows(doc)}
    rows = {r["id"]: r for r in probe["claims"]}
    assert {cid for cid, r in rows.items() if r["forest"]} == experimental
    assert all(r["forest"] is None for cid, r in rows.items() if cid not in experimental)
    narrow = {cid: rows[cid]["forestWidth"] for cid in experimental
              if rows[cid]["forestWidth"] < 400}
    assert narrow == {}, f"forest plots narrower than 400 px at 1280 px: {narrow}"
    too_long = {cid: round(r["textLines"], 1) for cid, r in rows.items()
                if r["textLines"] > CLAIM_LINES}
    assert too_long == {}, f"claims' sections longer than {CLAIM_LINES} lines: {too_long}"
    wrapped = {cid: r["partLines"] for cid, r in rows.items()
               if any(h > 1.3 for h in r["partLines"])}
    assert wrapped == {}, f"part lines that wrap: {wrapped}"
    assert sum(len(r["partLines"]) for r in rows.values()) == sum(
        len(r["parts"]) for r in doc["ledger"])
    assert all(r["open"] == 0 for r in rows.values())
