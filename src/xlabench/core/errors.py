"""Errors meant for a person, and the one status vocabulary every layer shares."""

from __future__ import annotations

import enum


class UserError(Exception):
    """A problem with what the user asked for; the CLI prints it as one line, no traceback."""


class Status(enum.StrEnum):
    """Outcome of one benchmark configuration. Failure is data: every status is stored."""

    OK = "ok"
    FAILED = "failed"  # raised inside the worker (build error, non-finite output, ...)
    OOM = "oom"  # the framework or the kernel ran out of memory
    TIMEOUT = "timeout"  # the parent killed the worker at its deadline
    CRASHED = "crashed"  # the worker died without writing a record (signal, segfault)
    UNSUPPORTED = "unsupported"  # the combination cannot run here (framework missing, ...)
