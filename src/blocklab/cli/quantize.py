"""`blocklab quantize MODEL`: int8 prefill/decode speed-up and error per scheme, on a stack cut
to fit this machine (a checkpoint's own weights, else random ones), beside the bound no scheme
can beat (its layers made free) and an Amdahl estimate
(`blocklab.experiments.int8_measurements`)."""

from __future__ import annotations

from pathlib import Path

import typer

from blocklab.checks import refusal
from blocklab.cli import app, console, number
from blocklab.cli import options as opt
from blocklab.errors import InputError
from blocklab.jsonio import output_json

MAX_REPEATS = 1000  # a timing of hours at most, even for the largest shapes allowed
INT8_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")  # int8 dot-product instructions


@app.command()
def quantize(
    model: str = typer.Argument(..., help="Zoo name (see `blocklab budget --list`) or a "
                                          "config.json (random weights of its shape), or a "
                                          "Hugging Face checkpoint folder (its own weights)."),
    layers: int = typer.Option(2, "--layers", help="Time the first N layers only."),
    d_model: int = typer.Option(None, "--d-model", help="Scale the width to this d_model "
                                "(heads and d_ff in proportion; not with a checkpoint)."),
    seq: list[int] = typer.Option([512], "--seq", help="Prefill length(s) T (repeatable)."),
    repeats: int = typer.Option(3, "--repeats", help="Interleaved timing repeats (at least 2: "
                                "a speed-up's interval needs two paired repeats)."),
    compile: bool = typer.Option(False, "--compile", help="Time torch.compile'd models too."),
    threads: int = typer.Option(1, "--threads", help="torch CPU threads."),
    as_json: bool = opt.JSON,
) -> None:
    """Time every int8 scheme (ffn / attention / all × weight-only / dynamic, by torchao).

    Example: [bold]blocklab quantize llama-3.2-1b --layers 2 --d-model 1024 --seq 512[/bold]
    """
    for name, value, low in (("--layers", layers, 1), ("--repeats", repeats, 2)):
        if value < low:
            raise refusal(f"{name} {value}", f"an integer >= {low}")
    from blocklab.experiments.env import check_threads

    check_threads(threads, "--threads")  # before torch starts them: 100,000 crash it
    if not seq or any(t < 1 or t > 8192 for t in seq):
        raise refusal(f"--seq {seq}", "lengths in [1, 8192]")
    twice = sorted({t for t in seq if seq.count(t) > 1})
    if twice:
        raise InputError(f"--seq {twice[0]} is given {seq.count(twice[0])} times; expected "
                         "distinct lengths")
    if repeats > MAX_REPEATS:
        raise refusal(f"--repeats {repeats}", f"an integer in [2, {MAX_REPEATS}]")
    if not model.strip():
        raise InputError(f"MODEL {model!r} is empty; expected a zoo name (`blocklab budget "
                         "--list`), a config.json or a Hugging Face checkpoint folder")
    from blocklab.budget import count_params, resolve_model
    from blocklab.experiments.int8_measurements import (
        check_timing_fits,
        checkpoint_files,
        checkpoint_layers,
        measure_schemes,
        scaled_config,
    )
    from blocklab.experiments.suites.quantize.timing import cpu_flags, scheme_rows

    path = Path(model)
    checkpoint = path.is_dir()
    if checkpoint and d_model is not None:
        raise InputError(f"--d-model {d_model} is not allowed with the checkpoint {model}: "
                         "real weights cannot be narrowed; drop --d-model, or pass "
                         f"{path / 'config.json'} to time random weights of a narrower shape")
    if checkpoint and (path / "config.json").is_file() and not checkpoint_files(path):
        raise InputError(f"MODEL {model} has no *.safetensors weights; expected a Hugging Face "
                         f"checkpoint folder, or pass {path / 'config.json'} to time random "
                         "weights of its shape")
    resolved = resolve_model(str(path / "config.json") if checkpoint else model)
    if layers > resolved.config.n_layers:
        raise InputError(f"--layers {layers} is more than the {resolved.config.n_layers} layers "
                         f"of {resolved.label}; expected 1 to {resolved.config.n_layers}")
    options = " ".join([f"--layers {layers}", *([] if d_model is None else
                                                 [f"--d-model {d_model}"]),
                        *[f"--seq {t}" for t in seq]])
    loaded = 0
    if checkpoint:
        # load_hf holds the whole checkpoint twice at its peak: as read, and as a float32 model.
        cfg = resolved.config.replace(n_layers=layers)
        loaded = (sum(f.stat().st_size for f in checkpoint_files(path))
                  + 4 * count_params(resolved.config).total)
        options = f"MODEL {model} {options}"
    else:
        cfg = scaled_config(resolved.config, n_layers=layers, d_model=d_model,
                            max_seq_len=max(seq) + 4)
    check_timing_fits(cfg, seq, options=options, loaded_bytes=loaded,
                      advice="use a smaller --layers or --seq" if checkpoint else
                      "use a smaller --d-model, --layers or --seq")
    base = None
    nonfinite: dict[str, int] = {}
    if checkpoint:
        from blocklab.nn.int8 import nonfinite_weights

        base = checkpoint_layers(path, layers)
        cfg = base.config
        nonfinite = nonfinite_weights(base)
        if nonfinite:
            typer.echo(f"warning: {_nonfinite_note(model, nonfinite)}", err=True)
    docs = []
    for compiled in ((False, True) if compile else (False,)):
        times = measure_schemes(cfg, seq_lens=sorted(seq), repeats=repeats, compile=compiled,
                                threads=threads, model=base)
        rows = scheme_rows(cfg, sorted(seq), compiled, times)
        docs += [{"scheme": r.scheme, "compiled": r.compiled, "prefill_ms": r.prefill_ms,
                  "prefill_speedup": {t: s.ratio for t, s in r.prefill_speedup.items()},
                  "prefill_estimate": r.prefill_estimate, "prefill_bound": r.prefill_bound,
                  "flop_share": r.flop_share, "time_share": r.time_share,
                  "gemm_speedup": r.gemm_speedup, "decode_ms": r.decode_ms,
                  "decode_speedup": r.decode_speedup.ratio, "decode_estimate": r.decode_estimate,
                  "decode_bound": r.decode_bound, "decode_time_share": r.decode_time_share,
                  "logits_error": r.logits_error} for r in rows]
    weights = ("the checkpoint's own weights" if checkpoint else "random weights")
    note = (f"{resolved.label}: timed the first {cfg.n_layers} of {resolved.config.n_layers} "
            f"layers at d_model={cfg.d_model}, d_ff={cfg.d_ff}, a {cfg.vocab_size}-token vocab, "
            f"{weights}, float32, {threads} thread(s)")
    flags = cpu_flags()
    fast_int8 = any(flags.get(f) for f in INT8_FLAGS)
    out = {"model": resolved.label, "timed_config": cfg.to_dict(), "note": note,
           "weights": "checkpoint" if checkpoint else "random", "cpu_flags": flags,
           "int8_fast_path": fast_int8, "nonfinite_weights": nonfinite, "schemes": docs}
    if as_json:
        typer.echo(output_json(out, indent=2))
        return
    from rich.table import Table

    table = Table(title=note)
    lens = [str(t) for t in sorted(seq)]
    for col in ["scheme", *[f"prefill T={t} ×" for t in lens],
                *[f"estimate T={t}" for t in lens], *[f"bound T={t}" for t in lens],
                "decode ×", "decode estimate", "decode bound", "logits rel. err"]:
        table.add_column(col, no_wrap=col == "scheme", justify="left" if col == "scheme"
                         else "right")
    for d in docs:
        table.add_row(d["scheme"] + (" (compiled)" if d["compiled"] else ""),
                      *[f"{d['prefill_speedup'][t]:.2f}" for t in lens],
                      *[number(d["prefill_estimate"][t], 2) for t in lens],
                      *[number(d["prefill_bound"][t], 2) for t in lens],
                      f"{d['decode_speedup']:.2f}", number(d["decode_estimate"], 2),
                      number(d["decode_bound"], 2),
                      "—" if d["logits_error"] is None else f"{d['logits_error']:.2e}")
    console().print(table)
    console().print("bound = 1/(1 − f), f the quantized layers' share of the float model's time "
                    "(timed with them free): no scheme beats it beyond timing noise. estimate = "
                    "1/(1 − f + f/S), S their GEMMs' own speed-up (prefill) or weight bytes "
                    "float32/int8 (decode): an estimate, not a bound.")
    if not fast_int8:
        console().print("note: this CPU has none of AVX-512 VNNI, AVX-VNNI or AMX-int8, so int8 "
                        "has no fast path here: every scheme is expected to be slower than "
                        "float32.")


def _nonfinite_note(model: str, counts: dict[str, int], shown: int = 4) -> str:
    """One line naming the timed tensors that hold NaN or inf, with their counts."""
    names = [f"{name} ({n:,})" for name, n in list(counts.items())[:shown]]
    more = f" and {len(counts) - shown} more" if len(counts) > shown else ""
    return (f"MODEL {model}: {len(counts)} timed weight tensor(s) hold NaN or inf entries: "
            f"{', '.join(names)}{more}; the int8 scale of such a tensor is not finite, so a "
            "logits error through it is no measurement and is left out (— in the table, null "
            "with --json); the timings stand")

