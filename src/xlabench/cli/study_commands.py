"""Subcommands: study-env and study-report, the published study's layout (issue 38).

Each machine kind's `--preset study-cpu` results live in `results/cpu/<device>/study.db`, the
folder named by the device the tool itself names (`core.device.device_slug`), beside an
`ENVIRONMENT.json` saying what environment and commit each sitting measured at, and where
measured an `xla-flags.db` of the XLA:CPU flags' ab pairs. `study-report` builds one report
from every such database, merged into temporary copies: the committed files are only read.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from xlabench.cli.report_commands import require_report_packages, resolve_study_name
from xlabench.core import UserError, utc_now
from xlabench.core.backends import STUDY_BACKEND
from xlabench.core.device import device_name, device_slug
from xlabench.measure import env as envinfo
from xlabench.store import ResultStore, merge_databases
from xlabench.store.importer import read_study_csv, split_new

#: Where `make study` publishes each machine kind's results, one folder per device.
STUDY_ROOT = Path("results/cpu")
#: The database of one device's `--preset study-cpu` sweep, inside its folder.
STUDY_DB = "study.db"
#: The XLA:CPU flags' ab pairs (bench/xla_cpu_flags.py --ab), beside it where measured: kept
#: out of the study's grid (its labelled sides are variants of one configuration).
FLAGS_DB = "xla-flags.db"
#: The environment and commit of each sitting, beside the database.
ENVIRONMENT_FILE = "ENVIRONMENT.json"
UNKNOWN_COMMIT = "unknown"


def add_study_env(sub: Any) -> None:
    p = sub.add_parser(
        "study-env", help="record this machine's environment and commit for the published study",
        description="Create ROOT/<device>/ for this machine (the device named as results name "
        f"it: 'AMD EPYC (Zen 4) ×2' -> amd-epyc-zen-4-x2), add this sitting (UTC time, git "
        f"commit, environment id) and the environment fingerprint to its {ENVIRONMENT_FILE}, "
        f"and print the path of its {STUDY_DB} (for `sweep --db`).")
    p.add_argument("--root", default=str(STUDY_ROOT),
                   help="folder of the device folders (default %(default)s)")
    p.set_defaults(handler=study_env_command)


def study_env_command(args: argparse.Namespace) -> int:
    print(record_environment(Path(args.root)))
    return 0


def record_environment(root: Path, commit: str | None = None) -> Path:
    """Add this sitting to `root/<device>/ENVIRONMENT.json` and return the device's db path.

    The fingerprint is the one every worker records (`measure.env`), less what changes
    between runs of one machine and names it (hostname, GPU clocks); `commit` defaults to the
    checkout's (`git_commit`).
    """
    fingerprint = envinfo.static_fingerprint()
    device = device_name(fingerprint)
    folder = root / device_slug(device)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ENVIRONMENT_FILE
    data = _read_environment(path)
    data["device"] = device
    data["database"] = STUDY_DB
    data.setdefault("sittings", []).append({
        "started_at": utc_now(), "commit": commit or git_commit(),
        "env_id": envinfo.env_id(fingerprint)})
    data["fingerprint"] = {k: v for k, v in fingerprint.items() if k not in envinfo.VOLATILE}
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return folder / STUDY_DB


def _read_environment(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path} is not an xlabench environment file (not a JSON object)")
    return data


def git_commit(cwd: Path | None = None) -> str:
    """The checkout's commit (`git rev-parse HEAD`), '+dirty' when tracked files outside
    results/ differ from it; 'unknown' where there is no checkout or no git."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                              text=True, timeout=30, check=True).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!results"],
            cwd=cwd, capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN_COMMIT
    return f"{head}+dirty" if head and changed else (head or UNKNOWN_COMMIT)


def add_study_report(sub: Any) -> None:
    p = sub.add_parser(
        "study-report", help="one report from every published study database (results/cpu)",
        description=f"Merge every ROOT/*/{STUDY_DB} (and the study's published numbers) into a "
        "temporary database and write the report from it: index.html, findings.md and the "
        f"PNGs, with the XLA:CPU flags' ab pairs of every ROOT/*/{FLAGS_DB}. The databases are "
        "only read; nothing is measured.")
    p.add_argument("--root", default=str(STUDY_ROOT),
                   help="folder of the device folders (default %(default)s)")
    p.add_argument("--out", default="results/report", help="output folder (default %(default)s)")
    p.add_argument("--published", default=None, metavar="CSV",
                   help="the study's published numbers (its CSV schema) to show beside ours")
    p.set_defaults(handler=study_report_command)


def study_report_command(args: argparse.Namespace) -> int:
    findings_md = study_report(Path(args.root), Path(args.out),
                               Path(args.published) if args.published else None)
    print(f"wrote {findings_md.parent}/index.html, {findings_md} and the PNGs", file=sys.stderr)
    return 0


def study_databases(root: Path) -> list[Path]:
    """Every device's study database under `root`, in name order.

    Raises:
        UserError: there is none (one line: what to run first).
    """
    found = sorted(root.glob(f"*/{STUDY_DB}"))
    if not found:
        raise UserError(f"no study results in {root}/ (no */{STUDY_DB}): run `make study` first")
    return found


def study_report(root: Path, out: Path, published: Path | None = None) -> Path:
    """Write the report of every study database under `root` into `out`; its findings.md.

    Raises:
        UserError: no databases, a damaged one, or an unreadable published CSV.
    """
    require_report_packages()
    # Imported here: pandas, plotly and matplotlib are the optional 'report' extra.
    from xlabench.analysis import comparison_for, load_results
    from xlabench.report import ReportOptions, write_report

    databases = study_databases(root)
    records = read_study_csv(published, resolve=resolve_study_name) if published else []
    with tempfile.TemporaryDirectory(prefix="xlabench-study-") as tmp:
        merged = Path(tmp) / STUDY_DB
        merge_databases(databases, merged)  # sources are read, never written
        with ResultStore(merged) as store:
            store.save_many(split_new(store, records)[0])
        flags = Path(tmp) / FLAGS_DB
        flag_databases = sorted(root.glob(f"*/{FLAGS_DB}"))
        if flag_databases:
            merge_databases(flag_databases, flags)
        options = ReportOptions(comparison=comparison_for(STUDY_BACKEND, None))
        devices = ", ".join(db.parent.name for db in databases)
        files = write_report(load_results(merged), out, options, f"{root} ({devices})",
                             load_results(flags) if flag_databases else None)
    return files.findings_md


REGISTRARS = [add_study_env, add_study_report]
