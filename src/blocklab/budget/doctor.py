"""`doctor`: read a model config and flag the troubleshooting cases of page 001.

Each `Finding` has a level (error, warning, info), a stable code, the reason and a fix:
`head-dim`, `kv-heads` (head arithmetic no config can be built from; nothing else is checked),
`default-assumed`, `q-width`, `attention-layout`, `context` / `context-scaled` (serving past
max_position_embeddings; page 001 warns past 8× even with scaling), `rope-base` (Men et al.
2024, arXiv:2405.14591), `ffn-ratio`, `post-norm-warmup` (Xiong et al. 2020, arXiv:2002.04745),
`untied-head`, `tied-checkpoint`, `missing-head` (the lm_head against the checkpoint's headers).
"""

from __future__ import annotations

import itertools
import math
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blocklab.checks import is_int, shown_value
from blocklab.config import ModelConfig
from blocklab.errors import InputError
from blocklab.interop.hf_config import HF_HIDDEN_DIVISIBLE, hf_defaults_taken, hf_size
from blocklab.jsonio import parse_json, read_json

from .memory import nbytes
from .params import count_params
from .zoo import HF_DEFAULTS, config_from_json

LEVELS = ("error", "warning", "info")
# d_ff / d_model ranges taken as usual; the reference ratio is what the memory cost compares to.
USUAL_FFN_RATIO = {True: (2.5, 3.5, 8 / 3), False: (3.5, 4.5, 4.0)}  # gated?: (low, high, ref)
FAR_OUT = 1.5  # beyond high·1.5 or below low/1.5 an unusual ratio becomes a warning
POST_NORM_DEPTH = 12
UNTIED_HEAD_SHARE = 0.15
MAX_EXTRAPOLATION = 8  # page 001, 避坑指南
WARMUP_KEYS = ("warmup_steps", "num_warmup_steps", "lr_warmup_steps", "warmup_iters",
               "warmup_ratio")
DOCTOR_DTYPE = "bf16"  # memory costs are quoted for bf16 weights
SAFETENSORS_HEADER_MAX = 100_000_000  # the safetensors library's own limit on a header


@dataclass(frozen=True)
class Finding:
    level: str
    code: str
    reason: str
    fix: str
    detail: dict[str, Any] = field(default_factory=dict)


def _gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB"


def _structure(raw: dict[str, Any]) -> list[Finding]:
    """Head arithmetic of a Hugging Face config.json, checked before building a ModelConfig."""
    if "d_model" in raw and "model_type" not in raw:
        return []  # a ModelConfig JSON validates itself
    model_type = raw.get("model_type")
    hidden = raw.get("hidden_size", raw.get("n_embd"))
    heads = raw.get("num_attention_heads", raw.get("n_head"))
    # As transformers reads them: an absent size may take the class default (Mistral's 8 K/V
    # heads), and a null it refuses is bad input.
    kv, head_dim = hf_size(raw, "num_key_value_heads") or heads, hf_size(raw, "head_dim")
    if not all(isinstance(v, int) and v > 0 for v in (hidden, heads, kv)):
        return []  # missing or malformed: reported as bad input when the config is built
    found = []
    if hidden % heads and (head_dim is None or model_type in HF_HIDDEN_DIVISIBLE):
        why = ("no head_dim is given, so the per-head width is not an integer"
               if head_dim is None else f"transformers' {model_type} config refuses that even "
               f"with head_dim={head_dim}")
        fix = f"choose num_attention_heads dividing {hidden}"
        if model_type not in HF_HIDDEN_DIVISIBLE:
            fix = f"set head_dim explicitly, or {fix}"
        found.append(Finding(
            "error", "head-dim",
            f"hidden_size={hidden} is not divisible by num_attention_heads={heads} and {why}",
            fix, {"hidden_size": hidden, "num_attention_heads": heads}))
    if heads % kv:
        said = "" if "num_key_value_heads" in raw or kv == heads else \
            f" (absent: transformers' {model_type} default)"
        found.append(Finding(
            "error", "kv-heads",
            f"num_key_value_heads={kv}{said} does not divide num_attention_heads={heads}: "
            f"grouped-query attention shares each K/V head among n_heads/n_kv_heads query heads",
            f"use a divisor of {heads}: "
            f"{[k for k in range(1, heads + 1) if heads % k == 0]}",
            {"num_attention_heads": heads, "num_key_value_heads": kv}))
    return found


