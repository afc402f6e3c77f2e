"""The report in a real browser: headless Chromium opens index.html from disk (file://).

A copy of the page gets two small inline scripts: one at the top of <head> that collects errors
(script errors, failed resource loads, console.error), one at the end of <body> that, on load,
writes what it measured into `document.body.dataset.probe` (JSON). `--dump-dom` prints the DOM
after the load event, so the test reads the measurements back from it. Chromium's own console
log (`--enable-logging=stderr`) must stay empty too. A screenshot of the unmodified page is
kept under the test's tmp_path (`report.png`).

Chromium is required where BLOCKLAB_REQUIRE_BROWSER=1 (CI installs it and sets that, so a missing
browser fails CI); elsewhere, without Chromium, the test is skipped with a one-line reason.
"""

import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from blocklab.claims import claim_sources
from blocklab.experiments.suites import run_suites
from blocklab.report.build import build_report

SUITES = ("ffn", "norm-cost", "placement", "position")

HEAD_PROBE = """<script>
window.__errors = [];
window.addEventListener("error", function (e) {
  var t = e.target;
  window.__errors.push(t && t !== window ? "failed to load " + (t.src || t.href || t.tagName)
                                         : String(e.message));
}, true);
(function () {
  var original = console.error;
  console.error = function () {
    window.__errors.push(Array.prototype.join.call(arguments, " "));
    original.apply(console, arguments);
  };
})();
</script>"""

BODY_PROBE = """<script>
window.addEventListener("load", function () {
  var images = Array.prototype.slice.call(document.images);
  var anchors = Array.prototype.slice.call(document.querySelectorAll('a[href^="#"]'));
  var resources = performance.getEntriesByType("resource").map(function (r) { return r.name; });
  document.body.dataset.probe = JSON.stringify({
    images: images.length,
    broken: images.filter(function (i) { return !i.complete || i.naturalWidth === 0; })
                  .map(function (i) { return i.alt || i.src.slice(0, 40); }),
    ledgerRows: document.querySelectorAll("table.ledger tbody tr").length,
    deadAnchors: anchors.map(function (a) { return a.getAttribute("href").slice(1); })
                        .filter(function (id) { return !document.getElementById(id); }),
    resources: resources,
    errors: window.__errors,
    height: document.documentElement.scrollHeight
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


class _BodyData(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.probe: str | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "body":
            self.probe = dict(attrs).get("data-probe")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser")
    errors = run_suites(root / "runs", "tiny", SUITES, progress=False, echo=lambda line: None)
    index, _ = build_report(root / "report", root / "runs", "tiny", "en", suite_errors=errors)
    return index


def test_report_in_headless_chromium(report, tmp_path):
    page = report.read_text(encoding="utf-8")
    probed = tmp_path / "probed.html"
    probed.write_text(page.replace("<head>", "<head>" + HEAD_PROBE, 1)
                      .replace("</body>", BODY_PROBE + "</body>", 1), encoding="utf-8")

    done = run_chromium(tmp_path / "profile", "--dump-dom", probed.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    parser = _BodyData()
    parser.feed(done.stdout)
    assert parser.probe, f"the probe did not run; stderr: {done.stderr[-2000:]}"
    probe = json.loads(parser.probe)

    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], console
    assert probe["errors"] == []
    assert probe["images"] >= 8
    assert probe["broken"] == [], f"images that did not decode: {probe['broken']}"
    assert probe["ledgerRows"] == len(claim_sources()) == 36
    assert probe["deadAnchors"] == []
    assert [r for r in probe["resources"] if not r.startswith("data:")] == []

    # The screenshot of the page as a reader sees it, kept as an artifact.
    shot = tmp_path / "report.png"
    height = min(max(int(probe["height"]), 800), 30000)  # the whole page
    done = run_chromium(tmp_path / "profile-shot", f"--screenshot={shot}",
                        f"--window-size=1280,{height}", report.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 50_000
    assert not [line for line in done.stderr.splitlines() if re.search(r":CONSOLE", line)]
