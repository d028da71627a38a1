"""Do the intervals hold when the run is repeated? Fresh `xlabench run` commands, default settings.

Each configuration is run `--repeats` times as a new `xlabench run` command (each a result of
several fresh worker processes), the configurations interleaved (A B C D, A B C D, ...) so a drift
of the machine hits them alike. Per configuration it prints the spread of the combined medians
(max/min - 1), the typical interval (median half-width, %) and the pairwise hold rate: over all
ordered pairs (i, j), i != j, how often run i's interval holds run j's estimate. For an honest 95%
interval of an estimate whose re-runs scatter like it does, that is about 0.83-0.9; the target
here is >= 0.75. Two more columns split it: "later runs" (run i's interval against the runs
made after it only, none of which entered it) and "intervals with between-run variation" (the
pairs whose run i had re-runs stored before it to learn the machine's drift from).

    .venv/bin/python bench/interval_hold_rate.py             # the four default configurations
    .venv/bin/python bench/interval_hold_rate.py --repeats 6 --db /tmp/hold-rate.db
    # add 3 runs of the first three configurations to a db, then judge every run stored in it
    .venv/bin/python bench/interval_hold_rate.py --repeats 3 --configs 0 1 2 --all-in-db
    # no new runs: the stored ones, judged with today's interval (between-run variation added)
    .venv/bin/python bench/interval_hold_rate.py --repeats 0 --all-in-db --replay

Run it on a quiet machine; a run flagged for interference is reported as such.

`--resample N` adds, per configuration, the hold rate a run would have if its processes were
independent draws from every clean process stored for it (N simulated pairs of runs, each run
following the default policy: 3 processes, more up to 6 while wider than the target). A measured
hold rate well below the resampled one means runs differ by more than their processes do (a
drift between runs that processes of one run share).
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path

from xlabench.core.result import ResultPolicy
from xlabench.measure.combine import (
    MACHINE_PRIOR_DF,
    config_drift,
    log_t_interval,
    run_drift,
)
from xlabench.store import ResultStore
from xlabench_cli import XlabenchError, xlabench_json

#: model, resolution, backend, mode (batch 4): TensorFlow, JAX and PyTorch, eager and compiled.
CONFIGS = (
    ("mobilenet_v3_small", 96, "tensorflow", "xla"),
    ("mobilenet_v3_small", 96, "jax", "xla"),
    ("resnet50_v1", 64, "torch", "eager"),
    ("mobilenet_v3_small", 64, "torch", "compiled"),
)


def run_once(config: tuple[str, int, str, str], db: Path) -> dict:
    model, resolution, backend, mode = config
    start = time.perf_counter()
    try:
        result = xlabench_json(["run", model, "--resolution", str(resolution), "--backend",
                                backend, "--mode", mode, "--db", str(db), "--json"])["result"]
    except XlabenchError as failed:
        raise SystemExit(str(failed)) from None
    wall_s = time.perf_counter() - start
    return {**result, "wall_s": wall_s, "at_s": time.time()}


def stored_runs(config: tuple[str, int, str, str], db: Path) -> list[dict]:
    """Every combined result of `config` in the db (earlier invocations included), oldest first;
    `wall_s` is the sum of its processes' own wall times (the gaps between them are not kept)."""
    model, resolution, backend, mode = config
    query = """
        SELECT c.result_json, (SELECT SUM(json_extract(p.record_json, '$.duration_s'))
                               FROM results p WHERE p.result_id = c.result_id) AS wall_s,
               c.updated_at
        FROM combined_results c
        WHERE c.status = 'ok' AND c.spec_id IN (
            SELECT spec_id FROM results WHERE model = ? AND resolution = ? AND backend = ?
            AND mode = ? AND batch_size = 4)
        ORDER BY c.updated_at"""
    with sqlite3.connect(db) as connection:
        rows = connection.execute(query, (model, resolution, backend, mode)).fetchall()
    return [{**json.loads(text), "wall_s": wall_s or 0.0,
             "at_s": datetime.fromisoformat(at).timestamp()} for text, wall_s, at in rows]


def stored_processes(config: tuple[str, int, str, str], db: Path) -> list[float]:
    """The median throughput of every clean, successful process stored for `config`."""
    model, resolution, backend, mode = config
    query = """SELECT throughput_sps FROM results WHERE model = ? AND resolution = ?
               AND backend = ? AND mode = ? AND batch_size = 4 AND status = 'ok'
               AND throughput_sps > 0 AND NOT COALESCE(interference_flagged, 0)"""
    with sqlite3.connect(db) as connection:
        return [row[0] for row in connection.execute(query, (model, resolution, backend, mode))]


