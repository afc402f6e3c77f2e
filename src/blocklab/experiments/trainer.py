"""One seeded, deterministic training run of a `DecoderLM` on a corpus, recorded as one JSON result.

    build    torch.manual_seed(seed); DecoderLM; re-initialise by `TrainConfig.init`, each
             parameter from its own (seed, name) stream (`blocklab.experiments.init`)
    data     step s trains on `sample_batch(train split, seed, s)`, a stream of its own, so
             every arm of a comparison with the same seed sees the same windows in order
    step     `train_step`: AdamW, lr by `learning_rate`, optional clipping by global norm
    watch    a non-finite loss or gradient norm, or a loss above divergence_factor·ln(V) ->
             "diverged"; train loss above the unigram entropy `stuck_patience` steps after
             warmup -> "stuck"; either ends the run, keeping the curves so far
    evaluate loss, bits per byte and per-position loss on fixed held-out windows at every
             eval length; with `final_eval_fraction` > 0 once more at the end on that share
             of the validation split, which the final val_loss and its standard error use

Same seed, machine and thread count: the same loss curve bit for bit. Under `torchrun` the run
is data-parallel (`blocklab.experiments.distributed`). Curves hold one entry per optimizer step
(the loss before the update, the gradient norm before clipping).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from torch import nn

from blocklab.checks import MAX_SIZE, is_int, real, refusal, shown_value
from blocklab.config import ModelConfig
from blocklab.errors import ConfigError, InputError, PositionsBeyondTable
from blocklab.experiments import distributed
from blocklab.experiments.data import (
    FINAL_EVAL_TOKENS,
    Corpus,
    bits_per_byte,
    final_window_count,
    load_corpus,
    references,
    sample_batch,
    spread_windows,
    unigram_entropy,
    validation_windows,
)
from blocklab.experiments.env import deterministic_algorithms, environment, torch_threads
from blocklab.experiments.init import INITS
from blocklab.experiments.results import json_safe, result_json, run_id
from blocklab.experiments.run_result import Curves, RunResult
from blocklab.jsonio import write_atomic
from blocklab.precision import Precision, check_precision

if TYPE_CHECKING:
    from blocklab.experiments.options import RunOptions
from blocklab.nn.backends import BACKENDS
from blocklab.nn.ffn import narrowed

SCHEDULES = ("cosine", "constant")
_SMOOTH = 10  # train losses averaged for the stuck test and the final train loss
TAIL_EVALS = 4  # periodic validation losses averaged into the final val_loss_tail
_ADDED_AT_DEFAULT: dict[str, Any] = {"final_eval_fraction": 0.0, "nested_widths": [],
                                     "learn_margin": None}
_SEQUENCES = ("betas", "eval_lengths", "nested_widths")  # tuples here, lists in JSON


def _bad(name: str, value: Any, allowed: str) -> ConfigError:
    return refusal(f"TrainConfig.{name}={shown_value(value)}", allowed, ConfigError)


def _int(name: str, value: Any, minimum: int) -> None:
    if not is_int(value, minimum):
        raise _bad(name, value, f"an integer in [{minimum}, {MAX_SIZE}]")


def _ints(name: str, values: Any, allowed: str) -> None:
    if not isinstance(values, tuple | list):
        raise _bad(name, values, allowed)
    for value in values:
        _int(name, value, 1)


def _number(name: str, value: Any, low: float, high: float = math.inf,
            low_open: bool = False) -> float:
    """`value` as a float if it is finite, in [low, high] (low excluded if `low_open`)."""
    if not (real(value) and (value > low if low_open else value >= low) and value <= high):
        bound = f"> {low}" if low_open else f">= {low}"
        raise _bad(name, value, f"a finite number {bound}" + (f" and <= {high}"
                                                               if high < math.inf else ""))
    return float(value)


# How each plain TrainConfig field is checked: an integer's minimum, or a real number's (low,
# high, low excluded); those in _OFF_BY_NONE may also be None (off).
_PLAIN: dict[str, int | tuple[float, float, bool]] = {
    "steps": 1, "batch_size": 1, "seq_len": 1, "lr": (0.0, math.inf, True), "warmup_steps": 0,
    "min_lr_ratio": (0.0, 1.0, False), "weight_decay": (0.0, math.inf, False),
    "adam_eps": (0.0, math.inf, True), "grad_clip": (0.0, math.inf, True), "seed": 0,
    "eval_every": 0, "eval_batches": 1, "log_every": 0, "stuck_patience": 1,
    "divergence_factor": (1.0, math.inf, True), "threads": 1,
    "learn_margin": (0.0, 1.0, False), "final_eval_fraction": (0.0, 1.0, False)}
_OFF_BY_NONE = ("grad_clip", "stuck_patience", "divergence_factor", "threads", "learn_margin")


@dataclass(frozen=True)
class TrainConfig:
    """How to train: optimisation, schedule, initialisation, evaluation, watchdogs.

    steps, batch_size, seq_len: optimizer steps, windows per batch, tokens per window.
    lr, warmup_steps, schedule, min_lr_ratio: see `learning_rate`.
    weight_decay, betas, adam_eps, grad_clip: AdamW (`make_optimizer`); grad_clip None = off.
    init: a name of `blocklab.experiments.init.INITS`. seed: initialisation and batch order.
    eval_every: validate every this many steps (0 = only at the end); always at the end.
    eval_lengths: validation lengths (`seq_len` always added); eval_batches: batches of
        `batch_size` fixed windows per length.
    log_every: per-layer gradient norms and residual RMS every this many steps (0 = off).
    stuck_patience, divergence_factor: the watchdogs of the module docstring (None = off).
    threads, device, backend: torch CPU threads (None = as is), "cpu" or "cuda[:i]", and the
        op implementations (`blocklab.nn.backends`); they change speed, not values, so no run
        id holds them. "compiled" warms every graph up first and reports it as compile_s.
    precision: "fp32", or "bf16" (bfloat16 compute, float32 weights and AdamW state).
    final_eval_fraction: the share of the validation split scored at the end (0.0 = off).
    nested_widths: each step's loss is the mean over these FFN prefix widths (`nested_loss`).
    learn_margin: the share of the way from the unigram to the bigram reference the final
        validation loss must reach, else the run is "did_not_learn" (None = off).

    Fields added after run ids were first issued are left out of `to_dict` at their defaults
    (`_ADDED_AT_DEFAULT`), so earlier ids stay the same.
    """

    steps: int = 200
    batch_size: int = 16
    seq_len: int = 128
    lr: float = 1e-3
    warmup_steps: int = 0
    schedule: str = "cosine"
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.95)
    adam_eps: float = 1e-8
    grad_clip: float | None = 1.0
    init: str = "gpt2"
    seed: int = 0
    eval_every: int = 50
    eval_lengths: tuple[int, ...] = ()
    eval_batches: int = 4
    log_every: int = 10
    stuck_patience: int | None = None
    divergence_factor: float | None = 4.0
    threads: int | None = None
    device: str = "cpu"
    precision: Precision = "fp32"
    backend: str = "fast"
    final_eval_fraction: float = 0.0
    nested_widths: tuple[int, ...] = ()
    learn_margin: float | None = None

    @classmethod
    def for_run(cls, options: RunOptions, seed: int, **settings: Any) -> TrainConfig:
        """A suite run's training: `settings` on `seed` with `options`' precision, backend and
        device, and the size's `LEARN_MARGIN` unless settings name one."""
        from blocklab.experiments.options import LEARN_MARGIN

        settings.setdefault("learn_margin", LEARN_MARGIN[options.size])
        return cls(seed=seed, precision=options.precision, backend=options.backend,
                   device=options.device, **settings)

    def __post_init__(self) -> None:
        for name, rule in _PLAIN.items():
            value = getattr(self, name)
            if value is None and name in _OFF_BY_NONE:
                continue
            if isinstance(rule, int):
                _int(name, value, rule)
            else:  # a real number, kept as a float
                object.__setattr__(self, name, _number(name, value, *rule))
        for name, allowed in (("schedule", list(SCHEDULES)), ("init", sorted(INITS)),
                              ("backend", list(BACKENDS))):
            if getattr(self, name) not in allowed:
                raise _bad(name, getattr(self, name), f"one of {allowed}")
        betas = self.betas
        if not (isinstance(betas, tuple | list) and len(betas) == 2):
            raise _bad("betas", betas, "two numbers in [0, 1)")
        betas = tuple(_number("betas", b, 0.0, 1.0) for b in betas)
        if max(betas) >= 1.0:
            raise _bad("betas", self.betas, "two numbers in [0, 1)")
        object.__setattr__(self, "betas", betas)
        _ints("eval_lengths", self.eval_lengths, "a list of positive integers")
        object.__setattr__(self, "eval_lengths", tuple(sorted({*self.eval_lengths,
                                                               self.seq_len})))
        if not (isinstance(self.device, str) and self.device.split(":")[0] in ("cpu", "cuda")):
            raise _bad("device", self.device, "'cpu' or 'cuda[:index]'")
        check_precision(self.precision, "TrainConfig.precision", ConfigError)
        widths = self.nested_widths
        _ints("nested_widths", widths, "a list of distinct positive integers")
        if len(set(widths)) != len(widths):
            raise _bad("nested_widths", widths, "a list of distinct positive integers")
        if widths and self.backend == "compiled":
            raise _bad("backend", self.backend, "'fast' or 'reference' with nested_widths "
                       "(each width is a graph of its own)")
        object.__setattr__(self, "nested_widths", tuple(sorted(widths, reverse=True)))

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for key in _SEQUENCES:
            data[key] = list(data[key])
        for name, default in _ADDED_AT_DEFAULT.items():
            if data[name] == default:
                del data[name]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        if not isinstance(data, dict):
            raise ConfigError(f"TrainConfig must be a JSON object, got {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown TrainConfig key(s) {unknown}; allowed: {sorted(known)}")
        data = dict(data)
        for key in _SEQUENCES:
            if isinstance(data.get(key), list):
                data[key] = tuple(data[key])
        return cls(**data)

    def replace(self, **changes: Any) -> TrainConfig:
        return TrainConfig.from_dict({**self.to_dict(), **changes})


