"""blocklab's error types.

    BlocklabError                  everything blocklab raises on purpose
    ├── InputError (ValueError)    a value the caller gave is not allowed, named with what is
    │   │                          allowed (`checks.refusal`); the CLI: one line, exit code 2
    │   ├── ConfigError            a model, training or suite configuration
    │   ├── CheckpointError        a checkpoint folder, config.json or safetensors file
    │   ├── ResultsError           a stored result or summary this version cannot read
    │   ├── PositionsBeyondTable   a learned position table asked beyond its rows
    │   └── LockUnavailable        a lock file this user cannot open
    └── Busy (RuntimeError)        a results folder in use by another process (exit code 1)

Anything else that escapes is a bug: the CLI says so (exit code 1; `--debug` shows the
traceback). This module imports nothing, so every layer can use it.
"""

from __future__ import annotations


class BlocklabError(Exception):
    """Base of every error blocklab raises on purpose."""


class InputError(BlocklabError, ValueError):
    """A value given by the caller is not allowed."""


class ConfigError(InputError):
    """A configuration (model, training, suite) is not allowed."""


class CheckpointError(InputError):
    """A checkpoint (config.json, safetensors files, index) cannot be read as given."""


class ResultsError(InputError):
    """A stored result or suite summary is malformed or has another schema version."""


class PositionsBeyondTable(InputError):
    """A learned position table has no row for a position asked of it: the one failure an
    evaluation records as "unavailable" at a length (any other ends the run as an error)."""


class LockUnavailable(InputError):
    """A lock file (the machine's, a results folder's) cannot be opened by this user."""


class Busy(BlocklabError, RuntimeError):
    """A resource (a results folder) is held by another blocklab process."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped work; the message says what was kept (the CLI prints it, exit 130)."""
