"""Collect every number the report shows into one JSON document, then render and write it.

    doc = collect(RunRequest(Path("runs"), "quick"))  # ledger, suite summaries, budgets, checks
    html = render_html(doc, make_figures(doc), "en")  # blocklab.report.html / .figures

`collect` runs no experiment (the ledger, the analytic tables, the stored suite summaries and
their runs' curves); rendering reads only the document, so `report.json` holds every number
the page shows.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from blocklab.claims.brief import brief
from blocklab.claims.catalogue import part_arms
from blocklab.claims.ledger import ClaimResult
from blocklab.claims.rules import Rule
from blocklab.errors import InputError, ResultsError
from blocklab.experiments.options import RunRequest
from blocklab.experiments.results import ResultStore
from blocklab.experiments.suites import SUITE_MODULES
from blocklab.jsonio import json_safe, write_atomic
from blocklab.report.findings import findings
from blocklab.report.palette import VERDICT_STYLES

# The registered suites, in their order: the page shows each in its `Suite.section`.
SUITES = tuple(SUITE_MODULES)
SCHEMA = 1
LANGS = ("en", "zh")

# Deployment figures: a small, a mid-size and a large dense model.
DEPLOY_MODELS = ("llama-3.2-1b", "meta-llama-3-8b", "llama-3.1-70b")
DEPLOY_CONTEXTS = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
DEPLOY_TABLE_CONTEXT = 4096
# Shift/scale table input (the vector `blocklab verify` uses) and ε values shown.
SHIFT_SCALE_X = (1.0, 3.0, -2.0, 0.5)
SHIFT_SCALE_EPS = (0.0, 1e-6)


def collect(request: RunRequest, *, out: Path | str = "report",
            suite_errors: dict[str, str] | None = None) -> dict[str, Any]:
    """The report document: every number the page shows (and report.json holds), read from
    the suites `request` names, each at the options it gives them (`RunRequest.options`)."""
    from blocklab import __version__
    from blocklab.budget.sweep import PAGE_BASE, sweep
    from blocklab.claims import Context, run_claims
    from blocklab.experiments.env import usable_cores
    from blocklab.experiments.suites import get_suite
    from blocklab.experiments.suites.base import suite_dir
    from blocklab.experiments.summaries import size_note
    from blocklab.verify import rope_gap_by_shift

    results, size = request.results, request.size
    context = Context(request)
    rows = run_claims(None, context)
    ledger = [{**row.to_dict(), "brief": briefs(row)} for row in rows]
    suites = {}
    for name in SUITES:
        error = (suite_errors or {}).get(name)
        suite = get_suite(name)
        options = request.options(suite)
        command = options.command(name, results)
        try:
            # as the ledger read it: a summary whose runs are gone is not shown, and says why
            summary = context.summary(name)
            if name in context.unusable:
                raise ResultsError(context.unusable[name])
            ids = summary.run_ids if summary else []
            store = ResultStore(suite_dir(results, suite, options))
            runs, costs, busy = _stored_runs(store, ids, command)
        except ResultsError as err:  # shown where the suite's section would be, exit code 1
            summary, runs, busy, costs, error = None, [], [], [], str(err)
        suites[name] = {
            "command": command,
            # the JSON form (tuples as lists), as summary.json holds it and figures decode it
            "summary": json_safe(summary.to_dict()) if summary else None,
            "error": error,
            "runs": runs,
            "busy_timings": busy,
            "run_costs": costs,
        }
    return {
        "schema": SCHEMA,
        "generated": {"size": size, "results": str(results), "out": str(out),
                      "created": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                      "version": __version__,
                      "seed_offset": request.seed_offset,
                      "precision": request.precision,
                      # one line to show beside tiny results (None at quick and full)
                      "size_note": ({lang: size_note(size, lang) for lang in ("en", "zh")}
                                    if size_note(size) else None),
                      "command": request.report_command(out)},
        # what the pages got right and wrong, and what to use, in each language
        "findings": {lang: asdict(findings(rows, lang)) for lang in LANGS},
        "ledger": ledger,
        # what more seeds would decide, priced from the stored runs' wall time
        "decision_budget": decision_budget(ledger, suites, usable_cores()),
        "suites": suites,
        # each headline claim's ladder of sizes, where `blocklab ladder` has run it
        "ladders": ladders(results),
        "ffn_budget": {"base": dict(PAGE_BASE), "rows": sweep(),
                       "command": "blocklab budget --sweep"},
        "normalization": _normalization(),
        "rope": {"float64_gap_by_shift": rope_gap_by_shift(),
                 "command": "blocklab verify --group rope"},
        "deployment": _deployment(),
    }


def briefs(row: ClaimResult) -> dict[str, dict[str, str]]:
    """{lang: {statement, found}}: the claim's line in the ledger (`claims.brief`)."""
    found = {lang: brief(row, lang, VERDICT_STYLES[row.verdict].symbol) for lang in LANGS}
    return {lang: {"statement": b.statement, "found": b.found} for lang, b in found.items()}


