"""`blocklab claims`: the ledger of the pages' claims, each with a verdict and its evidence,
read through one `RunRequest` built from the options."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import typer

from blocklab.cli import app, check_shows_chinese, chosen_size, console, json_text, run_request
from blocklab.cli import options as opt
from blocklab.errors import InputError


def verdict_style(verdict: str) -> str:
    """A verdict's colour in the report's palette (imported here: other commands skip it)."""
    from blocklab.report.palette import VERDICT_STYLES

    return VERDICT_STYLES[verdict].colour


def verdict_text(verdict: str, zh: bool) -> str:
    """A verdict in the reader's words, in its colour."""
    from blocklab.claims.text import reader_word

    style = verdict_style(verdict)
    return f"[{style}]{reader_word(verdict, 'zh' if zh else 'en')}[/{style}]"


@app.command()
def claims(
    ids: list[str] = typer.Argument(None, help="Claim ids (C01 … C36); all when omitted."),
    as_json: bool = opt.JSON,
    lang: str = typer.Option(None, "--lang", help="en or zh (default: from the locale). zh "
                             "needs an output encoding that can show Chinese, such as UTF-8; "
                             "in one that cannot (PYTHONIOENCODING=ascii) it is refused, and "
                             "English writes its symbols in ASCII (· as *, ≈ as ~)."),
    results: str = typer.Option(None, "--results", help="Folder of suite results (from "
                                "blocklab suite/report; default: runs, where a missing folder "
                                "reads as results not run yet)."),
    size: str = opt.SIZE,
    tiny: bool = opt.TINY,
    quick: bool = opt.QUICK,
    full: bool = opt.FULL,
    seed_offset: int = opt.SEED_OFFSET,
    precision: str = typer.Option("fp32", "--precision",
                                  help="Read the suites whose models trained in this precision "
                                       "(fp32 or bf16, as `blocklab suite --precision`); a suite "
                                       "that measures float32 only is read at fp32."),
    rules_only: bool = typer.Option(False, "--rules", help="Print only the registered rules "
                                    "of the experimental claims (every part's rule and hash "
                                    "at --size), reading no results and running no check."),
) -> None:
    """Settle the pages' claims, with the evidence and the command that reproduces it.

    Experimental claims are graded by registered rules (metric, smallest effect, margin,
    minimum and maximum seeds), shown under each part with the rule's hash, also when no
    results are stored; a toy run can say "not reproduced at this scale", never "refuted".
    Rules edited after results were seen are noted under the claims they affect. Exit code 1
    only if a check fails to run.

    Example: [bold]blocklab claims C15 C23 --lang zh[/bold]; [bold]blocklab claims --rules
    --json[/bold]
    """
    from blocklab.claims import Context, run_claims
    from blocklab.claims.lang import resolve_lang
    from blocklab.claims.ledger import claim_ids

    language = resolve_lang(lang)
    size = chosen_size(size, tiny, quick, full)
    request = run_request(results or "runs", size, seed_offset, precision)
    wanted = claim_ids(ids) if ids else None
    if language == "zh" and not as_json:  # before any check runs
        check_shows_chinese("--lang zh" if lang else "the locale's language, zh")
    if rules_only:
        print_rules(wanted, size, as_json, language)
        return
    check_results(results, size)
    context = Context(request)  # what every check reads
    rows = run_claims(wanted, context)
    if as_json:
        typer.echo(json_text([r.to_dict() for r in rows], indent=1))
    else:
        print_ledger(rows, language, size)
        print_stored_elsewhere(rows, context, language)
        if precision != "fp32":
            read = sorted(context.fp32_only)
            console().print(f"Read at {precision}: the suites that train in it; "
                          + (f"{', '.join(read)} measure float32 only and were read at fp32."
                             if read else "no suite was read at another precision."))
    if any(r.error for r in rows):
        raise typer.Exit(1)


def print_stored_elsewhere(rows, context, lang: str) -> None:
    """When claims lack results, one line for each other --size, --seed-offset or
    --precision the folder holds results at, with the command that reads them."""
    lacking = sum(r.verdict == "missing-results" for r in rows)
    elsewhere = context.stored_elsewhere() if lacking else {}
    out = console()
    for other, suites in elsewhere.items():
        held, command = ", ".join(suites), other.claims_command()
        out.print(f"{lacking} 条论断缺少结果；{context.results} 存有 {other.flags()} 下的结果（"
                  f"{held}）：{command}" if lang == "zh" else
                  f"{lacking} claim(s) lack results; {context.results} holds results at "
                  f"{other.flags()} ({held}): {command}", soft_wrap=True, markup=False)


def check_results(results: str | None, size: str = "quick") -> None:
    """`--results` names a folder; a missing one is a typo (the default, runs, reads as
    nothing run yet)."""
    if results is None:
        return
    if not results.strip():
        raise InputError("--results '' is empty; expected a folder of suite results (default: "
                         "runs)")
    folder = Path(results)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"--results {results!r} is a file; expected a folder of suite results "
                         "(written by `blocklab suite` or `blocklab report`)")
    if not folder.exists():
        raise InputError(f"--results {results!r}: no such folder; check the spelling, or run "
                         f"`blocklab report --size {size} --results {results}` to fill it")


