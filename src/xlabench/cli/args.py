"""Argument types the subcommands share (argparse `type`s: bad input is one `UserError` line)."""

from __future__ import annotations

from collections.abc import Callable

from xlabench.core import UserError


def percent_arg(what: str) -> Callable[[str], float]:
    """An argparse `type` for a percentage strictly between 0 and 100 (`what` names the
    option in the error), kept in percent."""

    def parse(text: str) -> float:
        # analysis is imported on use: `xlabench --help` and other commands never load it
        from xlabench.analysis.compare import check_threshold

        try:
            value = float(text)
        except ValueError:
            raise UserError(f"{what} must be a percentage above 0 and below 100, "
                            f"got {text!r}") from None
        check_threshold(value, what)
        return value

    return parse
