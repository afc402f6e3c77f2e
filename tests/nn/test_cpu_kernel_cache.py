"""The C kernels' build cache, attacked: outputs never reused, broken or foreign
builds never loaded, the compiler spawned only to build.

Every corrupted file here is a fresh copy (a new inode): overwriting the library this test
process has mapped would break the process itself, not the loader under test.
"""

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from blocklab.nn import RMSNorm, backends, cpu_kernels

needs_kernels = pytest.mark.skipif(not cpu_kernels.available(),
                                   reason=f"no CPU kernels: {cpu_kernels.unavailable_reason()}")
SRC = Path(cpu_kernels.__file__).parents[1]


@pytest.fixture
def cache(monkeypatch, tmp_path):
    folder = tmp_path / "cache"
    monkeypatch.setenv("BLOCKLAB_CACHE_DIR", str(folder))
    cpu_kernels.reset()
    yield folder
    monkeypatch.undo()
    cpu_kernels.reset()


def _built(folder: Path) -> tuple[Path, Path]:
    """(manifest, library) of the one build in `folder`."""
    (manifest,) = folder.glob("blocklab_cpu_kernels_*.json")
    return manifest, folder / json.loads(manifest.read_text())["library"]


def _replace_library(folder: Path, data: bytes) -> Path:
    manifest, library = _built(folder)
    library.unlink()  # a new inode, never the one this process has mapped
    library.write_bytes(data)
    os.chmod(library, 0o600)
    return library


def _rms_correct() -> bool:
    torch.manual_seed(0)
    x = torch.randn(6, 32)
    ref, auto = RMSNorm(32, impl="reference"), RMSNorm(32, impl="fast")
    return bool(torch.allclose(auto(x), ref(x), atol=1e-6, rtol=1e-6))


# --- outputs are never reused ------------------------------------------------------------------
@needs_kernels
@pytest.mark.parametrize("op", ["rms", "add_y", "add_h", "gated", "rope", "rms_grad"])
def test_output_held_by_storage_is_never_overwritten(op):
    """The corruption report: hold only an output's storage, call again, read it back."""
    torch.manual_seed(0)
    w = torch.ones(256)
    cos, sin = torch.rand(1, 1, 64, 32), torch.rand(1, 1, 64, 32)

    def call(x: torch.Tensor) -> torch.Tensor:
        if op == "rms":
            return cpu_kernels.rms_norm(x, w)
        if op in ("add_y", "add_h"):
            y, h = cpu_kernels.add_rms_norm(x, x.flip(0), w)
            return y if op == "add_y" else h
        if op == "gated":
            return cpu_kernels.gated_activation(x, x.flip(1))
        if op == "rope":
            return cpu_kernels.rope_half_split(x.reshape(64, 4, 64, 32), cos, sin)
        a = x.clone().requires_grad_()
        cpu_kernels.rms_norm(a, w).backward(x.flip(0))
        return a.grad

    x1, x2 = torch.randn(2048, 256), torch.randn(2048, 256)  # 2 MiB outputs
    with torch.no_grad() if op != "rms_grad" else torch.enable_grad():
        want = call(x1).clone()
        y = call(x1)
        storage, shape = y.untyped_storage(), y.shape
        del y
        for _ in range(3):
            call(x2)
        got = torch.empty(0).set_(storage, 0, shape)
    assert (got - want).abs().max().item() == 0.0


@needs_kernels
def test_output_sent_to_shared_memory_is_never_overwritten():
    x1, x2 = torch.randn(1024, 256), torch.randn(1024, 256)
    norm = RMSNorm(256)
    with torch.no_grad():
        want = norm(x1).clone()
        y = norm(x1)
        y.share_memory_()  # what a torch.multiprocessing queue does to a tensor it sends
        kept = torch.empty(0).set_(y.untyped_storage(), 0, y.shape)
        del y
        norm(x2)
    assert torch.equal(kept, want)


def test_src_uses_no_private_torch_refcount_api():
    for path in SRC.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for banned in ("_storage_Use_Count", "torch._C.", "_cdata"):
            assert banned not in text, f"{path.relative_to(SRC)} uses {banned}"


