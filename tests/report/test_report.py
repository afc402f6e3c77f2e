"""`blocklab report`: the page renders from stored tiny suite results, opens with the findings
and a figure in ordinary units, holds one ledger line and one section per claim, defines each
statistical word where it first stands, never shows one number two ways, embeds every image,
loads nothing from the network, and says what to run when results are missing."""

import dataclasses
import json
import re
import shutil

import pytest

from blocklab.claims import claim_sources
from blocklab.claims.catalogue import SCALE_DEPENDENT, SUITE_OF
from blocklab.cli import main
from blocklab.experiments.options import RunOptions, RunRequest
from blocklab.experiments.results import ResultStore, result_json
from blocklab.experiments.run_result import RunLabel
from blocklab.experiments.suites import get_suite, run_suites
from blocklab.experiments.suites.base import plan_suite
from blocklab.experiments.suites.ffn import runs as ffn
from blocklab.experiments.suites.ffn.summary import FfnData
from blocklab.experiments.summaries import summary_from_dict
from blocklab.report.build import SUITES, build_report, collect, write_report
from blocklab.report.figures import (
    FIGURES,
    _compared_runs,
    experimental_rows,
    forest_key,
    make_figures,
)
from blocklab.report.html import LEAD_FIGURE, render_html, rope_dtypes
from blocklab.report.terms import TERMS

from ..conftest import figures_unrasterized
from .test_terms import first_uses

CLAIM_IDS = sorted(claim_sources())


@pytest.fixture(scope="module")
def zh_page(tiny_report) -> str:
    with figures_unrasterized():
        return render_html(tiny_report[1], make_figures(tiny_report[1]), "zh")


def test_the_page_is_whole_self_contained_and_its_numbers_are_in_report_json(tiny_report):
    """Every suite ran; one ledger line and one section per claim, linked both ways; every
    figure with its caption and command; every link lands on the page, every image is
    embedded, nothing loads from elsewhere; report.json is strict JSON."""
    index, doc = tiny_report
    assert all(doc["suites"][name]["summary"] for name in SUITES)
    assert all(doc["suites"][name]["error"] is None for name in SUITES)
    text = index.read_text(encoding="utf-8")
    ledger = re.search(r'<ol class="ledger">(.*?)</ol>', text, re.S).group(1)
    links = re.findall(r'<a [^>]*href="([^"]*)"', text)
    ids = set(re.findall(r' id="([^"]+)"', text))
    images = re.findall(r'<img src="([^"]*)"', text)
    assert re.findall(r'<li id="([^"]+)">', ledger) == CLAIM_IDS and len(CLAIM_IDS) == 37
    assert re.findall(r'<article class="claim" id="([^"]+)">', text) == [
        f"claim-{cid}" for cid in CLAIM_IDS]
    for cid in CLAIM_IDS:  # each line links to its claim's section and back
        assert f"#claim-{cid}" in links and f"#{cid}" in links
    assert "No stored results" not in text
    figures = re.findall(r"<figure id=\"fig-([a-z_]+)\">(.*?)</figure>", text, re.S)
    assert {"ffn_budget", "prefill_split", "decode_split", "kv_cache", "ffn_variants",
            "norm_cost", "placement_training", "placement_gradients", "position_extrapolation",
            "rope_relative_error"} <= {key for key, _ in figures}
    for key, body in figures:
        assert "<figcaption>" in body and "<code>blocklab " in body, key
    for href in links:
        assert href.startswith("#") and href[1:] in ids, href
    referenced = {row["figure"] for row in doc["ledger"] if row["figure"]}
    assert {"prefill_split", "decode_split"} <= referenced
    for key in referenced:
        assert f"fig-{key}" in ids and f"#fig-{key}" in links
    assert images and all(src.startswith("data:image/png;base64,") for src in images)
    assert not re.search(r"<(script|link|iframe|object|embed)\b", text)
    assert not re.search(r"https?://", text)
    assert "@import" not in text and "url(" not in text
    # the shift/scale judgements beside the tolerance they were read within (the reading:
    # tests/reference/test_norms.py)
    assert "<th>max |N(T·x) + N(x)|</th><th>tolerance</th>" in text
    assert doc["figure_errors"] == {}
    assert doc == json.loads(json.dumps(doc))  # strict JSON round trip


