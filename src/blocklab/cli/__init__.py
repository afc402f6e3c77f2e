"""The `blocklab` command line: thin typer commands over library functions.

Each command lives in its own module here and registers itself on `app`. Modules import
PyTorch only inside the commands that need it, so `blocklab verify` and `blocklab budget`
start fast. Bad input is one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import sys

import typer

app = typer.Typer(
    name="blocklab",
    help="Transformer blocks (FFN, normalization, position encoding): computed, checked, measured.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)

@app.callback()
def _root() -> None:
    """Transformer blocks (FFN, normalization, position encoding): computed, checked, measured."""


# Command modules, in the order `blocklab --help` lists them.
_COMMANDS = ("verify", "budget", "doctor", "train", "suite", "claims", "report")


class UsageFailure(Exception):
    """Bad input noticed by a command: printed as one line, exit code 2."""


def fail(message: str) -> typer.Exit:
    """Print `message` as one error line and return the Exit(2) to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def _register() -> None:
    import importlib

    for name in _COMMANDS:
        importlib.import_module(f"blocklab.cli.{name}")
    _COMMANDS_REGISTERED.update(_COMMANDS)


_COMMANDS_REGISTERED: set[str] = set()


def main(argv: list[str] | None = None) -> int:
    """Run the CLI on `argv` (default: sys.argv) and return the exit code."""
    _register()
    try:
        app(args=argv, prog_name="blocklab", standalone_mode=True)
    except SystemExit as done:
        code = done.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except (ValueError, OSError, UsageFailure) as err:
        typer.echo(f"error: {err}", err=True)
        return 2
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        return 130
    return 0


def run() -> None:  # pragma: no cover - console script shim
    sys.exit(main())
