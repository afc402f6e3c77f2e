"""`position`: train at length L, read at 1×, 2×, … 16× L: every position scheme, RoPE scaling.

Arms, all the same model except for how it learns positions (C21):

    none              no position signal (NoPE; causal masking alone orders tokens)
    learned           learned absolute table with L rows: cannot run past L, recorded, not
                      crashed
    learned-8L        learned table with (max multiple)·L rows, trained at L, so rows >= L only
                      ever see weight decay
    sinusoidal        fixed sin/cos table added to the embeddings
    sinusoidal+scale  the same with token embeddings × sqrt(d_model), the original
                      Transformer's recipe (Vaswani et al. 2017, §3.4): without it the
                      unit-amplitude table swamps N(0, 0.02²) embeddings and the arm trains
                      worse even within L
    rope              rotary q/k (theta 10,000), rotary table sized L and extended on demand
    alibi             linear distance bias on the attention scores

Each arm trains with `trainer.train` on stdlib windows of L tokens. Its model is then scored on
fixed validation windows of m·L tokens, m in the size's multiples:

    loss_beyond_L   mean loss at the positions p >= L of each window (`loss_beyond`): the
                    tokens the model reads at positions it never trained on (m >= 2)
    sliding         the same tokens scored with sliding windows of L (stride L/2), so no
                    position >= L is ever used: what the model gets without extrapolating
    per_position    the loss curve over positions, in buckets of L/8

Per-position losses are indexed by the input position p: entry p is the loss of predicting
token p + 1 from tokens 0..p.

The trained RoPE model is also read with scaling applied at inference, training-free (same
weights, `config.replace(rope_scaling=...)`, factor m = eval length / L, original length L):
linear (position interpolation), ntk, dynamic, yarn with the paper's β and yarn with β re-derived
for our L (`yarn_betas`). It is also fine-tuned briefly at a longer length with each scaling
of the size's `finetune` (as the papers do; plain RoPE with the same fine-tune is the control)
and read again (C22, C30).

Two checks need no training: `rope_relative_error` measures |score(m, n) − score(m+s, n+s)| in
float64, float32, bfloat16 and float16 (C20), and every trained model is run at positions far
past its max_seq_len to see that outputs stay finite (C26). The passkey test (full size) trains a
separate passkey model per arm at L and scores retrieval by length and depth.

Order without positions (C29): every trained arm's next-token distribution after a validation
prefix is compared with the one after the same prefix with its first k − 1 tokens reversed and
its last token kept (`order_probe`, total-variation distance and KL). Cost (C31): one timed run
(alone, one thread) builds the none, rope and alibi models and interleaves their training steps
and KV-cache decode steps, counts parameters with `blocklab.budget`, and names the SDPA kernel
PyTorch dispatches for each (profiler op names) and the mask attention.py hands it.

`Summary.data` (read by the claims ledger, C20–C22, C26, C29–C31, and the report) is a
`blocklab.experiments.summaries.PositionData`; multiples m of L are string keys ("2", "4", ...).
Per arm (`PositionArm`): loss on positions ≥ L at each multiple, the sliding-window loss on the
same tokens, their paired difference (nats and %), bucketed per-position loss and passkey
accuracy; a read a learned table cannot make is the string "unavailable (table)". Beside the
arms: RoPE's relative-position error by dtype, finiteness far past max_seq_len, the YaRN ramps,
every training run's status, the order probe per arm (`OrderProbe`), the cost run
(`PositionCost`) and the fine-tune settings (`FineTune`).

Arm names: the seven above, "rope+<scaling>" for training-free scaling and
"rope[+<scaling>]+ft<k>x" for the fine-tuned variants.

What each size runs (`blocklab.experiments.suites.evaluation`): at --size tiny and --size quick
the suite plans only the runs a registered rule grades. C21 grades learned-<max>L,
sinusoidal+scale, alibi and rope (its scalings are read off the rope run, its fine-tunes extend
it), C30 the rope run, C29 the none run and C31 the cost run; so those sizes train none,
learned-<max>L, sinusoidal+scale, rope and alibi and time the cost run. The learned table of L
rows and sinusoidal without the embedding scale (`REPORTED_ONLY`), the passkey models and the
relative-error run (reported only) run at --size full, and the summary says so. Reads made
inside a graded run (every training-free scaling, the order probe, the far-out check) ride
along with it.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from blocklab.config import ModelConfig
from blocklab.errors import InputError
from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import train_identity
from blocklab.experiments.suites.base import (
    TUNING_SEEDS,
    Results,
    RunSpec,
    Suite,
    format_ci,
    mean_ci,
    paired_difference,
)
from blocklab.experiments.suites.evaluation import (
    FINAL_EVAL_FRACTION,
    full_only,
    graded_only,
    listed,
)
from blocklab.experiments.suites.tuning import LrGrid, lr_trials, tune_arm, tune_arms
from blocklab.experiments.suites.tuning import tuning_table as tuned_table
from blocklab.experiments.summaries import (
    ArmTuning,
    FineTune,
    FiniteRead,
    Interval,
    LrTrial,
    OrderProbe,
    PasskeySummary,
    PerPosition,
    PositionArm,
    PositionCost,
    PositionData,
    PositionRun,
    Read,
    SchemeCost,
    Summary,
    Table,
    TimeRatio,
    YarnBetas,
    YarnRamp,
)

UNAVAILABLE = "unavailable (table)"
THETA = 10000.0
# YaRN's beta_fast = 32, beta_slow = 1 were tuned on Llama 2: 4096 tokens, theta 10^4.
YARN_REFERENCE_LENGTH = 4096
YARN_PAPER_BETAS = (32.0, 1.0)
SCALINGS = ("linear", "ntk", "dynamic", "yarn", "yarn-rescaled")
RELATIVE_ERROR_SHIFTS = (0, 10, 100, 1000, 10_000, 100_000, 1_000_000)
RELATIVE_ERROR_DTYPES = ("float64", "float32", "bfloat16", "float16")
FAR_POSITION = 100_000  # C26: positions this far past max_seq_len must still give finite logits

# finetune: `steps` of AdamW at `factor`·L tokens per window, for the RoPE model with each
# scaling of `kinds` (None: plain RoPE, the control that gets the same extra training), the
# scaling's factor being the longest multiple read. cost: the timed run of C31.
SIZES: dict[str, dict[str, Any]] = {
    "tiny": {
        "model": {"d_model": 32, "n_layers": 2, "n_heads": 2}, "L": 128, "mults": (1, 2, 4),
        "train": {"steps": 4, "batch_size": 2, "warmup_steps": 1,
                  "lr_grid": LrGrid((1e-3, 3e-3, 1e-2), 3.0, max_extensions=1),
                  "tuning_seeds": 0},
        "eval_windows": 2,
        "finetune": {"factor": 2, "steps": 2, "lr": 1e-3, "kinds": (None, "ntk", "yarn")},
        "passkey": None,  # no registered rule grades it: full only
        "order": {"prefix_len": 32, "prefixes": 4},
        "cost": {"warmup": 1, "repeats": 3, "decode_tokens": 4},
    },
    "quick": {
        "model": {"d_model": 64, "n_layers": 2, "n_heads": 2}, "L": 128,
        "mults": (1, 2, 4, 8, 16),
        # Every arm at the grid's middle lr (tuning_seeds 0): each graded part compares an arm
        # with itself (loss past L against the same model's sliding windows; order without
        # positions), not arms with one another, and tuning five arms would cost about 5
        # core-minutes of the quick budget. --size full tunes every arm.
        "train": {"steps": 300, "batch_size": 16, "warmup_steps": 20,
                  "lr_grid": LrGrid((1e-3, 3e-3, 1e-2), 3.0), "tuning_seeds": 0},
        "eval_windows": 16,
        "finetune": {"factor": 4, "steps": 40, "lr": 1e-3, "kinds": (None, "ntk", "yarn")},
        "passkey": None,
        "order": {"prefix_len": 64, "prefixes": 64},
        "cost": {"warmup": 2, "repeats": 20, "decode_tokens": 32},
    },
    "full": {
        "model": {"d_model": 128, "n_layers": 4, "n_heads": 4}, "L": 256,
        "mults": (1, 2, 4, 8, 16),
        "train": {"steps": 2000, "batch_size": 32, "warmup_steps": 100,
                  "lr_grid": LrGrid((5e-4, 1e-3, 2e-3, 4e-3, 8e-3), 2.0), "tuning_seeds": 2},
        "eval_windows": 32,
        "finetune": {"factor": 4, "steps": 200, "lr": 5e-4,
                     "kinds": (None, "linear", "ntk", "yarn", "yarn-rescaled")},
        "passkey": {"steps": 2000, "batch_size": 32, "lr": 3e-3, "n": 32,
                    "depths": (0.1, 0.3, 0.5, 0.7, 0.9)},
        "order": {"prefix_len": 128, "prefixes": 128},
        "cost": {"warmup": 3, "repeats": 30, "decode_tokens": 64},
    },
}
# C31's timed run compares these schemes; "none" is the baseline of every ratio.
COST_SCHEMES = ("none", "rope", "alibi")
# C31's parameter count also covers the absolute schemes (no timing: they add to the input
# embedding only).
PARAM_SCHEMES = ("none", "learned", "sinusoidal", "rope", "alibi")


# The schemes no registered rule grades: C21 reads a learned table long enough to be read past
# L and sinusoidal with the embedding scale instead. Trained at full only.
REPORTED_ONLY = ("learned", "sinusoidal")


def schemes(size: str) -> tuple[str, ...]:
    """Every position arm of the suite's design at `size` (what the full size trains)."""
    return ("none", "learned", f"learned-{max(SIZES[size]['mults'])}L", "sinusoidal",
            "sinusoidal+scale", "rope", "alibi")