_SUITE = re.compile(r"blocklab suite (\S+)")
REACH_S = 2 * 3600  # a part whose extra seeds take longer than this here is out of reach


def decision_budget(ledger: list[dict[str, Any]], suites: dict[str, dict[str, Any]],
                    workers: int) -> dict[str, Any]:
    """What more seeds would decide: each inconclusive part's extra seeds to `seeds_needed`
    (80% power at the observed spread), priced at the stored wall time per seed of the arms it
    compares (`part_arms`) on `workers` processes, timed runs alone.
    `seconds`: what the sequential runner takes for the parts within REACH_S (`looks_seconds`),
    so what `--budget` spends. Parts without a spread are `unsized`; parts past their design's
    max_seeds, or with a fixed one, are `beyond_design`, with the redesign each needs."""
    parts, unsized, beyond_design = [], [], []
    for row in ledger:
        match = _SUITE.search(row.get("command") or "")
        for part in row.get("parts") or []:
            if part.get("decision") != "inconclusive":
                continue
            n = int(part["estimate"].get("n") or 0)
            needed = part.get("seeds_needed")
            entry = {"claim": row["id"], "part": part["name"], "n": n, "seeds_needed": needed}
            suite = match.group(1) if match else None
            costs = ((suites.get(suite) or {}).get("run_costs") or []) if suite else []
            if needed is None or not costs:
                unsized.append(entry)
                continue
            top = part["rule"].get("max_seeds")
            if top is None or int(needed) > int(top):
                entry["redesign"] = (f"a sequential design to {needed} seeds (fixed at "
                                     f"{part['rule']['min_seeds']} now)" if top is None else
                                     f"max_seeds {top} → {needed}")
                beyond_design.append(entry)
                continue
            arms = sorted({c["arm"] for c in costs})
            # past the checks above, the part has max_seeds: it is measured on seeds, so
            # `part_arms` names its arms (never none)
            chosen = part_arms(row["id"], part["name"], part["rule"]["metric"], arms)
            runs = [c for c in costs if c["arm"] in chosen]
            units = n or len({c["seed"] for c in runs}) or 1
            extra = max(int(needed) - n, 0)
            # seconds per extra seed of each arm: in the worker pool, and alone (timed runs)
            per_arm = {arm: (sum(c["wall_time_s"] for c in runs
                                 if c["arm"] == arm and not c["timed"]) / units,
                             sum(c["wall_time_s"] for c in runs
                                 if c["arm"] == arm and c["timed"]) / units)
                       for arm in chosen}
            pool = sum(p for p, _ in per_arm.values())
            alone = sum(a for _, a in per_arm.values())
            seconds = extra * (pool / workers + alone)
            entry.update({"suite": suite, "arms": chosen, "whole_suite": not chosen,
                          "extra_seeds": extra, "seed_cost_s": pool + alone,
                          "seconds": seconds, "within_reach": seconds <= REACH_S,
                          "_per_arm": per_arm, "_rule": Rule(**part["rule"])})
            parts.append(entry)
    within = [p for p in parts if p["within_reach"]]
    seconds = looks_seconds(within, workers)
    for p in parts:
        del p["_per_arm"], p["_rule"]
    beyond = [p for p in parts if not p["within_reach"]]
    return {"workers": workers, "reach_s": REACH_S, "seconds": seconds,
            "within_reach": len(parts) - len(beyond),
            "beyond_reach": len(beyond), "beyond_seconds": sum(p["seconds"] for p in beyond),
            "parts": parts, "unsized": unsized, "beyond_design": beyond_design}


