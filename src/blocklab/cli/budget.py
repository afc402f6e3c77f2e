"""`blocklab budget`: parameters, FLOPs and memory of a zoo model or a config.json.

Formats what `blocklab.budget` computes; imports no torch (matplotlib only for --plot).
"""

from __future__ import annotations

import re

import typer

from blocklab.checks import refusal
from blocklab.cli import app, console, size_option
from blocklab.cli import options as opt
from blocklab.errors import InputError
from blocklab.jsonio import output_json

DEFAULT_SEQ = 4096
DEFAULT_BATCH = 1
DTYPES = ("bf16", "fp32", "fp16", "int8", "int4")


@app.command()
def budget(
    model: str = typer.Argument(None, help="Zoo name (see --list) or path to a config.json."),
    seq_text: str = typer.Option(None, "--seq", metavar="T",
                                 help=f"Sequence length (default {DEFAULT_SEQ}; 1024 with "
                                      "--sweep)."),
    batch_text: str = typer.Option(None, "--batch", metavar="B",
                                   help=f"Batch size (default {DEFAULT_BATCH}; 2 with --sweep)."),
    dtype: str = typer.Option("bf16", "--dtype", help=f"Weight dtype: {', '.join(DTYPES)}."),
    as_json: bool = opt.JSON,
    no_causal: bool = typer.Option(False, "--no-causal",
                                   help="Count all T² attention scores instead of T(T+1)/2."),
    list_: bool = typer.Option(False, "--list", help="List the zoo models."),
    sweep_: bool = typer.Option(False, "--sweep",
                                help="Page 000 practice task: plain vs gated FFN, vary one of "
                                     "B, T, d, m."),
    plot: str = typer.Option(None, "--plot", metavar="FILE",
                             help="With --sweep: save a 2x2 figure (.png, .pdf, .svg)."),
) -> None:
    """Parameters per component, prefill/decode FLOPs and memory of a model.

    Example: [bold]blocklab budget meta-llama-3-8b --seq 4096 --batch 1[/bold]
    """
    seq, batch = size_option("--seq", seq_text), size_option("--batch", batch_text)
    if dtype not in DTYPES:
        raise refusal(f"--dtype {dtype!r}", f"one of {', '.join(DTYPES)}")
    if plot is not None and not sweep_:
        raise InputError("--plot needs --sweep")
    if plot is not None:
        from blocklab.cli.paths import output_file

        output_file(plot, "--plot")  # before any work: the figure's folder, names, rights
    if list_ or sweep_:
        if model is not None:
            raise InputError(f"{'--list' if list_ else '--sweep'} takes no MODEL (got {model!r})")
        if list_:
            _list(as_json)
        else:
            _sweep(seq, batch, as_json, plot)
        return
    if model is None:
        raise InputError("missing MODEL: a zoo name (see `blocklab budget --list`) or a "
                         "config.json path")

    from blocklab.budget import model_budget, resolve_model

    resolved = resolve_model(model)
    doc = model_budget(resolved.config, batch=batch or DEFAULT_BATCH, seq_len=seq or DEFAULT_SEQ,
                       dtype=dtype, causal=not no_causal, label=resolved.label)
    if resolved.defaults_filled:
        doc["notes"].append(f"absent from the config, transformers defaults assumed: "
                            f"{', '.join(resolved.defaults_filled)}")
    if resolved.entry is not None:
        doc["published_params"] = resolved.entry.published_params
    if as_json:
        typer.echo(output_json(doc, indent=2))
    else:
        _print_budget(doc)


# --- formatting ------------------------------------------------------------------------------
def _int(n: int) -> str:
    return f"{n:,}"


def _share(part: float, whole: float) -> str:
    if not whole:
        return "—"
    share = 100 * part / whole
    return "<0.01%" if 0 < share < 0.005 else f"{share:.2f}%"


def _flops_unit(total: float):
    """A formatter in GFLOP (as page 001 writes them), or MFLOP for a column under 1 GFLOP."""
    scale, unit = (1e9, "GFLOP") if total >= 1e9 else (1e6, "MFLOP")
    return lambda n: f"{n / scale:,.1f} {unit}"


def _bytes(n: float) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:,.2f} {unit}"
    return f"{n:,.0f} B"


