"""Errors meant for a person, and the one status vocabulary every layer shares."""

from __future__ import annotations

import enum


class UserError(Exception):
    """A problem with what the user asked for; the CLI prints it as one line, no traceback."""


def one_line(text: str | BaseException, limit: int = 300) -> str:
    """The first non-empty line of `text`, stripped and shortened to `limit` characters: what
    an error line or a stored reason's table cell can hold. An exception reads as `Type: its
    first line` (its type alone when its message is empty)."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    line = lines[0] if lines else ""
    if isinstance(text, BaseException):
        line = f"{type(text).__name__}: {line}" if line else type(text).__name__
    line = line or "unknown error"
    return line if len(line) <= limit else line[: limit - 3] + "..."


class Status(enum.StrEnum):
    """Outcome of one benchmark configuration. Failure is data: every status is stored."""

    OK = "ok"
    FAILED = "failed"  # raised inside the worker (build error, non-finite output, ...)
    OOM = "oom"  # the framework or the kernel ran out of memory
    TIMEOUT = "timeout"  # the parent killed the worker at its deadline
    CRASHED = "crashed"  # the worker died without writing a record (signal, segfault)
    UNSUPPORTED = "unsupported"  # the combination cannot run here (framework missing, ...)
