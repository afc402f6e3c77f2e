"""Make docs/report.png, the README's picture: the first screen of a real report.

    python docs/screenshot.py [REPORT_HTML] [--out docs/report.png] [--width 1280 --height 900]

REPORT_HTML defaults to report/index.html (what `blocklab report --quick` writes). Headless
Chromium (Debian's `chromium`) opens the page from disk and screenshots its first screen; nothing
is fetched from the network (the report is self-contained).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", nargs="?", default="report/index.html", type=Path)
    parser.add_argument("--out", default=Path(__file__).with_name("report.png"), type=Path)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=900)
    args = parser.parse_args()
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("error: no chromium on PATH (apt-get install chromium)", file=sys.stderr)
        return 2
    if not args.report.is_file():
        print(f"error: {args.report} is not a file; run `blocklab report --quick` first",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--hide-scrollbars", "--no-first-run", f"--user-data-dir={profile}",
             f"--window-size={args.width},{args.height}",
             f"--screenshot={args.out.resolve()}", args.report.resolve().as_uri()],
            capture_output=True, text=True, timeout=180, check=False)
    if done.returncode != 0 or not args.out.is_file():
        print(f"error: chromium failed ({done.returncode}): {done.stderr.strip()[-300:]}",
              file=sys.stderr)
        return 1
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
