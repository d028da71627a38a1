"""Where a study sweep's time goes (issue 38, item 6): the tool's own throughput at full size.

Reads the worker processes of a study database (no benchmarking) and prints, for them all, per
day and per backend/mode:

* results per hour: finished results over the sitting's wall time (first process start to last
  process end; the gaps between processes are the sweep's own orchestration);
* the share of the successful worker processes' wall time (`duration_s`, measured by the
  parent) spent timed (calibration, samples and latency steps) and on the speed probes,
  against warming up, the first call (converting and compiling) and the rest: starting the
  interpreter, importing the framework, building the model, parity;
* the failures and their reasons;
* per sitting (`ENVIRONMENT.json` beside the database), the dry run's ETA against the wall
  time: the plan of the sitting's tiers rebuilt by `sweep.plan.make_plan`, the dry run's own
  code, from the processes stored before the sitting began (copied to a scratch database);
  on a sitting with no history before it, also the ETA at the pace the pilot would have
  measured (`sweep.pace`: the median of the sitting's own first processes of the pilot
  configuration, where it ran it). With `--history-from`, other machines' processes stored
  before the sitting are its history from elsewhere, as `make study-run` passes them; with
  `--whole-history-from`, all of them, stored before the sitting or after: what a sitting
  planned from another kind's finished grid would have estimated (how a later kind's sittings
  are planned). The plan is of the sitting's tiers' configurations of the models it ran (a
  sitting may run some of a tier's models).

Usage:
    .venv/bin/python bench/study_time.py results/cpu/amd-epyc-zen-4-x2/study.db [--since ISO]
        [--history-from results/cpu/amd-epyc-zen-3-x2/study.db ...] [--whole-history-from]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
from collections import Counter, defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from xlabench.core.record import Record
from xlabench.measure import stats
from xlabench.store import ResultStore
from xlabench.sweep import build_config
from xlabench.sweep.expand import expand
from xlabench.sweep.pace import PILOT, PILOT_PROCESSES, Pace
from xlabench.sweep.plan import Elsewhere, format_duration, make_plan

PARTS = ("timed", "probes", "warmup", "first call", "rest")
PROCESSES = 3  # the method's default processes per result, as `make study-run` asks


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


def sittings(db: Path) -> list[str]:
    """Each sitting's start, from the study folder's ENVIRONMENT.json ([] without one)."""
    path = db.parent / "ENVIRONMENT.json"
    if not path.exists():
        return []
    return [s["started_at"] for s in json.loads(path.read_text(encoding="utf-8"))["sittings"]]


def pilot_pace(records: list[Record]) -> Pace | None:
    pilot_id = PILOT.spec_id()
    seconds = [r.duration_s for r in records
               if r.spec.spec_id() == pilot_id and r.ok and r.duration_s]
    return Pace(tuple(seconds[:PILOT_PROCESSES])) if seconds else None


def elsewhere_before(others: dict[str, list[Record]], start: str, scratch: Path
                     ) -> list[Elsewhere]:
    """Each other machine's history as a dry run at `start` would have read it ("9999": all
    of it)."""
    found = []
    for name, records in others.items():
        path = scratch / f"elsewhere-{len(found)}-{Path(name).parent.name}.db"
        with ResultStore(path) as store:
            store.save_many([r for r in records if r.started_at and r.started_at < start])
        found.append(Elsewhere.read(path))
    return found


def eta_line(before: list[Record], during: list[Record], scratch: Path,
             elsewhere: list[Elsewhere]) -> str:
    """The sitting's dry-run ETA (from `before`, and `elsewhere`) against its wall time."""
    tier_of = expand(build_config("study-cpu")).tiers
    ran = {r.spec.spec_id() for r in during}
    tiers = sorted({tier_of[i] for i in ran if i in tier_of})
    if not tiers:
        return "no study-cpu configuration"
    whole = expand(build_config("study-cpu", overrides={"tiers": ",".join(map(str, tiers))}))
    models = {r.spec.model for r in during}  # a sitting may run some of a tier's models
    grid = dataclasses.replace(whole, specs=tuple(s for s in whole.specs if s.model in models))
    actual_s = sitting_wall_s(during)
    with ResultStore(scratch / "before.db") as store:
        store.save_many(before)
        plan = make_plan(grid, set(), 1, store, PROCESSES, elsewhere=elsewhere)
        pace = pilot_pace(during) if plan.fresh else None
        paced = (make_plan(grid, set(), 1, store, PROCESSES, pace, elsewhere)
                 if pace else None)
    text = (f"tiers {tiers} ({len(grid.specs)} of {len(whole.specs)} configurations), "
            f"{len(during)} processes in {format_duration(actual_s)}: dry-run "
            f"ETA {format_duration(plan.estimated_total_s)}, actual/ETA "
            f"{actual_s / (plan.estimated_total_s or 1):.2f} ({len(plan.modelled)} from the "
            f"cost line, {len(plan.borrowed)} from another machine)")
    if paced is not None and pace is not None:
        text += (f"; at the pilot's pace {pace.factor:.2f}x: ETA "
                 f"{format_duration(paced.estimated_total_s)}, actual/ETA "
                 f"{actual_s / (paced.estimated_total_s or 1):.2f}")
    return text


def print_sittings(db: Path, records: list[Record], others: dict[str, list[Record]],
                   whole_history: bool = False) -> None:
    started = sorted((r for r in records if r.started_at), key=lambda r: r.started_at)
    starts = sittings(db)
    for start, end in zip(starts, [*starts[1:], "9999"], strict=True):
        during = [r for r in started if start <= r.started_at < end]
        if during:
            before = [r for r in started if r.started_at < start]
            with tempfile.TemporaryDirectory() as tmp:
                elsewhere = elsewhere_before(others, "9999" if whole_history else start,
                                             Path(tmp))
                line_text = eta_line(before, during, Path(tmp), elsewhere)
                print(f"  sitting {start[:16]}: {line_text}")


def local_records(db: str, since: str = "") -> list[Record]:
    with ResultStore(db) as store:
        return [r for r in store.records() if r.source == "local" and r.started_at >= since]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("db")
    parser.add_argument("--since", default="", help="only processes started at/after (ISO)")
    parser.add_argument("--history-from", action="append", default=[], metavar="DB",
                        help="another machine's study.db, as the sitting's dry run read it")
    parser.add_argument("--whole-history-from", action="store_true",
                        help="read all of --history-from's processes, not those before each "
                             "sitting")
    args = parser.parse_args()
    records = local_records(args.db, args.since)
    others = {path: local_records(path) for path in args.history_from}
    by_sitting: dict[str, list[Record]] = defaultdict(list)
    by_way: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        if record.started_at:  # an unsupported result ran no process: it has no day
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
    print_sittings(Path(args.db), records, others, args.whole_history_from)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
