"""Can a CI job act on `xlabench compare`? False verdicts when nothing changed, hits when it did.

(a) A/A: the same configurations swept into two databases, then `xlabench compare A.db
    B.db`: nothing changed, so every "faster" or "slower" is false. It prints the false-verdict
    rate (target: about 5% or less; each interval is 95%) and how often the ratio interval
    holds 1.
(b) A/B: the same configurations swept with the workers limited to fewer cores
    (`taskset -c 0 xlabench sweep ...`, one core) against the full machine. A longer reference
    pair of sweeps (--reference-processes rounds) gives the "true" ratio per configuration. It
    prints the share of the configurations whose reference ratio is beyond the threshold that
    `compare` calls slower, the false "slower" calls among the others, and the share of ratio
    intervals that hold the reference ratio.

Interleaved (the default): the two databases of a comparison are swept one round at a time in
turn (`sweep --processes r` continues each result with round r), alternating which side goes
first, so round r of both ran minutes apart. The two results share the sweep id (the same
grid) and overlap in time, so `compare` pairs them by round and a drift of the machine between
rounds cancels. This is how a CI job should compare two environments on a shared machine (as
asv's `continuous` does); on this VM separate runs half an hour apart differed by 30-60%.

--separate: each database swept whole, one after the other, as a CI job comparing against a
stored baseline does. A.db is swept twice, the second time under the label `rerun` (a
labelled sweep measures again), so that the baseline's results carry the between-run variation
their re-runs show; `compare` adds it to the interval (without it, --no-history, neither side
knows how runs differ and compare gives no faster/slower/same verdict between separate runs).

The configurations: each model at one resolution, batch 4, on TensorFlow graph, JAX XLA,
PyTorch eager and OpenVINO compiled (four per model; eight with the default two models). Every
sweep and compare is a subprocess, as a CI job would run them. The databases stay in
--workdir; running the script again resumes the sweeps (delete the folder for a fresh
measurement). Run it on a quiet machine; it prints ratios and rates, it asserts nothing.

    .venv/bin/python bench/compare_verdicts.py                 # the acceptance run, ~1 h 45 min
    .venv/bin/python bench/compare_verdicts.py --quick --workdir /tmp/cv   # minutes: it works
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: (backends, modes) of one sweep each: a sweep is a rectangular grid, these are not.
GROUPS = (("tensorflow", "graph"), ("jax", "xla"), ("torch", "eager"),
          ("openvino", "compiled"))
QUICK_GROUPS = (("tensorflow", "graph"), ("jax", "xla"))
#: Short measurement for --quick (seconds per worker).
QUICK_MEASURE = ("--budget", "1", "--min-sample-time", "0.02", "--target-ci", "0.1")


def xlabench(*args: str, taskset: str | None = None, check: bool = True
             ) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "xlabench.cli.main", *args]
    if taskset is not None:
        command = ["taskset", "-c", taskset, *command]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done


def _sweep_args(opts: argparse.Namespace, processes: int, label: str | None,
                exact: bool, budget: float | None = None) -> list[str]:
    """The policy flags: `exact` (interleaved rounds) asks for exactly `processes`, with no
    extra ones for a wide interval and no re-run of a flagged one (a re-run would land in a
    later round, away from its pair)."""
    policy = ["--processes", str(processes)] + (["--label", label] if label else [])
    if exact or opts.quick:
        policy += ["--max-processes", str(processes), "--rerun-flagged", "0"]
    if opts.quick:
        policy += list(QUICK_MEASURE)
    elif (budget or opts.budget) is not None:
        policy += ["--budget", f"{budget or opts.budget:g}"]
    return policy


def _sweep_group(db: Path, opts: argparse.Namespace, group: tuple[str, str], policy: list[str],
                 taskset: str | None) -> None:
    backends, modes = group
    where = f" (taskset -c {taskset})" if taskset is not None else ""
    print(f"  sweep {db.name}{where}: {backends} {modes} {' '.join(policy[:2])}", flush=True)
    xlabench("sweep", "--models", opts.models, "--resolutions", str(opts.resolution),
             "--batch-sizes", "4", "--backends", backends, "--modes", modes,
             "--db", str(db), "--timeout", "900", *policy, taskset=taskset)


def _groups(opts: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    return QUICK_GROUPS if opts.quick else GROUPS


def sweep(db: Path, opts: argparse.Namespace, processes: int, taskset: str | None = None,
          label: str | None = None) -> float:
    """Every configuration into `db` (one sweep per group); returns the wall time."""
    start = time.perf_counter()
    for group in _groups(opts):
        _sweep_group(db, opts, group, _sweep_args(opts, processes, label, False), taskset)
    return time.perf_counter() - start


def sweep_interleaved(sides: list[tuple[Path, str | None]], opts: argparse.Namespace,
                      rounds: int, budget: float | None = None) -> float:
    """Every configuration into each (db, taskset) side, one round at a time in turn: round r
    of a group on every side before round r + 1 (odd rounds in the given order, even ones
    reversed, so neither side always goes first). Returns the wall time."""
    start = time.perf_counter()
    for r in range(1, rounds + 1):
        order = sides if r % 2 else sides[::-1]
        for group in _groups(opts):
            for db, taskset in order:
                _sweep_group(db, opts, group, _sweep_args(opts, r, None, True, budget),
                             taskset)
    return time.perf_counter() - start


HISTORY_LABEL = "rerun"


def baseline_sweeps(opts: argparse.Namespace, work: Path) -> float:
    """A.db: the configurations, then (with history) again under HISTORY_LABEL."""
    took = sweep(work / "A.db", opts, opts.processes)
    if opts.history:
        took += sweep(work / "A.db", opts, opts.processes, label=HISTORY_LABEL)
    return took


def compare(baseline: Path, new: Path, opts: argparse.Namespace,
            baseline_label: str | None = None) -> dict[str, Any]:
    label = ["--baseline-label", baseline_label] if baseline_label else []
    done = xlabench("compare", str(baseline), str(new), *label, "--format", "json",
                    "--threshold", f"{opts.threshold:g}")
    return json.loads(done.stdout)


def _name(pair: dict[str, Any]) -> str:
    return f"{pair['model']}@{pair['resolution']} {pair['backend']}/{pair['mode']}"


def _interval(pair: dict[str, Any]) -> str:
    if pair["ratio_low"] is None:
        return "-"
    return f"[{pair['ratio_low']:.3f}, {pair['ratio_high']:.3f}]"


def _share(hits: int, total: int) -> str:
    return f"{hits}/{total} = {hits / total:.2f}" if total else f"{hits}/0"


def interleaved_sweeps(opts: argparse.Namespace, work: Path) -> float:
    """The compared databases, all interleaved in one loop: A (every CPU) with B (every CPU)
    for the A/A and C (--new-cpus) for the A/B; A is the baseline of both."""
    sides: list[tuple[Path, str | None]] = [(work / "A.db", None)]
    if "a" in opts.parts:
        sides.append((work / "B.db", None))
    if "b" in opts.parts:
        sides.append((work / "C.db", opts.new_cpus))
    print(f"interleaved sweeps: {', '.join(db.name for db, _ in sides)}, {opts.processes} "
          "rounds", flush=True)
    return sweep_interleaved(sides, opts, opts.processes)


def a_a(opts: argparse.Namespace, work: Path) -> None:
    if opts.interleave:
        print("(a) A/A: the same configurations swept twice, interleaved", flush=True)
        took = 0.0  # interleaved_sweeps measured A and B
        report = compare(work / "A.db", work / "B.db", opts)
    else:
        print("(a) A/A: the same configurations swept twice, one after the other", flush=True)
        took = baseline_sweeps(opts, work) + sweep(work / "B.db", opts, opts.processes)
        report = compare(work / "A.db", work / "B.db", opts,
                         HISTORY_LABEL if opts.history else None)
    if took:
        print(f"  sweeps took {took:.0f} s")
    print(f"  {'configuration':<48} {'ratio':>7} {'interval':>18}  verdict")
    judged = holds = false = 0
    for pair in report["pairs"]:
        ratio = "-" if pair["ratio"] is None else f"{pair['ratio']:.3f}"
        print(f"  {_name(pair):<48} {ratio:>7} {_interval(pair):>18}  {pair['verdict']}")
        if pair["ratio_low"] is None:
            continue
        judged += 1
        holds += pair["ratio_low"] <= 1.0 <= pair["ratio_high"]
        false += pair["verdict"] in ("faster", "slower")
    print(f"  summary: {report['summary']}")
    print(f"  false faster/slower verdicts: {_share(false, judged)} (threshold "
          f"{opts.threshold:g}%)")
    print(f"  ratio intervals holding 1: {_share(holds, judged)} (95% intervals)")
    if report["environment_differences"]:
        print("  environment differences: "
              + "; ".join(d["text"] for d in report["environment_differences"]))


def a_b(opts: argparse.Namespace, work: Path) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        print("(b) A/B skipped: this process has one CPU, nothing to take away")
        return
    print(f"(b) A/B: workers on CPUs {opts.new_cpus} (new) against all {len(cpus)} (baseline)",
          flush=True)
    if opts.interleave:
        print(f"  reference runs: {opts.reference_processes} rounds", flush=True)
        sweep_interleaved([(work / "R_all.db", None), (work / "R_few.db", opts.new_cpus)],
                          opts, opts.reference_processes, opts.reference_budget)
        report = compare(work / "A.db", work / "C.db", opts)  # interleaved_sweeps measured
    else:
        if not (work / "A.db").exists():
            baseline_sweeps(opts, work)
        sweep(work / "C.db", opts, opts.processes, taskset=opts.new_cpus)
        print("  reference runs", flush=True)
        sweep(work / "R_all.db", opts, opts.reference_processes)
        sweep(work / "R_few.db", opts, opts.reference_processes, taskset=opts.new_cpus)
        report = compare(work / "A.db", work / "C.db", opts,
                         HISTORY_LABEL if opts.history else None)
    # By configuration, not spec id: a --reference-budget is part of the reference's specs.
    reference = {_name(p): p for p in
                 compare(work / "R_all.db", work / "R_few.db", opts)["pairs"]}
    limit = 1.0 - opts.threshold / 100.0
    beyond = called = other = false_slower = judged = holds = 0
    established = established_called = 0  # the reference's own interval below the limit
    print(f"  {'configuration':<48} {'ratio':>7} {'interval':>18} {'reference':>10}  verdict")
    for pair in report["pairs"]:
        ref = reference.get(_name(pair))
        true_ratio = ref["ratio"] if ref is not None and ref["ratio_low"] is not None else None
        ratio = "-" if pair["ratio"] is None else f"{pair['ratio']:.3f}"
        shown = "-" if true_ratio is None else f"{true_ratio:.3f}"
        print(f"  {_name(pair):<48} {ratio:>7} {_interval(pair):>18} {shown:>10}  "
              f"{pair['verdict']}")
        if true_ratio is None or pair["ratio_low"] is None:
            continue
        judged += 1
        holds += pair["ratio_low"] <= true_ratio <= pair["ratio_high"]
        if true_ratio < limit:
            beyond += 1
            called += pair["verdict"] == "slower"
            if ref["ratio_high"] < limit:
                established += 1
                established_called += pair["verdict"] == "slower"
        else:
            other += 1
            false_slower += pair["verdict"] == "slower"
    print(f"  summary: {report['summary']}")
    print(f"  reference slower than {limit:.2f}, called slower: {_share(called, beyond)}")
    print(f"    of which the reference's own interval is below {limit:.2f} (an established "
          f"slowdown), called slower: {_share(established_called, established)}")
    print(f"  reference not beyond the threshold, called slower: {_share(false_slower, other)}")
    print(f"  ratio intervals holding the reference ratio: {_share(holds, judged)}")
    if report["environment_differences"]:
        print("  environment differences: "
              + "; ".join(d["text"] for d in report["environment_differences"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="mobilenet_v3_small,efficient_b0",
                        help="comma-separated (default: %(default)s)")
    parser.add_argument("--resolution", type=int, default=64)
    parser.add_argument("--processes", type=int, default=7,
                        help="processes (rounds) per result in the compared sweeps (default 7: "
                        "with fewer, paired intervals here were ±8-50%%)")
    parser.add_argument("--reference-processes", type=int, default=6,
                        help="processes per result in the reference sweeps (default 6)")
    parser.add_argument("--threshold", type=float, default=5.0, help="percent (default 5)")
    parser.add_argument("--separate", dest="interleave", action="store_false",
                        help="sweep each database whole, one after the other (default: "
                        "interleaved by round)")
    parser.add_argument("--no-history", dest="history", action="store_false",
                        help="with --separate: sweep the baseline once (no between-run "
                        "variation known)")
    parser.add_argument("--budget", type=float, default=4.0,
                        help="sampling seconds per process (default 4: processes differ more "
                        "than one process's samples, so rounds buy more than seconds)")
    parser.add_argument("--reference-budget", type=float, default=12.0,
                        help="sampling seconds per process of the reference sweeps (default 12)")
    parser.add_argument("--new-cpus", default="0",
                        help="taskset CPU list of the A/B's new side (default 0: one core)")
    parser.add_argument("--workdir", type=Path, default=Path("compare-verdicts"),
                        help="where the databases go (kept; a rerun resumes)")
    parser.add_argument("--parts", default="ab", help="a, b or ab (default)")
    parser.add_argument("--quick", action="store_true",
                        help="one model at 32 px, TF graph and JAX XLA, 2 processes (3 for the "
                        "reference), a second of sampling each: checks the script, not the tool")
    opts = parser.parse_args()
    if opts.quick:
        opts.models = opts.models.split(",")[0]
        opts.resolution, opts.processes, opts.reference_processes = 32, 2, 3
    if shutil.which("taskset") is None and "b" in opts.parts:
        raise SystemExit("taskset not found (util-linux); run with --parts a")
    opts.workdir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    if opts.interleave:
        took = interleaved_sweeps(opts, opts.workdir)
        print(f"  interleaved sweeps took {took:.0f} s", flush=True)
    if "a" in opts.parts:
        a_a(opts, opts.workdir)
    if "b" in opts.parts:
        a_b(opts, opts.workdir)
    print(f"done in {time.perf_counter() - start:.0f} s; databases in {opts.workdir}")


if __name__ == "__main__":
    main()
