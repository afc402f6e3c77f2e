"""`blocklab doctor`: lint a model config against page 001's troubleshooting table.

Exit code 1 when any finding is an error, 0 otherwise, 2 for input that is not a readable config.
"""

from __future__ import annotations

from pathlib import Path

import typer

from blocklab.cli import app, console, json_text, size_option
from blocklab.cli import options as opt
from blocklab.errors import InputError

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


@app.command()
def doctor(
    config: str = typer.Argument(..., help="Path to a config.json (or its folder) or a zoo name."),
    serve_len_text: str = typer.Option(None, "--serve-len", metavar="N",
                                  help="Context length you intend to serve."),
    training: bool = typer.Option(False, "--training",
                                  help="Check as a training config (warmup read from the JSON: "
                                       "warmup_steps, num_warmup_steps, lr_warmup_steps, "
                                       "warmup_iters or warmup_ratio, top level or under "
                                       "\"training\")."),
    as_json: bool = opt.JSON,
) -> None:
    """Flag config problems: context past training without RoPE scaling, RoPE base too small,
    unusual FFN ratio, post-norm at depth without warmup, head arithmetic, tied/untied heads.

    Example: [bold]blocklab doctor llama-2-7b --serve-len 16384[/bold]
    """
    serve_len = size_option("--serve-len", serve_len_text)

    from blocklab.budget.doctor import diagnose, exit_code
    from blocklab.budget.zoo import read_model_json

    found = read_model_json(config)
    checkpoint_dir = None if found.source == "zoo" else Path(found.source).parent
    try:
        findings = diagnose(found.raw, serve_len=serve_len, training=training,
                            checkpoint_dir=checkpoint_dir)
    except InputError as err:  # name the file, as `budget` does
        raise type(err)(f"{found.source if checkpoint_dir else found.label}: {err}") from None
    code = exit_code(findings)
    counts = {level: sum(f.level == level for f in findings) for level in _STYLE}
    if as_json:
        typer.echo(json_text({"model": found.label, "source": found.source,
                             "serve_len": serve_len, "training": training,
                             "findings": findings, "counts": counts,
                             "exit_code": code}, indent=2))
    else:
        _print(found.label, findings, counts)
    if code:
        raise typer.Exit(code)


def _print(label: str, findings, counts: dict[str, int]) -> None:
    from rich.table import Table

    out = console(wide=True)
    if not findings:
        out.print(f"[green]{label}: no findings[/green]")
        return
    table = Table(title=f"blocklab doctor: {label}", title_justify="left", show_lines=True)
    table.add_column("level", no_wrap=True)
    table.add_column("code", no_wrap=True)
    table.add_column("reason", ratio=3)
    table.add_column("suggested fix", ratio=2)
    for f in findings:
        table.add_row(f"[{_STYLE[f.level]}]{f.level}[/{_STYLE[f.level]}]", f.code, f.reason,
                      f.fix)
    out.print(table)
    out.print(", ".join(f"{n} {level}{'s' if n != 1 else ''}" for level, n in counts.items()))
