"""`blocklab claims`: the ledger of the pages' claims, each with a verdict and its evidence."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from blocklab.cli import app, chosen_size, console

VERDICT_STYLE = {"confirmed": "green", "refuted": "red", "conditional": "yellow",
                 "untestable-here": "magenta",
                 "contradicted-at-this-scale": "red", "not-reproduced-at-this-scale": "yellow",
                 "run": "cyan", "missing-results": "dim", "error": "bold red"}


@app.command()
def claims(
    ids: list[str] = typer.Argument(None, help="Claim ids (C01 … C36); all when omitted."),
    as_json: bool = typer.Option(False, "--json", help="Print the ledger as JSON."),
    lang: str = typer.Option(None, "--lang", help="en or zh (default: from the locale)."),
    results: Path = typer.Option(Path("runs"), "--results",
                                 help="Folder of suite results (from blocklab suite/report)."),
    size: str = typer.Option(None, "--size", help="Which suite results to read: tiny, "
                                                  "quick (the default) or full."),
    tiny: bool = typer.Option(False, "--tiny", help="Shortcut for --size tiny."),
    quick: bool = typer.Option(False, "--quick", help="Shortcut for --size quick."),
    full: bool = typer.Option(False, "--full", help="Shortcut for --size full."),
    seed_offset: int = typer.Option(0, "--seed-offset",
                                    help="Read the suites run with --seed-offset K."),
) -> None:
    """Settle the pages' claims, with the evidence and the command that reproduces it.
    Experimental claims are graded by registered rules (metric, smallest effect, margin,
    minimum seeds), shown under each; a toy run can say "not reproduced at this scale", never
    "refuted". Exit code 1 only if a check fails to run.

    Example: [bold]blocklab claims C15 C23 --lang zh[/bold]
    """
    from blocklab.claims import Context, run_claims
    from blocklab.claims.lang import resolve_lang
    language = resolve_lang(lang)
    size = chosen_size(size, tiny, quick, full)
    from blocklab.experiments.summaries import check_seed_offset

    check_seed_offset(seed_offset)  # bad input: exit 2 here, not an error inside every check
    rows = run_claims([i.upper() for i in ids] if ids else None,
                      Context(results, size, seed_offset=seed_offset))
    if as_json:
        typer.echo(json.dumps([r.to_dict() for r in rows], indent=1, ensure_ascii=False))
    else:
        print_ledger(rows, language)
    if any(r.error for r in rows):
        raise typer.Exit(1)


def part_line(part, zh: bool = False) -> str:
    """One graded part in a line: verdict, estimate [CI] (n), and its registered rule."""
    from blocklab.claims import VERDICT_ZH

    rule = part.rule
    value = part.estimate.text()
    verdict = VERDICT_ZH[part.verdict] if zh else part.verdict
    style = VERDICT_STYLE.get(part.verdict, "")
    return (f"• {part.name}: [{style}]{verdict}[/{style}] {value}; {part.reason}. [dim]"
            f"{'规则' if zh else 'rule'}: {rule.metric}, claimed {rule.claimed:+g}"
            f"{f' (beyond {rule.threshold:g})' if rule.threshold else ''}, smallest "
            f"effect {rule.smallest_effect:g}, margin ±{rule.margin:g}, min seeds "
            f"{rule.min_seeds}[/dim]")


def print_ledger(rows, lang: str) -> None:
    from rich.table import Table

    from blocklab.claims import VERDICT_ZH

    zh = lang == "zh"
    title = "结论账本：页面中的每条论断" if zh else "Claims ledger: every claim of the pages"
    table = Table(title=title, show_lines=True, expand=True)
    table.add_column("id", no_wrap=True)
    table.add_column("判定" if zh else "verdict", no_wrap=True)
    table.add_column("论断" if zh else "claim", ratio=2)
    table.add_column("证据" if zh else "evidence", ratio=3)
    table.add_column("出处" if zh else "source", ratio=1, overflow="fold")
    for r in rows:
        verdict = VERDICT_ZH[r.verdict] if zh else r.verdict
        style = VERDICT_STYLE.get(r.verdict, "")
        evidence = r.summary_zh if zh else r.summary
        for part in r.parts:
            evidence += "\n" + part_line(part, zh)
        if r.combines:
            evidence += f"\n[dim]{'合并规则' if zh else 'combined'}: {r.combines}[/dim]"
        if r.command:
            evidence += f"\n[dim]$ {r.command}[/dim]"
        if r.error:
            evidence += f"\n[bold red]{r.error}[/bold red]"
        table.add_row(r.id, f"[{style}]{verdict}[/{style}]", r.claim_zh if zh else r.claim,
                      evidence, f"{r.page[:3]} § {r.section}")
    out = console()
    out.print(table)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    out.print(", ".join(f"{VERDICT_ZH[k] if zh else k}: {v}"
                            for k, v in sorted(counts.items())))
