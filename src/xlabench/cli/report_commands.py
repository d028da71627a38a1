"""Subcommands: report (HTML, PNG and Markdown from a results db) and import (published CSV)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from xlabench.cli.commands import int_arg
from xlabench.core import BACKEND_MODES, COMPILED_MODES, UserError
from xlabench.core.backends import STUDY_BACKEND
from xlabench.store import DEFAULT_DB, ResultStore
from xlabench.store.importer import read_study_csv, split_new
from xlabench.zoo import REGISTRY

REPORT_PACKAGES = ("pandas", "plotly", "matplotlib")

#: Backends with a baseline and a compiled mode of their own (openvino has no baseline mode).
COMPARABLE_BACKENDS = [b for b, modes in BACKEND_MODES.items()
                       if any(m not in COMPILED_MODES for m in modes)
                       and any(m in COMPILED_MODES for m in modes)]


def add_report(sub: Any) -> None:
    p = sub.add_parser("report", help="write an HTML report, PNG charts and findings.md")
    p.add_argument("--db", default=DEFAULT_DB, help="SQLite results file (default %(default)s)")
    p.add_argument("--out", default="report", help="output folder (default %(default)s)")
    p.add_argument("--backend", default=STUDY_BACKEND, choices=COMPARABLE_BACKENDS,
                   help="whose compiled vs baseline mode is 'with and without XLA' "
                        "(default %(default)s, as the study)")
    p.add_argument("--baseline", default=None,
                   help="baseline mode (default eager; tensorflow also has graph)")
    p.add_argument("--device", default=None,
                   help="device of the per-family speedups (default: the most common)")
    p.add_argument("--resolution", type=int_arg("resolution", positive=True), default=None,
                   help="resolution of the per-family speedups (default: the most common)")
    p.add_argument("--top", type=int_arg("top", positive=True), default=10,
                   help="models in the top-N rankings (default %(default)s)")
    p.set_defaults(handler=report_command)


def report_command(args: argparse.Namespace) -> int:
    require_report_packages()
    # Imported here: pandas, plotly and matplotlib are the optional 'report' extra.
    from xlabench.analysis import comparison_for, load_results
    from xlabench.report import ReportOptions, write_report

    db = Path(args.db)
    if not db.exists():
        raise UserError(f"no database at {args.db} (run a benchmark or an import first)")
    options = ReportOptions(comparison=comparison_for(args.backend, args.baseline),
                            device=args.device, resolution=args.resolution, top_n=args.top)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UserError(f"cannot write the report into {out}: it is a file, not a folder")
    files = write_report(load_results(db), out, options, db.name)
    print(f"wrote {files.index_html}, {files.findings_md} and {len(files.pngs)} PNGs",
          file=sys.stderr)
    return 0


def require_report_packages() -> None:
    import importlib.util

    missing = [p for p in REPORT_PACKAGES if importlib.util.find_spec(p) is None]
    if missing:
        raise UserError(f"the report needs {', '.join(missing)}: pip install 'xlabench[report]'")


def add_import(sub: Any) -> None:
    p = sub.add_parser("import", help="import published numbers (the 2023 study's CSV schema)")
    p.add_argument("file", help="CSV with the study's columns")
    p.add_argument("--db", default=DEFAULT_DB, help="SQLite results file (default %(default)s)")
    p.set_defaults(handler=import_command)


def import_command(args: argparse.Namespace) -> int:
    path = Path(args.file)
    records = read_study_csv(path, resolve=resolve_study_name)  # all rows valid, or nothing
    with ResultStore(args.db) as store:
        fresh, skipped = split_new(store, records)
        store.save_many(fresh)  # one transaction
    already = f"; {skipped} already in the db, skipped" if skipped else ""
    print(f"imported {len(fresh)} rows from {path.name} into {args.db}{already}",
          file=sys.stderr)
    return 0


def resolve_study_name(name: str) -> tuple[str, str, str] | None:
    """The registry's (name, family, kind) for a study model name, or None if unknown."""
    try:
        entry = REGISTRY.get(name)
    except UserError:
        return None
    return entry.name, entry.family, entry.kind


REGISTRARS = [add_report, add_import]