def learning_rate(step: int, config: TrainConfig) -> float:
    """The learning rate of 0-based optimizer step `step`.

        warmup (step < W):   lr · (step + 1) / W
        cosine (after):      lr_min + (lr − lr_min) · ½ (1 + cos(π · (step − W) / (steps − W)))
        constant (after):    lr

    with lr_min = lr · min_lr_ratio; the decay reaches lr_min one step after the last step.
    """
    lr, warmup = config.lr, config.warmup_steps
    if step < warmup:
        return lr * (step + 1) / warmup
    if config.schedule == "constant":
        return lr
    lr_min = lr * config.min_lr_ratio
    progress = (step - warmup) / max(1, config.steps - warmup)
    return lr_min + (lr - lr_min) * 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))


def build_model(model_config: ModelConfig, train_config: TrainConfig) -> nn.Module:
    """`DecoderLM(model_config)` seeded and initialised as `train_config` says, on its device."""
    from blocklab.nn import DecoderLM

    torch.manual_seed(train_config.seed)
    model = DecoderLM(model_config, backend=train_config.backend,
                      precision=train_config.precision)
    INITS[train_config.init](model, train_config.seed, model_config.n_layers)
    return model.to(train_config.device)


def _lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy in nats: logits [B, T, V], targets [B, T]."""
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def nested_loss(forward: Callable[[torch.Tensor], torch.Tensor], model: nn.Module,
                widths: Sequence[int], batch: torch.Tensor) -> torch.Tensor:
    """Mean over `widths` of the next-token loss of batch [B, T + 1] with every FFN of `model`
    at that prefix width (`blocklab.nn.narrowed`); `forward` is the model or its DDP wrapper."""
    total = None
    for width in widths:
        with narrowed(model, width):
            loss = _lm_loss(forward(batch[:, :-1]), batch[:, 1:])
        total = loss if total is None else total + loss
    return total / len(widths)


@contextlib.contextmanager
def evaluating(model: nn.Module) -> Iterator[None]:
    """`model` in eval mode without gradients inside; back in its own mode after."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)


