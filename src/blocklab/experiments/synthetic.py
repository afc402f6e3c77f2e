"""A synthetic byte-level task with a known answer, generated deterministically from a seed.

    passkey   filler · "The pass key is 12345. Remember it. 12345 is the pass key." · filler ·
              "What is the pass key? The pass key is 12345"

Scored by teacher forcing: an example is correct only if every answer byte is the argmax of the
logits before it. Mohtashami & Jaggi 2023 (https://arxiv.org/abs/2305.16300).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from blocklab.errors import InputError

if TYPE_CHECKING:
    from torch import nn

_FILLER = ("The grass is green. The sky is blue. The sun is yellow. Here we go. "
           "There and back again. ")
_QUESTION = "What is the pass key? The pass key is "
_KEY_DIGITS = 5
_SYNTHETIC_STREAM = 0x5E7


@dataclass(frozen=True, eq=False)
class SyntheticExample:
    """`tokens` [n] uint8 (answer included), `answer_positions` [k] int64 into them, `answer`
    their text; `depth`: the filler's share before the needle, which starts at `needle_start`."""

    tokens: np.ndarray
    answer_positions: np.ndarray
    answer: str
    depth: float | None = None
    needle_start: int | None = None

    @property
    def text(self) -> str:
        return self.tokens.tobytes().decode("utf-8")


def _rng(seed: int) -> np.random.Generator:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise InputError(f"seed={seed!r} is not allowed; expected an integer >= 0")
    return np.random.default_rng(np.random.SeedSequence([_SYNTHETIC_STREAM, int(seed)]))


def passkey_needle(key: str) -> str:
    return f"The pass key is {key}. Remember it. {key} is the pass key. "


def passkey_example(seed: int, length: int = 512, depth: float = 0.5) -> SyntheticExample:
    """A 5-digit pass key hidden in `length` bytes of filler at the sentence boundary nearest
    `depth` (the depth recorded), asked for at the end; the answer is the last five bytes."""
    if not 0.0 <= depth <= 1.0:
        raise InputError(f"depth={depth!r} is not allowed; expected a fraction in [0, 1]")
    key = str(_rng(seed).integers(10 ** (_KEY_DIGITS - 1), 10 ** _KEY_DIGITS))
    needle, question = passkey_needle(key), _QUESTION + key
    filler_len = length - len(needle) - len(question)
    if filler_len < 0:
        raise InputError(f"length={length} is too short for a passkey example; expected >= "
                         f"{len(needle) + len(question)}")
    filler = (_FILLER * (filler_len // len(_FILLER) + 1))[:filler_len]
    boundaries = [0, *(i + 2 for i in range(filler_len - 1) if filler[i:i + 2] == ". "),
                  filler_len]
    cut = min(boundaries, key=lambda b: (abs(b - depth * filler_len), b))
    text = filler[:cut] + needle + filler[cut:] + question
    realised = cut / filler_len if filler_len else depth
    tokens = np.frombuffer(text.encode("ascii"), dtype=np.uint8).copy()
    positions = np.arange(tokens.size - len(key), tokens.size, dtype=np.int64)
    return SyntheticExample(tokens, positions, key, depth=realised, needle_start=cut)


def example_seeds(seed: int, n: int) -> list[int]:
    """`n` example seeds derived from one seed (distinct streams, reproducible)."""
    state = np.random.SeedSequence([_SYNTHETIC_STREAM, int(seed)]).generate_state(n, np.uint32)
    return [int(s) for s in state]


def answer_accuracy(model: nn.Module, examples: list[SyntheticExample],
                    batch_size: int = 16) -> float:
    """Exact-match accuracy: argmax of logits[p − 1] == tokens[p] at every answer position."""
    import torch

    from blocklab.experiments.trainer import evaluating

    if not examples:
        raise InputError("answer_accuracy needs at least one example")
    device = next(model.parameters()).device
    by_length: dict[int, list[SyntheticExample]] = {}
    for example in examples:
        by_length.setdefault(example.tokens.size, []).append(example)
    correct = 0
    with evaluating(model):
        for group in by_length.values():
            for start in range(0, len(group), batch_size):
                chunk = group[start:start + batch_size]
                tokens = torch.from_numpy(np.stack([e.tokens for e in chunk]).astype(np.int64))
                tokens = tokens.to(device)
                predicted = model(tokens[:, :-1]).argmax(dim=-1)  # [b, n - 1]
                for row, example in enumerate(chunk):
                    positions = torch.from_numpy(example.answer_positions).to(device)
                    hits = predicted[row, positions - 1] == tokens[row, positions]
                    correct += bool(hits.all())
    return correct / len(examples)


def passkey_accuracy(model: nn.Module, *, n: int = 16, length: int = 512, depth: float = 0.5,
                     seed: int = 0, batch_size: int = 16) -> float:
    """`answer_accuracy` of `n` passkey examples."""
    examples = [passkey_example(s, length, depth) for s in example_seeds(seed, n)]
    return answer_accuracy(model, examples, batch_size)