def test_the_page_opens_with_the_findings_and_a_figure_in_ordinary_units(tiny_report):
    """Title, the findings and what to use, the lead figure (in its metric's units), then the
    ledger (whose overview on its normalised axis follows its lines: test_ledger)."""
    index, doc = tiny_report
    text = index.read_text(encoding="utf-8")
    findings = text.index('<section id="findings">')
    first_figure = text.index("<figure ")
    assert text.index("<h1>") < findings < first_figure < text.index('<section id="ledger">')
    assert text[first_figure:].startswith(f'<figure id="fig-{LEAD_FIGURE}">')
    assert text.count(f'<figure id="fig-{LEAD_FIGURE}">') == 1  # shown once, referred to after
    opening = text[findings:first_figure]
    sentences = doc["findings"]["en"]["sentences"]
    assert 1 <= len(sentences) <= 8 and opening.count("<li>") >= len(sentences)
    assert "What to use" in opening and all(
        f'href="#claim-{u["claim"]}"' in opening for u in doc["findings"]["en"]["use"])


def test_every_statistical_term_is_defined_at_its_first_use_and_the_chinese_page_whole(
        tiny_report, zh_page):
    for lang, page in (("en", tiny_report[0].read_text(encoding="utf-8")), ("zh", zh_page)):
        uses = first_uses(page, lang)
        plain = sorted(k for k, defined in uses.items() if not defined)
        assert plain == [], plain[:10]
        scopes = {scope for scope, _ in uses}
        assert {"section#ledger", "article#claim-C16", "section#placement"} <= scopes
        assert {key for _, key in uses} >= {"interval", "holm", "delta", "margin", "look",
                                            "seed", "inconclusive"}
    ids = set(re.findall(r'id="term-([a-z]+)"', page))
    assert ids == {t.key for t in TERMS}
    # the Chinese page's headings and findings, every claim still citing its page file and
    # the section heading as written on the page
    doc, page = tiny_report[1], zh_page
    assert '<html lang="zh-CN">' in page
    for heading in ("两个页面说对与说错了什么", "可以直接用的结论", "论断账本", "逐条论断",
                    "前馈网络", "归一化", "位置编码", "部署", "目录", "术语"):
        assert heading in page
    for sentence in doc["findings"]["zh"]["sentences"]:  # the findings, in Chinese
        assert sentence["text"][:12] in page
    assert "成立" in page and "复现命令" in page
    for source in claim_sources().values():
        assert source["page"] in page and source["section"] in page


def test_a_number_shown_twice_comes_from_one_source_and_a_table_names_its_claims(tiny_report):
    """C12's graded estimates are the placement table's sensitivity spread at the deepest
    depth, not another quantity under the same name (it once showed the spread with the
    embedding's input, 2.05, beside the graded 0.728)."""
    _, doc = tiny_report
    c12 = next(r for r in doc["ledger"] if r["id"] == "C12")
    table = next(t for t in doc["suites"]["placement"]["summary"]["tables"]
                 if "(C12, C36)" in t["title"])
    column = table["columns"].index(f"sensitivity spread L={c12['evidence']['depth']}")
    rows = {(r[0], r[1]): r[column] for r in table["rows"]}
    graded = [p for p in c12["parts"] if p["estimate"]["value"] is not None]
    assert graded
    for part in graded:
        init = re.fullmatch(r"pre-norm, (\S+) init", part["name"]).group(1)
        assert rows[("pre", init)].startswith(f"{part['estimate']['value']:.2f} ")
    # A table's title names the claims graded from its suite's runs, or analytic claims that
    # quote it; never an experimental claim graded from nothing here (the RoPE-scaling table
    # once said C22, untestable here, while C30 is graded from it).
    for name, suite in doc["suites"].items():
        for table in suite["summary"]["tables"]:
            for cid in re.findall(r"\bC\d\d\b", table["title"]):
                assert SUITE_OF.get(cid) == name or cid not in SCALE_DEPENDENT, \
                    (cid, table["title"])
    titles = [t["title"] for t in doc["suites"]["position"]["summary"]["tables"]]
    assert "RoPE and its scalings: loss past L relative to sliding windows, % (C30)" in titles