def evaluate(model: nn.Module, windows: dict[int, torch.Tensor],
             batch_tokens: int, *, per_window: bool = False) -> dict[int, dict[str, Any]]:
    """Loss on fixed windows per length, without gradients.

    windows: L -> LongTensor [n, L + 1]; batch_tokens // L rows per forward pass.
    Returns L -> {"loss": mean nats/token, "per_position": [L][, "per_window": [n]]}; a length
    past a learned position table gives {"loss": None, "per_position": None, "error": ...}.
    Any other error propagates: a failed run is an error, never a reading.
    """
    device = next(model.parameters()).device
    out: dict[int, dict[str, Any]] = {}
    with evaluating(model):
        for length, rows in windows.items():
            total = torch.zeros(length, dtype=torch.float64)
            windows_mean: list[torch.Tensor] = []
            try:
                for chunk in rows.split(max(1, batch_tokens // length)):
                    chunk = chunk.to(device)
                    logits = model(chunk[:, :-1])  # [b, L, V]
                    loss = F.cross_entropy(logits.transpose(1, 2), chunk[:, 1:],
                                           reduction="none")  # [b, L]
                    total += loss.double().sum(0).cpu()
                    if per_window:
                        windows_mean.append(loss.double().mean(1).cpu())
            except PositionsBeyondTable as err:  # anything else is a fault: it propagates
                out[length] = {"loss": None, "per_position": None,
                               "error": f"{type(err).__name__}: {err}".splitlines()[0]}
                continue
            per_position = total / rows.shape[0]
            out[length] = {"loss": float(per_position.mean()),
                           "per_position": per_position.tolist()}
            if per_window:
                out[length]["per_window"] = torch.cat(windows_mean).tolist()
    return out


def final_windows(val: Any, config: TrainConfig) -> dict[int, torch.Tensor]:
    """The end-of-run evaluation's windows per eval length (`final_window_count`,
    `spread_windows`)."""
    periodic = config.eval_batches * config.batch_size
    return {length: spread_windows(val, length, final_window_count(
                int(val.size), length, config.final_eval_fraction, periodic))
            for length in config.eval_lengths}


def standard_error(window_losses: list[float]) -> float | None:
    """sd (ddof=1) / sqrt(n) of per-window losses (equal lengths); None for n < 2."""
    n = len(window_losses)
    if n < 2:
        return None
    return float(torch.tensor(window_losses, dtype=torch.float64).std(correction=1)
                 / math.sqrt(n))


def final_batch_tokens(tc: TrainConfig) -> int:
    """Tokens per forward pass of the end-of-run evaluation (at least a training batch's)."""
    return max(tc.batch_size * tc.seq_len, FINAL_EVAL_TOKENS)


def _warm_up_evaluation(model: nn.Module, windows: dict[int, torch.Tensor],
                        batch_tokens: int) -> None:
    """`evaluate` once per chunk shape it will meet, so a compiled model builds them now."""
    for length, rows in windows.items():
        per_chunk = max(1, batch_tokens // length)
        for n in {min(per_chunk, rows.shape[0]), rows.shape[0] % per_chunk} - {0}:
            evaluate(model, {length: rows[:n]}, batch_tokens)


class _ResidualRecorder:
    """Forward hooks on every layer: RMS of the residual stream each layer outputs, on demand."""

    def __init__(self, layers: nn.ModuleList) -> None:
        self.active = False
        self.squares: list[torch.Tensor] = []  # mean square per layer, 0-d
        self.handles = [layer.register_forward_hook(self._hook) for layer in layers]

    def _hook(self, module: nn.Module, inputs: Any, output: Any) -> None:
        if self.active:
            x = output[0] if isinstance(output, tuple) else output
            self.squares.append(x.detach().float().pow(2).mean())

    def take(self) -> list[float]:
        """RMS per layer since the last call, over the global batch inside a process group
        (equal slices: the mean of the ranks' mean squares is the global one)."""
        squares, self.squares = self.squares, []
        if not squares:
            return []
        stacked = torch.stack(squares)  # [n_layers]
        if distributed.active():
            stacked = distributed.mean_over_ranks(stacked)
        return stacked.sqrt().tolist()

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def _grad_norm(params: list[nn.Parameter]) -> float:
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return 0.0
    return float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g)
                                                        for g in grads])))