def looks_seconds(parts: list[dict[str, Any]], workers: int) -> float:
    """The wall time the sequential runner takes to bring every part of `parts` (entries of
    `decision_budget`) to its seeds_needed, look by look as its design schedules them: each
    look's runs across `workers` (`estimate.makespan`), timed runs alone, an arm shared by
    several parts extended once (`sequential.next_blocks`)."""
    from blocklab.claims.sequential import Wanted, next_blocks
    from blocklab.experiments.estimate import makespan

    cost: dict[tuple[str, str], tuple[float, float]] = {}
    coverage: dict[str, dict[str, int]] = {}
    for p in parts:
        for arm, (pool, alone) in p["_per_arm"].items():
            old = cost.get((p["suite"], arm), (0.0, 0.0))
            cost[(p["suite"], arm)] = (max(old[0], pool), max(old[1], alone))
            have = coverage.setdefault(p["suite"], {})
            have[arm] = max(have.get(arm, 0), p["n"])
    reached = [p["n"] for p in parts]
    seconds = 0.0
    while True:
        wanted = {k: Wanted(p["claim"], p["part"], p["suite"], tuple(p["arms"]), reached[k],
                            target)
                  for k, p in enumerate(parts) if reached[k] < int(p["seeds_needed"])
                  and (target := p["_rule"].next_look(reached[k])) is not None}
        if not wanted:
            return seconds
        pooled: list[float] = []
        for suite, blocks in next_blocks(list(wanted.values()), coverage, 0).items():
            for block in blocks:
                for arm in block.arms:
                    pool, alone = cost[(suite, arm)]
                    pooled += [pool] * (block.stop - block.start)
                    seconds += alone * (block.stop - block.start)
                    coverage[suite][arm] = block.stop
        seconds += makespan(pooled, workers)
        for k, w in wanted.items():
            reached[k] = w.target


