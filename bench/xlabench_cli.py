"""One `xlabench` command, run from a bench script as a user would type it; its JSON, read.

The bench scripts measure xlabench from outside: each result is a fresh
`python -m xlabench.cli.main` process, so what they time is what a user gets. This module
is the one place that builds that command and reads what it prints (`run ... --json`,
`ab ... --format json`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any


class XlabenchError(RuntimeError):
    """An xlabench command that exited non-zero with no JSON to read; `last_line`: why."""

    def __init__(self, arguments: list[str], returncode: int, stderr: str) -> None:
        lines = stderr.strip().splitlines()
        self.returncode = returncode
        self.last_line = lines[-1] if lines else "no output"
        super().__init__(f"xlabench {' '.join(arguments[:2])} exited {returncode}:\n"
                         f"{stderr[-2000:]}")


def xlabench_json(arguments: list[str], env: dict[str, str] | None = None,
                  accept_failed: bool = False) -> Any:
    """The JSON that `xlabench <arguments>` prints, run in a fresh interpreter with `env` added
    to this one's. A non-zero exit raises XlabenchError, unless `accept_failed` and the command
    still printed its JSON (`run` prints a failed result's record and exits 1)."""
    command = [sys.executable, "-m", "xlabench.cli.main", *arguments]
    done = subprocess.run(command, capture_output=True, text=True, check=False,
                          env={**os.environ, **(env or {})})
    if done.returncode == 0 or accept_failed:
        text = json_text(done.stdout)
        if text is not None or done.returncode == 0:
            return json.loads(text or done.stdout)  # no JSON after a 0 exit: say so, loudly
    raise XlabenchError(arguments, done.returncode, done.stderr)


def json_text(stdout: str) -> str | None:
    """stdout from its first line that opens a JSON value on: a library may print a warning
    line to stdout before it. None when no line does."""
    lines = stdout.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("{", "[")):
            return "".join(lines[i:])
    return None