def layer_grad_norms(layers: nn.ModuleList) -> tuple[list[float], list[float | None]]:
    """(whole-layer, FFN down_proj weight) gradient norms, one per layer."""
    whole, down = [], []
    for layer in layers:
        whole.append(_grad_norm(list(layer.parameters())))
        proj = getattr(getattr(layer, "ffn", None), "down_proj", None)
        down.append(None if proj is None else _grad_norm([proj.weight]))
    return whole, down


def make_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.AdamW:
    """The one optimizer of every loop: AdamW, weight decay on matrices and embeddings only
    (not on norm gains and biases, as in nanoGPT and GPT-3)."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": config.weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=config.lr, betas=config.betas, eps=config.adam_eps)


@dataclass(frozen=True)
class StepResult:
    """One step: the batch's loss (nats/token, mean over ranks), the gradient norm before
    clipping (None when it stopped at the loss), and whether the parameters were updated."""

    loss: float
    grad_norm: float | None
    stepped: bool


def train_step(forward: Callable[[torch.Tensor], torch.Tensor], batch: torch.Tensor,
               optimizer: torch.optim.Optimizer, params: list[nn.Parameter], *, lr: float,
               grad_clip: float | None, loss_ok: Callable[[float], bool] | None = None,
               after_backward: Callable[[], None] | None = None,
               loss_of: Callable[[torch.Tensor], torch.Tensor] | None = None) -> StepResult:
    """The step every loop runs on batch [B, T + 1]: set lr, next-token loss, backward, clip
    to `grad_clip` (None: no clipping), AdamW.

    `loss_ok(loss)` False stops before backward, a non-finite gradient norm before the update;
    `after_backward` runs before clipping; `loss_of(batch)` replaces the next-token loss.
    """
    for group in optimizer.param_groups:
        group["lr"] = lr
    loss = (_lm_loss(forward(batch[:, :-1]), batch[:, 1:]) if loss_of is None
            else loss_of(batch))
    # Every rank must see the same loss: it decides when all of them stop.
    loss_value = (distributed.mean_over_ranks(loss).item() if distributed.active()
                  else loss.item())
    if loss_ok is not None and not loss_ok(loss_value):
        return StepResult(loss_value, None, False)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if after_backward is not None:
        after_backward()
    grad_norm = float(torch.nn.utils.clip_grad_norm_(
        params, math.inf if grad_clip is None else grad_clip))
    if not math.isfinite(grad_norm):
        return StepResult(loss_value, grad_norm, False)
    optimizer.step()
    return StepResult(loss_value, grad_norm, True)


def make_progress(console: Console | None = None) -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("loss {task.fields[loss]}"), TimeElapsedColumn(), TextColumn("eta"),
        TimeRemainingColumn(), console=console,
    )


@contextlib.contextmanager
def _progress_task(progress: Progress | bool, label: str, total: int) -> Iterator[Any]:
    """Yield update(advance, loss) for a bar: our own (True), a task on the caller's, or none."""
    if progress is False or progress is None:
        yield lambda advance, loss: None
        return
    owned = progress is True
    bar = make_progress() if owned else progress
    with bar if owned else contextlib.nullcontext():
        task = bar.add_task(label, total=total, loss="—")
        try:
            yield lambda advance, loss: bar.update(task, advance=advance, loss=f"{loss:.4f}")
        finally:
            if not owned:  # a suite keeps its own overall bar; finished runs leave it
                bar.update(task, visible=False)


