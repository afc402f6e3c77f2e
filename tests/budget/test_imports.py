"""`blocklab.budget` and the `blocklab budget` command never import torch."""

import subprocess
import sys


def _run(code: str) -> None:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_library_does_not_import_torch():
    _run("import sys, blocklab.budget, blocklab.budget.doctor, blocklab.budget.sweep; "
         "assert 'torch' not in sys.modules, 'torch imported'")


def test_budget_and_doctor_commands_do_not_import_torch():
    _run("import sys, io, contextlib\n"
         "import blocklab.cli.budget, blocklab.cli.doctor\n"
         "from blocklab.cli import main\n"
         "with contextlib.redirect_stdout(io.StringIO()):\n"
         "    assert main(['budget', 'qwen3-8b']) == 0\n"
         "    assert main(['budget', 'gpt2', '--json']) == 0\n"
         "    assert main(['budget', '--sweep']) == 0\n"
         "    assert main(['doctor', 'gemma-2-2b']) == 0\n"
         "assert 'torch' not in sys.modules, 'torch imported'\n"
         "assert 'matplotlib' not in sys.modules, 'matplotlib imported without --plot'")
