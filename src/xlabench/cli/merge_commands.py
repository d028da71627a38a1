"""Subcommand: merge (results databases from many machines into one)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from xlabench.store import SourceSummary, merge_databases


def add_merge(sub: Any) -> None:
    p = sub.add_parser(
        "merge", help="merge results databases (from many machines) into one",
        description="Copy every process, result, measured peak and model cost of each SRC into "
        "DST (created if missing), marking where each row was measured. SRC files are only "
        "read; merging again adds nothing.")
    p.add_argument("sources", nargs="+", metavar="SRC", help="xlabench databases to merge")
    p.add_argument("--into", required=True, metavar="DST",
                   help="the database to merge into (an xlabench database, or a new file)")
    p.set_defaults(handler=merge_command)


def merge_command(args: argparse.Namespace) -> int:
    summary = merge_databases([Path(s) for s in args.sources], Path(args.into))
    for source in summary.sources:
        print(merge_line(source, args.into))
    return 0


def merge_line(s: SourceSummary, into: str) -> str:
    """'merged A.db (db id …): 12 processes, 4 results, 1 environment, 2 peaks (0 already
    present)', and what else happened to its rows, if anything."""
    counts = [_plural(s.processes, "process", "processes"), _plural(s.results, "result"),
              _plural(s.environments, "environment"), _plural(s.peaks, "peak")]
    if s.costs:
        counts.append(_plural(s.costs, "model cost"))
    line = f"merged {s.path} (db id {s.db_id}): {', '.join(counts)} " \
           f"({s.already_present} already present)"
    if s.results_updated:
        line += f"; {_plural(s.results_updated, 'result')} updated (newer here)"
    if s.results_renamed:
        line += (f"; {_plural(s.results_renamed, 'result')} given a new id "
                 "(another database's result had it)")
    if s.costs_differing:
        line += f"; {_plural(s.costs_differing, 'model cost')} differed: kept {into}'s"
    return line


def _plural(n: int, one: str, many: str = "") -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


REGISTRARS = [add_merge]
