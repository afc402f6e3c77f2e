"""docs/contributors.md, performed: each recipe done on a toy through the public path."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

import blocklab
from blocklab.budget.params import count_params
from blocklab.config import FFNS, ModelConfig
from blocklab.nn import ffn as nn_ffn
from blocklab.nn.model import DecoderLM


# --- an FFN kind ------------------------------------------------------------------------------
def test_an_ffn_kind_is_a_name_and_an_activation(monkeypatch):
    """Squared-ReLU gating, y = W_d (relu(W_g x)² ⊙ W_u x): one entry in config.FFNS, one in
    nn.ffn.ACTIVATIONS; the model, the parameter count and the reference backend follow."""
    monkeypatch.setitem(nn_ffn.ACTIVATIONS, "relu2", lambda x: F.relu(x).square())
    monkeypatch.setitem(FFNS, "sqreglu", (True, "relu2"))

    cfg = ModelConfig(vocab_size=32, d_model=16, n_layers=2, n_heads=2, ffn="sqreglu",
                      max_seq_len=8)
    torch.manual_seed(0)
    model = DecoderLM(cfg, backend="reference")
    # the budget counts it exactly, as for every kind
    assert count_params(cfg).total == sum(p.numel() for p in model.parameters())
    # the layer computes the stated formula
    mlp = model.layers[0].ffn
    x = torch.randn(3, 16)
    want = mlp.down_proj(F.relu(mlp.gate_proj(x)).square() * mlp.up_proj(x))
    torch.testing.assert_close(mlp(x), want, rtol=0, atol=1e-6)
    # and it trains: a finite loss and a gradient in every weight
    ids = torch.randint(0, 32, (2, 8))
    logits = model(ids[:, :-1])
    F.cross_entropy(logits.reshape(-1, 32), ids[:, 1:].reshape(-1)).backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


# --- a suite and a claim graded on it ------------------------------------------------------------
# The recipes of docs/contributors.md, done to a copy of the package exactly as a contributor
# edits the source: the files below are every file touched, and the commands see the new suite
# planned and run, the new claim's part seeded, graded and rendered.
TOY_SUITE = '''"""`toy` suite: two arms whose runs draw one number each; b − a, paired by seed."""

from __future__ import annotations

import random
from dataclasses import dataclass

from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.base import RunSpec, Suite, format_ci, paired_difference
from blocklab.experiments.summaries import Interval, Summary, Table

ARMS = ("a", "b")


@dataclass(frozen=True)
class ToyData:
    gap: Interval  # b − a, paired by seed


def _draw(arm: str, seed: int) -> RunResult:
    value = random.Random(f"{arm}/{seed}").gauss(0.0, 0.1) + (1.0 if arm == "b" else 0.0)
    return RunResult("ok", extra={"value": value})


def plan(options, tuned):
    return [RunSpec(f"{arm} seed {seed}", arm, seed,
                    {"suite": "toy", "arm": arm, "seed": seed, "size": options.size},
                    lambda progress, arm=arm, seed=seed: _draw(arm, seed))
            for arm in ARMS for seed in options.seeds]


def summarise(options, results):
    values = {arm: [r.extra["value"] for s, r in results if s.arm == arm] for arm in ARMS}
    gap = paired_difference(values["b"], values["a"])
    return Summary("toy", options.size, len(options.seeds),
                   [Table("Toy gap", ["b − a"], [[format_ci(gap)]])], data=ToyData(gap))


SUITE = Suite("toy", "two arms, one number each (a contributor's example)", plan, summarise,
              ToyData, default_seeds={"tiny": 6, "quick": 6, "full": 6}, section="toy",
              heading=("Toy suite", "示例套件"))
'''

TOY_CHECK = '''"""C99: the toy suite's b lies above a."""

from __future__ import annotations

from dataclasses import asdict

from blocklab.claims.finding import Context, Finding, claim, missing
from blocklab.claims.registry import registered
from blocklab.claims.rules import Estimate, Part


def c99_arms(part: str, metric: str, arms: list[str]) -> list[str]:
    return [a for a in ("a", "b") if a in arms]


@claim("C99", suite="toy", arms=c99_arms)
def c99(ctx: Context) -> Finding:
    summary = ctx.summary("toy")
    if summary is None:
        return missing(ctx, "toy")
    gap = summary.data.gap
    parts = Part.decided_together([(name, rule, Estimate.of(gap))
                                   for name, rule in registered("C99", ctx.size).items()])
    verdict = parts[0].verdict
    return Finding(verdict, f"b − a = {gap.mean:.3f}", f"b − a = {gap.mean:.3f}",
                   {"gap": asdict(gap)}, ctx.suite_command("toy"), None, parts,
                   "the one part decides", "由唯一的部分决定")