def _print_budget(doc: dict) -> None:
    from rich.table import Table

    out = console(wide=True)
    c, s = doc["config"], doc["settings"]
    kv = f"{c['n_kv_heads']} KV, " if c["n_kv_heads"] != c["n_heads"] else ""
    out.print(
        f"[bold]{doc['model']}[/bold]: d_model {c['d_model']}, {c['n_layers']} layers, "
        f"{c['n_heads']} heads ({kv}head_dim {c['head_dim']}), d_ff {c['d_ff']} {c['ffn']}, "
        f"{c['norm']} {c['placement']}-norm, {c['position']} positions, vocab "
        f"{c['vocab_size']:,}, {'tied' if c['tie_embeddings'] else 'untied'} lm_head")
    out.print(f"batch {s['batch']}, seq_len {s['seq_len']}, weights {s['dtype']}, "
                  f"activations/KV {s['activation_dtype']}")

    p = doc["params"]
    total, layers = p["total"], c["n_layers"]
    table = Table(title="Parameters", title_justify="left")
    table.add_column("component")
    for column in ("per layer", "all layers / model", "share"):
        table.add_column(column, justify="right")
    comp = p["components"]
    for name in ("embed_tokens", "position_embedding", "token_type_embedding", "embed_norm"):
        if comp[name] or name == "embed_tokens":
            table.add_row(name, "", _int(comp[name]), _share(comp[name], total))
    for name, per_layer in p["layer"].items():
        if per_layer:
            table.add_row(name, _int(per_layer), _int(per_layer * layers),
                          _share(per_layer * layers, total))
    for name in ("final_norm", "pooler"):
        if comp[name]:
            table.add_row(name, "", _int(comp[name]), _share(comp[name], total))
    head = "0 (tied to embed_tokens)" if c["tie_embeddings"] else _int(comp["lm_head"])
    table.add_row("lm_head", "", head, _share(comp["lm_head"], total))
    table.add_section()
    for name in ("embedding", "attention", "ffn", "norm", "lm_head", "other"):
        if p[name] or name != "other":
            table.add_row(f"[bold]{name}[/bold]", "", _int(p[name]), _share(p[name], total))
    table.add_section()
    table.add_row("[bold]one layer[/bold]", _int(p["per_layer"]), _int(p["per_layer"] * layers),
                  _share(p["per_layer"] * layers, total))
    table.add_row("[bold]total[/bold]", "", f"[bold]{_int(total)}[/bold]", "100.00%")
    out.print(table)
    if "published_params" in doc:
        pub = doc["published_params"]
        verdict = "not published" if pub is None else (
            "equal" if pub == total else f"differs by {total - pub:+,}")
        out.print(f"published: {'—' if pub is None else _int(pub)} ({verdict})")

    fp, fd = doc["flops"]["prefill"], doc["flops"]["decode"]
    table = Table(title=f"FLOPs (matmuls, 2 per multiply-add; scores {s['scores']})",
                  title_justify="left")
    table.add_column("part")
    for column in (f"prefill, {s['batch']}x{s['seq_len']} tokens", "share",
                   f"decode step, context {s['seq_len']}", "share"):
        table.add_column(column, justify="right")
    rows = [("attention projections (q,k,v,o)", "attention_proj"),
            ("attention scores + values (QKᵀ, AV)", "attention_scores"),
            ("FFN", "ffn"), ("lm_head (every position)", "lm_head")]
    if fp["other"]:
        rows.append(("pooler", "other"))
    pre, dec = _flops_unit(fp["total"]), _flops_unit(fd["total"])
    for label, key in rows:
        table.add_row(label, pre(fp[key]), _share(fp[key], fp["total"]), dec(fd[key]),
                      _share(fd[key], fd["total"]))
    table.add_section()
    table.add_row("[bold]total[/bold]", f"[bold]{pre(fp['total'])}[/bold]", "100.00%",
                  f"[bold]{dec(fd['total'])}[/bold]", "100.00%")
    table.add_section()
    if fp["attention_scores_full"] != fp["attention_scores_causal"]:
        other = "attention_scores_full" if s["causal"] else "attention_scores_causal"
        table.add_row(f"[dim]scores counted {'full (T²)' if s['causal'] else 'causal'} "
                      f"instead[/dim]", f"[dim]{pre(fp[other])}[/dim]", "",
                      f"[dim]{dec(fd[other])}[/dim]", "")
    table.add_row("[dim]elementwise estimate, not in total[/dim]",
                  f"[dim]{pre(doc['flops']['elementwise_prefill']['total'])}[/dim]", "", "",
                  "")
    out.print(table)
    out.print(f"FFN share of prefill FLOPs: [bold]{100 * fp['ffn_share']:.1f}%[/bold]; "
                  f"of a decode step: {100 * fd['ffn_share']:.1f}%")

    m = doc["memory"]
    act = m["activation_dtype"]
    ai = m["intensity"]
    table = Table(title="Memory", title_justify="left")
    table.add_column("item")
    table.add_column("value", justify="right")
    table.add_column("how")
    table.add_row(f"weights ({s['dtype']})", _bytes(m["weights_bytes"]),
                  " · ".join(f"{k} {_bytes(v)}" for k, v in m["weights_bytes_by_dtype"].items()))
    table.add_row(f"KV cache (B={s['batch']}, T={s['seq_len']}, {act})",
                  _bytes(m["kv_cache_bytes"]), "2 · layers · kv_heads · head_dim · T · B · bytes")
    branch = m["ffn_branch_elements"]
    table.add_row("one FFN intermediate branch", f"{_int(branch)} el.",
                  f"B · T · d_ff; {_bytes(m['ffn_branch_bytes'])} in {act}")
    la = m["layer_activation_elements"]
    table.add_row("one layer's forward activations", f"{_int(la['total'])} el.",
                  f"{_bytes(m['layer_activation_bytes'])} in {act}, T² scores and probs "
                  f"included; fused attention: {_bytes(m['layer_activation_bytes_fused'])}")
    table.add_row("decode arithmetic intensity", f"{ai['decode_flops_per_byte']:,.1f} FLOP/B",
                  f"FLOPs / (weights + KV cache read) -> {ai['decode_bound']}-bound "
                  f"(balance {ai['balance_flops_per_byte']:.0f})")
    table.add_row("prefill arithmetic intensity", f"{ai['prefill_flops_per_byte']:,.1f} FLOP/B",
                  f"FLOPs / (weights read + KV written) -> {ai['prefill_bound']}-bound")
    out.print(table)
    out.print(f"balance point: {ai['hardware']}")
    for note in doc["notes"]:
        out.print(f"note: {note}")


