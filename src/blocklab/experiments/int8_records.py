"""What the int8 measurements return: plain records, no PyTorch, for the quantize suite, its
summaries and the report."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SchemeTimes:
    """What `measure_schemes` measured, seconds per repeat (T: a prefill length, a string).

    prefill_s       {scheme: {T: [s]}}
    decode_s        {scheme: [s]}: the median one-token step on the KV cache of seq_lens[0]
    free_prefill_s  {part: {T: [s]}}, free_decode_s {part: [s]}: the float model with that
                    part's linear layers free; None in older records
    gemm_s          {scheme: {T: [s]}}: the part's own linear layers of layer 0 at [T, d]
                    ("none/<part>": the float baseline)
    logits_error    {scheme: ‖ŷ − y‖ / ‖y‖ on the first prefill}
    compile_s       {scheme or "free/<part>": s of warm-up under torch.compile, else None}
    """

    prefill_s: dict[str, dict[str, list[float]]]
    decode_s: dict[str, list[float]]
    free_prefill_s: dict[str, dict[str, list[float]]] | None
    free_decode_s: dict[str, list[float]] | None
    gemm_s: dict[str, dict[str, list[float]]]
    logits_error: dict[str, float | None]  # None: not finite
    compile_s: dict[str, float | None]
    threads: int


@dataclass(frozen=True)
class SchemeLoss:
    """A trained model under one scheme: validation loss (nats/token), its difference to the
    float model's, and ‖ŷ − y‖ / ‖y‖ of the logits."""

    val_loss: float
    delta: float
    logits_error: float


@dataclass(frozen=True)
class SwigluError:
    """As `SchemeLoss` for SwiGLU's gate/up/down quantized one way, with the FFN output error
    ‖FFN_q(x) − FFN(x)‖ / ‖FFN(x)‖ over every layer."""

    val_loss: float
    delta: float
    ffn_error: float
    logits_error: float