def check_device(device: str, subject: str | None = None) -> None:
    """InputError (naming `subject`) for a CUDA device this PyTorch or machine lacks."""
    if not device.startswith("cuda"):
        return
    subject = f"TrainConfig.device={device!r}" if subject is None else subject
    if not torch.cuda.is_available():
        raise InputError(f"{subject} is not allowed here: this PyTorch ({torch.__version__}) "
                         "sees no CUDA device; use 'cpu'")
    index = device.partition(":")[2]
    if index and not (index.isdigit() and int(index) < torch.cuda.device_count()):
        raise InputError(f"{subject} is not allowed here: CUDA devices are "
                         f"0..{torch.cuda.device_count() - 1}")


def check_seq_len(mc: ModelConfig, tc: TrainConfig) -> None:
    """Refuse training windows longer than a learned position table before any data is read
    (evaluation lengths past it are recorded as unavailable instead)."""
    if mc.position == "learned" and tc.seq_len > mc.max_seq_len:
        raise ConfigError(
            f"TrainConfig.seq_len={tc.seq_len} is not allowed with learned positions of "
            f"ModelConfig.max_seq_len={mc.max_seq_len} (max_position_embeddings): the table has "
            f"no row for positions {mc.max_seq_len} to {tc.seq_len - 1}; expected seq_len <= "
            f"{mc.max_seq_len}, a longer table, or another position scheme")