'''

TOY_RULE = '''    "C99": lambda size: {"b above a": Rule(
        metric="b − a, paired by seed", smallest_effect=0.5, margin=0.1, min_seeds=3,
        claimed=1.0, max_seeds=6)},
'''


# What a contributor runs, in one process: the suite planned and seeded (its rule recorded with
# the suite's runs, more than one look), then `blocklab suite toy` and `blocklab report`.
RUN = """import json, sys
from blocklab.claims.catalogue import SUITE_OF, part_arms, suite_rules
from blocklab.claims.registry import registered
from blocklab.cli import main

rule = registered("C99", "tiny")["b above a"]
results, out = sys.argv[1:]
assert main(["suite", "toy", "--tiny", "--no-progress", "--results", results]) == 0
assert main(["report", "--tiny", "--no-run", "--results", results, "--out", out,
             "--lang", "en"]) == 0
print(json.dumps([SUITE_OF["C99"], sorted(suite_rules("tiny")["toy"]),
                  part_arms("C99", "b above a", rule.metric, ["a", "b"]), len(rule.schedule)]))
"""


def test_a_new_suite_and_claim_are_planned_seeded_graded_and_rendered(tmp_path):
    src = tmp_path / "src"
    package = shutil.copytree(Path(blocklab.__file__).parent, src / "blocklab",
                              ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    touched = []

    def write(relative: str, text: str) -> None:
        (package / relative).parent.mkdir(parents=True, exist_ok=True)
        (package / relative).write_text(text, encoding="utf-8")
        touched.append(relative)

    def edit(relative: str, anchor: str, text: str) -> None:
        source = (package / relative).read_text(encoding="utf-8")
        assert source.count(anchor) == 1, f"{relative}: {anchor!r} is not there once"
        (package / relative).write_text(source.replace(anchor, anchor + text), encoding="utf-8")
        touched.append(relative)

    # the suite: its package, and its name in the suite registry
    write("experiments/suites/toy/__init__.py", TOY_SUITE)
    edit("experiments/suites/__init__.py", '"quantize": "quantize"', ', "toy": "toy"')
    # the claim: the list, its words, its rules, its check (a new check module, imported once)
    edit("claims/CLAIMS.md", "[§ 为什么 Pre-Norm 成为主流？]\n",
         "- C99 A toy: the toy suite's b lies above a. [§ 为什么 Pre-Norm 成为主流？]\n")
    edit("claims/wording.toml", "[CLAIM_TEXT]\n",
         'C99.en = "The toy suite\'s b lies above a."\nC99.zh = "示例套件中 b 高于 a。"\n')
    edit("claims/registry.py", "RULES: dict[str, Callable[[str], dict[str, Rule]]] = {\n",
         TOY_RULE)
    write("claims/toy.py", TOY_CHECK)
    edit("claims/catalogue.py", "    quantization,\n", "    toy,\n")
    assert len(set(touched)) == 7  # 2 for the suite, 5 for the claim: no list elsewhere

    results, out = tmp_path / "runs", tmp_path / "report"
    done = subprocess.run([sys.executable, "-c", RUN, str(results), str(out)], text=True,
                          capture_output=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(src)})
    assert done.returncode == 0, done.stderr[-3000:]
    suite, rules, arms, looks = json.loads(done.stdout.splitlines()[-1])
    assert (suite, rules, arms) == ("toy", ["C99 b above a"], ["a", "b"]) and looks > 1
    # graded: the ledger's row the report keeps; the suite in the registry's order
    doc = json.loads((out / "report.json").read_text())
    (row,) = [r for r in doc["ledger"] if r["id"] == "C99"]
    assert row["error"] is None and row["verdict"] == "confirmed"
    assert [(p["name"], p["decision"]) for p in row["parts"]] == [("b above a", "confirmed")]
    assert list(doc["suites"]).index("toy") == list(doc["suites"]).index("quantize") + 1
    # rendered: the suite in a section of its own before the terms, in the contents, headed
    # by its heading (not repeated above its one body), its table folded under its title;
    # the claim in the ledger
    page = (out / "index.html").read_text(encoding="utf-8")
    assert (page.index('<section id="deployment">') < page.index('<section id="toy">')
            < page.index('<section id="terms">'))
    body = re.search(r'<section id="toy">(.*?)</section>', page, re.S).group(1)
    assert body.startswith("<h2>Toy suite</h2>") and "<h3>" not in body
    assert '<details class="table"><summary>Toy gap</summary><table>' in body
    assert '<a href="#toy">Toy suite</a>' in page
    assert "C99" in page and "The toy suite&#39;s b lies above a." in page
