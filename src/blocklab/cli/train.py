"""`blocklab train`: one seeded training run from flags or a JSON config, written as result.json."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from blocklab.cli import app, console, number, warn_if_bf16_emulated
from blocklab.cli import options as opt
from blocklab.cli.paths import output_folder
from blocklab.errors import InputError
from blocklab.jsonio import output_json, read_json

# The CLI's small default model: trains in about a minute on two CPU cores.
_MODEL_DEFAULTS = {"vocab_size": 256, "d_model": 128, "n_layers": 4, "n_heads": 4}
_CONFIG_KEYS = ("model", "train", "data")


def _read_config(path: Path) -> dict[str, Any]:
    config = read_json(path, f"--config {path}")
    if not isinstance(config, dict):
        raise InputError(f"--config {path}: expected a JSON object with 'model' and 'train'")
    unknown = sorted(set(config) - set(_CONFIG_KEYS))
    if unknown:
        raise InputError(f"--config {path}: unknown key(s) {unknown}; allowed: "
                         f"{list(_CONFIG_KEYS)}")
    for key in ("model", "train"):
        if not isinstance(config.get(key, {}), dict):
            raise InputError(f"--config {path}: {key!r} must be a JSON object")
    if "data" in config and not isinstance(config["data"], str):
        raise InputError(f"--config {path}: 'data' is {json.dumps(config['data'])[:60]}; expected "
                         "a string: stdlib, shakespeare, or a text file or folder")
    return config


def _flag(field_name: str) -> str:
    """The flag that sets a config field: the field with dashes, but --warmup and --clip."""
    return {"warmup_steps": "--warmup", "grad_clip": "--clip"}.get(
        field_name, "--" + field_name.replace("_", "-"))


@contextlib.contextmanager
def _named_as_written(flags: dict[str, Any], file: dict[str, Any], config: Path | None,
                      section: str) -> Iterator[None]:
    """Inside, an error about a ModelConfig or TrainConfig field names where the user wrote it:
    the flag (`--precision`) or the key in the --config file (`train.precision`)."""
    try:
        yield
    except InputError as err:
        match = re.match(r"(?:Model|Train)Config\.(\w+)=", str(err))
        name = match.group(1) if match else None
        if name is not None and name in flags:
            where = _flag(name)
        elif config is not None and (name is None or name in file.get(section, {})):
            where = f"--config {config}" + ("" if name is None else f": {section}.{name}")
        else:
            raise
        raise type(err)(f"{where}: {err}") from None


def _as_written(name: str, value: Any, flags: dict[str, Any], file: dict[str, Any],
                config: Path | None) -> str:
    """The TrainConfig field `name` and its `value` as the user set it: the flag, the key in
    the --config file, or the flag's default."""
    flag = _flag(name)
    if name in flags:
        return f"{flag} {value}"
    if name in file.get("train", {}):
        return f"--config {config}: train.{name}={value}"
    return f"{flag} {value} (the default)"


def _check_warmup(tc, flags: dict[str, Any], file: dict[str, Any], config: Path | None) -> None:
    """Warmup that outlasts the run is refused: the learning rate would never reach its peak
    (warmup equal to the steps reaches it on the last step)."""
    if tc.warmup_steps > tc.steps:
        warmup = _as_written("warmup_steps", tc.warmup_steps, flags, file, config)
        steps = _as_written("steps", tc.steps, flags, file, config)
        raise InputError(f"{warmup} is more than {steps}: the learning rate would still be "
                         f"warming up when training ends; expected a warmup of at most "
                         f"{tc.steps} steps")


def _check_windows(corpus, tc, option: str) -> None:
    """The data holds a training window and the longest validation window (`seq_len` and
    `eval_lengths` tokens, plus the next token each predicts), as the run will cut them."""
    if corpus.train.size + corpus.val.size == 0:
        raise InputError(f"{option} {corpus.name!r} is empty; expected text to train on")
    for split, tokens, length, options in (
            ("train", corpus.train, tc.seq_len, "--seq-len"),
            ("validation", corpus.val, max(tc.eval_lengths), "--seq-len, --eval-lengths")):
        if tokens.size < length + 1:
            raise InputError(
                f"{option} {corpus.name!r} holds {corpus.train.size + corpus.val.size:,} "
                f"tokens, {tokens.size:,} of them in its {split} split; a {split} window of "
                f"{length} ({options}) needs {length + 1}: use more text or shorter windows")