def test_captions_name_only_what_the_figure_draws(tiny_report):
    """The norm-cost figure's kernel panels are promised only where per-kernel timings are
    stored, its step panel where a step was timed; RoPE's error is 'by dtype' only over the
    dtypes stored."""
    index, doc = tiny_report
    text = index.read_text(encoding="utf-8")

    def caption_of(key):
        found = re.search(rf'<figure id="fig-{key}">.*?<figcaption><b>[^<]*</b> (.*?) <span',
                          text, re.S)
        return re.sub(r"<[^>]+>", "", found.group(1))

    norm = doc["suites"]["norm-cost"]["summary"]["data"]
    shown = caption_of("norm_cost")
    for words, drawn in (("per hidden size d", norm["ratios"]),
                         ("forward + backward", norm["ratios"]),
                         ("training step", norm["step_time"])):
        assert (words in shown) == bool(drawn), words
    dtypes = rope_dtypes(doc)
    shown = caption_of("rope_relative_error")
    assert ("by dtype" in shown) == (len(dtypes) > 1)
    for dtype in ("float16", "bfloat16", "float32"):
        assert (f"{dtype}," in shown or f"{dtype})" in shown) == (dtype in dtypes), dtype


def test_missing_results_name_the_command_and_a_tiny_report_says_it_is_a_smoke_test(
        tmp_path, capsys, unrasterized):
    results = tmp_path / "nothing-here"
    code = main(["report", "--no-run", "--tiny", "--out", str(tmp_path / "out"), "--results",
                 str(results), "--lang", "en", "--no-progress"])
    out = capsys.readouterr()
    assert code in (0, 1), out.err  # 1 only if a claim check fails to run
    assert "missing suite results: " + ", ".join(SUITES) in out.out
    text = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert text.count("No stored results") == len(SUITES)
    assert not (results / "ffn").exists()  # --no-run ran nothing
    data = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert all(data["suites"][name]["summary"] is None for name in SUITES)
    assert {r["verdict"] for r in data["ledger"] if r["id"] in ("C13", "C16", "C18")} <= {
        "missing-results", "untestable-here"}
    zh = render_html(data, {}, "zh")
    assert "缺少" in zh or "没有" in zh
    for name in SUITES:  # under its heading in its section, the notice naming its command
        suite = get_suite(name)
        for page, heading in ((text, suite.heading[0]), (zh, suite.heading[1])):
            body = re.search(rf'<section id="{suite.section}">(.*?)</section>', page, re.S)[1]
            assert f"<h3>{heading}</h3>" in body, name
            assert f"<code>blocklab suite {name} --size tiny --results {results}</code>" in body
    for lang, page in (("en", text), ("zh", zh)):
        note = data["generated"]["size_note"][lang]
        assert note and f'<div class="notice">{note}</div>' in page.replace("&#39;", "'")


def test_failed_suite_is_reported_not_raised(tmp_path, unrasterized):
    """Every suite's missing runs go to the executor in one call (ffn's tuning runs, first,
    with the others' runs; their failure leaves nothing of ffn to evaluate); a suite whose
    runs failed is named with its first error and the report is still written."""
    given, lines = [], []

    def failing(specs, sink, progress):
        """An executor whose every run fails: ffn's with an error, the others silently."""
        given.extend(specs)
        return {s.run_id: "RuntimeError: ffn exploded" for s in specs if "relu" in s.label}

    errors = run_suites(RunRequest(tmp_path / "runs", "tiny"), SUITES, executor=failing,
                        progress=False, echo=lines.append)
    planned = {}  # a tuned suite's first round: its tuning runs and the runs that read none
    for name in SUITES:
        suite = get_suite(name)
        plan = plan_suite(suite, RunOptions.for_suite(suite, "tiny", None), tmp_path / "fresh")
        planned[name] = plan.missing + plan.early
    assert len(given) == sum(len(specs) for specs in planned.values())  # one call, every run
    assert set(errors) == set(SUITES)
    first = planned["ffn"][0]
    assert first.arm == "relu" and first.payload["kind"] == "tune"
    index, doc = build_report(RunRequest(tmp_path / "runs", "tiny"), tmp_path / "out", "en",
                              suite_errors=errors)
    assert doc["suites"]["ffn"]["error"] == (
        f"{len(planned['ffn'])} of {len(planned['ffn'])} runs failed, first: {first.label}: "
        "RuntimeError: ffn exploded")
    assert "ffn exploded" in index.read_text(encoding="utf-8")
    assert any("failed" in line for line in lines)