def arms(size: str) -> tuple[str, ...]:
    """The arms `size` trains: every scheme at full; at tiny and quick those a registered
    rule grades (`evaluation.graded_only`)."""
    return tuple(a for a in schemes(size)
                 if not (graded_only(size) and a in REPORTED_ONLY))


def arm_config(size: str, arm: str) -> ModelConfig:
    """The model of `arm`: only `position` differs, and with it the learned table's length or
    the embedding scale of sinusoidal+scale."""
    config = SIZES[size]
    L = config["L"]
    position = arm.split("-")[0].split("+")[0]
    max_seq_len = max(config["mults"]) * L if arm.startswith("learned-") else L
    return ModelConfig(vocab_size=256, **config["model"], position=position,
                       max_seq_len=max_seq_len, rope_theta=THETA,
                       embed_scale=arm == "sinusoidal+scale", name=f"position-{arm}")


def train_config(size: str, seed: int, precision: str = "fp32", lr: float | None = None):
    """The training run of an arm at `lr` (its tuned peak lr; None: the middle of the
    registered grid, for the runs no arm's tuning applies to, such as the timed cost run)."""
    from blocklab.experiments.trainer import TrainConfig

    t = SIZES[size]["train"]
    base = t["lr_grid"].base
    return TrainConfig(steps=t["steps"], batch_size=t["batch_size"], seq_len=SIZES[size]["L"],
                       lr=base[len(base) // 2] if lr is None else lr,
                       warmup_steps=t["warmup_steps"], eval_every=0, log_every=0,
                       eval_batches=1, seed=seed, threads=1, precision=precision,
                       final_eval_fraction=FINAL_EVAL_FRACTION[size])


# --- YaRN's β for our length ----------------------------------------------------------------------
def yarn_betas(L: int, reference_length: int = YARN_REFERENCE_LENGTH,
               betas: tuple[float, float] = YARN_PAPER_BETAS) -> tuple[float, float]:
    """(beta_fast, beta_slow) for training length L, keeping YaRN's split of the spectrum.

    YaRN ramps channel pair i by the number of turns it completes within the original length,
    L / (2π θ^(2i/r)). At a fixed fraction f = 2i/r of the rotary spectrum that count is
    L / (2π θ^f): proportional to L, whatever head_dim is. β_fast = 32 and β_slow = 1 were
    tuned at L = 4096 with θ = 10⁴ (Llama 2), where pairs below 33% of the spectrum are kept,
    pairs above 70% are interpolated and the rest are ramped. Scaling both β by
    L / reference_length keeps those fractions at our L (and at our θ, which is the same).
    """
    scale = L / reference_length
    return betas[0] * scale, betas[1] * scale


def yarn_ramp_pairs(L: int, rotary_dim: int, beta_fast: float, beta_slow: float,
                    theta: float = THETA) -> tuple[int, int]:
    """The (low, high) pair indices of YaRN's ramp, as `blocklab.nn.rope_scaling.yarn_rope`
    computes them (truncated): pairs < low keep their frequency, pairs >= high are divided by
    the factor."""
    def pair_for_turns(turns: float) -> float:
        return rotary_dim * math.log(L / (turns * 2 * math.pi)) / (2 * math.log(theta))

    low = max(math.floor(pair_for_turns(beta_fast)), 0)
    high = min(math.ceil(pair_for_turns(beta_slow)), rotary_dim - 1)
    return low, high


def scaling_config(kind: str, factor: float, L: int) -> dict[str, Any]:
    """The rope_scaling dict of `kind` at `factor` for a model trained at L."""
    if kind in ("linear", "ntk"):
        return {"rope_type": kind, "factor": float(factor)}
    scaling = {"rope_type": "yarn" if kind.startswith("yarn") else kind,
               "factor": float(factor), "original_max_position_embeddings": L}
    if kind == "yarn-rescaled":
        scaling["beta_fast"], scaling["beta_slow"] = yarn_betas(L)
    return scaling


def with_rope_scaling(model, scaling: dict[str, Any] | None):
    """A copy of a trained RoPE `DecoderLM` with `scaling`: same weights, backend and precision,
    new rotary table."""
    from blocklab.nn import DecoderLM

    scaled = DecoderLM(model.config.replace(rope_scaling=scaling), backend=model.backend,
                       precision=model.precision)
    scaled.load_state_dict(model.state_dict())
    return scaled.eval()


# --- measurements ---------------------------------------------------------------------------------
def loss_beyond(per_position: Sequence[float], L: int) -> float:
    """Mean of the per-position losses at input positions p >= L (the tokens past training)."""
    if len(per_position) <= L:
        raise InputError(f"a window of {len(per_position)} positions has none at or past L={L}")
    return float(np.mean(np.asarray(per_position[L:], dtype=np.float64)))


def sliding_window_loss(model, rows, window: int, stride: int,
                        batch_tokens: int = 16384) -> list[float]:
    """Per-position loss of `rows` [N, n + 1] read in windows of `window` tokens.

    Windows start at 0, stride, 2·stride, ... (n − window must be a multiple of stride); the
    first window scores all its targets, every later one only its last `stride`, so every
    target is scored once, with between window − stride + 1 and window tokens of context, at
    positions below `window`. Returns [n] losses, averaged over the N rows.
    """
    import torch
    import torch.nn.functional as F

    n_rows, n = rows.shape[0], rows.shape[1] - 1
    if n < window or (n - window) % stride:
        raise InputError(f"sliding windows of {window} with stride {stride} do not tile {n} "
                         "positions")
    starts = list(range(0, n - window + 1, stride))
    pieces = torch.stack([rows[:, s:s + window + 1] for s in starts], dim=1)  # [N, W, window+1]
    flat = pieces.flatten(0, 1)
    losses = []
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for chunk in flat.split(max(1, batch_tokens // window)):
                logits = model(chunk[:, :-1])  # [b, window, V]
                losses.append(F.cross_entropy(logits.transpose(1, 2), chunk[:, 1:],
                                              reduction="none"))
    finally:
        model.train(was_training)
    loss = torch.cat(losses).view(n_rows, len(starts), window)
    per_position = torch.empty(n_rows, n, dtype=torch.float64)
    for w, start in enumerate(starts):
        keep = 0 if w == 0 else window - stride
        per_position[:, start + keep:start + window] = loss[:, w, keep:].double()
    return per_position.mean(0).tolist()


def extrapolation(model, val_tokens, L: int, mults: Sequence[int], n_windows: int, *,
                  sliding: bool = True) -> dict[str, Any]:
    """Full-context and sliding-window losses of `model` at every multiple of L.

    Returns {"loss_at_L", "loss_beyond_L": {m: loss | UNAVAILABLE}, "sliding": {m: loss},
    "per_position": {m: [m·L] | None}, "errors": {m: message}}, multiples as strings.
    """
    from blocklab.experiments.data import validation_windows
    from blocklab.experiments.trainer import evaluate

    out: dict[str, Any] = {"loss_at_L": None, "loss_beyond_L": {}, "sliding": {},
                           "per_position": {}, "errors": {}}
    for m in mults:
        rows = validation_windows(val_tokens, m * L, n_windows)
        scores = evaluate(model, {m * L: rows}, batch_tokens=16384)[m * L]
        key = str(m)
        out["per_position"][key] = scores["per_position"]
        if scores["loss"] is None:
            out["errors"][key] = scores["error"]
            if m > 1:
                out["loss_beyond_L"][key] = UNAVAILABLE
        elif m == 1:
            out["loss_at_L"] = scores["loss"]
        else:
            out["loss_beyond_L"][key] = loss_beyond(scores["per_position"], L)
        if sliding and m > 1:
            curve = sliding_window_loss(model, rows, L, L // 2)
            out["sliding"][key] = loss_beyond(curve, L)
    return out


def finite_far_out(model, position: int = FAR_POSITION, tokens: int = 16) -> dict[str, Any]:
    """Run `model` on `tokens` tokens at positions position .. position + tokens − 1, in float32
    and bfloat16: are the logits finite? A learned table raises instead (recorded)."""
    import copy

    import torch

    ids = torch.arange(tokens)[None] % model.config.vocab_size
    positions = torch.arange(position, position + tokens)
    out: dict[str, Any] = {"position": position, "max_seq_len": model.config.max_seq_len}
    for dtype in ("float32", "bfloat16"):
        copy_ = copy.deepcopy(model).to(getattr(torch, dtype)).eval()
        try:
            with torch.no_grad():
                logits = copy_(ids, positions=positions)
            out[dtype] = bool(torch.isfinite(logits).all())
        except ValueError as err:
            out[dtype] = None
            out["error"] = str(err).splitlines()[0]
    return out


def rope_relative_error(dtype: str, shifts: Sequence[int] = RELATIVE_ERROR_SHIFTS, *,
                        head_dim: int = 64, theta: float = THETA, samples: int = 64,
                        seed: int = 0) -> list[list[float | None]]:
    """[[s, max |score(m, n) − score(m + s, n + s)|], ...] with RoPE done entirely in `dtype`.

    Positions, frequencies, angles, cos/sin and the rotation are all computed in `dtype` (as
    code that casts everything to the model dtype does); the dot product q·k / sqrt(head_dim)
    is then taken in float64, so only the position arithmetic is measured. q, k ~ N(0, 1) and
    the offsets m − n in [0, 64) are drawn once from `seed` and reused for every shift; the
    maximum over `samples` draws is reported. Exactly, RoPE scores depend on m − n only, so the
    error is rounding alone; NaN/inf (a float16 position past 65504) is reported as None.
    """
    import torch

    dt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(samples, head_dim, generator=g, dtype=torch.float64)
    k = torch.randn(samples, head_dim, generator=g, dtype=torch.float64)
    n = torch.randint(0, 64, (samples,), generator=g)
    m = n + torch.randint(0, 64, (samples,), generator=g)
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))

    def rotate(x, positions):
        angles = positions.to(dt)[:, None] * inv_freq.to(dt)  # [samples, head_dim/2]
        cos, sin = angles.cos(), angles.sin()
        x = x.to(dt)
        x1, x2 = x[:, :head_dim // 2], x[:, head_dim // 2:]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).double()

    def scores(shift: int):
        return (rotate(q, m + shift) * rotate(k, n + shift)).sum(-1) / math.sqrt(head_dim)

    return _shift_errors(scores, shifts)


def _shift_errors(scores, shifts: Sequence[int]) -> list[list[float | None]]:
    """[[s, max |scores(s) − scores(0)|], ...], None where the error is not finite."""
    base = scores(0)
    out: list[list[float | None]] = []
    for shift in shifts:
        err = (scores(shift) - base).abs().max().item()
        out.append([shift, err if math.isfinite(err) else None])
    return out


def rope_relative_error_blocklab(dtype: str, shifts: Sequence[int] = RELATIVE_ERROR_SHIFTS, *,
                                 head_dim: int = 64, theta: float = THETA, samples: int = 64,
                                 seed: int = 0) -> list[list[float | None]]:
    """As `rope_relative_error`, through blocklab's own RoPE numerics: float32 frequencies and
    angles (`rope_frequencies`, `rotary_cos_sin`, what `RotaryEmbedding` tables) and
    `apply_rotary` (rotation in float32, cast back to `dtype`), with q and k given in `dtype`.
    The table itself is skipped: at s = 10^6 it would hold a million rows."""
    import torch

    from blocklab.nn import apply_rotary
    from blocklab.nn.position import rotary_cos_sin
    from blocklab.nn.rope_scaling import rope_frequencies

    dt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(samples, head_dim, generator=g, dtype=torch.float64)
    k = torch.randn(samples, head_dim, generator=g, dtype=torch.float64)
    n = torch.randint(0, 64, (samples,), generator=g)
    m = n + torch.randint(0, 64, (samples,), generator=g)
    inv_freq, _ = rope_frequencies(head_dim, theta)

    def rotated(x, positions):
        cos, sin = rotary_cos_sin(positions[None], inv_freq)  # [1, samples, head_dim]
        x = x.to(dt)[None, None]  # [1, 1, samples, head_dim]
        out, _ = apply_rotary(x, x, cos, sin)
        return out.double().flatten(0, 2)

    def scores(shift: int):
        return (rotated(q, m + shift) * rotated(k, n + shift)).sum(-1) / math.sqrt(head_dim)

    return _shift_errors(scores, shifts)


def reversed_prefixes(rows):
    """Each row [N, k] with its first k − 1 tokens reversed and its last token kept:
    (x_1, …, x_k) -> (x_(k−1), …, x_1, x_k). The same bag of tokens and the same token being
    read, so a model without position information whose output at a position depended only on
    that bag (bidirectional attention) would predict the same next token from both."""
    import torch

    return torch.cat((rows[:, :-1].flip(1), rows[:, -1:]), dim=1)


def order_probe(model, val_tokens, prefix_len: int, prefixes: int) -> dict[str, float]:
    """How much `model`'s next-token distribution moves when a prefix is reversed (C29).

    `prefixes` fixed validation windows of `prefix_len` tokens x; p = softmax(logits after x),
    q = the same after `reversed_prefixes(x)`, both in float64. Returns the means over the
    prefixes of the total-variation distance TV = ½ Σ_v |p_v − q_v| (in [0, 1]) and of
    KL(p ‖ q) in nats.
    """
    import torch

    from blocklab.experiments.data import validation_windows

    rows = validation_windows(val_tokens, prefix_len - 1, prefixes)  # [N, prefix_len]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            logits = model(torch.cat((rows, reversed_prefixes(rows))))[:, -1].double()
    finally:
        model.train(was_training)
    log_p, log_q = logits.log_softmax(-1).chunk(2)  # [N, V] each
    tv = 0.5 * (log_p.exp() - log_q.exp()).abs().sum(-1)
    kl = (log_p.exp() * (log_p - log_q)).sum(-1)
    return {"tv": float(tv.mean()), "kl": float(kl.mean()), "prefix_len": prefix_len,
            "prefixes": prefixes}


# The line kineto, PyTorch's profiler library, writes to file descriptor 2 as each profile
# starts and as it stops ("USDT:2026-01-01 12:00:00 41:41 SyncActivityProfilerHandler.cpp:52]
# profiler_start"), at every KINETO_LOG_LEVEL.
_KINETO_MARKER = re.compile(rb"USDT:\S+ \S+ \d+:\d+ \S+:\d+\] ")


@contextlib.contextmanager
def _without_kineto_markers() -> Iterator[None]:
    """Inside, file descriptor 2 goes to a temporary file; on leaving, what was written there
    goes back to it, less kineto's marker lines (`_KINETO_MARKER`): anything else written
    meanwhile (a warning, another thread's progress bar) still appears, only later."""
    try:
        saved = os.dup(2)
    except OSError:  # no stderr at all: nothing to keep clean
        yield
        return
    if sys.stderr is not None:
        sys.stderr.flush()
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            if sys.stderr is not None:
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            kept = b"".join(line for line in held.read().splitlines(keepends=True)
                            if not _KINETO_MARKER.match(line))
            while kept:
                kept = kept[os.write(2, kept):]


def sdpa_kernels(call) -> list[str]:
    """The scaled-dot-product kernels PyTorch dispatches while `call()` runs, read from the
    profiler's op names: the aten ops named `*scaled_dot_product*` below the public entry
    point, e.g. `aten::_scaled_dot_product_flash_attention_for_cpu` (fused) or
    `aten::_scaled_dot_product_attention_math` (reference). Sorted, without repeats.

    The profiler is the public way to see ops below the one called; its two marker lines per
    profile, which no setting turns off, are kept off stderr (`_without_kineto_markers`)."""
    from torch.profiler import ProfilerActivity, profile

    with _without_kineto_markers(), profile(activities=[ProfilerActivity.CPU]) as prof:
        call()
    return sorted({e.key for e in prof.key_averages() if "scaled_dot_product" in e.key
                   and e.key != "aten::scaled_dot_product_attention"})


def sdpa_masks(call) -> list[str]:
    """How each `F.scaled_dot_product_attention` call made while `call()` runs gets its mask,
    recorded through a `TorchFunctionMode` (public API): "is_causal" (no mask tensor, the
    kernel masks by index), "none" (no mask at all: a single query sees every cached key) or
    "<dtype> mask [shape]" (a tensor the kernel must read: ALiBi's additive bias). Sorted,
    without repeats."""
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode

    seen: set[str] = set()

    class Record(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is F.scaled_dot_product_attention:
                mask = kwargs.get("attn_mask", args[3] if len(args) > 3 else None)
                if mask is not None:
                    dtype = str(mask.dtype).removeprefix("torch.")
                    seen.add(f"{dtype} mask {list(mask.shape)}")
                else:
                    seen.add("is_causal" if kwargs.get("is_causal") else "none")
            return func(*args, **kwargs)

    with Record():
        call()
    return sorted(seen)


def accepted_by(backend_name: str, call) -> bool | str:
    """True when `call()` runs with SDPA restricted to the one backend `backend_name` (an
    `SDPBackend` member name); else the first line of PyTorch's refusal."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    try:
        with sdpa_kernel(getattr(SDPBackend, backend_name)):
            call()
    except RuntimeError as err:
        return str(err).splitlines()[0]
    return True


def _decode_call(model, prompt, tokens: int):
    """A function that prefills a fresh KV cache with `prompt` [1, P] (untimed) and returns a
    function decoding `tokens` single tokens, one forward each."""
    import torch

    from blocklab.nn import KVCache

    def start():
        cache = KVCache(model.config.n_layers, max_len=prompt.shape[1] + tokens)
        with torch.no_grad():
            model(prompt, cache=cache)

        def decode():
            with torch.no_grad():
                for i in range(tokens):
                    model(prompt[:, i:i + 1], cache=cache)
        return decode
    return start


def time_position_cost(size: str, seed: int = 0, precision: str = "fp32") -> dict[str, Any]:
    """C31: parameters, step times and SDPA kernels of `COST_SCHEMES` on the size's model.

    Training steps (`trainer.train_step`: forward, backward, clip, AdamW on a batch of the
    size's shape) and decode steps (one token at a time after a prompt of L − decode_tokens
    tokens, KV cache, no grad; seconds per token) of the schemes are interleaved, the order
    rotating by one every repeat; the first `warmup` repeats are not recorded. One thread.
    Kernels: `sdpa_kernels` for a training forward+backward at L and a decode step, and
    whether SDPA restricted to `FLASH_ATTENTION` accepts each call. At this toy shape the
    times measure per-op overhead; "realistic" times prefill and decode at d_model 1024 with a
    1,024-token KV cache (`position_cost.time_shapes`; reported, not graded).
    """
    import torch

    from blocklab.budget.params import count_params
    from blocklab.experiments.data import load_corpus, sample_batch
    from blocklab.experiments.suites import position_cost
    from blocklab.experiments.trainer import build_model, make_optimizer, train_step

    started = time.perf_counter()
    config, cost = SIZES[size], SIZES[size]["cost"]
    L, n_decode = config["L"], cost["decode_tokens"]
    corpus = load_corpus("stdlib")
    tc = train_config(size, seed, precision)
    out: dict[str, Any] = {"status": "ok", "kind": "cost", "threads": 1, "L": L,
                           "batch_size": tc.batch_size, "decode_tokens": n_decode,
                           "prompt_tokens": L - n_decode, "params": {}, "params_module": {},
                           "train_s": {}, "decode_s": {}, "kernels": {}}
    for scheme in PARAM_SCHEMES:
        mc = arm_config(size, scheme)
        out["params"][scheme] = count_params(mc).total
        out["params_module"][scheme] = sum(p.numel() for p in build_model(mc, tc).parameters())
    with _one_thread():
        models = {s: build_model(arm_config(size, s), tc).train() for s in COST_SCHEMES}
        optimizers = {s: make_optimizer(m, tc) for s, m in models.items()}
        params = {s: list(m.parameters()) for s, m in models.items()}
        prompt = torch.from_numpy(corpus.val[:L].astype(np.int64))[None]  # [1, L]
        for scheme, model in models.items():
            def train_call(model=model):
                model(prompt).float().sum().backward()

            def decode_call(model=model):
                _decode_call(model, prompt[:, :L - n_decode], 1)()()

            model.train()
            out["kernels"][scheme] = {"train": sdpa_kernels(train_call),
                                      "train_mask": sdpa_masks(train_call),
                                      "flash_train": accepted_by("FLASH_ATTENTION", train_call)}
            model.eval()
            step = _decode_call(model, prompt[:, :L - n_decode], 1)()  # prefilled, untraced
            out["kernels"][scheme].update(decode=sdpa_kernels(step),
                                          decode_mask=sdpa_masks(
                                              _decode_call(model, prompt[:, :L - n_decode],
                                                           1)()),
                                          flash_decode=accepted_by("FLASH_ATTENTION",
                                                                   decode_call))
            model.zero_grad(set_to_none=True)
        times: dict[str, dict[str, list[float]]] = {"train": {s: [] for s in models},
                                                    "decode": {s: [] for s in models}}
        order = list(models)
        for i in range(cost["warmup"] + cost["repeats"]):
            batch = sample_batch(corpus.train, seed=seed, step=i, batch_size=tc.batch_size,
                                 seq_len=L)
            for scheme in order[i % len(order):] + order[:i % len(order)]:
                model = models[scheme].train()
                tick = time.perf_counter()
                train_step(model, batch, optimizers[scheme], params[scheme], lr=tc.lr,
                           grad_clip=tc.grad_clip)  # the trainer's step, timed whole
                train_s = time.perf_counter() - tick
                decode = _decode_call(model.eval(), prompt[:, :L - n_decode], n_decode)()
                tick = time.perf_counter()
                decode()
                decode_s = (time.perf_counter() - tick) / n_decode
                if i >= cost["warmup"]:
                    times["train"][scheme].append(train_s)
                    times["decode"][scheme].append(decode_s)
        out["realistic"] = position_cost.time_shapes(size, seed)
    out["train_s"], out["decode_s"] = times["train"], times["decode"]
    out["repeats"] = cost["repeats"]
    out["wall_time_s"] = time.perf_counter() - started
    return out


# --- runs -----------------------------------------------------------------------------------------
def _finetune(model, scaling: dict[str, Any] | None, corpus, *, L: int, factor: int,
              steps: int, lr: float, batch_size: int, seed: int, first_step: int):
    """Continue training a RoPE model at factor·L tokens with `scaling`; returns the new model.

    Batches keep the pre-training token count (batch_size / factor windows, at least one) and
    continue its data stream after `first_step`; AdamW at a constant `lr` after a 10% warmup.
    """
    from blocklab.experiments.data import sample_batch
    from blocklab.experiments.trainer import TrainConfig, make_optimizer, train_step

    tuned = with_rope_scaling(model, scaling).train()
    tc = TrainConfig(steps=steps, lr=lr, seed=seed)  # the trainer's AdamW groups and clip
    optimizer, params = make_optimizer(tuned, tc), list(tuned.parameters())
    warmup = max(1, steps // 10)
    rows = max(1, batch_size // factor)
    for step in range(steps):
        batch = sample_batch(corpus.train, seed=seed, step=first_step + step, batch_size=rows,
                             seq_len=factor * L)
        train_step(tuned, batch, optimizer, params, lr=lr * min(1.0, (step + 1) / warmup),
                   grad_clip=tc.grad_clip)
    return tuned.eval()


def _rope_variants(size: str, model, corpus, seed: int) -> dict[str, Any]:
    """Training-free scaling at every multiple m >= 2 (factor m), and fine-tuned variants
    (each kind of the size's `finetune`, scaling factor the longest multiple) read at every
    multiple with that scaling."""
    config = SIZES[size]
    L, mults, n = config["L"], config["mults"], config["eval_windows"]
    longer = [m for m in mults if m > 1]
    variants: dict[str, Any] = {}
    for kind in SCALINGS:
        merged: dict[str, Any] = {"loss_beyond_L": {}, "per_position": {}, "errors": {},
                                  "scaling": {}}
        for m in longer:
            scaling = scaling_config(kind, m, L)
            scaled = with_rope_scaling(model, scaling)
            result = extrapolation(scaled, corpus.val, L, [m], n, sliding=False)
            merged["loss_beyond_L"].update(result["loss_beyond_L"])
            merged["per_position"].update(result["per_position"])
            merged["errors"].update(result["errors"])
            merged["scaling"][str(m)] = scaling
        variants[f"rope+{kind}"] = merged
    ft = config["finetune"]
    if ft:
        train = config["train"]
        for kind in ft["kinds"]:
            # The scaling's factor is the longest multiple read (YaRN fine-tunes at a length
            # shorter than its target, s = target / original), the fine-tuning windows
            # factor·L tokens.
            scaling = None if kind is None else scaling_config(kind, max(mults), L)
            tuned = _finetune(model, scaling, corpus, L=L, factor=ft["factor"],
                              steps=ft["steps"], lr=ft["lr"], batch_size=train["batch_size"],
                              seed=seed, first_step=train["steps"])
            result = extrapolation(tuned, corpus.val, L, mults, n, sliding=False)
            result["scaling"] = scaling
            result["finetune"] = ft
            name = "rope" if kind is None else f"rope+{kind}"
            variants[f"{name}+ft{ft['factor']}x"] = result
    return variants


def _train_and_read(size: str, arm: str, seed: int, progress,
                    precision: str = "fp32", lr: float | None = None) -> dict[str, Any]:
    from blocklab.experiments.data import load_corpus
    from blocklab.experiments.trainer import train

    started = time.perf_counter()
    config = SIZES[size]
    corpus = load_corpus("stdlib")
    mc, tc = arm_config(size, arm), train_config(size, seed, precision, lr)
    model, trained = train(mc, tc, corpus, progress=progress, label=f"{arm} seed {seed}")
    out: dict[str, Any] = {"status": trained["status"], "kind": "train", "arm": arm,
                           "seed": seed, "L": config["L"], "train": trained}
    if trained["status"] == "ok":
        with _one_thread():
            out["eval"] = extrapolation(model, corpus.val, config["L"], config["mults"],
                                        config["eval_windows"])
            out["finite"] = finite_far_out(model)
            order = config["order"]
            out["order"] = order_probe(model, corpus.val, order["prefix_len"],
                                       order["prefixes"])
            if arm == "rope":
                out["variants"] = _rope_variants(size, model, corpus, seed)
    out["wall_time_s"] = time.perf_counter() - started
    return out


def train_passkey_model(mc: ModelConfig, *, L: int, steps: int, batch_size: int, lr: float,
                        seed: int, precision: str = "fp32"):
    """A model trained only on passkey examples of L + 1 bytes, needle depth uniform in [0, 1]
    (snapped to the filler's sentence boundaries), next-token loss on every byte."""
    import torch

    from blocklab.experiments.synthetic import example_seeds, passkey_example
    from blocklab.experiments.trainer import (
        TrainConfig,
        build_model,
        learning_rate,
        make_optimizer,
        train_step,
    )

    tc = TrainConfig(steps=steps, batch_size=batch_size, seq_len=L, lr=lr,
                     warmup_steps=max(1, steps // 20), seed=seed, precision=precision)
    model = build_model(mc, tc).train()
    optimizer, params = make_optimizer(model, tc), list(model.parameters())
    rng = np.random.default_rng([0x9A55, seed])
    example_ids = example_seeds(seed + 1_000_000, steps * batch_size)
    loss = math.nan
    for step in range(steps):
        chunk = example_ids[step * batch_size:(step + 1) * batch_size]
        batch = np.stack([passkey_example(s, L + 1, float(rng.uniform())).tokens for s in chunk])
        tokens = torch.from_numpy(batch.astype(np.int64))  # [B, L + 1]
        loss = train_step(model, tokens, optimizer, params, lr=learning_rate(step, tc),
                          grad_clip=tc.grad_clip).loss
    return model.eval(), loss


def passkey_grid(model, L: int, mults: Sequence[int], depths: Sequence[float], n: int,
                 seed: int) -> dict[str, Any]:
    """Passkey accuracy at every (m·L input tokens, depth); UNAVAILABLE where the model's
    position table is too short."""
    from blocklab.experiments.synthetic import passkey_accuracy

    grid: dict[str, Any] = {}
    for m in mults:
        row: dict[str, Any] = {}
        for depth in depths:
            try:
                row[str(depth)] = passkey_accuracy(model, n=n, length=m * L + 1, depth=depth,
                                                   seed=seed)
            except ValueError:
                row[str(depth)] = UNAVAILABLE
        grid[str(m)] = row
    return grid


def _passkey_run(size: str, arm: str, seed: int, progress,
                 precision: str = "fp32") -> dict[str, Any]:
    started = time.perf_counter()
    config = SIZES[size]
    pk, L = config["passkey"], config["L"]
    with _one_thread():
        model, last_loss = train_passkey_model(arm_config(size, arm), L=L, steps=pk["steps"],
                                               batch_size=pk["batch_size"], lr=pk["lr"],
                                               seed=seed, precision=precision)
        out: dict[str, Any] = {"status": "ok", "kind": "passkey", "arm": arm, "seed": seed,
                               "final_train_loss": last_loss,
                               "accuracy": {arm: passkey_grid(model, L, config["mults"],
                                                              pk["depths"], pk["n"], 7 + seed)}}
        if arm == "rope":
            for kind in SCALINGS:
                by_mult = {}
                for m in (m for m in config["mults"] if m > 1):
                    scaled = with_rope_scaling(model, scaling_config(kind, m, L))
                    by_mult.update(passkey_grid(scaled, L, [m], pk["depths"], pk["n"],
                                                7 + seed))
                out["accuracy"][f"rope+{kind}"] = by_mult
    out["wall_time_s"] = time.perf_counter() - started
    return out


def _relative_error_run() -> dict[str, Any]:
    started = time.perf_counter()
    with _one_thread():
        naive = {dt: rope_relative_error(dt) for dt in RELATIVE_ERROR_DTYPES}
        ours = {dt: rope_relative_error_blocklab(dt) for dt in RELATIVE_ERROR_DTYPES}
    return {"status": "ok", "kind": "relative_error", "shifts": list(RELATIVE_ERROR_SHIFTS),
            "naive": naive, "blocklab": ours, "wall_time_s": time.perf_counter() - started}


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """Every run of this suite uses one CPU thread, as its training does (`TrainConfig.threads`):
    bit-reproducible, and not slowed by thread contention when other work shares the CPU."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def tune(options: RunOptions, tuned: Results = ()) -> list[RunSpec]:
    """The tuning stage: every arm the size trains at every peak lr of its grid (grown at an
    edge from the results `tuned` so far) on the tuning seeds, each a plain training run as
    long as the evaluation's."""
    from blocklab.experiments.trainer import run

    size, precision = options.size, options.precision
    t = SIZES[size]["train"]
    trials = lr_trials(list(tuned))
    specs = []
    for arm in arms(size):
        mc = arm_config(size, arm)
        for lr in tune_arm(t["lr_grid"], trials, arm).grid:
            for seed in range(TUNING_SEEDS, TUNING_SEEDS + t["tuning_seeds"]):
                tc = train_config(size, seed, precision, lr)
                label = f"tune {arm} lr {lr:g} seed {seed}"
                payload = {"suite": "position", "kind": "tune", "arm": arm,
                           "model": mc.to_dict(), "train": train_identity(tc),
                           "data": "stdlib"}
                specs.append(RunSpec(label, f"tune/{arm}", seed, payload,
                                     lambda progress, mc=mc, tc=tc, label=label, run=run:
                                     run(mc, tc, "stdlib", progress=progress, label=label)))
    return specs


def tuned_lrs(size: str, trials: list[LrTrial]) -> dict[str, ArmTuning]:
    """Each arm's tuning: its grid, chosen peak lr and whether that is interior; {} at a size
    that does not tune (every arm at the grid's middle lr)."""
    if not SIZES[size]["train"]["tuning_seeds"]:
        return {}
    return tune_arms(SIZES[size]["train"]["lr_grid"], trials, arms(size))


def arm_lrs(size: str, tuned: Results) -> dict[str, float | None]:
    """Each arm's peak lr: its tuned one, or None (the grid's middle) where the size does not
    tune."""
    tunings = tuned_lrs(size, lr_trials(tuned))
    return {arm: tunings[arm].lr if arm in tunings else None for arm in arms(size)}


def plan(options: RunOptions, tuned: Results) -> list[RunSpec]:
    """One training run per (arm, seed) at the arm's tuned peak lr (from its tuning runs
    `tuned`); one passkey run per (arm, seed) where the size has them; one timed cost run
    (C31, alone); one relative-error run (float64 and float32 maths, whatever `precision` the
    models train in) where the size plans runs no rule grades."""
    size, seeds, precision = options.size, options.seeds, options.precision
    config = SIZES[size]
    lrs = arm_lrs(size, tuned)
    specs = []
    for seed in seeds:
        for arm in arms(size):
            payload = {"suite": "position", "kind": "train", "arm": arm, "size_config": config,
                       "model": arm_config(size, arm).to_dict(),
                       "train": train_identity(train_config(size, seed, precision,
                                                            lrs[arm])),
                       "data": "stdlib",
                       "scalings": SCALINGS if arm == "rope" else None}
            specs.append(RunSpec(f"{arm} seed {seed}", arm, seed, payload,
                                 lambda progress, arm=arm, seed=seed:
                                 _train_and_read(size, arm, seed, progress, precision,
                                                 lrs[arm])))
    if config["passkey"]:
        for seed in seeds:
            for arm in arms(size):
                payload = {"suite": "position", "kind": "passkey", "arm": arm,
                           "model": arm_config(size, arm).to_dict(), "L": config["L"],
                           "mults": config["mults"], "passkey": config["passkey"],
                           "seed": seed}
                if precision != "fp32":
                    payload["precision"] = precision
                specs.append(RunSpec(f"passkey {arm} seed {seed}", f"passkey:{arm}", seed,
                                     payload, lambda progress, arm=arm, seed=seed:
                                     _passkey_run(size, arm, seed, progress, precision),
                                     reads_tuning=False))
    from blocklab.experiments.suites import position_cost

    payload = {"suite": "position", "kind": "cost", "model": arm_config(size, "rope").to_dict(),
               "schemes": COST_SCHEMES, "param_schemes": PARAM_SCHEMES, "cost": config["cost"],
               "train": train_identity(train_config(size, 0, precision)),
               "realistic": position_cost.SHAPES[size]}
    specs.append(RunSpec("position cost (timed)", "cost", 0, payload,
                         lambda progress: time_position_cost(size, 0, precision), timed=True,
                         reads_tuning=False))
    if graded_only(size):
        return specs
    payload = {"suite": "position", "kind": "relative_error",
               "shifts": RELATIVE_ERROR_SHIFTS, "dtypes": RELATIVE_ERROR_DTYPES}
    specs.append(RunSpec("rope relative-position error", "relative_error", 0, payload,
                         lambda progress: _relative_error_run(), reads_tuning=False))
    return specs


# Reference-machine seconds (`blocklab.experiments.estimate`) of what is not a model step: the
# profiler's start in the cost run, the relative-error run (pure tensor maths).
_PROFILER_REFERENCE_S = 0.4
_RELATIVE_ERROR_REFERENCE_S = 0.03


def price(spec: RunSpec, cal) -> float | None:
    """Estimated seconds of one run on this machine from a calibration (`blocklab.experiments.
    estimate`), counted as the code above runs it: a training run is the trainer's run, then
    `extrapolation` at every multiple (full windows and sliding ones), the order probe, the
    far-out check and, for rope, every training-free scaling and each fine-tune with its reads;
    a passkey run its training steps and grid; the cost run its builds, profiled calls and
    interleaved repeats."""
    from blocklab.experiments.estimate import evaluation_s, training_s

    payload = spec.payload
    kind = payload["kind"]
    if kind == "relative_error":
        return cal.reference_s(_RELATIVE_ERROR_REFERENCE_S)
    size = next(name for name, config in SIZES.items() if config["L"] == _L(payload)
                and _same_size(config, payload))
    config = SIZES[size]
    L, mults, n = config["L"], config["mults"], config["eval_windows"]
    model = payload["model"]
    train = payload.get("train") or train_identity(train_config(size, 0, payload.get(
        "precision", "fp32")))
    B, precision = train["batch_size"], train.get("precision", "fp32")

    def forward(rows: int, length: int) -> float:
        return cal.forward_s(model, B, L, rows, length, precision)

    def read(multiples, sliding: bool) -> float:
        seconds = 0.0
        for m in multiples:
            seconds += evaluation_s(model, train, n, m * L, cal, batch_tokens=16384)
            if sliding and m > 1:
                windows = n * ((m * L - L) // (L // 2) + 1)
                seconds += evaluation_s(model, train, windows, L, cal, batch_tokens=16384)
        return seconds

    if kind == "train":
        order = config["order"]
        seconds = (training_s(model, train, cal) + read(mults, True)
                   + forward(2 * order["prefixes"], order["prefix_len"])
                   + 2 * (cal.build_s(model, B, L, precision) + forward(1, 16)))
        if spec.arm == "rope":
            longer = [m for m in mults if m > 1]
            seconds += len(SCALINGS) * read(longer, False)
            ft = config["finetune"]
            if ft:
                rows = max(1, B // ft["factor"])
                seconds += len(ft["kinds"]) * (
                    ft["steps"] * cal.step_s(model, rows, ft["factor"] * L, precision)
                    + read(mults, False))
        return seconds
    if kind == "passkey":
        pk = config["passkey"]
        grid = sum(forward(pk["n"], m * L + 1) for m in mults) * len(pk["depths"])
        seconds = (cal.build_s(model, pk["batch_size"], L, precision)
                   + pk["steps"] * cal.step_s(model, pk["batch_size"], L, precision) + grid)
        if spec.arm == "rope":
            seconds += len(SCALINGS) * grid * (len(mults) - 1) / len(mults)
        return seconds
    if kind == "cost":
        from blocklab.experiments.suites import position_cost

        cost = config["cost"]
        n_decode = cost["decode_tokens"]
        seconds = cal.reference_s(_PROFILER_REFERENCE_S) + position_cost.price(size, cal)
        for scheme in PARAM_SCHEMES:
            seconds += cal.build_s(arm_config(size, scheme).to_dict(), B, L, precision)
        for scheme in COST_SCHEMES:
            m = arm_config(size, scheme).to_dict()
            step = cal.step_s(m, B, L, precision)
            prefill = cal.forward_s(m, B, L, 1, L - n_decode, precision)
            token = cal.forward_s(m, B, L, 1, 1, precision)
            seconds += (cal.build_s(m, B, L, precision) + 3 * step + 3 * (prefill + token)
                        + (cost["warmup"] + cost["repeats"])
                        * (step + prefill + n_decode * token))
        return seconds
    return None


def _L(payload: dict[str, Any]) -> int:
    return payload.get("L") or payload.get("size_config", {}).get("L") or \
        payload["train"]["seq_len"]


def _same_size(config: dict[str, Any], payload: dict[str, Any]) -> bool:
    """Whether `payload` was planned from the size `config` (its model's width and depth)."""
    model = payload["model"]
    return all(model[k] == v for k, v in config["model"].items())


# --- summarise ------------------------------------------------------------------------------------
def _bucketed(curves: list[list[float]], width: int) -> list[float]:
    mean = np.mean(np.asarray(curves, dtype=np.float64), axis=0)
    return [float(mean[i:i + width].mean()) for i in range(0, mean.size, width)]


def _collect(results) -> tuple[dict[str, dict[int, dict]], dict[str, dict[int, dict]]]:
    """arm -> seed -> extrapolation record (scaling variants as arms of their own), and
    arm -> seed -> passkey grid."""
    reads: dict[str, dict[int, dict]] = {}
    passkey: dict[str, dict[int, dict]] = {}
    for spec, result in results:
        if result.get("kind") == "train" and result.get("status") == "ok":
            reads.setdefault(spec.arm, {})[spec.seed] = result["eval"]
            for name, record in (result.get("variants") or {}).items():
                reads.setdefault(name, {})[spec.seed] = record
        elif result.get("kind") == "passkey":
            for name, grid in result["accuracy"].items():
                passkey.setdefault(name, {})[spec.seed] = grid
    return reads, passkey


def _cell(value: Read | None) -> str:
    if isinstance(value, str):
        return value
    return format_ci(value, 3) if isinstance(value, Interval) else "—"


def summarise(options: RunOptions, results: Results) -> Summary:
    size, seeds = options.size, options.seeds
    tuned = [(spec, result) for spec, result in results if spec.payload.get("kind") == "tune"]
    results = [(spec, result) for spec, result in results
               if spec.payload.get("kind") != "tune"]
    trials = lr_trials(tuned)
    tunings = tuned_lrs(size, trials)
    config = SIZES[size]
    L, mults = config["L"], config["mults"]
    longer = [str(m) for m in mults if m > 1]
    reads, passkey = _collect(results)
    seed_list = list(seeds)
    arms_data: dict[str, PositionArm] = {}
    loss_rows, delta_rows = [], []
    rope_sliding = reads.get("rope", {})
    for name, by_seed in reads.items():
        loss_at_L = mean_ci([by_seed[s]["loss_at_L"] for s in by_seed
                             if by_seed[s].get("loss_at_L") is not None])
        beyond: dict[str, Read] = {}
        sliding_at: dict[str, Interval | None] = {}
        minus: dict[str, Read] = {}
        pct: dict[str, Read] = {}
        per_position: dict[str, PerPosition | str | None] = {}
        for m in longer:
            # Aligned by seed with `sliding` below: a seed without a result is None here, so
            # one failed seed shrinks n instead of breaking the pairing.
            values = [by_seed[s]["loss_beyond_L"].get(m) if s in by_seed else None
                      for s in seed_list]
            # Scaled variants are compared with the plain RoPE model's sliding windows.
            own = any(m in by_seed[s].get("sliding", {}) for s in by_seed)
            source = by_seed if own else rope_sliding
            sliding = [source.get(s, {}).get("sliding", {}).get(m) for s in seed_list]
            sliding_at[m] = mean_ci(sliding) if own else None
            if any(v == UNAVAILABLE for v in values):
                beyond[m] = minus[m] = pct[m] = UNAVAILABLE
                continue
            beyond[m] = mean_ci(values)
            minus[m] = paired_difference(values, sliding)
            pct[m] = mean_ci([100 * (x - y) / y for x, y in zip(values, sliding, strict=True)
                              if x is not None and y is not None and math.isfinite(y)])
        for m in [str(m) for m in mults]:
            curves = [by_seed[s]["per_position"].get(m) for s in by_seed]
            curves = [c for c in curves if c]
            if curves:
                per_position[m] = PerPosition(bucket=max(1, L // 8),
                                              loss=_bucketed(curves, max(1, L // 8)))
            elif m != "1" or name in arms(size):
                per_position[m] = UNAVAILABLE if m != "1" else None
        entry = PositionArm(
            loss_at_L=loss_at_L, loss_beyond_L=beyond, sliding=sliding_at,
            extrapolated_minus_sliding=minus, extrapolated_vs_sliding_pct=pct,
            per_position=per_position,
            passkey=_passkey_summary(passkey[name]) if name in passkey else None)
        arms_data[name] = entry
        loss_rows.append([name, _cell(entry.loss_at_L) if entry.loss_at_L.n else "—",
                          *[_cell(entry.loss_beyond_L[m]) for m in longer],
                          *[_cell(entry.sliding[m]) for m in longer[-1:]]])
        delta_rows.append([name, *[_cell(entry.extrapolated_minus_sliding[m])
                                   for m in longer]])

    tables = [
        Table(f"Loss (nats/token) on positions ≥ L, trained at L={L}",
              ["arm", "1× (all positions)", *[f"{m}× (p ≥ L)" for m in longer],
               f"sliding {longer[-1]}× (p ≥ L)"], loss_rows,
              "Mean [95% CI] over seeds. Scaled RoPE variants use factor m = length / L, same "
              "weights (training-free) unless named +ft. Sliding: the same tokens read in "
              "windows of L (stride L/2), never at a position ≥ L."),
        Table("Extrapolated − sliding-window loss on the same tokens (paired by seed)",
              ["arm", *[f"{m}×" for m in longer]], delta_rows,
              "< 0: the model gains from context longer than L; > 0: reading positions ≥ L "
              "costs more than it gains. Scaled variants are paired with plain RoPE's sliding "
              "windows."),
    ]
    rope_names = [name for name in arms_data if name.startswith("rope")]
    tables.append(Table(
        "RoPE and its scalings: loss past L relative to sliding windows, % (C22)",
        ["arm", *[f"{m}×" for m in longer]],
        [[name, *[_pct_cell(arms_data[name].extrapolated_vs_sliding_pct[m]) for m in longer]]
         for name in rope_names],
        "100·(extrapolated − sliding)/sliding per seed, mean [95% CI]: the quality lost by "
        "reading positions ≥ L instead of windows of L."))
    grid = config["train"]["lr_grid"]
    tuning_table = tuned_table(
        tunings.values(), trials, grid,
        f"{config['train']['tuning_seeds']} tuning seed(s), disjoint from the evaluation seeds, "
        "at L")
    notes = []
    if tunings:
        tables.append(tuning_table)
    else:
        notes.append(f"Every arm trains at peak lr {train_config(size, 0).lr:g} (the middle of "
                     f"the grid {{{', '.join(f'{lr:g}' for lr in grid.base)}}}): each graded "
                     "part compares an arm with itself, not with the others; --size full tunes "
                     "every arm's lr on seeds of its own.")
    if passkey:
        pk_rows = []
        for name, entry in arms_data.items():
            if entry.passkey:
                pk_rows.append([name, *[entry.passkey.by_length.get(str(m), "—")
                                        for m in mults]])
        tables.append(Table("Passkey accuracy by length (mean over depths and seeds)",
                            ["arm", *[f"{m}×" for m in mults]], pk_rows,
                            "Separate passkey models per arm, trained on passkey examples of "
                            "L bytes; exact match of all five digits."))
    else:
        notes.append(f"Passkey retrieval is not part of the {size} grid: no registered rule "
                     "grades it, and a model trained on passkey examples needs ~1,500 steps "
                     "before it retrieves at all (measured at d=64, 2 layers, L=128); the full "
                     "grid runs it.")

    relative = next((r for s, r in results if r.get("kind") == "relative_error"), None)
    relative_error = relative["naive"] if relative else {}
    if relative:
        shifts = relative["shifts"]
        rows = []
        for pipeline in ("naive", "blocklab"):
            for dtype, pairs in relative[pipeline].items():
                rows.append([pipeline, dtype,
                             *["NaN/inf" if err is None else f"{err:.2e}" for _, err in pairs]])
        tables.append(Table(
            "RoPE: max |score(m, n) − score(m+s, n+s)| (C20)",
            ["pipeline", "dtype", *[f"s={s:g}" for s in shifts]], rows,
            "naive: positions, angles and rotation all in dtype; blocklab: float32 angles "
            "(RotaryEmbedding), rotation in float32, q and k cast back to dtype. Scores "
            "q·k/√64 with q, k ~ N(0, 1), so errors are in logit units."))

    finite_rows = []
    finite: dict[str, list[FiniteRead]] = {}
    for spec, result in results:
        if result.get("kind") == "train" and "finite" in result:
            f = result["finite"]
            finite.setdefault(spec.arm, []).append(FiniteRead(
                position=f["position"], max_seq_len=f["max_seq_len"], float32=f.get("float32"),
                bfloat16=f.get("bfloat16"), error=f.get("error")))
            if spec.seed == 0:
                finite_rows.append([spec.arm, f["max_seq_len"], f["position"],
                                    _finite_cell(f.get("float32"), f),
                                    _finite_cell(f.get("bfloat16"), f)])
    tables.append(Table(f"Logits finite at positions {FAR_POSITION:,} and on, far past "
                        "max_seq_len? (C26)", ["arm", "max_seq_len", "first position",
                                               "float32", "bfloat16"], finite_rows,
                        "RoPE's table is sized max_seq_len and extended on demand."))

    rotary_dim = config["model"]["d_model"] // config["model"]["n_heads"]
    beta_fast, beta_slow = yarn_betas(L)
    yarn = YarnBetas(
        paper=YarnRamp(YARN_PAPER_BETAS[0], YARN_PAPER_BETAS[1],
                       list(yarn_ramp_pairs(L, rotary_dim, *YARN_PAPER_BETAS))),
        rescaled=YarnRamp(beta_fast, beta_slow,
                          list(yarn_ramp_pairs(L, rotary_dim, beta_fast, beta_slow))),
        rotary_pairs=rotary_dim // 2, reference_length=YARN_REFERENCE_LENGTH)
    notes.append(
        f"YaRN β: the paper's β_fast=32, β_slow=1 put the ramp over pairs "
        f"{tuple(yarn.paper.ramp_pairs)} of {rotary_dim // 2} at L={L}, head_dim={rotary_dim}; "
        f"'yarn-rescaled' uses β scaled by L/{YARN_REFERENCE_LENGTH}: β_fast={beta_fast:g}, "
        f"β_slow={beta_slow:g}, ramp over pairs {tuple(yarn.rescaled.ramp_pairs)} (the same "
        "fractions of the spectrum as Llama 2 at 4096).")
    notes.append("dynamic NTK is given factor m, as the others: at a full-sequence read of "
                 "m·L tokens its base is θ·(m² − m + 1)^(r/(r−2)), i.e. static NTK at scale "
                 "m² − m + 1 (3, 13, 57 for m = 2, 4, 8); with factor 1 it would equal 'ntk'.")
    if config["finetune"]:
        ft = config["finetune"]
        notes.append(f"+ft{ft['factor']}x variants: the RoPE model fine-tuned {ft['steps']} "
                     f"steps at {ft['factor']}·L tokens with that scaling (factor "
                     f"{max(mults)}, the longest multiple read), then read at every length "
                     f"with it; rope+ft{ft['factor']}x is the control: the same fine-tune "
                     "without scaling.")
    else:
        notes.append(f"RoPE scaling in the {size} grid is training-free only (same weights); "
                     "the papers fine-tune, and the full grid does too.")
    if "learned" in arms_data:
        notes.append("learned (table L) cannot run past L: its reads there are recorded as "
                     f"'{UNAVAILABLE}' (the ValueError of LearnedPositions), not as a loss.")
    left_out = [a for a in schemes(size) if a not in arms(size) and a not in arms_data]
    full_only_items = []
    if left_out:
        graded = listed([a for a in arms(size) if a.startswith(("learned", "sinusoidal"))])
        full_only_items.append(f"the {listed(left_out)} arm{'s' if len(left_out) > 1 else ''} "
                               f"(C21 grades {graded} instead)")
    if graded_only(size) and not relative:
        full_only_items.append("RoPE's relative-position error by dtype (C20's note; C20 itself "
                               "is checked in float64 by the ledger)")
    if full_only_items:
        notes.append(full_only(full_only_items))
    train = _train_summary(results)
    order = _order_summary(results, train, seed_list, config["order"])
    if order:
        tables.append(Table(
            "Order without positions: next-token change when a prefix is reversed (C29)",
            ["arm", "TV distance", "KL (nats)", "val loss − unigram entropy (nats)"],
            [[name, _cell(o.tv), _cell(o.kl), _cell(o.loss_minus_unigram)]
             for name, o in order.items()],
            f"{config['order']['prefixes']} validation prefixes of "
            f"{config['order']['prefix_len']} tokens per seed; the first "
            f"{config['order']['prefix_len'] - 1} reversed, the last kept (same tokens, same "
            "token read). TV = ½Σ|p − q| of the next-token distributions, mean [95% CI] over "
            "seeds. A bidirectional model without positions would give exactly 0."))
    cost = _cost_summary(results)
    if cost:
        tables.append(Table(
            "Position cost: parameters, step time and SDPA kernel, 1 thread (C31)",
            ["scheme", "params", "train ms", "× none", "decode ms/token", "× none",
             "train kernel", "train mask", "decode mask"],
            [[name, c.params, f"{c.train_ms:.1f}", _ratio_text(c.train_vs_none),
              f"{c.decode_ms:.3f}", _ratio_text(c.decode_vs_none),
              ", ".join(k.removeprefix("aten::") for k in c.kernels_train),
              ", ".join(c.masks_train), ", ".join(c.masks_decode)]
             for name, c in cost.schemes.items()],
            f"Medians over {cost.repeats} interleaved repeats, ratio with a paired bootstrap "
            f"95% CI. Training: batch {cost.batch_size} × L={cost.L}; decode: one token at a "
            f"time after {cost.prompt_tokens} cached tokens. Kernels: the aten ops PyTorch "
            "dispatched (profiler names); masks: what attention.py hands SDPA."))
    finetune = None
    if config["finetune"]:
        ft = config["finetune"]
        finetune = FineTune(factor=ft["factor"], scale=max(mults), steps=ft["steps"],
                            lr=ft["lr"], arms={
                                kind or "none": f"rope{'' if kind is None else '+' + kind}"
                                                f"+ft{ft['factor']}x" for kind in ft["kinds"]})
    data = PositionData(L=L, mults=list(mults), eval_lengths=[m * L for m in mults],
                        arms=arms_data, relative_error=relative_error,
                        relative_error_blocklab=relative["blocklab"] if relative else {},
                        finite_past_max_seq_len=finite, yarn=yarn, train=train, order=order,
                        cost=cost, finetune=finetune, lr_trials=trials,
                        lr_tuning=list(tunings.values()))
    return Summary("position", size, len(seeds), tables, notes, data, first_seed=seeds.start)


def _order_summary(results, train: dict[str, list[PositionRun]], seeds: list[int],
                   order: dict[str, int]) -> dict[str, OrderProbe]:
    """arm -> its order probe over seeds, with val loss − unigram entropy of the same runs."""
    probes: dict[str, dict[int, dict]] = {}
    for spec, result in results:
        if result.get("kind") == "train" and "order" in result:
            probes.setdefault(spec.arm, {})[spec.seed] = result["order"]
    out = {}
    for arm, by_seed in probes.items():
        runs = {r.seed: r for r in train.get(arm, []) if r.status == "ok"}
        gaps = [runs[s].val_loss - runs[s].unigram_entropy for s in seeds
                if s in runs and runs[s].val_loss is not None
                and runs[s].unigram_entropy is not None]
        out[arm] = OrderProbe(prefix_len=order["prefix_len"], prefixes=order["prefixes"],
                              tv=mean_ci([p["tv"] for p in by_seed.values()]),
                              kl=mean_ci([p["kl"] for p in by_seed.values()]),
                              loss_minus_unigram=mean_ci(gaps))
    return out


def _cost_summary(results) -> PositionCost | None:
    """C31's timed run as a `PositionCost`; ratios against "none" by `bootstrap_ratio_ci`."""
    from blocklab.experiments.suites import position_cost
    from blocklab.experiments.suites.norm_cost import bootstrap_ratio_ci

    record = next((r for _, r in results if r.get("kind") == "cost"), None)
    if record is None:
        return None
    train, decode, kernels = record["train_s"], record["decode_s"], record["kernels"]
    schemes = {}
    for name in train:
        k = kernels[name]
        schemes[name] = SchemeCost(
            params=record["params"][name], params_module=record["params_module"][name],
            train_ms=1000 * float(np.median(train[name])),
            decode_ms=1000 * float(np.median(decode[name])),
            train_vs_none=bootstrap_ratio_ci(train[name], train["none"]),
            decode_vs_none=bootstrap_ratio_ci(decode[name], decode["none"]),
            kernels_train=k["train"], kernels_decode=k["decode"], masks_train=k["train_mask"],
            masks_decode=k["decode_mask"], flash_train=k["flash_train"],
            flash_decode=k["flash_decode"])
    return PositionCost(threads=record["threads"], L=record["L"],
                        batch_size=record["batch_size"], prompt_tokens=record["prompt_tokens"],
                        decode_tokens=record["decode_tokens"], repeats=record["repeats"],
                        params=record["params"], schemes=schemes,
                        realistic=position_cost.shape_timing(record.get("realistic")))


def _ratio_text(ratio: TimeRatio) -> str:
    return f"{ratio.ratio:.3f} [{ratio.ci_low:.3f}, {ratio.ci_high:.3f}]"


def _pct_cell(stats: Read) -> str:
    if isinstance(stats, str):
        return stats
    if stats.mean is None:
        return "—"
    if not stats.resolved:
        return f"{stats.mean:+.1f}% (n={stats.n})"
    return f"{stats.mean:+.1f}% [{stats.ci_low:+.1f}, {stats.ci_high:+.1f}]"


def _finite_cell(value: bool | None, record: dict) -> str:
    if value is None:
        return "ValueError (table)" if "error" in record else "—"
    return "finite" if value else "NaN/inf"


def _passkey_summary(by_seed: dict[int, dict]) -> PasskeySummary:
    by_depth: dict[str, dict[str, Any]] = {}
    by_length: dict[str, Any] = {}
    for m in next(iter(by_seed.values())):
        cells = [grid[m] for grid in by_seed.values()]
        depths = list(cells[0])
        if any(v == UNAVAILABLE for c in cells for v in c.values()):
            by_depth[m] = {d: UNAVAILABLE for d in depths}
            by_length[m] = UNAVAILABLE
            continue
        by_depth[m] = {d: float(np.mean([c[d] for c in cells])) for d in depths}
        by_length[m] = float(np.mean(list(by_depth[m].values())))
    return PasskeySummary(by_length=by_length, by_depth=by_depth, seeds=len(by_seed))


def _train_summary(results) -> dict[str, list[PositionRun]]:
    out: dict[str, list[PositionRun]] = {}
    for spec, result in results:
        if result.get("kind") == "train":
            final = result["train"].get("final") or {}
            out.setdefault(spec.arm, []).append(PositionRun(
                seed=spec.seed, status=result["status"], val_loss=final.get("val_loss"),
                unigram_entropy=final.get("unigram_entropy"),
                ms_per_step=result["train"].get("ms_per_step")))
    return out


SUITE = Suite(
    name="position",
    description="Train at L, read at 1×..16× L: every position scheme and RoPE scaling; order "
                "without positions; position cost (C20–C22, C26, C29–C31)",
    plan=plan,
    summarise=summarise,
    default_seeds={"tiny": 1, "quick": 3, "full": 3},
    tune=tune,
    precisions=("fp32", "bf16"),
    price=price,
)