def _short_source(text: str) -> str:
    """The first URL of a source note, else its first clause."""
    found = re.search(r"https?://[^\s,;)]+", text)
    return found.group(0) if found else re.split(r"[:;.]", text, maxsplit=1)[0]


def _list(as_json: bool) -> None:
    from blocklab.budget import count_params, list_zoo, resolve_model

    rows = []
    for name in list_zoo():
        resolved = resolve_model(name)
        entry = resolved.entry
        rows.append({"name": name, "hf_id": entry.hf_id, "published_params": entry.published_params,
                     "computed_params": count_params(resolved.config).total,
                     "params_exact": entry.params_exact, "params_source": entry.params_source})
    if as_json:
        typer.echo(output_json({"zoo": rows}, indent=2))
        return
    from rich.table import Table

    table = Table(title="Model zoo (blocklab budget NAME)", title_justify="left")
    for column, justify in (("name", "left"), ("hf_id", "left"), ("published", "right"),
                            ("computed", "right"), ("source", "left")):
        table.add_column(column, justify=justify)
    for r in rows:
        pub = r["published_params"]
        mark = "" if pub is None else (" =" if pub == r["computed_params"] else " ≠")
        table.add_row(r["name"], r["hf_id"] or "—", "—" if pub is None else _int(pub),
                      _int(r["computed_params"]) + mark, _short_source(r["params_source"]))
    console(wide=True).print(table)


def _sweep(seq: int | None, batch: int | None, as_json: bool, plot: str | None) -> None:
    from blocklab.budget.sweep import PAGE_BASE, plot_sweep, sweep

    given = {"seq_len": seq, "batch": batch}
    base = {**PAGE_BASE, **{k: v for k, v in given.items() if v is not None}}
    rows = sweep(base)
    saved = None if plot is None else plot_sweep(rows, plot)
    if as_json:
        typer.echo(output_json({"base": base, "rows": rows,
                               "plot": None if saved is None else str(saved)}, indent=2))
        return
    from rich.table import Table

    table = Table(title=f"Plain vs gated FFN, bias-free, one quantity varied (base d={base['d']}, "
                        f"m={base['m']}, B={base['batch']}, T={base['seq_len']})",
                  title_justify="left")
    for column in ("vary", "B", "T", "d", "m", "plain params", "gated params",
                   "plain intermediate", "gated intermediate"):
        table.add_column(column, justify="left" if column == "vary" else "right")
    previous = None
    for r in rows:
        if previous is not None and r["vary"] != previous:
            table.add_section()
        previous = r["vary"]
        table.add_row(r["vary"], *(_int(r[k]) for k in ("batch", "seq_len", "d", "m",
                                                        "plain_params", "gated_params",
                                                        "plain_intermediate",
                                                        "gated_intermediate")))
    out = console(wide=True)
    out.print(table)
    out.print("params: 2·d·m plain, 3·d·m gated (shared by every token); intermediate: "
                  "B·T·m per branch, 1 branch plain, 2 gated")
    if saved is not None:
        out.print(f"plot saved to {saved}")
