"""An output encoding that cannot show the text is the user's setting, never "internal error":
English writes its symbols in ASCII stand-ins and succeeds, --json writes \\u escapes (the same
JSON), and Chinese, which has no stand-in, is one line and exit code 2 before any work."""

from __future__ import annotations

import json
import os

import pytest

from blocklab.cli import ASCII_FALLBACK, main


def _env(encoding: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_MESSAGES", "LANG")}
    return {**env, "PYTHONIOENCODING": encoding, **extra}


def test_the_stand_ins():
    text = "3·d·m ≈ 10¹⁹ × 2 … relu · rmsnorm ⌈2·m0/3⌉ δ ≥ 1 é 中文 │"
    assert text.encode("ascii", ASCII_FALLBACK).decode() == (
        "3*d*m ~ 10^19 x 2 ... relu - rmsnorm ceil(2*m0/3) delta >= 1 e ???? |")
    # Latin-1 shows what it can (·, ×, é) and stands in for the rest.
    assert "3·d·m ≈ é".encode("latin-1", ASCII_FALLBACK).decode("latin-1") == "3·d·m ~ é"


@pytest.mark.parametrize("argv", [["claims", "C01", "--lang", "en"],
                                  ["verify", "--group", "worked"]])
def test_english_on_an_ascii_stream_succeeds_in_ascii(blocklab, argv):
    proc = blocklab(*argv, env=_env("ascii"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "" and proc.stdout.isascii()
    assert "3*d*m" in proc.stdout or "2*d*m" in proc.stdout
    assert "+---" in proc.stdout  # the table's borders, in ASCII


@pytest.mark.parametrize(("argv", "extra", "asked"), [
    (["claims", "C01", "--lang", "zh"], {}, "(--lang zh)"),
    (["claims", "C01", "--rules", "--lang", "zh"], {}, "(--lang zh)"),
    (["claims", "C01"], {"LANG": "zh_CN.UTF-8"}, "(the locale's language, zh)"),
])
def test_chinese_on_an_ascii_stream_is_one_line_exit_2(blocklab, one_line_exit_2, argv, extra,
                                                       asked):
    proc = blocklab(*argv, env=_env("ascii", **extra))
    assert one_line_exit_2(proc) == (
        f"error: the output encoding 'ascii' cannot show Chinese {asked}; set "
        "PYTHONIOENCODING=utf-8 (or a UTF-8 locale), or use --lang en or --json")


def test_chinese_json_on_an_ascii_stream_is_the_same_json(blocklab, capsys):
    ascii_run = blocklab("claims", "C01", "--lang", "zh", "--json", env=_env("ascii"))
    assert ascii_run.returncode == main(["claims", "C01", "--lang", "zh", "--json"]) == 0
    assert ascii_run.stdout.isascii() and "\\u" in ascii_run.stdout
    assert json.loads(ascii_run.stdout) == json.loads(capsys.readouterr().out)
    assert any("\u4e00" <= ch <= "\u9fff" for ch in json.loads(ascii_run.stdout)[0]["claim_zh"])