def rule_text(rule) -> str:
    """A registered rule in one line."""
    return (f"{rule.metric}; {rule.test}, claimed {rule.claimed:+g}"
            f"{f' (beyond {rule.threshold:g})' if rule.threshold else ''}, smallest "
            f"effect δ {rule.smallest_effect:g}, margin ±{rule.margin:g}, "
            + (f"seeds {rule.min_seeds} (one look)" if rule.max_seeds is None else
               f"seeds {rule.min_seeds}–{rule.max_seeds} (looks at "
               f"{', '.join(map(str, rule.schedule))})")
            + f", rule {rule.hash}")


def part_line(part, zh: bool = False) -> str:
    """One part in a line: verdict, the estimate with the interval its decision read
    ('+1.99 [+0.41, +3.57] (99.64% CI, n=5)') and its registered rule."""
    from blocklab.claims.rules import decided_text

    value = decided_text(part)
    return (f"• {part.name}: {verdict_text(part.verdict, zh)} {value}; {part.reason}. [dim]"
            f"{'规则' if zh else 'rule'}: {rule_text(part.rule)}[/dim]")


def changed_lines(changes, zh: bool = False) -> list[str]:
    """The rule edits made after results were seen, one line each."""
    label = "结果公布后修改的规则" if zh else "rule changed after data"
    return [f"[yellow]{label} ({c.date}): {c.what}[/yellow]" for c in changes]


def learned_rule(size: str, zh: bool = False) -> str:
    """The rule every training run at `size` is held to before it counts as data."""
    from blocklab.experiments.options import LEARN_MARGIN

    margin = LEARN_MARGIN[size]
    if margin is None:
        return ("在此规模下训练运行不检查是否学到东西（几步的连通性检查，不作为发现）" if zh else
                f"Training runs at {size} are not checked for learning (plumbing runs of a few "
                "steps, read as no finding).")
    if zh:
        return (f"每次训练运行须从 unigram 参考损失向 bigram 参考损失走过至少 {margin:.0%}，"
                "否则记为“未学到”（did_not_learn）：单独计数的失败，从不当作测量；"
                "多数种子未学到的组所支撑的部分为“此处不可检验”。")
    return (f"Every training run must close at least {margin:.0%} of the way from the unigram "
            "to the bigram reference loss of its corpus, else it 'did not learn': a failure "
            "counted apart, never a measurement; a part whose arm did not learn on most seeds "
            "is untestable here.")


def print_rules(ids: list[str] | None, size: str, as_json: bool, lang: str) -> None:
    """The registered rules at `size` (all claims, or `ids`), part by part with their hashes,
    and the rule edits made after results were seen."""
    from rich.markup import escape

    from blocklab.claims.registry import RULES, changes, registered

    wanted = ids or sorted(RULES)  # an analytic claim has no registered rules: no parts
    if as_json:
        from blocklab.experiments.options import LEARN_MARGIN

        typer.echo(json_text([
            {"id": cid, "size": size, "learn_margin": LEARN_MARGIN[size],
             "parts": [{"name": name, "rule": rule, "rule_hash": rule.hash}
                       for name, rule in registered(cid, size).items()],
             "rules_changed": changes(cid)} for cid in wanted],
            indent=1))
        return
    zh = lang == "zh"
    out = console()
    out.print(learned_rule(size, zh), soft_wrap=True)
    for cid in wanted:
        rules = registered(cid, size)
        if cid not in RULES:
            none = "解析论断，无登记规则" if zh else "analytic, no registered rules"
            out.print(f"[bold]{cid}[/bold]: {none}")
            continue
        out.print(f"[bold]{cid}[/bold] ({size}): {len(rules)} part(s)")
        for name, rule in rules.items():
            out.print(f"  • {escape(name)}: [dim]{escape(rule_text(rule))}[/dim]",
                      soft_wrap=True)
        for line in changed_lines(changes(cid), zh):
            out.print(f"  {line}", soft_wrap=True)


def print_ledger(rows, lang: str, size: str | None = None) -> None:
    """The ledger as a table, the count of each verdict, and the size's note (tiny)."""
    from rich.table import Table

    from blocklab.claims.text import reader_word
    from blocklab.experiments.summaries import size_note

    zh = lang == "zh"
    title = "结论账本：页面中的每条论断" if zh else "Claims ledger: every claim of the pages"
    table = Table(title=title, show_lines=True, expand=True)
    table.add_column("id", no_wrap=True)
    table.add_column("判定" if zh else "verdict", no_wrap=True)
    table.add_column("论断" if zh else "claim", ratio=2)
    table.add_column("证据" if zh else "evidence", ratio=3)
    table.add_column("出处" if zh else "source", ratio=1, overflow="fold")
    for r in rows:
        evidence = "\n".join([r.summary_zh if zh else r.summary,
                              *(part_line(part, zh) for part in r.parts)])
        combines = (r.combines_zh if zh else "") or r.combines
        if combines:
            evidence += f"\n[dim]{'合并规则' if zh else 'combined'}: {combines}[/dim]"
        evidence += "".join("\n" + line for line in changed_lines(r.rules_changed, zh))
        if r.command:
            evidence += f"\n[dim]$ {r.command}[/dim]"
        if r.error:
            evidence += f"\n[bold red]{r.error}[/bold red]"
        table.add_row(r.id, verdict_text(r.verdict, zh), r.claim_zh if zh else r.claim,
                      evidence, f"{r.page[:3]} § {r.section}")
    out = console()
    out.print(table)
    counts = Counter(r.verdict for r in rows)
    out.print(", ".join(f"{reader_word(k, lang)}: {v}"
                            for k, v in sorted(counts.items())))
    note = size_note(size, lang) if size else None
    if note:
        out.print(f"[bold yellow]{note}[/bold yellow]", soft_wrap=True)
