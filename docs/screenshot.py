"""Make docs/report.png, the README's picture: the first screen of a real report.

    python docs/screenshot.py [REPORT_HTML] [--out docs/report.png] [--width 1280 --height 900]
                              [--anchor fig-width_control]

REPORT_HTML defaults to report/index.html (what `blocklab report --quick` writes). Headless
Chromium (Debian's `chromium`) opens the page from disk and screenshots its first screen; nothing
is fetched from the network (the report is self-contained). A Chinese report (`--lang zh`) needs
a CJK font, or its characters show as boxes: `apt-get install chromium fonts-noto-cjk`.
`--figure KEY` shows one figure of the report with its caption (`fig-<KEY>`, e.g.
`--figure width_control`), in the report's own style, instead of the first screen.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def figure_page(html: str, key: str) -> str:
    """A page holding the report's style and its figure `fig-<key>` (image and caption) alone;
    ValueError naming the figures the report has when it has no such one."""
    start = html.find(f'<figure id="fig-{key}"')
    if start < 0:
        keys = sorted(set(re.findall(r'<figure id="fig-([^"]+)"', html)))
        raise ValueError(f"the report has no figure {key!r}; it has {keys}")
    end = html.index("</figure>", start) + len("</figure>")
    head = html[:html.index("</head>")]
    return f"{head}</head><body><main>{html[start:end]}</main></body></html>"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", nargs="?", default="report/index.html", type=Path)
    parser.add_argument("--out", default=Path(__file__).with_name("report.png"), type=Path)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--figure", default="", help="show this figure of the report alone")
    args = parser.parse_args()
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("error: no chromium on PATH (apt-get install chromium fonts-noto-cjk)",
              file=sys.stderr)
        return 2
    if not args.report.is_file():
        print(f"error: {args.report} is not a file; run `blocklab report --quick` first",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as profile:
        page = args.report.resolve()
        if args.figure:
            page = Path(profile) / "figure.html"
            try:
                page.write_text(figure_page(args.report.read_text(encoding="utf-8"),
                                            args.figure), encoding="utf-8")
            except ValueError as err:
                print(f"error: {err}", file=sys.stderr)
                return 2
        done = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--hide-scrollbars", "--no-first-run", "--virtual-time-budget=10000",
             f"--user-data-dir={profile}",
             f"--window-size={args.width},{args.height}",
             f"--screenshot={args.out.resolve()}", page.as_uri()],
            capture_output=True, text=True, timeout=180, check=False)
    if done.returncode != 0 or not args.out.is_file():
        print(f"error: chromium failed ({done.returncode}): {done.stderr.strip()[-300:]}",
              file=sys.stderr)
        return 1
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
