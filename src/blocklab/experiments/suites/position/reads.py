"""Reading a trained model at every multiple of L: the loss past L with full context and with
sliding windows of L (`extrapolation`), and whether its logits stay finite far past
max_seq_len (`finite_far_out`, C26)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from blocklab.errors import InputError, PositionsBeyondTable
from blocklab.experiments.suites.position.records import LengthReads
from blocklab.experiments.suites.position.sizes import UNAVAILABLE

FAR_POSITION = 100_000  # C26: positions this far past max_seq_len must still give finite logits


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
    flat = pieces.flatten(0, 1).to(next(model.parameters()).device)
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
    loss = torch.cat(losses).cpu().view(n_rows, len(starts), window)
    per_position = torch.empty(n_rows, n, dtype=torch.float64)
    for w, start in enumerate(starts):
        keep = 0 if w == 0 else window - stride
        per_position[:, start + keep:start + window] = loss[:, w, keep:].double()
    return per_position.mean(0).tolist()


def extrapolation(model, val_tokens, L: int, mults: Sequence[int], n_windows: int, *,
                  sliding: bool = True) -> LengthReads:
    """Full-context and sliding-window losses of `model` at every multiple of L (the sliding
    windows only with `sliding`), as `LengthReads`."""
    from blocklab.experiments.data import validation_windows
    from blocklab.experiments.trainer import evaluate

    loss_at_L = None
    beyond: dict[str, float | str | None] = {}
    slid: dict[str, float | None] = {}
    per_position: dict[str, list[float | None] | None] = {}
    errors: dict[str, str] = {}
    for m in mults:
        rows = validation_windows(val_tokens, m * L, n_windows)
        scores = evaluate(model, {m * L: rows}, batch_tokens=16384)[m * L]
        key = str(m)
        per_position[key] = scores["per_position"]
        if scores["loss"] is None:
            errors[key] = scores["error"]
            if m > 1:
                beyond[key] = UNAVAILABLE
        elif m == 1:
            loss_at_L = scores["loss"]
        else:
            beyond[key] = loss_beyond(scores["per_position"], L)
        if sliding and m > 1:
            curve = sliding_window_loss(model, rows, L, L // 2)
            slid[key] = loss_beyond(curve, L)
    return LengthReads(loss_at_L, beyond, slid, per_position, errors)


def finite_far_out(model, position: int = FAR_POSITION, tokens: int = 16
                   ) -> dict[str, int | bool | str | None]:
    """Run `model` on `tokens` tokens at positions position .. position + tokens − 1, in float32
    and bfloat16: are the logits finite? A learned table raises instead: None, and the first
    line of its error under "error" (a key only then)."""
    import copy

    import torch

    device = next(model.parameters()).device
    ids = torch.arange(tokens, device=device)[None] % model.config.vocab_size
    positions = torch.arange(position, position + tokens, device=device)
    out: dict[str, int | bool | str | None] = {"position": position,
                                               "max_seq_len": model.config.max_seq_len}
    for dtype in ("float32", "bfloat16"):
        copy_ = copy.deepcopy(model).to(getattr(torch, dtype)).eval()
        try:
            with torch.no_grad():
                logits = copy_(ids, positions=positions)
            out[dtype] = bool(torch.isfinite(logits).all())
        except PositionsBeyondTable as err:
            out[dtype] = None
            out["error"] = str(err).splitlines()[0]
    return out