# --- the loader ---------------------------------------------------------------------------------
@needs_kernels
def test_build_is_published_with_manifest_and_reused_without_the_compiler(cache, monkeypatch):
    assert cpu_kernels.available()
    manifest, library = _built(cache)
    meta = json.loads(manifest.read_text())
    import hashlib
    assert meta["sha256"] == hashlib.sha256(library.read_bytes()).hexdigest()
    assert sorted(p.name for p in cache.iterdir()) == sorted([manifest.name, library.name])
    for path in (cache, manifest, library):  # private to this user
        assert not os.stat(path).st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    stamp = library.stat().st_mtime_ns

    def no_compiler(*args, **kwargs):
        raise AssertionError(f"the compiler was spawned for a cached build: {args}")

    cpu_kernels.reset()
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setattr(subprocess, "run", no_compiler)
    assert cpu_kernels.available(), cpu_kernels.unavailable_reason()
    assert library.stat().st_mtime_ns == stamp and cpu_kernels.notes() == []
    assert _rms_correct()


@needs_kernels
@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "symbol-less", "manifest"])
def test_broken_cached_build_is_rebuilt_not_loaded(cache, damage, tmp_path):
    assert cpu_kernels.available()
    manifest, library = _built(cache)
    good = library.read_bytes()
    if damage == "truncated":
        _replace_library(cache, good[:10_000])
    elif damage == "garbage":
        _replace_library(cache, os.urandom(len(good)))
    elif damage == "empty":
        _replace_library(cache, b"")
    elif damage == "symbol-less":  # a valid library whose hash the manifest vouches for
        src = tmp_path / "other.c"
        src.write_text("int blocklab_unrelated(void) { return 1; }\n")
        other = tmp_path / "other.so"
        subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC", str(src), "-o",
                        str(other)], check=True)
        import hashlib
        digest = hashlib.sha256(other.read_bytes()).hexdigest()
        foreign = library.with_name(f"{library.name.split('-')[0]}-{digest[:16]}.so")
        shutil.copyfile(other, foreign)
        os.chmod(foreign, 0o600)
        manifest.write_text(json.dumps({"library": foreign.name, "sha256": digest}))
    else:
        manifest.write_text("{not json")
    cpu_kernels.reset()
    assert cpu_kernels.available(), cpu_kernels.unavailable_reason()
    (note,) = cpu_kernels.notes()
    assert note.startswith("cached build not used (") and note.endswith("); rebuilding")
    if damage == "symbol-less":
        assert "lacks kernel symbol(s)" in note
    _, rebuilt = _built(cache)
    assert rebuilt.read_bytes() != b"" and rebuilt.stat().st_size > 10_000
    assert _rms_correct()


