"""Output paths named on the command line (`--plot`, `--out`, `--results`), checked before any
work: one that cannot be written is bad input (one line naming the option, the path as typed
and why), not an OSError after minutes of training.

    output_file("fig.png", "--plot")                   a file, written atomically beside itself
    output_folder("out", "--out", ["result.json"])     a folder and the files written under it

Nothing is created: every name (temporary ones included) must fit NAME_MAX and PATH_MAX, every
folder on the way be a folder or makeable, and the nearest existing one take a new file (a
probe file, as root passes `os.access` on any mode bits).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from blocklab.errors import InputError

if TYPE_CHECKING:
    from blocklab.experiments.options import RunOptions

# Linux's limits, where pathconf cannot say (a path none of which exists yet on some systems).
_NAME_MAX, _PATH_MAX = 255, 4096


class NotWritable(InputError):
    """A folder the command would write into may not take new files (a reader may read it)."""


def output_file(text: str, option: str) -> Path:
    """`text` as a file the command will write; InputError naming `option` if it cannot be."""
    path, shown = _named(text, option, "a file name")
    _check_lengths(path, option, shown)
    if os.path.isdir(path):  # (missing, or a part of the way wrong: the folder walk names it)
        raise InputError(f"{option} {shown} is a folder; expected a file name "
                         f"(e.g. {Path(text) / ('out' + (path.suffix or '.png'))})")
    _check_folders([path.parent], option, shown)
    return path


def output_folder(text: str, option: str, files: Iterable[str]) -> Path:
    """`text` as a folder the command creates if missing and writes `files` (relative paths)
    into; InputError naming `option` if it cannot be."""
    folder, shown = _named(text, option, "a folder (created if missing)")
    written = [folder / name for name in files]
    for path in written:
        _check_lengths(path, option, shown)
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise InputError(f"{option} {shown} is a file; expected a folder (created if missing)")
    _check_folders([folder, *(path.parent for path in written)], option, shown)
    return folder


def results_folder(text: str, option: str, chosen: list[tuple[str, RunOptions]],
                   extra: Iterable[str] = ()) -> Path:
    """`text` as a results folder that the suites `chosen` ([(name, options)]) will write into,
    `<results>/<suite>/<size>/` with its `+tuning` and `+x2` folders, and the `extra` files."""
    from blocklab.experiments.suites.base import PLANNED_RULES

    files = [f"{name}/.lock" for name in dict.fromkeys(name for name, _ in chosen)]
    files += extra
    for name, options in chosen:
        for folder in dict.fromkeys((options.folder(), options.folder(tuning=True),
                                     options.folder(longer=True))):
            files.append(f"{name}/{folder}/{PLANNED_RULES}")
    return output_folder(text, option, files)


def temporary_name(name: str) -> str:
    """The longest name a file `name` is written through (`blocklab.jsonio.atomic_path`)."""
    return f".{name}.{'0' * 12}.tmp{Path(name).suffix}"


def _named(text: str, option: str, what: str) -> tuple[Path, str]:
    """`text` as a path, and as shown in a refusal."""
    text = os.fspath(text)
    if not text.strip():
        raise InputError(f"{option} {text!r} is empty; expected {what}")
    if "\0" in text:
        raise InputError(f"{option} {_shown(text)} contains a NUL byte, which no path can "
                         f"hold; expected {what}")
    return Path(text), _shown(text)


def _shown(text: str | Path, count: bool = True) -> str:
    """A path as typed, quoted; a long one cut in the middle (with its length, if `count`)."""
    text = str(text)
    if len(text) <= 100:
        return repr(text)
    return repr(text[:40] + "…" + text[-40:]) + (f" ({len(text)} characters)" if count else "")


def _limits(path: Path) -> tuple[int, int]:
    """(NAME_MAX, PATH_MAX) of the file system of the nearest existing part of `path`."""
    for part in (path, *path.parents):
        try:
            return (os.pathconf(part, "PC_NAME_MAX"), os.pathconf(part, "PC_PATH_MAX"))
        except (OSError, ValueError):
            continue
    return _NAME_MAX, _PATH_MAX


def _check_lengths(path: Path, option: str, shown: str) -> None:
    """Every name on `path` and its temporary name within NAME_MAX bytes, the temporary path
    within PATH_MAX (which counts its NUL)."""
    name_max, path_max = _limits(path.parent)
    for part in path.parent.parts:
        size = len(os.fsencode(part))
        if size > name_max:
            raise InputError(f"{option} {shown}: the name {_shown(part, False)} is {size} "
                             f"bytes long; this file system allows at most {name_max}")
    name = os.fsencode(path.name)
    extra = len(os.fsencode(temporary_name(path.name))) - len(name)
    if len(name) + extra > name_max:
        raise InputError(f"{option} {shown}: the file name {_shown(path.name, False)} is "
                         f"{len(name)} bytes long; blocklab writes it through a temporary name "
                         f"{extra} bytes longer, so at most {name_max - extra} bytes fit this "
                         f"file system ({name_max})")
    size = len(os.fsencode(str(path.parent / temporary_name(path.name))))
    if size >= path_max:
        raise InputError(f"{option} {shown}: the paths written there are up to {size} bytes "
                         f"long; this system allows {path_max - 1}")


def _check_folders(folders: Iterable[Path], option: str, shown: str) -> None:
    """Each folder exists or can be made, and the nearest existing part of each is writable."""
    probed: set[Path] = set()
    for folder in dict.fromkeys(folders):
        nearest = _nearest_folder(folder, option, shown)
        if nearest not in probed:
            _check_writable(nearest, folder, option, shown)
            probed.add(nearest)


def _nearest_folder(folder: Path, option: str, shown: str) -> Path:
    """The nearest part of `folder` (itself included) that exists; it must be a folder."""
    part = folder
    while True:
        try:
            mode = os.stat(part).st_mode
        except FileNotFoundError:
            if os.path.islink(part):
                raise InputError(f"{option} {shown}: {_shown(part)} is a symbolic link to "
                                 f"{_shown(os.readlink(part))}, which does not exist") from None
        except NotADirectoryError:
            pass  # a part above it is a file: named when the walk gets there
        except OSError as err:
            raise InputError(f"{option} {shown}: {_shown(part)}: {_why(err)}") from None
        else:
            if stat.S_ISDIR(mode):
                return part
            raise InputError(f"{option} {shown}: {_shown(part)} is a file, so no folder can be "
                             "made inside it")
        if part.parent == part:  # pragma: no cover - the root exists
            raise InputError(f"{option} {shown}: no part of this path exists")
        part = part.parent


def _why(err: OSError) -> str:
    if err.errno == errno.ELOOP:
        return "a loop of symbolic links (or too many of them on the way)"
    if err.errno == errno.EACCES:
        return "permission denied: a folder on the way cannot be searched"
    return err.strerror or str(err)


def _check_writable(nearest: Path, folder: Path, option: str, shown: str) -> None:
    """`nearest` (an existing folder) lets this process create files (`folder`'s parts)."""
    reason = None
    if not os.access(nearest, os.W_OK | os.X_OK):
        reason = "a read-only file system" if _read_only_mount(nearest) else "permission denied"
    else:
        probe = nearest / f".blocklab-write-test-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            os.unlink(probe)
        except OSError as err:
            reason = ("a read-only file system" if err.errno == errno.EROFS else
                      err.strerror or str(err))
    if reason is None:
        return
    where = (f"the working directory {_shown(Path.cwd())}" if str(nearest) == "." else
             f"the folder {_shown(nearest)}")
    made = "" if nearest == folder else f", so {_shown(folder)} cannot be created in it"
    raise NotWritable(f"{option} {shown}: {where} is not writable ({reason}){made}")


def _read_only_mount(folder: Path) -> bool:
    """Whether `folder` is on a file system mounted read-only (where no mode change helps)."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False