def test_a_figure_that_fails_or_a_summary_that_does_not_decode_is_a_notice(
        tiny_report, tmp_path, monkeypatch, unrasterized):
    """A figure that raises, and the figures of a suite whose summary does not decode (a
    renamed field: a ResultsError naming it, as figures read the typed summary), each become
    a notice on the page and an entry in report.json; the others still draw."""
    def broken(doc):
        raise KeyError("arms")

    monkeypatch.setitem(FIGURES, "kv_cache", (broken, FIGURES["kv_cache"][1]))
    doc = json.loads(json.dumps(tiny_report[1]))
    for arm in doc["suites"]["ffn"]["summary"]["data"]["arms"].values():
        arm["validation_loss"] = arm.pop("val_loss")
    text = write_report(doc, tmp_path / "out", "en").read_text(encoding="utf-8")
    errors = json.loads((tmp_path / "out" / "report.json").read_text())["figure_errors"]
    assert set(errors) == {"kv_cache", "ffn_variants", "ffn_loss_curves", "scale_trend"}
    # each error names what was raised and where, so a bug in a figure can be found
    assert errors["kv_cache"].startswith("KeyError: 'arms' (in broken, ")
    assert errors["ffn_variants"].startswith(
        "ResultsError: report document: summary of ffn.data.arms.")
    assert "validation_loss" in errors["ffn_variants"] and "val_loss" in errors["ffn_variants"]
    assert "could not be drawn from the stored results: KeyError" in text
    assert "ResultsError" in text and 'id="fig-norm_cost"' in text  # other suites draw


def test_run_curves_are_the_summarys_runs_labelled_by_their_run_records(tiny_report, tmp_path):
    """Curves come from the training runs the summary lists, labelled by the run record each
    stored result keeps, sorted by arm and seed: other result files in the folder (an earlier
    configuration, more seeds) are not plotted; a listed run that has no run record or carries
    one of the wrong shape is a suite error, not a silent gap (one that is gone:
    tests/test_hostile_results.py)."""
    _, doc = tiny_report
    stored = dict(ResultStore(f"{doc['generated']['results']}/ffn/tiny").iter_results())
    assert stored and all(isinstance(r.run, RunLabel) for r in stored.values())
    runs = doc["suites"]["ffn"]["runs"]
    assert {r["run_id"] for r in runs} == {k for k, r in stored.items() if r.curves is not None}
    assert [(r["arm"], r["seed"]) for r in runs] == sorted((r["arm"], r["seed"]) for r in runs)
    for r in runs:
        assert stored[r["run_id"]].run == RunLabel(r["label"], r["arm"], r["seed"])
    placement = doc["suites"]["placement"]["runs"]
    assert placement and all(r["arm"].startswith(("train/", "deep/")) for r in placement)
    results = tmp_path / "runs"
    shutil.copytree(doc["generated"]["results"], results)
    store = ResultStore(results / "ffn" / "tiny")
    first, *_ = doc["suites"]["ffn"]["runs"]
    result = store.load(first["run_id"])
    store.save("0000000extra",
               dataclasses.replace(result, run=dataclasses.replace(result.run, seed=99)))
    fresh = collect(RunRequest(results, "tiny"), out=tmp_path / "out")
    assert fresh["suites"]["ffn"]["error"] is None
    assert [r["run_id"] for r in fresh["suites"]["ffn"]["runs"]] == [
        r["run_id"] for r in doc["suites"]["ffn"]["runs"]]
    store.save(first["run_id"], dataclasses.replace(result, run=None))
    broken = collect(RunRequest(results, "tiny"), out=tmp_path / "out")
    assert broken["suites"]["ffn"]["summary"] is None
    assert f"{first['run_id']}.json: it has no run record" in broken["suites"]["ffn"]["error"]
    # a run record of the wrong shape: the file does not read as a result
    store.path_for(first["run_id"]).write_text(
        result_json({**result.to_dict(), "run": {"arm": "relu"}}))
    broken = collect(RunRequest(results, "tiny"), out=tmp_path / "out")
    assert broken["suites"]["ffn"]["summary"] is None
    error = broken["suites"]["ffn"]["error"]
    assert "a run of the stored summary is missing or unreadable (1 of" in error
    assert f"first {first['run_id']}.json" in error


