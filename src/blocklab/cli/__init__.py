"""The `blocklab` command line: thin typer commands over library functions, one module each,
registered on `app`; PyTorch is imported only inside the commands that need it.

Exit codes: 0 success; 1 a failed check, finding or run, output that cannot be written, or a
bug ("internal error"; `--debug` shows the traceback); 2 bad input (a usage error or an
`InputError`: one line on stderr); 130 Ctrl-C; 141 the reader of our output went away
(SIGPIPE, `blocklab verify | head`); 143 SIGTERM, handled as Ctrl-C.

An output encoding that is not Unicode is the user's setting, never a crash: symbols are
written as ASCII stand-ins (`ascii_fallback`), JSON with \\u escapes (`json_text`), and
Chinese, which has no stand-in, is refused before any work (`check_shows_chinese`).
"""

from __future__ import annotations

import codecs
import contextlib
import inspect
import io
import os
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from typer.core import TyperCommand, TyperGroup

from blocklab.checks import MAX_SIZE, is_int, refusal
from blocklab.errors import Busy, InputError

if TYPE_CHECKING:
    from blocklab.experiments.options import RunRequest


def _reflowed(text: str | None) -> str | None:
    """`text` (a docstring) with each paragraph on one line, so that help wraps it at the
    terminal's width; a paragraph that starts with \\b (click's mark) keeps its lines."""
    if not text:
        return text
    body, mark, rest = inspect.cleandoc(text).partition("\f")
    paragraphs = [p if p.startswith("\b") else " ".join(line.strip() for line in p.splitlines())
                  for p in body.split("\n\n")]
    return "\n\n".join(paragraphs) + mark + rest


def _plain_metavar(param) -> None:
    """A flag shows no value placeholder (typer 0.29 labels every flag `<bool>`, though a flag
    takes no value); an argument is named in capitals, NAME, as click names it."""
    if getattr(param, "is_flag", False) and param.metavar is None:
        param.metavar = ""
    elif param.param_type_name == "argument" and param.metavar is None:
        param.metavar = param.name.upper()