def every_stored_result(db: Path) -> list[dict]:
    """Every finished, clean combined result in the db (any configuration), oldest first."""
    query = """SELECT spec_id, env_id, result_json, updated_at FROM combined_results
               WHERE complete = 1 AND status = 'ok' AND flagged = 0 AND k >= 2
               ORDER BY updated_at"""
    with sqlite3.connect(db) as connection:
        rows = connection.execute(query).fetchall()
    return [{**json.loads(text), "spec_id": spec_id, "env_id": env_id,
             "at_s": datetime.fromisoformat(at).timestamp()} for spec_id, env_id, text, at in rows]


def replayed(run: dict, history: list[dict], same_machine: set[str],
             software: dict[tuple[str, str], str], prior_df: float = MACHINE_PRIOR_DF,
             own: bool = True) -> dict:
    """`run` with the interval today's method gives it, from what the store held when it was
    stored: its processes, the between-run variation of the re-runs of *other* configurations
    on its machine (`same_machine`: those environments; grouped by `software`, as the store
    groups them) as a prior, and its own configuration's earlier results on top
    (`combine.config_drift`, as `sweep.run.environment_drift` does)."""
    def key(other: dict) -> tuple[str, str]:
        return (other["spec_id"], software.get((other["spec_id"], other["env_id"]),
                                               other["env_id"]))

    groups: dict[tuple[str, str], list[list[float]]] = {}
    for other in history:
        if other["at_s"] < run["at_s"] and other["env_id"] in same_machine:
            groups.setdefault(key(other), []).append(list(other["process_medians_sps"]))
    own_runs = groups.pop(key(run), [])
    machine = run_drift(groups.values())
    drift = config_drift(own_runs, machine, prior_df) if own else machine
    interval = log_t_interval(run["process_medians_sps"], drift=drift)
    return {**run, "median_sps": interval.estimate, "ci_low_sps": interval.low,
            "ci_high_sps": interval.high, "drift_rel_sd": drift.rel_sd if drift else None,
            "drift_own_results": drift.own_results if drift else 0}


def simulated_run(pool: list[float], policy: ResultPolicy, rng: random.Random) -> tuple:
    """One run of the default policy with processes drawn from `pool` (budget not modelled)."""
    drawn = [rng.choice(pool) for _ in range(policy.min_processes)]
    interval = log_t_interval(drawn)
    while interval.rel_halfwidth > policy.target_rel_ci and len(drawn) < policy.max_processes:
        drawn.append(rng.choice(pool))
        interval = log_t_interval(drawn)
    return interval.estimate, interval.low, interval.high


def resampled_hold_rate(pool: list[float], pairs: int, seed: int = 0) -> tuple[float, float]:
    """Pairwise hold rate and median half-width (relative) of simulated independent runs."""
    rng, policy = random.Random(seed), ResultPolicy()
    held, widths = 0, []
    for _ in range(pairs):
        (estimate, low, high), (other, _, _) = (simulated_run(pool, policy, rng),
                                                simulated_run(pool, policy, rng))
        held += low <= other <= high
        widths.append(max(estimate - low, high - estimate) / estimate)
    return held / pairs, statistics.median(widths)


#: runs further apart than this are of different sessions (the machine may have changed regime)
SESSION_GAP_S = 1800.0


def sessions(runs: list[dict]) -> list[int]:
    """A session index per run: a new session starts after a gap of SESSION_GAP_S."""
    index, last, found = -1, None, []
    for run in runs:
        if last is None or run["at_s"] - last > SESSION_GAP_S:
            index += 1
        last = run["at_s"]
        found.append(index)
    return found


