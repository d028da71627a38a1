"""The `xlabench` command. The only place that prints for people or chooses an exit code."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from xlabench import __version__
from xlabench.cli import (
    ab_commands,
    commands,
    compare_commands,
    merge_commands,
    report_commands,
    study_commands,
    sweep_commands,
)
from xlabench.core import UserError

EXIT_USER_ERROR = 2


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad command line as one line (no usage dump), exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UserError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="xlabench",
        description="Benchmark vision models with and without graph compilers; trust the number.",
    )
    parser.add_argument("--version", action="version", version=f"xlabench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for register in (
        *commands.REGISTRARS, *sweep_commands.REGISTRARS, *report_commands.REGISTRARS,
        *merge_commands.REGISTRARS, *compare_commands.REGISTRARS, *ab_commands.REGISTRARS,
        *study_commands.REGISTRARS,
    ):
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
        if handler is None:
            parser.print_help()
            return EXIT_USER_ERROR
        return handler(args)
    except UserError as exc:
        print(f"xlabench: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("xlabench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `xlabench results | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