class _HelpLayout:
    """Help as click lays it out: docstring paragraphs reflow (typer's rich mode keeps their
    line breaks), flags show no `<bool>`, a required argument reads NAME (typer: {NAME})."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.help = _reflowed(self.help)
        for param in self.params:
            _plain_metavar(param)

    def get_help_option(self, ctx):
        option = super().get_help_option(ctx)
        if option is not None:
            _plain_metavar(option)
        return option

    def collect_usage_pieces(self, ctx) -> list[str]:
        return [piece[1:-1] if piece.startswith("{") and piece.endswith("}") else piece
                for piece in super().collect_usage_pieces(ctx)]


class _Command(_HelpLayout, TyperCommand):
    pass


class _Group(_HelpLayout, TyperGroup):
    pass


class _Typer(typer.Typer):
    """typer.Typer whose commands lay out their help as `_HelpLayout` says."""

    def command(self, *args, cls=None, **kwargs):
        return super().command(*args, cls=cls or _Command, **kwargs)


app = _Typer(
    name="blocklab",
    cls=_Group,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 0, 1, 2, 130, 141
EXIT_TERMINATED = 128 + signal.SIGTERM  # 143: SIGTERM stopped it, as the shell reports that


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show the traceback of an internal error "
                               "(allowed anywhere on the command line)."),
) -> None:
    """Transformer blocks (FFN, normalization, position encoding): computed, checked, measured."""


# Command modules, in the order `blocklab --help` lists them.
_COMMANDS = ("verify", "budget", "doctor", "train", "suite", "claims", "report", "ladder",
             "quantize")


def console(stderr: bool = False, wide: bool = False):
    """A rich Console for command output (`wide`: 120 columns when piped). A reader gone away
    raises BrokenPipeError (`main` returns 141; rich would exit 1, a failed check's code); on
    a stream that is not Unicode, text takes its ASCII stand-ins before layout, so that a
    table's columns line up."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

        def render_str(self, text: str, **kwargs):
            if not unicode_output(self.file):
                text = text.encode(self.encoding, ASCII_FALLBACK).decode(self.encoding)
            return super().render_str(text, **kwargs)

    out = _Console(stderr=stderr)
    if wide and not out.is_terminal:
        out.width = 120
    return out


# What a symbol the output encoding cannot show is written as (`ascii_fallback`).
_ASCII_STAND_INS = {
    "·": "*", "×": "x", "≈": "~", "±": "+/-", "≥": ">=", "≤": "<=", "≠": "!=", "≡": "==",
    "−": "-", "–": "-", "—": "--", "…": "...", "→": "->", "←": "<-", "↔": "<->", "•": "*",
    "√": "sqrt", "∞": "inf", "∂": "d", "∇": "grad", "∈": "in", "‖": "||", "§": "sec",
    "⌈": "ceil(", "⌉": ")", "⌊": "floor(", "⌋": ")", "‘": "'", "’": "'", "“": '"', "”": '"',
    "δ": "delta", "Δ": "Delta", "σ": "sigma", "μ": "mu", "α": "alpha", "β": "beta",
    "γ": "gamma", "ε": "eps", "θ": "theta", "λ": "lambda", "π": "pi", "Σ": "sum", "∑": "sum",
    "✓": "ok", "✗": "x",
}
_SUPERSCRIPTS = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁻ᵀⁿ", "0123456789-Tn", strict=True))
ASCII_FALLBACK = "blocklab.ascii"
# A sample of the words `--lang zh` prints: an encoding that cannot write them cannot show it.
_CHINESE_SAMPLE = "结论账本：页面中的每条论断，判定证据出处规则"


def _ascii_stand_in(err: UnicodeError) -> tuple[str, int]:
    """The codecs error handler: each character the encoding cannot write as its ASCII
    stand-in (superscripts as ^19, box lines as | - +, é as e), else ? (?? if wide)."""
    if not isinstance(err, UnicodeEncodeError):
        raise err
    import unicodedata

    text, out = err.object, []
    for at in range(err.start, err.end):
        char = text[at]
        name = unicodedata.name(char, "")
        if char in _SUPERSCRIPTS:
            out.append(("" if at > err.start and text[at - 1] in _SUPERSCRIPTS else "^")
                       + _SUPERSCRIPTS[char])
        elif char == "·" and text[at - 1:at] == " " and text[at + 1:at + 2] == " ":
            out.append("-")  # a separator ("relu · rmsnorm"), not a product
        elif char in _ASCII_STAND_INS:
            out.append(_ASCII_STAND_INS[char])
        elif name.startswith("BOX DRAWINGS"):
            across, down = "HORIZONTAL" in name, "VERTICAL" in name
            out.append("|" if down and not across else "-" if across and not down else "+")
        else:
            plain = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode()
            wide = unicodedata.east_asian_width(char) in "WF"
            out.append(plain if plain.isalnum() else "??" if wide else "?")
    return "".join(out), err.end


codecs.register_error(ASCII_FALLBACK, _ascii_stand_in)


def _encoding(stream) -> str:
    return getattr(stream, "encoding", None) or "utf-8"


def unicode_output(stream=None) -> bool:
    """Whether `stream` (default: stdout) writes in an encoding that can show any text."""
    try:
        name = codecs.lookup(_encoding(sys.stdout if stream is None else stream)).name
    except LookupError:
        return False
    return name.startswith("utf") or name == "gb18030"


def check_shows_chinese(asked: str) -> None:
    """InputError (exit 2, one line) unless stdout's encoding can write Chinese; `asked`
    says where the language came from (`--lang zh`, or the locale)."""
    encoding = _encoding(sys.stdout)
    try:
        _CHINESE_SAMPLE.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        raise InputError(f"the output encoding {encoding!r} cannot show Chinese ({asked}); "
                         "set PYTHONIOENCODING=utf-8 (or a UTF-8 locale), or use --lang en "
                         "or --json") from None


def number(value: float | None, digits: int = 4) -> str:
    """A table cell: `value` to `digits` decimals, — for None."""
    return "—" if value is None else f"{value:.{digits}f}"


def json_text(value, indent: int | None = None) -> str:
    """`value` as a command's `--json` output: text as it is where stdout writes Unicode,
    \\u escapes (the same JSON) where its encoding could not show every character."""
    from blocklab.jsonio import output_json

    return output_json(value, indent=indent, ensure_ascii=not unicode_output())


@contextlib.contextmanager
def ascii_fallback() -> Iterator[None]:
    """Inside, stdout and stderr, where not Unicode and strict (or stderr's backslashreplace),
    write what they cannot show as its ASCII stand-in."""
    changed = []
    for stream in (sys.stdout, sys.stderr):
        if (isinstance(stream, io.TextIOWrapper) and not unicode_output(stream)
                and stream.errors in ("strict", "backslashreplace")):
            changed.append((stream, stream.errors))
            stream.reconfigure(errors=ASCII_FALLBACK)
    try:
        yield
    finally:
        for stream, errors in changed:
            with contextlib.suppress(OSError, ValueError):
                stream.reconfigure(errors=errors)


def chosen_size(size: str | None, tiny: bool = False, quick: bool = False,
                full: bool = False, *, rungs: bool = False) -> str:
    """The size from `--size NAME` or `--tiny/--quick/--full` (default quick; two choices are
    bad input); `rungs`: the ladder's rungs are sizes too (`blocklab suite`)."""
    from blocklab.experiments.ladder import RUNGS

    choices = ("tiny", "quick", "full") + (RUNGS if rungs else ())
    given = [name for name, flag in (("tiny", tiny), ("quick", quick), ("full", full)) if flag]
    if size is not None:
        if size not in choices:
            raise refusal(f"--size {size!r}", f"one of {list(choices)}")
        given.append(size)
    if len(set(given)) > 1:
        raise InputError(f"choose one size, got {', '.join(sorted(set(given)))}; use --size "
                         "tiny|quick|full (or one of --tiny, --quick, --full)")
    return given[0] if given else "quick"


# The fields RunRequest's checks name, as the options that set them.
_OPTION_OF_FIELD = {"seed offset": "--seed-offset", "precision": "--precision",
                    "device": "--device"}


def run_request(results: str | Path, size: str, seed_offset: int = 0,
                precision: str = "fp32", budget_s: float | None = 0.0,
                device: str = "cpu") -> RunRequest:
    """The command's `RunRequest`, checked by its own rules and nowhere else; a refusal names
    the option as written (`--seed-offset -1 is not allowed; ...`)."""
    from blocklab.experiments.options import RunRequest

    try:
        return RunRequest(Path(results), size, seed_offset, precision, budget_s, device)
    except InputError as err:
        text = str(err)
        field = next((f for f in _OPTION_OF_FIELD if text.startswith(f)), None)
        if field is None:
            raise
        raise InputError(_OPTION_OF_FIELD[field] + text[len(field):]) from None


def size_option(option: str, text: str | None) -> int | None:
    """An option's `text` as a positive integer up to MAX_SIZE (None stays None), else one
    line naming the option."""
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        shown = repr(text) if len(text) <= 24 else f"{text[:12]!r}... ({len(text)} chars)"
        raise InputError(f"{option} must be a positive integer, got {shown}") from None
    if not is_int(value):
        shown = str(value) if len(str(value)) <= 24 else f"a {len(str(value))}-digit number"
        raise InputError(f"{option} must be a positive integer (at most {MAX_SIZE}), got {shown}")
    return value


def jobs_executor(jobs: int | None):
    """The executor that runs a suite's independent runs in `jobs` worker processes (default:
    the usable cores); timed runs still run alone."""
    from blocklab.experiments.env import check_threads, usable_cores
    from blocklab.experiments.executors import ParallelExecutor

    return ParallelExecutor(usable_cores() if jobs is None else check_threads(jobs, "--jobs"))


def check_device_option(device: str, jobs: int | None) -> None:
    """`--device` (a name `run_request` checked) present here, before any work; on a GPU runs
    go one after another, so --jobs above 1 is refused."""
    if device == "cpu":
        return
    if jobs is not None and jobs != 1:
        raise InputError(f"--jobs {jobs} is not allowed with --device {device}: runs on a GPU "
                         "go one after another in this process; expected --jobs 1 or none")
    from blocklab.experiments.trainer import check_device

    check_device(device, f"--device {device}")


def warn_if_bf16_emulated(precision: str, device: str = "cpu") -> None:
    """One warning line on stderr (the run goes on) for bfloat16 on a CPU without bfloat16
    matrix units (`env.bf16_emulated`)."""
    from blocklab.experiments.env import bf16_emulated

    if precision == "bf16" and device.split(":")[0] == "cpu" and bf16_emulated():
        typer.echo("warning: bfloat16 matmuls are emulated on this CPU (no avx512_bf16 or "
                   "amx_bf16 units), about 30× slower than float32; --precision fp32 is "
                   "recommended", err=True)


def chosen_executor(kind: str, jobs: int | None, address: str | None, cpus: float | None,
                    gpus: float | None):
    """A `ParallelExecutor` (--jobs worker processes here) or a `RayExecutor` from the flags."""
    if kind == "process":
        given = [flag for flag, value in (("--address", address), ("--cpus-per-run", cpus),
                                          ("--gpus-per-run", gpus)) if value is not None]
        if given:
            raise InputError(f"{', '.join(given)} only apply with --executor ray")
        return jobs_executor(jobs)
    if kind != "ray":
        raise refusal(f"--executor {kind!r}", "process or ray")
    if jobs is not None:
        raise InputError("--jobs applies to --executor process; with ray, --cpus-per-run "
                         "sets how many runs share a node")
    from blocklab.experiments.executors import RayExecutor

    return RayExecutor(address=address, num_cpus=1 if cpus is None else cpus,
                       num_gpus=0 if gpus is None else gpus)


class Stopped(Exception):
    """Ctrl-C stopped a command, with what it kept (typer answers a KeyboardInterrupt with 130
    and no word, so commands re-raise an `Interrupted` as this)."""


def _register() -> None:
    import importlib

    for name in _COMMANDS:
        importlib.import_module(f"blocklab.cli.{name}")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _usage_message(err: typer.TyperException) -> str:
    message = _one_line(err.format_message())
    ctx = getattr(err, "ctx", None)
    if ctx is not None:
        message += f" (see `{ctx.command_path} --help`)"
    return message


def main(argv: list[str] | None = None) -> int:
    """Run the CLI on `argv` (default: sys.argv[1:]) and return the exit code. While it runs,
    SIGTERM stops the command as Ctrl-C does, exit 143; output that cannot be written (stdout
    closed, a full disk) is exit 1 with one line, never a silent success."""
    _register()
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    args = [a for a in args if a != "--debug"]
    if _stdout_closed():  # `blocklab budget X >&-`: nothing could be written, so do nothing
        typer.echo("error: cannot write the output: stdout is closed", err=True)
        return EXIT_FAILED
    with ascii_fallback(), _sigterm_as_interrupt() as sigterm:
        code = _dispatch(args, debug)
        sigterm.armed = False  # the command has returned: its exit code stands
        code = _flushed(code)
    return EXIT_TERMINATED if sigterm.received and code == EXIT_INTERRUPTED else code


def _dispatch(args: list[str], debug: bool) -> int:
    """Run the command `args` and return its exit code, every error reported as one line."""
    try:
        result = app(args=args, prog_name="blocklab", standalone_mode=False)
        if result == EXIT_INTERRUPTED:  # typer's own answer to Ctrl-C, which prints nothing
            typer.echo("interrupted", err=True)
        return result if isinstance(result, int) else EXIT_OK
    except typer.Exit as done:
        return done.exit_code
    except SystemExit as done:
        code = done.code
        return code if isinstance(code, int) else (EXIT_OK if code is None else EXIT_FAILED)
    except typer.TyperException as err:  # usage: unknown option, bad value, extra argument
        if str(err).strip():  # (no message: `blocklab` alone, which has printed the help)
            typer.echo(f"error: {_usage_message(err)}", err=True)
        return EXIT_BAD_INPUT
    except (InputError, Busy) as err:  # Busy: another blocklab process holds what we need
        typer.echo(f"error: {_one_line(err)}", err=True)
        return EXIT_BAD_INPUT if isinstance(err, InputError) else EXIT_FAILED
    except (KeyboardInterrupt, typer.Abort):
        typer.echo("interrupted", err=True)
        return EXIT_INTERRUPTED
    except Stopped as stopped:
        typer.echo(f"interrupted: {_one_line(stopped)}", err=True)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return _reader_gone()
    except OSError as err:  # the environment (disk full, permissions), not the input's shape
        if _from_output(err):  # stdout itself failed (`> /dev/full`), not a file we write
            return _cannot_write(err)
        typer.echo(f"error: {_one_line(err)}", err=True)
        return EXIT_FAILED
    except Exception as err:  # noqa: BLE001 - the top level: a bug is reported as one, never as bad input
        if debug:
            import traceback
            traceback.print_exc()
        typer.echo(f"internal error (a bug in blocklab): {type(err).__name__}: {_one_line(err)}; "
                   "run again with --debug for the traceback", err=True)
        return EXIT_FAILED


@dataclass
class _Sigterm:
    """Whether SIGTERM came (`received`), and whether it still stops the command (`armed`)."""

    received: bool = False
    armed: bool = True


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[_Sigterm]:
    """Inside, SIGTERM raises KeyboardInterrupt while `armed`, so a command stops as on
    Ctrl-C, and is passed to forked workers (only this process saves results; a pool would
    run its queue first). A second SIGTERM ends this process. Not installed off the main
    thread, nor over an ignored or non-Python handler (it could not be put back)."""
    state = _Sigterm()
    previous = signal.getsignal(signal.SIGTERM)
    if (threading.current_thread() is not threading.main_thread()
            or previous is None or previous == signal.SIG_IGN):
        yield state
        return
    owner = os.getpid()

    def on_sigterm(signum: int, frame) -> None:
        if os.getpid() != owner or state.received:  # a forked worker, or the second SIGTERM
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        state.received = True
        multiprocessing = sys.modules.get("multiprocessing")
        for child in multiprocessing.active_children() if multiprocessing else ():
            with contextlib.suppress(OSError):
                os.kill(child.pid, signum)
        if state.armed:
            raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield state
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stdout_closed() -> bool:
    """Whether file descriptor 1 is closed (at start Python sets sys.stdout to None, and
    print, click and rich drop the output without a word)."""
    if sys.stdout is None:
        return True
    try:
        os.fstat(sys.stdout.fileno())
    except (AttributeError, ValueError, io.UnsupportedOperation):
        return False  # a stream with no descriptor (a test's capture) is open
    except OSError:
        return True
    return False


def _from_output(err: OSError) -> bool:
    """Whether `err` came from writing stdout or stderr (rich, click), not a named file."""
    frame = err.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    module = "" if frame is None else frame.tb_frame.f_globals.get("__name__", "")
    return err.filename is None and module.split(".")[0] in ("rich", "click", "typer")


def _flushed(code: int) -> int:
    """`code`, or 141 or 1 if stdout's buffer cannot be written (else Python's exit-time
    flush fails with a traceback, exit 120)."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        return _reader_gone()
    except OSError as err:
        return _cannot_write(err)
    return code


def _cannot_write(err: OSError) -> int:
    typer.echo(f"error: cannot write the output: {err.strerror or _one_line(err)}", err=True)
    _drop_stdout()
    return EXIT_FAILED


def _reader_gone() -> int:
    _drop_stdout()
    return EXIT_BROKEN_PIPE


def _drop_stdout() -> None:
    """Point file descriptor 1 at /dev/null: what stays in the buffer is dropped at exit."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, io.UnsupportedOperation):
        return  # a stream with no descriptor: nothing flushes it at exit
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def run() -> None:  # pragma: no cover - console script shim
    sys.exit(main())
