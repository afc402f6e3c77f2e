"""What runs without PyTorch: reading results and summaries, run options and requests, the
statistics, precision names, the budget and doctor (library and commands), `train --help` and
`verify`.

One interpreter runs every case in turn and checks after each that torch, and whatever else the
case forbids, is not loaded: an interpreter per case would import blocklab a dozen times. The
cases that forbid more than torch run first, before another case could load what they forbid.
"""

import subprocess
import sys

# (what runs, the modules besides torch it must not load)
CASES = [
    # the store keeps results and never trains
    ("import blocklab.experiments.results", ["blocklab.experiments.trainer"]),
    ("import io, contextlib\n"
     "import blocklab.budget, blocklab.budget.doctor, blocklab.budget.sweep\n"
     "import blocklab.cli.budget, blocklab.cli.doctor\n"
     "from blocklab.cli import main\n"
     "with contextlib.redirect_stdout(io.StringIO()):\n"
     "    assert main(['budget', 'qwen3-8b']) == 0\n"
     "    assert main(['budget', 'gpt2', '--json']) == 0\n"
     "    assert main(['budget', '--sweep']) == 0\n"
     "    assert main(['doctor', 'gemma-2-2b']) == 0\n",
     ["matplotlib"]),  # no figure without --plot
    ("import blocklab.experiments.summaries, blocklab.stats", []),
    ("from pathlib import Path\n"
     "from blocklab.experiments.options import RunOptions, RunRequest\n"
     "RunOptions('tiny', range(2), 'bf16', 'compiled').folder()\n"
     "RunRequest(Path('runs'), 'tiny', 5, 'bf16').claims_command()", []),
    ("import io, contextlib\n"
     "from blocklab.cli import main\n"
     "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
     "    assert main(['train', '--help']) == 0\n"
     "    assert main(['verify', '--json']) == 0\n"
     "assert '--no-progress' in out.getvalue(), out.getvalue()\n", []),
]

RUN_CASES = """
import sys
for code, forbidden in CASES:
    exec(code, {})
    loaded = [name for name in ("torch", *forbidden) if name in sys.modules]
    assert not loaded, f"{loaded} loaded by:\\n{code}"
"""


def test_these_run_without_torch():
    done = subprocess.run([sys.executable, "-c", f"CASES = {CASES!r}\n{RUN_CASES}"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