def _lengths(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise InputError(f"--eval-lengths {text!r}: expected comma-separated integers, e.g. "
                         "128,256,512") from None


def _given(**flags: Any) -> dict[str, Any]:
    return {key: value for key, value in flags.items() if value is not None}


@app.command()
def train(
    config: Path = typer.Option(None, "--config", help="JSON with 'model' and 'train' objects "
                                "(and optionally 'data'); flags override it."),
    ffn: str = typer.Option(None, help="FFN: relu, gelu, silu, glu, reglu, geglu, swiglu, ..."),
    norm: str = typer.Option(None, help="rmsnorm or layernorm."),
    placement: str = typer.Option(None, help="pre, post or sandwich."),
    position: str = typer.Option(None, help="none, learned, sinusoidal, rope or alibi."),
    d_model: int = typer.Option(None, help="Residual width (default: 128)."),
    n_layers: int = typer.Option(None, help="Layers (default: 4)."),
    n_heads: int = typer.Option(None, help="Attention heads (default: 4)."),
    d_ff: int = typer.Option(None, help="FFN width (default: by rule, 4d or 8d/3)."),
    seq_len: int = typer.Option(None, help="Tokens per training window (default: 128)."),
    batch_size: int = typer.Option(None, help="Windows per step (default: 16)."),
    steps: int = typer.Option(None, help="Optimizer steps (default: 200)."),
    lr: float = typer.Option(None, help="Peak learning rate (default: 1e-3)."),
    warmup: int = typer.Option(None, help="Linear warmup steps, 0 = off (default: 0)."),
    schedule: str = typer.Option(None, help="cosine or constant (default: cosine)."),
    weight_decay: float = typer.Option(None, help="AdamW weight decay (default: 0.1)."),
    seed: int = typer.Option(None, help="Initialisation and batch-order seed (default: 0)."),
    init: str = typer.Option(None, help="gpt2, xavier, fan_in, depth or default (default: gpt2)."),
    clip: float = typer.Option(None, help="Gradient-norm clip, 0 = off (default: 1.0)."),
    eval_every: int = typer.Option(None, help="Validate every N steps, 0 = at the end only."),
    eval_lengths: str = typer.Option(None, help="Extra validation lengths, e.g. 256,512."),
    stuck_patience: int = typer.Option(None, help="Steps after warmup before a loss above the "
                                       "unigram entropy ends the run as stuck (default: off)."),
    threads: int = typer.Option(None, help="Torch CPU threads (default: as is)."),
    device: str = typer.Option(None, help="cpu or cuda (default: cpu); under torchrun each "
                               "rank uses cuda:LOCAL_RANK."),
    data: str = typer.Option(None, help="stdlib, shakespeare, or a text file or folder "
                             "(default: stdlib)."),
    out: str = typer.Option(None, "--out", metavar="DIR",
                             help="Folder for result.json (default: runs/<run id>)."),
    precision: str = typer.Option(None, help="fp32, or bf16: bfloat16 compute with float32 "
                                  "weights and optimizer state (default: fp32)."),
    backend: str = typer.Option(None, help="How the ops run: fast (eager, PyTorch's library "
                                "kernel where one computes the same function: F.rms_norm, "
                                "SDPA), reference (the readable definitions) or compiled "
                                "(torch.compile; its warm-up is reported as compile_s) "
                                "(default: fast)."),
    no_progress: bool = opt.NO_PROGRESS,
    as_json: bool = opt.JSON,
) -> None:
    """Train one small decoder LM on built-in text and write DIR/result.json (loss in nats per
    token, bits per byte, curves). Exit code 1 if the run diverged or got stuck.

    Under [bold]torchrun --nproc-per-node N -m blocklab train ...[/bold] the run is
    data-parallel: --batch-size is the global batch, split evenly over the N ranks, and rank 0
    writes the result.

    Example: [bold]blocklab train --ffn relu --placement post --warmup 0 --steps 300[/bold]
    """

    from blocklab.config import ModelConfig
    from blocklab.experiments import distributed
    from blocklab.experiments.data import load_corpus
    from blocklab.experiments.env import check_threads
    from blocklab.experiments.results import run_id
    from blocklab.experiments.trainer import (
        TrainConfig,
        check_device,
        check_fits_in_memory,
        check_seq_len,
        check_vocab,
        make_progress,
        run,
    )

    file = _read_config(config) if config is not None else {}
    model_flags = _given(ffn=ffn, norm=norm, placement=placement, position=position,
                         d_model=d_model, n_layers=n_layers, n_heads=n_heads, d_ff=d_ff)
    model_fields = {**_MODEL_DEFAULTS, **file.get("model", {}), **model_flags}
    train_flags = _given(
        seq_len=seq_len, batch_size=batch_size, steps=steps, lr=lr, warmup_steps=warmup,
        schedule=schedule, weight_decay=weight_decay, seed=seed, init=init,
        eval_every=eval_every, stuck_patience=stuck_patience, threads=threads, device=device,
        precision=precision, backend=backend)
    if clip is not None:
        train_flags["grad_clip"] = None if clip == 0 else clip
    if eval_lengths is not None:
        train_flags["eval_lengths"] = _lengths(eval_lengths)
    train_fields = {**file.get("train", {}), **train_flags}
    if train_fields.get("threads") is not None:  # before torch starts them: 100,000 crash it
        check_threads(train_fields["threads"], "--threads" if "threads" in train_flags
                      else f"--config {config}: train.threads")
    with _named_as_written(model_flags, file, config, "model"):
        model_config = ModelConfig.from_dict(model_fields)
    with _named_as_written(train_flags, file, config, "train"):
        train_config = TrainConfig.from_dict(train_fields)
        check_device(train_config.device)  # before any process group or data is set up
        check_seq_len(model_config, train_config)
    _check_warmup(train_config, train_flags, file, config)
    check_fits_in_memory(model_config, train_config)
    corpus = load_corpus(data or file.get("data", "stdlib"))
    # Bad input is said at once, never after a wait for the machine lock.
    check_vocab(model_config, corpus)
    _check_windows(corpus, train_config, "--data" if data else f"--config {config}: data")
    if out is None:
        out = str(Path("runs") / run_id(model_config, train_config, corpus.name))
    # Checked, not created: result.json's folder is made when the result is written, so a
    # run refused or stopped before that leaves no empty folder behind.
    out = output_folder(out, "--out", ["result.json"])
    rank = distributed.torchrun_rank()
    if rank is not None:  # fail on every rank alike, before any of them waits for the others
        distributed.local_rows(train_config.batch_size, rank.rank, rank.world_size)
    main_rank = rank is None or rank.rank == 0
    if main_rank:
        warn_if_bf16_emulated(train_config.precision, train_config.device)
    err = console(stderr=True)
    progress = False if (no_progress or as_json or not main_rank) else make_progress(err)
    from blocklab.experiments.locks import machine_lock

    # Shared: a suite timing alone on this machine waits for this run, and this run for it.
    with machine_lock(echo=err.print), distributed.process_group(train_config.device):
        result = run(model_config, train_config, corpus, out / "result.json", progress=progress)
    if not main_rank:
        raise typer.Exit(0 if result.status == "ok" else 1)
    stored = result.to_dict()  # the JSON form: what result.json holds
    summary = {**{key: stored[key] for key in ("run_id", "status", "reason", "steps_done",
                                               "wall_time_s", "compile_s", "ms_per_step",
                                               "tokens_per_s", "backends")},
               "precision": train_config.precision, "backend": train_config.backend,
               "final": {k: v for k, v in stored["final"].items() if k != "per_position_loss"},
               "result": str(out / "result.json")}
    if as_json:
        typer.echo(output_json(summary, indent=2))
    else:
        _print_summary(summary, model_config, corpus.name)
    if result.status != "ok":
        raise typer.Exit(1)


def _print_summary(summary: dict[str, Any], model_config, data_name: str) -> None:
    from rich.markup import escape
    from rich.table import Table

    final = summary["final"]
    colour = "green" if summary["status"] == "ok" else "bold red"
    design = " · ".join((model_config.ffn, model_config.norm, model_config.placement,
                         model_config.position))
    table = Table(title=f"blocklab train: {design} on {escape(data_name)}", show_header=False)
    table.add_column("", style="cyan")
    table.add_column("", justify="right")
    table.add_row("status", f"[{colour}]{summary['status']}[/{colour}]")
    if summary["reason"]:
        table.add_row("reason", escape(summary["reason"]))
    table.add_row("val loss (nats/token)", number(final["val_loss"]))
    table.add_row("val bits per byte", number(final["val_bpb"]))
    for length, loss in final["val_loss_by_length"].items():
        table.add_row(f"  val loss at {length}", number(loss))
    table.add_row("unigram entropy (nats)", number(final["unigram_entropy"]))
    table.add_row("train loss (last 10)", number(final["train_loss"]))
    table.add_row("parameters", f"{final['params']:,}")
    table.add_row("steps", str(summary["steps_done"]))
    table.add_row("ms per step", number(summary["ms_per_step"], 1))
    table.add_row("tokens per s", number(summary["tokens_per_s"], 0))
    if summary["compile_s"] is not None:
        table.add_row("compile warm-up (s)", number(summary["compile_s"], 1))
    table.add_row("precision · backend", f"{summary['precision']} · {summary['backend']}")
    table.add_row("ops ran", escape(", ".join(f"{op} {impl}"
                                              for op, impl in summary["backends"].items())))
    table.add_row("wall time (s)", number(summary["wall_time_s"], 1))
    table.add_row("result", escape(summary["result"]))
    console().print(table)