def summarize(runs: list[dict]) -> dict:
    runs = sorted(runs, key=lambda r: r["at_s"])
    medians = [r["median_sps"] for r in runs]
    session = dict(zip(map(id, runs), sessions(runs), strict=True))
    pairs = [(a, b) for a in runs for b in runs if a is not b]
    holds = [a["ci_low_sps"] <= b["median_sps"] <= a["ci_high_sps"] for a, b in pairs]
    held = sum(holds)
    same = [h for (a, b), h in zip(pairs, holds, strict=True) if session[id(a)] == session[id(b)]]
    across = [h for (a, b), h in zip(pairs, holds, strict=True)
              if session[id(a)] != session[id(b)]]
    halfwidths = [max(r["median_sps"] - r["ci_low_sps"], r["ci_high_sps"] - r["median_sps"])
                  / r["median_sps"] for r in runs]
    order = {id(r): i for i, r in enumerate(runs)}
    # later: does run i's interval hold the runs made after it (what a user re-running
    # tomorrow checks; no later run entered run i's interval)?
    later = [h for (a, b), h in zip(pairs, holds, strict=True) if order[id(b)] > order[id(a)]]
    # informed: pairs whose judged interval held some between-run variation
    informed = [h for (a, _), h in zip(pairs, holds, strict=True)
                if a.get("drift_rel_sd") is not None]
    return {
        "low": min(medians), "high": max(medians), "spread": max(medians) / min(medians) - 1,
        "halfwidth": statistics.median(halfwidths), "hold_rate": held / len(pairs),
        "pairs": len(pairs), "held": held, "k": [r["k"] for r in runs],
        "flagged": sum(r["flagged"] for r in runs),
        "wall_s": statistics.median(r["wall_s"] for r in runs),
        "sessions": len(set(session.values())),
        "within": f"{sum(same)}/{len(same)}" if same else "-",
        "across": f"{sum(across)}/{len(across)}" if across else "-",
        "later": f"{sum(later)}/{len(later)}" if later else "-",
        "informed": f"{sum(informed)}/{len(informed)}" if informed else "-",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=6)
    parser.add_argument("--db", default="/tmp/xlabench-hold-rate.db")
    parser.add_argument("--configs", type=int, nargs="+", choices=range(len(CONFIGS)),
                        default=list(range(len(CONFIGS))), help="indices into CONFIGS")
    parser.add_argument("--all-in-db", action="store_true",
                        help="judge every stored run of the configurations, not only this one's")
    parser.add_argument("--replay", action="store_true",
                        help="with --all-in-db: judge the stored runs with today's interval "
                             "(their processes, plus the between-run variation of what was "
                             "stored before each: other configurations' re-runs as a prior, "
                             "the configuration's own earlier results on top)")
    parser.add_argument("--prior-df", type=float, default=MACHINE_PRIOR_DF,
                        help="with --replay: the machine pool's weight beside a "
                             "configuration's own re-runs (combine.MACHINE_PRIOR_DF)")
    parser.add_argument("--pool-only", action="store_true",
                        help="with --replay: leave each configuration's own re-runs out (the "
                             "rule before 2026-12-02)")
    parser.add_argument("--resample", type=int, default=0, metavar="PAIRS",
                        help="also simulate PAIRS pairs of runs from the stored processes")
    args = parser.parse_args()
    db = Path(args.db)
    chosen = [CONFIGS[i] for i in args.configs]
    runs: dict[tuple, list[dict]] = {c: [] for c in chosen}
    for repeat in range(args.repeats):
        for config in chosen:
            result = run_once(config, db)
            runs[config].append(result)
            print(f"[{repeat + 1}/{args.repeats}] {config}: {result['median_sps']:.1f} samples/s "
                  f"[{result['ci_low_sps']:.1f}, {result['ci_high_sps']:.1f}] k={result['k']}"
                  f"{' FLAGGED' if result['flagged'] else ''} ({result['wall_s']:.0f} s)",
                  flush=True)
    if args.all_in_db:
        runs = {config: stored_runs(config, db) for config in chosen}
    if args.all_in_db and args.replay:
        history = every_stored_result(db)
        by_id = {r["result_id"]: r for r in history}
        with ResultStore(db) as store:
            machines = {r["env_id"]: set(store.machine_env_ids(r["env_id"])) for r in history}
            software = store.software_ids()
        runs = {config: [{**replayed(by_id[r["result_id"]], history,
                                     machines[by_id[r["result_id"]]["env_id"]], software,
                                     args.prior_df, not args.pool_only),
                          "wall_s": r["wall_s"]}
                         for r in found if r["result_id"] in by_id]
                for config, found in runs.items()}
        drifts = [r["drift_rel_sd"] for found in runs.values() for r in found]
        known = [d for d in drifts if d is not None]
        print(f"replayed with today's interval: {len(known)} of {len(drifts)} runs had a "
              f"between-run variation to add (σ {100 * min(known or [0]):.1f}-"
              f"{100 * max(known or [0]):.1f}%)")
    print("\n| configuration | medians of the runs (samples/s) | spread | typical interval "
          "| pairwise hold rate | within a session | across sessions | later runs "
          "| intervals with between-run variation | processes per run | flagged runs "
          "| wall s per run |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for (model, resolution, backend, mode), found in runs.items():
        if len(found) < 2:
            print(f"| {model}@{resolution} b4 {backend}/{mode} | fewer than 2 runs |")
            continue
        s = summarize(found)
        print(f"| {model}@{resolution} b4 {backend}/{mode} | {s['low']:.1f}-{s['high']:.1f} | "
              f"{100 * s['spread']:.1f}% | ±{100 * s['halfwidth']:.1f}% | "
              f"{s['held']}/{s['pairs']} ({s['hold_rate']:.2f}) | {s['within']} | "
              f"{s['across']} | {s['later']} | {s['informed']} | {s['k']} | {s['flagged']} | "
              f"{s['wall_s']:.0f} |")
    if args.resample:
        print(f"\n| configuration | clean processes stored | resampled hold rate "
              f"({args.resample} pairs) | resampled typical interval |")
        print("| --- | --- | --- | --- |")
        for config in chosen:
            pool = stored_processes(config, db)
            if len(pool) < 3:
                continue
            hold_rate, halfwidth = resampled_hold_rate(pool, args.resample)
            model, resolution, backend, mode = config
            print(f"| {model}@{resolution} b4 {backend}/{mode} | {len(pool)} | {hold_rate:.2f} | "
                  f"±{100 * halfwidth:.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