@needs_kernels
def test_truncated_build_cannot_take_a_fresh_process_down(cache):
    """The original report: a cached library cut to 10,000 bytes killed every process with a
    bus error. A fresh process (nothing mapped yet) must rebuild and run."""
    assert cpu_kernels.available()
    _replace_library(cache, _built(cache)[1].read_bytes()[:10_000])
    code = ("from blocklab.nn import cpu_kernels, RMSNorm; import torch, json; x=torch.randn(4,8);"
            "ok=torch.allclose(RMSNorm(8)(x), RMSNorm(8, impl='reference')(x), atol=1e-6);"
            "print(json.dumps([cpu_kernels.unavailable_reason(), cpu_kernels.notes(), ok]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "BLOCKLAB_CACHE_DIR": str(cache)})
    assert proc.returncode == 0, proc.stderr
    reason, notes, ok = json.loads(proc.stdout)
    assert reason is None and ok
    assert "does not match its manifest's sha256 (10000 bytes)" in notes[0]


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_cache_writable_by_others_is_refused(cache, mode):
    cache.mkdir()
    os.chmod(cache, mode)
    reason = cpu_kernels.unavailable_reason()
    assert reason == f"kernel cache {cache} is writable by others (mode {mode:o})"
    assert backends.resolve("rms_norm", "fast", torch.randn(2, 8)) == "lean"
    assert list(cache.iterdir()) == []  # nothing built into it either
    assert _rms_correct()


@needs_kernels
def test_library_writable_by_others_is_not_loaded(cache):
    assert cpu_kernels.available()
    _, library = _built(cache)
    os.chmod(library, 0o666)
    cpu_kernels.reset()
    assert cpu_kernels.available()
    assert "is writable by others (mode 666)" in cpu_kernels.notes()[0]
    _, rebuilt = _built(cache)
    assert rebuilt.stat().st_mode & 0o777 == 0o600


@pytest.mark.skipif(os.getuid() != 0, reason="changing a folder's owner needs root")
def test_cache_owned_by_another_user_is_refused(cache):
    cache.mkdir(mode=0o700)
    os.chown(cache, 4242, 4242)
    assert cpu_kernels.unavailable_reason() == (
        f"kernel cache {cache} belongs to uid 4242, not to this user (0)")
    assert _rms_correct()


def test_cache_path_that_is_a_file_is_refused(cache):
    cache.parent.mkdir(exist_ok=True)
    cache.write_text("not a folder")
    reason = cpu_kernels.unavailable_reason()
    assert reason is not None and str(cache) in reason
    assert _rms_correct()


@needs_kernels
def test_prune_keeps_builds_in_use_and_removes_stale_ones(cache):
    assert cpu_kernels.available()
    manifest, library = _built(cache)
    week_ago = time.time() - cpu_kernels.STALE_S - 60
    # another version's build, built long ago but loaded today: kept
    used_m = cache / "blocklab_cpu_kernels_1111111111111111.json"
    used_l = cache / "blocklab_cpu_kernels_1111111111111111-aaaaaaaaaaaaaaaa.so"
    # another version's build nobody loaded for a week: removed
    stale_m = cache / "blocklab_cpu_kernels_2222222222222222.json"
    stale_l = cache / "blocklab_cpu_kernels_2222222222222222-bbbbbbbbbbbbbbbb.so"
    for m, lib in ((used_m, used_l), (stale_m, stale_l)):
        shutil.copyfile(library, lib)
        m.write_text(json.dumps({"library": lib.name, "sha256": "0"}))
        os.utime(lib, (week_ago, week_ago))
    os.utime(stale_m, (week_ago, week_ago))
    manifest.unlink()  # force a new build of the current version, which prunes
    cpu_kernels.reset()
    assert cpu_kernels.available()
    assert used_m.exists() and used_l.exists()
    assert not stale_m.exists() and not stale_l.exists()


@needs_kernels
def test_loading_marks_the_build_as_used(cache):
    assert cpu_kernels.available()
    manifest, _ = _built(cache)
    week_ago = time.time() - cpu_kernels.STALE_S - 60
    os.utime(manifest, (week_ago, week_ago))
    cpu_kernels.reset()
    assert cpu_kernels.available()
    assert time.time() - manifest.stat().st_mtime < 60


def test_failed_compile_leaves_kernels_off_with_reason(cache, tmp_path, monkeypatch):
    fake = tmp_path / "fakecc"
    fake.write_text("#!/bin/sh\n[ \"$1\" = --version ] && echo fakecc 1.0 && exit 0\n"
                    "echo 'fakecc: cannot compile' >&2; exit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    assert cpu_kernels.unavailable_reason() == f"{fake} failed to compile the CPU kernels: " \
                                               "fakecc: cannot compile"
    assert [p.name for p in cache.iterdir()] == []  # the temporary build folder is gone
    assert _rms_correct()


def test_compiler_output_without_kernels_is_not_published(cache, tmp_path, monkeypatch):
    """A 'compiler' that writes a library without the kernel symbols: checked before use."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        pytest.skip("no C compiler")
    fake = tmp_path / "fakecc"
    fake.write_text(f"#!/bin/sh\n[ \"$1\" = --version ] && exec {cc} --version\n"
                    "out=''; prev=''; for a in \"$@\"; do [ \"$prev\" = -o ] && out=$a; "
                    "prev=$a; done\n"
                    f"echo 'int nothing(void) {{ return 0; }}' | {cc} -shared -fPIC -x c - "
                    "-o \"$out\"\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    reason = cpu_kernels.unavailable_reason()
    assert reason is not None and "unusable" in reason and "lacks kernel symbol(s)" in reason
    assert list(cache.glob("*.json")) == []
    assert _rms_correct()
