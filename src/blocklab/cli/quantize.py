"""`blocklab quantize MODEL`: int8 prefill/decode speed-up and error per scheme, on a stack cut
to fit this machine (random weights), against the Amdahl and bytes bounds."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from blocklab.cli import app, console, fail


@app.command()
def quantize(
    model: str = typer.Argument(..., help="Zoo name (see `blocklab budget --list`), a "
                                          "config.json, or a Hugging Face checkpoint folder."),
    layers: int = typer.Option(2, "--layers", help="Time the first N layers only."),
    d_model: int = typer.Option(None, "--d-model", help="Scale the width to this d_model "
                                "(heads and d_ff in proportion)."),
    seq: list[int] = typer.Option([512], "--seq", help="Prefill length(s) T (repeatable)."),
    repeats: int = typer.Option(3, "--repeats", help="Interleaved timing repeats."),
    compile: bool = typer.Option(False, "--compile", help="Time torch.compile'd models too."),
    threads: int = typer.Option(1, "--threads", help="torch CPU threads."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Time every int8 scheme (ffn / attention / all × weight-only / dynamic, by torchao).

    Example: [bold]blocklab quantize llama-3.2-1b --layers 2 --d-model 1024 --seq 512[/bold]
    """
    for name, value, low in (("--layers", layers, 1), ("--repeats", repeats, 1),
                             ("--threads", threads, 1)):
        if value < low:
            raise fail(f"{name} {value} is not allowed; expected an integer >= {low}")
    if not seq or any(t < 1 or t > 8192 for t in seq):
        raise fail(f"--seq {seq} is not allowed; expected lengths in [1, 8192]")
    from blocklab.budget import resolve_model

    path = Path(model)
    resolved = resolve_model(str(path / "config.json") if path.is_dir() else model)
    from blocklab.experiments.quantize import scaled_config, time_schemes
    from blocklab.experiments.suites.quantize import cpu_flags, timing_rows

    cfg = scaled_config(resolved.config, n_layers=layers, d_model=d_model,
                        max_seq_len=max(seq) + 4)
    docs = []
    for compiled in ((False, True) if compile else (False,)):
        raw = time_schemes(cfg, seq_lens=sorted(seq), repeats=repeats, compile=compiled,
                           threads=threads)
        spec = {"seq_lens": sorted(seq), "compile": compiled}
        rows = timing_rows({"model": cfg.to_dict(), "spec": spec, **raw})
        docs += [{"scheme": r.scheme, "compiled": r.compiled, "prefill_ms": r.prefill_ms,
                  "prefill_speedup": {t: s.mean for t, s in r.prefill_speedup.items()},
                  "prefill_bound": r.prefill_bound, "flop_share": r.flop_share,
                  "gemm_speedup": r.gemm_speedup, "decode_ms": r.decode_ms,
                  "decode_speedup": r.decode_speedup.mean, "decode_bound": r.decode_bound,
                  "logits_error": r.logits_error} for r in rows]
    note = (f"{resolved.label}: timed the first {cfg.n_layers} of {resolved.config.n_layers} "
            f"layers at d_model={cfg.d_model}, d_ff={cfg.d_ff}, a {cfg.vocab_size}-token vocab, "
            f"random weights, float32, {threads} thread(s)")
    out = {"model": resolved.label, "timed_config": cfg.to_dict(), "note": note,
           "cpu_flags": cpu_flags(), "schemes": docs}
    if as_json:
        typer.echo(json.dumps(out, indent=2))
        return
    from rich.table import Table

    table = Table(title=note)
    lens = [str(t) for t in sorted(seq)]
    for col in ["scheme", *[f"prefill T={t} ×" for t in lens], *[f"bound T={t}" for t in lens],
                "decode ×", "decode bound", "logits rel. err"]:
        table.add_column(col, no_wrap=col == "scheme", justify="left" if col == "scheme"
                         else "right")
    for d in docs:
        table.add_row(d["scheme"] + (" (compiled)" if d["compiled"] else ""),
                      *[f"{d['prefill_speedup'][t]:.2f}" for t in lens],
                      *["—" if d["prefill_bound"][t] is None else f"{d['prefill_bound'][t]:.2f}"
                        for t in lens],
                      f"{d['decode_speedup']:.2f}", f"{d['decode_bound']:.2f}",
                      "—" if d["logits_error"] is None else f"{d['logits_error']:.2e}")
    console().print(table)
