"""Where a study sweep's time goes (issue 38, item 6): the tool's own throughput at full size.

Reads the worker processes of a study database (no benchmarking) and prints, for them all, per
day and per backend/mode:

* results per hour: finished results over the sitting's wall time (first process start to last
  process end; the gaps between processes are the sweep's own orchestration);
* the share of the successful worker processes' wall time (`duration_s`, measured by the
  parent) spent timed (calibration, samples and latency steps) and on the speed probes,
  against warming up, the first call (converting and compiling) and the rest: starting the
  interpreter, importing the framework, building the model, parity;
* the failures and their reasons.

Usage:
    .venv/bin/python bench/study_time.py results/cpu/amd-epyc-zen-4-x2/study.db [--since ISO]
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from datetime import datetime, timedelta
from typing import Any

from xlabench.core.record import Record
from xlabench.measure import stats
from xlabench.store import ResultStore

PARTS = ("timed", "probes", "warmup", "first call", "rest")


def process_split(record: Record) -> dict[str, float]:
    """Seconds of one worker process per part; `rest` is what no timer inside it covers.
    `timed` is the window the interference figures cover: calibration, samples and latency
    steps (runner/worker.py `_time_runner`)."""
    timed = record.interference.wall_s if record.interference else 0.0
    probes = sum(p.seconds for p in (record.probe_before, record.probe_after) if p)
    warmup = record.warmup.seconds if record.warmup else 0.0
    first_call = record.warmup.first_call_s if record.warmup else 0.0
    total = record.duration_s or 0.0
    rest = max(total - timed - probes - warmup - first_call, 0.0)
    return {"timed": timed, "probes": probes, "warmup": warmup, "first call": first_call,
            "rest": rest, "total": total}


def sitting_wall_s(records: list[Record]) -> float:
    """First process start to last process end."""
    timed = [r for r in records if r.started_at]
    starts = [datetime.fromisoformat(r.started_at) for r in timed]
    ends = [s + timedelta(seconds=r.duration_s or 0.0)
            for s, r in zip(starts, timed, strict=True)]
    return (max(ends) - min(starts)).total_seconds() if starts else 0.0


def summarise(records: list[Record]) -> dict[str, Any]:
    split: dict[str, float] = defaultdict(float)
    for record in (r for r in records if r.ok):  # a failed process's time is not a split
        for part, seconds in process_split(record).items():
            split[part] += seconds
    results = {r.process.result_id for r in records if r.process.result_id}
    wall_s = sitting_wall_s(records)
    durations = [r.duration_s or 0.0 for r in records]
    return {"processes": len(records), "results": len(results), "wall_s": wall_s,
            "median_process_s": stats.median(durations) if durations else 0.0,
            "results_per_h": len(results) / (wall_s / 3600) if wall_s else 0.0,
            "busy_share": sum(durations) / wall_s if wall_s else 0.0,
            "failed_s": sum(r.duration_s or 0.0 for r in records if not r.ok),
            "shares": {p: split[p] / split["total"] for p in PARTS if split["total"]}}


def line(name: str, summary: dict[str, Any], wall: bool = True) -> str:
    """One summary line; `wall` off for a part of a sitting (its processes interleave with
    the others', so its first-to-last span is not its own time)."""
    shares = " ".join(f"{p} {s:.0%}" for p, s in summary["shares"].items())
    head = f"{name}: {summary['results']} results, {summary['processes']} processes"
    if wall:
        head += (f" in {summary['wall_s'] / 60:.0f} min ({summary['results_per_h']:.1f} "
                 f"results/h; workers busy {summary['busy_share']:.0%} of it)")
    failed = f"; failed processes {summary['failed_s']:.0f} s" if summary["failed_s"] else ""
    return f"{head}, {summary['median_process_s']:.0f} s a process (median); {shares}{failed}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("db")
    parser.add_argument("--since", default="", help="only processes started at/after (ISO)")
    args = parser.parse_args()
    with ResultStore(args.db) as store:
        records = [r for r in store.records() if r.source == "local"
                   and r.started_at >= args.since]
    by_sitting: dict[str, list[Record]] = defaultdict(list)
    by_way: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        by_sitting[record.started_at[:10]].append(record)
        by_way[f"{record.spec.backend}/{record.spec.mode}"].append(record)
    print(line("all", summarise(records)))
    for day, group in sorted(by_sitting.items()):
        print(line(f"  day {day}", summarise(group)))
    for way, group in sorted(by_way.items()):
        print(line(f"  {way}", summarise(group), wall=False))
    failures = Counter((r.spec.model, r.spec.backend, r.spec.mode, (r.error or "")[:120])
                       for r in records if not r.ok)
    for (model, backend, mode, error), n in sorted(failures.items()):
        print(f"  failed x{n}: {model} {backend}/{mode}: {error}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
