"""blocklab's error types.

    BlocklabError                     everything blocklab raises on purpose
    ├── InputError (ValueError)       a value the caller gave is not allowed: the message names
    │   │                             the value and what is allowed; the CLI prints it as one
    │   │                             line and exits with code 2
    │   ├── ConfigError               a model, training or suite configuration
    │   ├── CheckpointError           a checkpoint folder, config.json or safetensors file
    │   └── ResultsError              a stored result or summary this version cannot read
    │                                 (malformed, or written under another schema)
    └── KernelUnavailable (RuntimeError)
                                      an explicitly requested fast path cannot run here (the
                                      automatic choice falls back instead and records why)

Anything else that escapes is a bug: the CLI says so (exit code 1) and `--debug` shows the
traceback. This module imports nothing, so every layer (the no-torch ones included) can use it.
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


class KernelUnavailable(BlocklabError, RuntimeError):
    """An explicitly requested kernel implementation cannot run on this input or machine."""


__all__ = ["BlocklabError", "CheckpointError", "ConfigError", "InputError", "KernelUnavailable",
           "ResultsError"]