def check_nested_widths(mc: ModelConfig, tc: TrainConfig) -> None:
    if tc.nested_widths and max(tc.nested_widths) > mc.d_ff:
        raise ConfigError(f"TrainConfig.nested_widths={list(tc.nested_widths)} is not allowed "
                          f"for this model; expected widths of at most its d_ff = {mc.d_ff}")


def check_vocab(mc: ModelConfig, corpus: Corpus) -> None:
    if mc.vocab_size < corpus.tokenizer.vocab_size:
        raise ConfigError(f"ModelConfig.vocab_size={mc.vocab_size} is smaller than the "
                          f"{corpus.tokenizer.name} tokenizer's {corpus.tokenizer.vocab_size}")


def memory_bytes() -> tuple[int | None, int | None]:
    """(MemAvailable, MemTotal) from /proc/meminfo (Linux), None where it cannot be read."""
    found: dict[str, int] = {}
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                key, _, rest = line.partition(":")
                if key in ("MemAvailable", "MemTotal"):
                    found[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return found.get("MemAvailable"), found.get("MemTotal")


def check_fits_in_memory(mc: ModelConfig, tc: TrainConfig) -> None:
    """Refuse a CPU run whose estimated memory exceeds what is available, before allocating: at
    least 16 bytes a parameter (weights, gradients, two AdamW moments), and every layer's
    forward tensors, the logits and their gradient at 4 bytes an element (`blocklab.budget`)."""
    from blocklab.budget import count_params
    from blocklab.budget.memory import layer_activation_elements

    if tc.device != "cpu":
        return
    available = memory_bytes()[0]
    state = 16 * count_params(mc).total
    per_layer = layer_activation_elements(mc, tc.batch_size, tc.seq_len)["total_fused"]
    activations = 4 * (mc.n_layers * per_layer + 2 * tc.batch_size * tc.seq_len * mc.vocab_size)
    if available is not None and state + activations > available:
        gib = 2**30
        raise InputError(
            f"this run needs at least {(state + activations) / gib:,.1f} GiB (parameters, "
            f"gradients and AdamW moments {state / gib:,.1f} GiB, activations "
            f"{activations / gib:,.1f} GiB), more than the {available / gib:,.1f} GiB "
            "available; use a smaller model, batch size or sequence length")


def train(model_config: ModelConfig, train_config: TrainConfig,
          data: str | Path | Corpus = "stdlib", *, progress: Progress | bool = False,
          label: str | None = None) -> tuple[nn.Module, RunResult]:
    """Train one model; return it and its `RunResult` (see `run`).

    data: "stdlib", "shakespeare", a path or a `Corpus`. progress: False, True (a bar of its
    own) or a `Progress` to add a task to (rank 0 only). Inside a process group every rank
    calls this alike and gets the same result; batch_size is the global batch.
    """
    started = time.perf_counter()
    mc, tc = model_config, train_config
    check_device(tc.device)
    check_seq_len(mc, tc)
    check_nested_widths(mc, tc)
    check_fits_in_memory(mc, tc)
    rank, world_size = distributed.rank_and_world_size()
    rows = distributed.local_rows(tc.batch_size, rank, world_size)  # this rank's slice
    if rank != 0:
        progress = False
    corpus = load_corpus(data)
    check_vocab(mc, corpus)
    periodic = {length: validation_windows(corpus.val, length, tc.eval_batches * tc.batch_size)
                for length in tc.eval_lengths}
    # (windows per length, tokens per forward): the periodic evaluation, then the final one
    evaluations = [(periodic, tc.batch_size * tc.seq_len)]
    if tc.final_eval_fraction > 0:
        evaluations.append((final_windows(corpus.val, tc), final_batch_tokens(tc)))
    entropy = unigram_entropy(corpus.train, corpus.tokenizer.vocab_size)
    reference = references(corpus)
    limit = None if tc.divergence_factor is None else tc.divergence_factor * math.log(
        mc.vocab_size)
    label = label or f"{mc.ffn}·{mc.norm}·{mc.placement}·{mc.position} seed {tc.seed}"
    curves = Curves(val={str(length): [] for length in tc.eval_lengths})
    status, reason, steps_done, train_seconds = "ok", None, 0, 0.0
    last_eval: dict[int, dict[str, Any]] | None = None

    def validate() -> None:
        nonlocal last_eval
        last_eval = evaluate(model, *evaluations[0], per_window=True)
        curves.val_step.append(steps_done)
        for length, scores in last_eval.items():
            curves.val[str(length)].append(scores["loss"])

    with torch_threads(tc.threads or torch.get_num_threads()), deterministic_algorithms(), \
            _progress_task(progress, label, tc.steps) as advance:
        env = environment(tc.device)
        env.update(distributed.describe())
        model = build_model(mc, tc)
        model.train()
        forward = distributed.data_parallel(model)  # `model` itself outside a process group
        params = list(model.parameters())
        optimizer = make_optimizer(model, tc)
        recorder = _ResidualRecorder(model.layers)
        loss_of = (partial(nested_loss, forward, model, tc.nested_widths)
                   if tc.nested_widths else None)
        compile_s = None
        if tc.backend == "compiled":
            tick = time.perf_counter()
            batch = sample_batch(corpus.train, seed=tc.seed, step=0, batch_size=tc.batch_size,
                                 seq_len=tc.seq_len)[rows].to(tc.device)
            # Every graph the run needs, so none compiles in a timed step: training with the
            # recorder's hooks on and off, and evaluation at each length and chunk shape.
            for active in (True, False):
                recorder.active = active
                _lm_loss(forward(batch[:, :-1]), batch[:, 1:]).backward()
            recorder.take()
            optimizer.zero_grad(set_to_none=True)
            for windows, batch_tokens in evaluations:
                _warm_up_evaluation(model, windows, batch_tokens)
            compile_s = time.perf_counter() - tick
        try:
            for step in range(tc.steps):
                tick = time.perf_counter()
                lr = learning_rate(step, tc)
                batch = sample_batch(corpus.train, seed=tc.seed, step=step,
                                     batch_size=tc.batch_size, seq_len=tc.seq_len)
                batch = batch[rows].to(tc.device)  # [B / world_size, T + 1]
                log_now = tc.log_every > 0 and step % tc.log_every == 0
                recorder.active = log_now

                def log_gradients(step=step, log_now=log_now) -> None:
                    recorder.active = False
                    if log_now:
                        whole, down = layer_grad_norms(model.layers)
                        curves.layer_grad_norms.step.append(step)
                        curves.layer_grad_norms.layer.append(whole)
                        curves.layer_grad_norms.down_proj.append(down)
                        curves.residual_rms.step.append(step)
                        curves.residual_rms.layer.append(recorder.take())

                result = train_step(
                    forward, batch, optimizer, params, lr=lr, grad_clip=tc.grad_clip,
                    loss_ok=lambda v: math.isfinite(v) and (limit is None or v <= limit),
                    after_backward=log_gradients, loss_of=loss_of)
                recorder.active = False
                curves.step.append(step)
                curves.train_loss.append(result.loss)
                curves.lr.append(lr)
                curves.grad_norm.append(result.grad_norm)
                if result.grad_norm is None:
                    status, reason = "diverged", f"train loss {result.loss:.4g} at step {step}"
                    if math.isfinite(result.loss):
                        reason += f" (above {tc.divergence_factor:g}·ln {mc.vocab_size})"
                    break
                if not result.stepped:
                    status, reason = "diverged", f"gradient norm {result.grad_norm} at step {step}"
                    break
                steps_done = step + 1
                train_seconds += time.perf_counter() - tick
                advance(1, result.loss)
                if tc.eval_every and steps_done % tc.eval_every == 0:
                    validate()
                if tc.stuck_patience is not None and \
                        steps_done == tc.warmup_steps + tc.stuck_patience:
                    recent = curves.train_loss[-_SMOOTH:]
                    smoothed = sum(recent) / len(recent)
                    if smoothed > entropy:
                        status = "stuck"
                        reason = (f"train loss {smoothed:.4f} (mean of last {len(recent)}) "
                                  f"above the unigram entropy {entropy:.4f} after {steps_done} "
                                  "steps")
                        break
            # With the recorder's hooks still on, as at warm-up: else new graphs would compile.
            if not curves.val_step or curves.val_step[-1] != steps_done:
                validate()
            final_eval_s, scored = None, last_eval
            if len(evaluations) > 1:
                tick = time.perf_counter()
                scored = evaluate(model, *evaluations[1], per_window=True)
                final_eval_s = time.perf_counter() - tick
        finally:
            recorder.remove()

    finite_losses = [x for x in curves.train_loss if real(x)][-_SMOOTH:]
    val_loss = scored[tc.seq_len]["loss"]
    window_losses = scored[tc.seq_len].get("per_window") or []
    tail = curves.val[str(tc.seq_len)][-TAIL_EVALS:]
    final = {
        "val_loss": val_loss,
        "val_loss_se": standard_error(window_losses),
        "val_windows": len(window_losses),
        "val_tokens": len(window_losses) * tc.seq_len,
        "val_loss_tail": (sum(tail) / len(tail) if tail and None not in tail else None),
        "val_loss_tail_n": len(tail),
        "val_bpb": bits_per_byte(val_loss) if real(val_loss) else None,
        "val_loss_by_length": {str(k): v["loss"] for k, v in scored.items()},
        "per_position_loss": {str(k): v["per_position"] for k, v in scored.items()},
        "train_loss": sum(finite_losses) / len(finite_losses) if finite_losses else None,
        "unigram_entropy": entropy,
        "unigram_entropy_bpb": bits_per_byte(entropy),
        "params": sum(p.numel() for p in model.parameters()),  # a tied embedding once
        "unigram_loss": reference.unigram,
        "bigram_loss": reference.bigram,
        "learned_share": reference.share(val_loss) if real(val_loss) else None,
    }
    if status == "ok" and tc.learn_margin is not None and not (
            real(val_loss) and reference.share(val_loss) >= tc.learn_margin):
        status = "did_not_learn"
        reached = (f"final val loss {val_loss:.3f} reaches {reference.share(val_loss):.0%}"
                   if real(val_loss) else "no finite final val loss reaches any")
        reason = (f"{reached} of the way from the unigram reference {reference.unigram:.3f} "
                  f"to the bigram reference {reference.bigram:.3f}; the suite registered "
                  f"{tc.learn_margin:.0%} as trained")
    errors = {str(k): v["error"] for k, v in scored.items() if "error" in v}
    if errors:
        final["eval_errors"] = errors
    result = {
        "run_id": run_id(mc, tc, corpus.name),
        "status": status,
        "reason": reason,
        "model_config": mc.to_dict(),
        "train_config": tc.to_dict(),
        "data": corpus.info(),
        "environment": env,
        "curves": dataclasses.asdict(curves),
        "final": final,
        "steps_done": steps_done,
        # The run's own time: compiling is a one-off cost of the machine's cache, kept apart.
        "wall_time_s": time.perf_counter() - started - (compile_s or 0.0),
        "train_time_s": train_seconds,
        "compile_s": compile_s,
        "final_eval_s": final_eval_s,
        "backends": model.backends(),
        "ms_per_step": 1000 * train_seconds / steps_done if steps_done else None,
        "tokens_per_s": (steps_done * tc.batch_size * tc.seq_len / train_seconds
                         if train_seconds > 0 else None),
    }
    # Through JSON's values (non-finite -> None): the same before and after it is stored.
    return model, RunResult.from_dict(json_safe(result))


def run(model_config: ModelConfig, train_config: TrainConfig,
        data: str | Path | Corpus = "stdlib", out_path: str | Path | None = None, *,
        progress: Progress | bool = False, label: str | None = None) -> RunResult:
    """Train one model; return its `RunResult` (status "ok", "diverged", "stuck" or
    "did_not_learn"; non-finite numbers as None) and write it atomically to `out_path` if
    given (rank 0 alone)."""
    _, result = train(model_config, train_config, data, progress=progress, label=label)
    if out_path is not None and distributed.is_main():  # one writer in a process group
        write_atomic(Path(out_path), result_json(result))
    return result