def _training_warmup(raw: dict[str, Any]) -> tuple[str, Any] | None:
    """The first warmup setting at the top level or under "training", if any; a value that is
    not a step count (or, for warmup_ratio, a fraction in [0, 1]) raises InputError."""
    for scope in (raw, raw.get("training") if isinstance(raw.get("training"), dict) else {}):
        for key in WARMUP_KEYS:
            if key in scope and scope[key] is not None:
                value = scope[key]
                number = not isinstance(value, bool) and isinstance(value, int | float)
                if key == "warmup_ratio":
                    if not (number and 0 <= value <= 1):
                        raise InputError(f"warmup_ratio={shown_value(value)} is not allowed; "
                                         "expected a fraction of the training steps in [0, 1]")
                elif not (number and 0 <= value <= 2**53 and float(value).is_integer()):
                    raise InputError(f"{key}={shown_value(value)} is not allowed; expected a "
                                     "number of steps (an integer >= 0)")
                return key, value
    return None


def _checkpoint_tensors(folder: Path) -> set[str] | None:
    """Tensor names of the safetensors checkpoint in `folder`, from its index or file headers."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:  # an unreadable index only skips the checks that need the tensor names
            weight_map = read_json(index).get("weight_map")
        except (InputError, AttributeError):
            return None
        return set(weight_map) if isinstance(weight_map, dict) else None
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        return None
    names: set[str] = set()
    for file in files:
        try:
            with file.open("rb") as handle:  # 8-byte little-endian header length, then JSON
                (size,) = struct.unpack("<Q", handle.read(8))
                if size > SAFETENSORS_HEADER_MAX:  # never allocate what a header claims
                    return None
                header = parse_json(handle.read(size), str(file))
        except (OSError, InputError, struct.error):
            return None
        if not isinstance(header, dict):
            return None
        names.update(k for k in header if k != "__metadata__")
    return names


def _context(cfg: ModelConfig, serve_len: int | None) -> list[Finding]:
    trained = cfg.max_seq_len
    scaling = cfg.rope_scaling
    if serve_len is None or serve_len <= trained:
        return []
    over = f"serving {serve_len} tokens, past max_position_embeddings={trained}"
    detail = {"serve_len": serve_len, "max_position_embeddings": trained}
    if cfg.position == "rope" and scaling is None:
        return [Finding(
            "error", "context",
            f"{over} with RoPE and no rope_scaling: positions past training are angles the "
            f"model never saw, and quality collapses",
            f"enable rope_scaling (YaRN or NTK-aware) with factor >= "
            f"{math.ceil(serve_len / trained)}, or serve at most {trained} tokens", detail)]
    if cfg.position == "learned":
        return [Finding(
            "error", "context",
            f"{over} with a learned position table of {trained} rows: there is no row for "
            f"later positions (an index error, or garbage if indices wrap)",
            f"serve at most {trained} tokens, or fine-tune with a longer table", detail)]
    if cfg.position == "rope":
        original = scaling.get("original_max_position_embeddings") or trained
        multiple = serve_len / original
        beyond = (f"; page 001 warns quality drops markedly past {MAX_EXTRAPOLATION}x even "
                  f"with scaling" if multiple > MAX_EXTRAPOLATION else "")
        return [Finding(
            "warning", "context-scaled",
            f"{over} even with rope_scaling ({scaling['rope_type']}, factor "
            f"{scaling['factor']}), {multiple:.1f}x the original training length "
            f"{original}{beyond}",
            "raise the scaling factor (and max_position_embeddings) or serve fewer tokens",
            {**detail, "original_max_position_embeddings": original})]
    if cfg.position == "sinusoidal":
        return [Finding(
            "warning", "context",
            f"{over} with sinusoidal positions: they are defined everywhere but page 001 "
            f"reports quality falling off by 4x the training length",
            "serve at most a few times the training length, or interpolate positions", detail)]
    return [Finding(
        "info", "context",
        f"{over} with {cfg.position} positions, which need no table; check quality "
        f"at this length",
        "measure quality at the serving length before relying on it", detail)]


def rope_longest_wavelength(theta: float, rotary_dim: int) -> float:
    """2π·θ^((r−2)/r): the wavelength, in positions, of the slowest rotary pair (ω = θ^(−2i/r)
    at i = r/2 − 1). Past it every pair has wrapped, so far positions alias nearer ones: why
    long-context models raise θ (page 001: 10,000 → 1,000,000)."""
    return 2 * math.pi * theta ** ((rotary_dim - 2) / rotary_dim)


def _rope_base(cfg: ModelConfig, context: int) -> list[Finding]:
    if cfg.position != "rope" or cfg.rotary_dim < 4:
        return []
    r = cfg.rotary_dim
    factor = float(cfg.rope_scaling["factor"]) if cfg.rope_scaling else 1.0
    longest = rope_longest_wavelength(cfg.rope_theta, r) * factor
    if context <= longest:
        return []
    # Smallest θ with 2π·θ^((r−2)/r)·factor >= context.
    theta_min = (context / (2 * math.pi * factor)) ** (r / (r - 2))
    return [Finding(
        "warning", "rope-base",
        f"rope_theta={cfg.rope_theta:g} gives a longest wavelength of {longest:,.0f} positions"
        f"{' (x scaling factor)' if factor != 1 else ''}, shorter than the context {context:,}: "
        f"every rotary pair wraps within the context, so distant positions alias nearer ones",
        f"raise rope_theta to at least {theta_min:,.0f} (long-context models use 500,000 to "
        f"1,000,000), or enable NTK-aware/YaRN scaling",
        {"rope_theta": cfg.rope_theta, "rotary_dim": r, "longest_wavelength": longest,
         "context": context, "theta_min": theta_min})]


def _ffn_ratio(cfg: ModelConfig) -> list[Finding]:
    ratio = cfg.d_ff / cfg.d_model
    low, high, ref = USUAL_FFN_RATIO[cfg.gated]
    if low <= ratio <= high:
        return []
    kind = "gated" if cfg.gated else "plain"
    ref_width = round(ref * cfg.d_model)
    matrices = 3 if cfg.gated else 2
    extra_params = cfg.n_layers * matrices * cfg.d_model * (cfg.d_ff - ref_width)
    level = "warning" if ratio > high * FAR_OUT or ratio < low / FAR_OUT else "info"
    page = " (page 001: some models use 8x, which shows up as unexpected FFN memory)" \
        if ratio >= 8 else ""
    sign = "more" if extra_params > 0 else "less"
    extra_bytes = nbytes(abs(extra_params), DOCTOR_DTYPE)
    return [Finding(
        level, "ffn-ratio",
        f"d_ff/d_model = {cfg.d_ff}/{cfg.d_model} = {ratio:.2f}, outside the usual {low}-{high} "
        f"for a {kind} FFN{page}; against {ref:.2f}x (d_ff={ref_width}) it holds "
        f"{abs(extra_params):,} {sign} FFN parameters ({_gib(extra_bytes)} in {DOCTOR_DTYPE}) "
        f"and {abs(cfg.d_ff - ref_width):,} {sign} elements per token per "
        f"intermediate branch",
        "check intermediate_size is intended (a copied value or a 4x rule on a gated FFN are "
        "common slips); budget activation memory for it",
        {"ratio": ratio, "usual": [low, high], "reference_width": ref_width,
         "extra_params": extra_params, "extra_bytes": extra_bytes})]


def _post_norm(cfg: ModelConfig, raw: dict[str, Any], training: bool) -> list[Finding]:
    if cfg.placement != "post" or cfg.n_layers <= POST_NORM_DEPTH:
        return []
    warmup = _training_warmup(raw)
    reason = (f"post-norm with {cfg.n_layers} layers (> {POST_NORM_DEPTH}): the gradient reaches "
              f"early layers only through every norm, and without a learning-rate warmup "
              f"training tends to diverge or stall")
    fix = "add a warmup (a few thousand steps), or switch to pre-norm"
    if not training:
        return [Finding("info", "post-norm-warmup", reason + " (relevant when training it)", fix,
                        {"n_layers": cfg.n_layers})]
    if warmup is None or not warmup[1]:
        got = "no warmup setting" if warmup is None else f"{warmup[0]}={warmup[1]}"
        return [Finding("error", "post-norm-warmup", f"{reason}; the training options have {got}",
                        fix, {"n_layers": cfg.n_layers, "warmup": warmup})]
    return [Finding("info", "post-norm-warmup",
                    f"post-norm with {cfg.n_layers} layers, trained with {warmup[0]}={warmup[1]}",
                    "watch the loss in the first steps; pre-norm is the more forgiving choice",
                    {"n_layers": cfg.n_layers, "warmup": warmup})]


def _embeddings(cfg: ModelConfig, checkpoint: set[str] | None) -> list[Finding]:
    found = []
    params = count_params(cfg)
    head = params.model["lm_head"]
    share = head / params.total
    if not cfg.tie_embeddings and share > UNTIED_HEAD_SHARE:
        found.append(Finding(
            "warning", "untied-head",
            f"untied lm_head holds {head:,} parameters, {share:.0%} of the model "
            f"(vocab {cfg.vocab_size:,} x d_model {cfg.d_model})",
            f"tie_word_embeddings=true would save "
            f"{_gib(nbytes(head, DOCTOR_DTYPE))} in {DOCTOR_DTYPE}, as small models "
            f"usually do",
            {"lm_head": head, "share": share}))
    if checkpoint is not None:
        has_head = "lm_head.weight" in checkpoint
        if cfg.tie_embeddings and has_head:
            found.append(Finding(
                "warning", "tied-checkpoint",
                "the config ties lm_head to the embeddings but the checkpoint stores "
                "lm_head.weight: a loader keeps one of the two and silently drops the other",
                "set tie_word_embeddings=false if the stored head was trained separately, "
                "else drop lm_head.weight from the checkpoint", {}))
        if not cfg.tie_embeddings and not has_head:
            found.append(Finding(
                "error", "missing-head",
                "the config unties lm_head but the checkpoint has no lm_head.weight: the head "
                "would be randomly initialised", "set tie_word_embeddings=true", {}))
    return found


def _q_width(cfg: ModelConfig) -> list[Finding]:
    width = cfg.n_heads * cfg.head_dim
    if width == cfg.d_model:
        return []
    return [Finding(
        "info", "q-width",
        f"n_heads x head_dim = {cfg.n_heads} x {cfg.head_dim} = {width} differs from d_model "
        f"{cfg.d_model}: q_proj is [{width}, {cfg.d_model}] and o_proj maps back",
        "fine if intended (Gemma-2 does this); otherwise check head_dim",
        {"q_width": width, "d_model": cfg.d_model})]


def _layer_ranges(layers: list[int]) -> str:
    """[0, 1, 2, 5] -> "0–2, 5": runs of consecutive layers share layer − index."""
    runs = [[layer for _, layer in run]
            for _, run in itertools.groupby(enumerate(layers), lambda pair: pair[1] - pair[0])]
    return ", ".join(str(run[0]) if len(run) == 1 else f"{run[0]}–{run[-1]}" for run in runs)


def _attention_layout(cfg: ModelConfig, raw: dict[str, Any], length: int) -> list[Finding]:
    windowed = [i for i in range(cfg.n_layers) if cfg.attention_window(i) is not None]
    named = raw.get("sliding_window")
    if not windowed:
        if named is None:
            return []
        why = ("use_sliding_window is not true" if raw.get("use_sliding_window") is not True
               else f"max_window_layers={raw.get('max_window_layers', 28)} is not below "
               f"num_hidden_layers={cfg.n_layers}" if raw.get("layer_types") is None
               else "layer_types marks no layer sliding_attention")
        return [Finding(
            "info", "attention-layout",
            f"sliding_window={named} is set but no layer uses it ({why}): every layer attends "
            "to the whole context, as transformers reads this config",
            "fine if intended; to window layers i >= k set use_sliding_window=true and "
            "max_window_layers=k (or layer_types)", {"windowed_layers": []})]
    window, n = cfg.sliding_window, len(windowed)
    which = "every layer" if n == cfg.n_layers else \
        f"{n} of {cfg.n_layers} layers ({_layer_ranges(windowed)}; the others attend to the " \
        "whole context)"
    bites = (f"at {length:,} tokens the window is shorter than the context" if window < length
             else f"at {length:,} tokens the window covers the whole context, so it changes "
             "nothing there")
    return [Finding(
        "info", "attention-layout",
        f"a sliding window of {window:,} positions on {which}; {bites}",
        "nothing to fix; a windowed layer sees at most the last "
        f"{window:,} positions, so older tokens reach it only through earlier layers",
        {"sliding_window": window, "windowed_layers": windowed})]


def diagnose(raw: dict[str, Any], *, serve_len: int | None = None, training: bool = False,
             checkpoint_dir: str | Path | None = None) -> list[Finding]:
    """Findings for the config `raw` (a config.json dict), errors first.

    Raises InputError for input that is not a readable config (missing or malformed fields,
    a malformed warmup setting with `training`).
    """
    if serve_len is not None and not is_int(serve_len):  # the door of a Python caller
        raise InputError(f"serve_len must be a positive integer, got {serve_len!r}")
    if training:
        _training_warmup(raw)  # a malformed warmup is bad input, whatever the placement
    found = _structure(raw)
    if found:
        return found
    cfg, filled = config_from_json(raw)
    defaults = {key: HF_DEFAULTS[raw["model_type"]][key] for key in filled}
    defaults.update(hf_defaults_taken(raw))
    for key, value in defaults.items():
        found.append(Finding(
            "info", "default-assumed",
            f"{key} is absent from the config; transformers' default {value} is assumed",
            f"write {key} into the config.json", {"key": key, "value": value}))
    found += _q_width(cfg)
    found += _attention_layout(cfg, raw, serve_len or cfg.max_seq_len)
    found += _context(cfg, serve_len)
    found += _rope_base(cfg, serve_len or cfg.max_seq_len)
    found += _ffn_ratio(cfg)
    found += _post_norm(cfg, raw, training)
    checkpoint = _checkpoint_tensors(Path(checkpoint_dir)) if checkpoint_dir else None
    found += _embeddings(cfg, checkpoint)
    return sorted(found, key=lambda f: LEVELS.index(f.level))


def exit_code(findings: list[Finding]) -> int:
    return 1 if any(f.level == "error" for f in findings) else 0
