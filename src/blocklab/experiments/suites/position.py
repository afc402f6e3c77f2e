"""`position`: train at length L, read at 1×, 2×, 4×, 8× L: every position scheme, RoPE scaling.

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
for our L (`yarn_betas`). In the full size it is also fine-tuned briefly at a longer length with
each scaling (as the papers do) and read again (C22).

Two checks need no training: `rope_relative_error` measures |score(m, n) − score(m+s, n+s)| in
float64, float32, bfloat16 and float16 (C20), and every trained model is run at positions far
past its max_seq_len to see that outputs stay finite (C26). The passkey test (full size) trains a
separate passkey model per arm at L and scores retrieval by length and depth.

`Summary.data` (read by the claims ledger, C20, C21, C22, C26, and the report) is a
`blocklab.experiments.summaries.PositionData`; multiples m of L are string keys ("2", "4", ...).
Per arm (`PositionArm`): loss on positions ≥ L at each multiple, the sliding-window loss on the
same tokens, their paired difference (nats and %), bucketed per-position loss and passkey
accuracy; a read a learned table cannot make is the string "unavailable (table)". Beside the
arms: RoPE's relative-position error by dtype, finiteness far past max_seq_len, the YaRN ramps
and every training run's status.

Arm names: the six above, "rope+<scaling>" for training-free scaling and
"rope[+<scaling>]+ft<k>x" for the fine-tuned variants.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from blocklab.config import ModelConfig
from blocklab.errors import InputError
from blocklab.experiments.suites.base import (
    RunSpec,
    Suite,
    format_ci,
    mean_ci,
    paired_difference,
)
from blocklab.experiments.summaries import (
    FiniteRead,
    Interval,
    PasskeySummary,
    PerPosition,
    PositionArm,
    PositionData,
    PositionRun,
    Read,
    Summary,
    Table,
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

SIZES: dict[str, dict[str, Any]] = {
    "tiny": {
        "model": {"d_model": 32, "n_layers": 2, "n_heads": 2}, "L": 128, "mults": (1, 2, 4),
        "train": {"steps": 4, "batch_size": 2, "lr": 3e-3, "warmup_steps": 1},
        "eval_windows": 2, "finetune": {"factor": 2, "steps": 2, "lr": 1e-3},
        "passkey": {"steps": 3, "batch_size": 2, "lr": 3e-3, "n": 2, "depths": (0.1, 0.9)},
    },
    "quick": {
        "model": {"d_model": 64, "n_layers": 2, "n_heads": 2}, "L": 128, "mults": (1, 2, 4, 8),
        "train": {"steps": 300, "batch_size": 16, "lr": 3e-3, "warmup_steps": 20},
        "eval_windows": 16, "finetune": None, "passkey": None,
    },
    "full": {
        "model": {"d_model": 128, "n_layers": 4, "n_heads": 4}, "L": 256,
        "mults": (1, 2, 4, 8, 16),
        "train": {"steps": 2000, "batch_size": 32, "lr": 2e-3, "warmup_steps": 100},
        "eval_windows": 32, "finetune": {"factor": 4, "steps": 200, "lr": 5e-4},
        "passkey": {"steps": 2000, "batch_size": 32, "lr": 3e-3, "n": 32,
                    "depths": (0.1, 0.3, 0.5, 0.7, 0.9)},
    },
}


def arms(size: str) -> tuple[str, ...]:
    return ("none", "learned", f"learned-{max(SIZES[size]['mults'])}L", "sinusoidal",
            "sinusoidal+scale", "rope", "alibi")


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


def train_config(size: str, seed: int):
    from blocklab.experiments.trainer import TrainConfig

    t = SIZES[size]["train"]
    return TrainConfig(steps=t["steps"], batch_size=t["batch_size"], seq_len=SIZES[size]["L"],
                       lr=t["lr"], warmup_steps=t["warmup_steps"], eval_every=0, log_every=0,
                       eval_batches=1, seed=seed, threads=1)


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
    """A copy of a trained RoPE `DecoderLM` with `scaling`: same weights, new rotary table."""
    from blocklab.nn import DecoderLM

    scaled = DecoderLM(model.config.replace(rope_scaling=scaling))
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
    """Training-free scaling at every multiple m >= 2 (factor m), and, where the size asks for
    it, fine-tuned variants read at every multiple with their fine-tuning factor."""
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
        for kind in (None, "linear", "ntk", "yarn-rescaled"):
            scaling = None if kind is None else scaling_config(kind, ft["factor"], L)
            tuned = _finetune(model, scaling, corpus, L=L, factor=ft["factor"],
                              steps=ft["steps"], lr=ft["lr"], batch_size=train["batch_size"],
                              seed=seed, first_step=train["steps"])
            result = extrapolation(tuned, corpus.val, L, mults, n, sliding=False)
            result["scaling"] = scaling
            result["finetune"] = ft
            name = "rope" if kind is None else f"rope+{kind}"
            variants[f"{name}+ft{ft['factor']}x"] = result
    return variants


def _train_and_read(size: str, arm: str, seed: int, progress) -> dict[str, Any]:
    from blocklab.experiments.data import load_corpus
    from blocklab.experiments.trainer import train

    started = time.perf_counter()
    config = SIZES[size]
    corpus = load_corpus("stdlib")
    mc, tc = arm_config(size, arm), train_config(size, seed)
    model, trained = train(mc, tc, corpus, progress=progress, label=f"{arm} seed {seed}")
    out: dict[str, Any] = {"status": trained["status"], "kind": "train", "arm": arm,
                           "seed": seed, "L": config["L"], "train": trained}
    if trained["status"] == "ok":
        with _one_thread():
            out["eval"] = extrapolation(model, corpus.val, config["L"], config["mults"],
                                        config["eval_windows"])
            out["finite"] = finite_far_out(model)
            if arm == "rope":
                out["variants"] = _rope_variants(size, model, corpus, seed)
    out["wall_time_s"] = time.perf_counter() - started
    return out


def train_passkey_model(mc: ModelConfig, *, L: int, steps: int, batch_size: int, lr: float,
                        seed: int):
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
                     warmup_steps=max(1, steps // 20), seed=seed)
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


def _passkey_run(size: str, arm: str, seed: int, progress) -> dict[str, Any]:
    started = time.perf_counter()
    config = SIZES[size]
    pk, L = config["passkey"], config["L"]
    with _one_thread():
        model, last_loss = train_passkey_model(arm_config(size, arm), L=L, steps=pk["steps"],
                                               batch_size=pk["batch_size"], lr=pk["lr"],
                                               seed=seed)
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


def plan(size: str, seeds: range) -> list[RunSpec]:
    """One training run per (arm, seed); one passkey run per (arm, seed) where the size has
    them; one relative-error run."""
    config = SIZES[size]
    specs = []
    for seed in seeds:
        for arm in arms(size):
            payload = {"suite": "position", "kind": "train", "arm": arm, "size_config": config,
                       "model": arm_config(size, arm).to_dict(),
                       "train": train_config(size, seed).to_dict(), "data": "stdlib",
                       "scalings": SCALINGS if arm == "rope" else None}
            specs.append(RunSpec(f"{arm} seed {seed}", arm, seed, payload,
                                 lambda progress, arm=arm, seed=seed:
                                 _train_and_read(size, arm, seed, progress)))
    if config["passkey"]:
        for seed in seeds:
            for arm in arms(size):
                payload = {"suite": "position", "kind": "passkey", "arm": arm,
                           "model": arm_config(size, arm).to_dict(), "L": config["L"],
                           "mults": config["mults"], "passkey": config["passkey"],
                           "seed": seed}
                specs.append(RunSpec(f"passkey {arm} seed {seed}", f"passkey:{arm}", seed,
                                     payload, lambda progress, arm=arm, seed=seed:
                                     _passkey_run(size, arm, seed, progress)))
    payload = {"suite": "position", "kind": "relative_error",
               "shifts": RELATIVE_ERROR_SHIFTS, "dtypes": RELATIVE_ERROR_DTYPES}
    specs.append(RunSpec("rope relative-position error", "relative_error", 0, payload,
                         lambda progress: _relative_error_run()))
    return specs


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


def summarise(size: str, seeds: range, results: list[tuple[RunSpec, dict[str, Any]]]) -> Summary:
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
    notes = []
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
        notes.append(f"Passkey retrieval is not part of the {size} grid: a model trained on "
                     "passkey examples needs ~1,500 steps before it retrieves at all (measured "
                     "at d=64, 2 layers, L=128), too long for it; the full grid runs it.")

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
                     f"{ft['factor']}), then read at every length with it.")
    else:
        notes.append(f"RoPE scaling in the {size} grid is training-free only (same weights); "
                     "the papers fine-tune, and the full grid does too.")
    notes.append("learned (table L) cannot run past L: its reads there are recorded as "
                 f"'{UNAVAILABLE}' (the ValueError of LearnedPositions), not as a loss.")
    data = PositionData(L=L, mults=list(mults), eval_lengths=[m * L for m in mults],
                        arms=arms_data, relative_error=relative_error,
                        relative_error_blocklab=relative["blocklab"] if relative else {},
                        finite_past_max_seq_len=finite, yarn=yarn,
                        train=_train_summary(results))
    return Summary("position", size, len(seeds), tables, notes, data, first_seed=seeds.start)


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
    description="Train at L, read at 1×..8× L: every position scheme and RoPE scaling (C20, "
                "C21, C22, C26)",
    plan=plan,
    summarise=summarise,
    default_seeds={"tiny": 1, "quick": 3, "full": 3},
)