def test_ffn_figures_draw_the_compared_arms_not_the_trend_or_sensitivity_runs(tiny_report):
    _, doc = tiny_report
    runs = doc["suites"]["ffn"]["runs"]
    data = summary_from_dict(doc["suites"]["ffn"]["summary"], "ffn", FfnData).data
    size = ffn.SIZES["tiny"]
    # At tiny the document holds the graded arms' runs only ...
    assert {r["init"] for r in runs} == {"fan_in"}
    assert {r["d_model"] for r in runs} == {size.d_model}
    compared = sorted((arm, 0) for arm in ffn.GRADED_ARMS)
    assert sorted((r["arm"], r["seed"]) for r in _compared_runs(data, runs)) == compared
    # ... and beside the full size's sensitivity re-runs (gpt2 init), its scale-trend widths and
    # an arm this summary does not hold, the figures still draw one run per arm and seed of
    # the comparison only.
    relu = next(r for r in runs if r["arm"] == "relu")
    extra = [{**relu, "init": "gpt2"}, {**relu, "d_model": size.d_model // 2},
             {**relu, "arm": "gelu"}]
    kept = _compared_runs(data, runs + extra)
    assert sorted((r["arm"], r["seed"]) for r in kept) == compared


def test_a_tiny_report_names_what_runs_at_full_only(tiny_report):
    """A tiny report: each suite's section names the arms no registered rule grades as run at
    --size full only, and the claims say so where they would have shown them (that the tiny
    summaries hold none of them: each suite's test_summary.py::test_tiny_suite_end_to_end)."""
    index, data = tiny_report
    text = index.read_text(encoding="utf-8")
    for words in ("the gelu, reglu and bilinear arms", "the sensitivity re-runs",
                  "the kernel runs", "sandwich norm in part (b)",
                  "the learned and sinusoidal arms", "relative-position error by dtype",
                  "Depth trend: at --size full only"):
        assert words in text, words
    assert text.count("Run at --size full only (") == 4  # one note per suite that left runs out
    ledger = {row["id"]: row for row in data["ledger"]}
    assert "At --size full only (not graded): the re-runs" in ledger["C16"]["summary"]
    assert ("At --size full only (reported, not graded): the norm's own per-kernel time "
            "ratios") in ledger["C18"]["summary"]
    assert "Reported beside it" not in ledger["C18"]["summary"]


def test_the_command_resumes_missing_runs_and_rendering_trains_nothing(
        tiny_report, tmp_path, capsys, monkeypatch, unrasterized):
    """The command's default path: progress bars on, only the missing run is run again. Then
    from its report.json alone, with training, the suites, the claim checks, their rules and
    the collecting broken, every experimental claim gets its forest plot, the overview and its
    words, in both languages (`--no-run` running nothing: test_missing_results_...)."""
    import blocklab.claims as claims
    import blocklab.claims.ledger as ledger
    import blocklab.claims.rules as rules
    import blocklab.experiments.suites.base as suite_base
    import blocklab.experiments.trainer as trainer
    import blocklab.report.build as build

    stored = tiny_report[1]
    results = shutil.copytree(stored["generated"]["results"], tmp_path / "runs")
    victim = results / "ffn" / "tiny" / f"{stored['suites']['ffn']['runs'][0]['run_id']}.json"
    victim.unlink()
    code = main(["report", "--tiny", "--out", str(tmp_path / "out"), "--results", str(results),
                 "--lang", "en"])
    out = capsys.readouterr().out
    assert re.search(r"suite ffn \(tiny\): \d+ of \d+ runs stored, 1 to run", out), out
    assert re.search(r"suite position \(tiny\): (\d+) of \1 runs stored, 0 to run", out)
    assert "(tiny) failed" not in out and victim.is_file()
    assert code in (0, 1)  # 1 only if a claim check fails to run

    def forbidden(*args, **kwargs):
        raise AssertionError("rendering trained, ran a suite or a claim check")

    doc = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert all(doc["suites"][n]["summary"] for n in SUITES)
    for module, name in ((trainer, "train"), (trainer, "run"), (suite_base, "run_suite"),
                         (suite_base, "execute_in_process"), (claims, "run_claims"),
                         (ledger, "run_claims"), (rules, "decide"), (rules, "decide_parts"),
                         (rules, "settle"), (build, "collect"), (build, "decision_budget")):
        monkeypatch.setattr(module, name, forbidden)
    for cid in list(ledger.CHECKS):
        monkeypatch.setitem(ledger.CHECKS, cid, forbidden)
    rows = experimental_rows(doc)
    assert {r["id"] for r in rows} >= {"C12", "C16", "C18", "C19", "C21", "C31", "C36"}
    figures = make_figures(doc)
    assert figures["ledger_overview"].error is None
    for r in rows:
        assert figures[forest_key(r["id"])].error is None and figures[forest_key(r["id"])].png
    for lang in ("en", "zh"):
        page = render_html(doc, figures, lang)
        for r in rows:
            assert f'<figure id="fig-{forest_key(r["id"])}" class="forest">' in page
        assert '<p class="budget">' in page and 'id="fig-ledger_overview"' in page
