"""`blocklab report --precision bf16` reads the suites trained in bf16 (a float32-only suite at
fp32, as the ledger reads it) and every command it shows carries the flag."""

import json

import pytest

from blocklab.cli import main
from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites import get_suite, run_suite


@pytest.fixture(scope="module")
def bf16_ffn(tmp_path_factory, unrasterized_in_module):
    """A results folder whose only ffn results sit where bf16 ones are kept (float32 runs moved
    there: this CPU emulates bfloat16, and the reader only looks at the folder)."""
    root = tmp_path_factory.mktemp("precision")
    ffn = get_suite("ffn")
    run_suite(ffn, RunOptions.for_suite(ffn, "tiny"), root / "runs", progress=False)
    (root / "runs" / "ffn" / "tiny").rename(root / "runs" / "ffn" / "tiny+bf16")
    return root


def test_report_reads_bf16_suites_and_says_so(bf16_ffn):
    out = bf16_ffn / "report"
    assert main(["report", "--tiny", "--no-run", "--results", str(bf16_ffn / "runs"), "--out",
                 str(out), "--lang", "en", "--precision", "bf16"]) in (0, 1)
    doc = json.loads((out / "report.json").read_text())
    gen = doc["generated"]
    assert gen["precision"] == "bf16" and "--precision bf16" in gen["command"]
    ffn = doc["suites"]["ffn"]
    assert ffn["summary"] is not None and ffn["error"] is None
    assert ffn["runs"]  # the curves are read from the bf16 folder too
    assert ffn["command"].endswith("--precision bf16 --results " + str(bf16_ffn / "runs"))
    # norm-cost measures float32 kernels only: its command (and folder) stay fp32
    assert "--precision" not in doc["suites"]["norm-cost"]["command"]
    c16 = next(row for row in doc["ledger"] if row["id"] == "C16")
    assert "--precision bf16" in c16["command"]