def _stored_runs(store: ResultStore, run_ids: list[str], command: str
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(curves, costs, busy) of the runs a suite's summary was made from (a run that is gone: a
    ResultsError naming `command`, which redoes it). Curves: each training run's curves and
    per-layer gradient norms, labelled by its `run` record, sorted by (arm, seed). Costs: each
    run's {arm, seed, wall_time_s, timed} (a timed run ran alone). Busy: {label,
    others_cpu_share} of each run timed while other processes used the CPU
    (`experiments.locks.is_busy`)."""
    from blocklab.experiments.locks import is_busy

    curves, costs, busy = [], [], []
    for run_id in run_ids:
        try:
            result = store.load(run_id)
        except FileNotFoundError:
            raise ResultsError(f"{store.path_for(run_id)}: a run of the stored summary is "
                               f"missing or unreadable; run `{command}` to redo it") from None
        run, wall, load = result.run, result.wall_time_s, result.machine_load
        if isinstance(wall, int | float) and run is not None:
            costs.append({"arm": run.arm, "seed": run.seed, "wall_time_s": float(wall),
                          "timed": load is not None})
        if load is not None and is_busy(load):
            busy.append({"label": run.label if run is not None else run_id,
                         "others_cpu_share": load["others_cpu_share"]})
        logged = result.curves
        if logged is None:
            continue
        if run is None:
            raise ResultsError(f"{store.path_for(run_id)}: it has no run record {{label, arm, "
                               "seed}; delete the file and run the suite again")
        model, train = result.model_config or {}, result.train_config or {}
        curves.append({
            "run_id": run_id, "arm": run.arm, "seed": run.seed, "label": run.label,
            # which of a suite's settings the run trained (main arm, trend width, sensitivity)
            "d_model": model.get("d_model"), "init": train.get("init"), "lr": train.get("lr"),
            "status": result.status, "reason": result.reason,
            "step": logged.step, "train_loss": logged.train_loss,
            "val_step": logged.val_step, "val": logged.val,
            "final_val_loss": result.final.val_loss if result.final is not None else None,
            "layer_grad_norms": {"step": logged.layer_grad_norms.step,
                                 "layer": logged.layer_grad_norms.layer},
        })
    curves.sort(key=lambda r: (r["arm"], r["seed"]))
    return curves, costs, busy


def ladders(results: Path) -> dict[str, dict[str, Any]]:
    """{claim: its ladder (`claims.ladder.ladder_dict`) re-graded from the runs stored at the
    precisions and seeds `<results>/ladder/<claim>.json` names, with its lines per language};
    {"error": ...} naming the command that rewrites a stored file that cannot be read."""
    from blocklab.claims import ladder
    from blocklab.claims.registry import LADDER_CLAIMS
    from blocklab.jsonio import read_json
    from blocklab.precision import PRECISIONS

    out: dict[str, dict[str, Any]] = {}
    for claim_id in LADDER_CLAIMS:
        path = Path(results) / "ladder" / f"{claim_id}.json"
        if not path.exists():
            continue
        command = f"blocklab ladder {claim_id} --results {results}"
        try:
            stored = read_json(path)
            precisions = {r["size"]: r["precision"] for r in stored["rungs"]}
            offset = stored["seed_offset"]
            if set(precisions) != set(ladder.SIZES) \
                    or not set(precisions.values()) <= set(PRECISIONS) \
                    or not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
                raise ValueError("its rungs, precisions or seed offset are not the ladder's")
        except (InputError, ValueError, KeyError, TypeError) as err:
            out[claim_id] = {"error": f"{path}: cannot be read ({err}); `{command}` rewrites "
                                      "it from the runs stored", "command": command}
            continue
        doc = ladder.ladder_dict(ladder.read_ladder(claim_id, Path(results), precisions, offset))
        doc["command"] = command + (f" --seed-offset {offset}" if offset else "")
        doc["lines"] = {lang: [ladder.appears_line(t, doc["rungs"], doc["anchors"], lang)
                               for t in doc["trends"]]
                        + [("各级之间变化的：" if lang == "zh" else "What changes between rungs: ")
                           + ("；" if lang == "zh" else "; ").join(doc["changes"][lang])]
                        + [ladder.rung_line(r, lang) for r in doc["rungs"]]
                        + [ladder.trend_line(t, lang) for t in doc["trends"]]
                        + [line for line in [ladder.precision_line(doc["precision_check"], lang)]
                           if line]
                        for lang in LANGS}
        out[claim_id] = doc
    return out


def _normalization() -> dict[str, Any]:
    from blocklab.reference import shift_scale_table
    from blocklab.verify import run_checks

    tables = {f"{eps:g}": shift_scale_table(list(SHIFT_SCALE_X), eps=eps, shift=2.0, scale=3.0)
              for eps in SHIFT_SCALE_EPS}
    checks = [asdict(c) for c in run_checks(["jacobians"])]
    return {"x": list(SHIFT_SCALE_X), "shift": 2.0, "scale": 3.0,
            "channel_scales": [float(i + 1) for i in range(len(SHIFT_SCALE_X))],
            "shift_scale": tables, "jacobian_checks": checks,
            "commands": {"shift_scale": "blocklab verify --group shift-scale",
                         "jacobians": "blocklab verify --group jacobians"}}


def _deployment() -> dict[str, Any]:
    from blocklab.budget import model_budget, resolve_model

    models = {}
    for name in DEPLOY_MODELS:
        cfg = resolve_model(name).config
        rows = []
        for context in DEPLOY_CONTEXTS:
            doc = model_budget(cfg, seq_len=context, label=name)
            keep = ("attention_proj", "attention_scores", "ffn", "lm_head", "other", "total",
                    "ffn_share")
            decode = {k: doc["flops"]["decode"][k] for k in keep}
            decode["attention_scores_share"] = decode["attention_scores"] / decode["total"]
            rows.append({
                "context": context,
                "prefill": {k: doc["flops"]["prefill"][k] for k in keep},
                "decode": decode,
                "kv_cache_bytes": doc["memory"]["kv_cache_bytes"],
                "weights_bytes": doc["memory"]["weights_bytes"],
                "decode_flops_per_byte": doc["memory"]["intensity"]["decode_flops_per_byte"],
                "balance_flops_per_byte": doc["memory"]["intensity"]["balance_flops_per_byte"],
            })
        models[name] = rows
    return {"models": models, "contexts": list(DEPLOY_CONTEXTS),
            "table_context": DEPLOY_TABLE_CONTEXT, "dtype": "bf16", "batch": 1,
            "commands": {name: f"blocklab budget {name} --seq 4096" for name in DEPLOY_MODELS}}


# --- write ---------------------------------------------------------------------------------------
def write_report(doc: dict[str, Any], out: Path | str, lang: str) -> Path:
    """Render `doc` and write `out/index.html` and `out/report.json` (strict JSON: non-finite
    floats as null), each atomically."""
    from blocklab.report.figures import make_figures
    from blocklab.report.html import render_html

    out = Path(out)
    figures = make_figures(doc)
    doc["figure_errors"] = {key: fig.error for key, fig in figures.items() if fig.error}
    page = render_html(doc, figures, lang)
    write_atomic(out / "report.json", json.dumps(json_safe(doc), indent=1, ensure_ascii=False,
                                                 allow_nan=False) + "\n")
    write_atomic(out / "index.html", page)
    return out / "index.html"


def build_report(request: RunRequest, out: Path | str = "report", lang: str = "en", *,
                 suite_errors: dict[str, str] | None = None,
                 sequential: dict[str, Any] | None = None) -> tuple[Path, dict[str, Any]]:
    """Collect the stored results `request` names, render and write the report to `out`,
    running nothing; returns the path of index.html and the document. `suite_errors`: {suite:
    error} of suites that failed to run; `sequential`: the looks run (`Looks.to_dict`)."""
    from blocklab.claims.lang import resolve_lang

    lang = resolve_lang(lang)
    doc = collect(request, out=out, suite_errors=suite_errors or {})
    doc["sequential"] = sequential
    return write_report(doc, out, lang), doc
