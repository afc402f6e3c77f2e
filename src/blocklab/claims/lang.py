"""Which language to render in: `--lang` when given, else the locale (zh for zh_*, else en)."""

from __future__ import annotations

import locale
import os

from blocklab.errors import InputError

LANGS = ("en", "zh")


def default_lang() -> str:
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(var)
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    current = locale.getlocale()[0] or ""
    return "zh" if current.lower().startswith("zh") else "en"


def resolve_lang(lang: str | None) -> str:
    if lang is None:
        return default_lang()
    if lang not in LANGS:
        raise InputError(f"--lang {lang!r} is not allowed; expected one of {list(LANGS)}")
    return lang
