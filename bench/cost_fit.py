"""Fit the shape of the sweep's cost line (`sweep/cost.py`) to the study's processes.

The line is `F + c * GMACs^p` a process. Its shape (F/c and p) is scored the way the sweep plan
uses it: each configuration of each database (one CPU kind each) is estimated from what had
run before it on that machine, the line scaled by the median of past duration over the line
for the configuration's family member nearest in size (`sweep.plan.nearest_in_size`) on the
same backend and mode, else for every model there (`sweep.plan._History.factor`); the score
is the root mean square of log(estimate / actual) over the configurations, actual being the
median of their processes. Only the shape matters to that replay; the scale c is then set so
that the reference database's processes sum to what the line says for them (a fresh machine's
ETA is such a sum).

Processes under MIN_PROCESS_S are left out: they failed before building a model.

Usage:
    .venv/bin/python bench/cost_fit.py results/cpu/*/study.db
        [--scale-on results/cpu/amd-epyc-zen-4-x2/study.db]
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from xlabench.measure import stats
from xlabench.store.reader import StoreReader
from xlabench.sweep import cost
from xlabench.sweep.plan import nearest_in_size
from xlabench.zoo import REGISTRY

MIN_PROCESS_S = 3.0
FIXED_TO_GROWING = (1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 40.0)
EXPONENTS = (0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8, 0.9, 1.0)
#: The straight line the current one replaced (14 s + 2.8 s a GMAC): shown for comparison.
STRAIGHT = (5.0, 1.0)


@dataclass(frozen=True)
class Process:
    family: str
    engine: str  # backend/mode
    gmacs: float  # `cost.configuration_macs` / 1e9
    duration_s: float


@dataclass(frozen=True)
class Case:
    """One configuration on one machine, and what had run on that machine before it."""

    gmacs: float
    actual_s: float
    engine_before: tuple[Process, ...]
    family_before: tuple[Process, ...]


def read_processes(path: Path) -> list[tuple[str, tuple[str, ...], Process]]:
    """(created_at, configuration, process) of each process with a MAC count, oldest first."""
    found = []
    with StoreReader(path) as reader:
        for row in reader.process_rows():
            macs = cost.configuration_macs(row.model, row.resolution, row.batch_size)
            if macs is None or not row.duration_s or row.duration_s < MIN_PROCESS_S:
                continue
            engine = f"{row.backend}/{row.mode}"
            config = (row.model, engine, str(row.resolution), str(row.batch_size),
                      row.precision)
            process = Process(REGISTRY.get(row.model).family, engine, macs / 1e9,
                              row.duration_s)
            found.append((row.created_at, config, process))
    return sorted(found, key=lambda item: item[0])


def cases_of(processes: list[tuple[str, tuple[str, ...], Process]]) -> list[Case]:
    by_config: dict[tuple[str, ...], list[tuple[str, Process]]] = defaultdict(list)
    for created_at, config, process in processes:
        by_config[config].append((created_at, process))
    cases = []
    for own in by_config.values():
        first_at, first = own[0]
        before = tuple(p for at, _, p in processes if at < first_at and p.engine == first.engine)
        if before:
            cases.append(Case(first.gmacs, stats.median([p.duration_s for _, p in own]),
                              before, tuple(p for p in before if p.family == first.family)))
    return cases


def shape(ratio: float, exponent: float) -> Callable[[float], float]:
    return lambda gmacs: ratio + gmacs ** exponent


def rms_log_error(cases: Sequence[Case], line: Callable[[float], float]) -> float:
    errors = []
    for case in cases:
        past = (nearest_in_size(case.family_before, line(case.gmacs), lambda p: line(p.gmacs))
                or case.engine_before)
        factor = stats.median([p.duration_s / line(p.gmacs) for p in past])
        errors.append(math.log(line(case.gmacs) * factor / case.actual_s) ** 2)
    return math.sqrt(sum(errors) / len(errors))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("databases", nargs="+", type=Path)
    parser.add_argument("--scale-on", type=Path, help="the database whose processes the line "
                        "sums to (default: the first)")
    args = parser.parse_args()
    read = {path: read_processes(path) for path in args.databases}
    cases = [case for processes in read.values() for case in cases_of(processes)]
    print(f"{len(cases)} configurations replayed from {len(args.databases)} databases")
    scored = sorted((rms_log_error(cases, shape(r, p)), r, p)
                    for r in FIXED_TO_GROWING for p in EXPONENTS)
    print("RMS log error  F/c    p")
    for error, ratio, exponent in scored[:10]:
        print(f"{error:13.3f}  {ratio:4g}  {exponent:4g}")
    current = (cost.FIXED_S / cost.GROWING_S_AT_1_GMAC, cost.MAC_EXPONENT)
    for name, (ratio, exponent) in (("current line", current), ("straight line", STRAIGHT)):
        print(f"{name}: F/c {ratio:.2f}, p {exponent:g}: "
              f"{rms_log_error(cases, shape(ratio, exponent)):.3f}")
    _, ratio, exponent = scored[0]
    reference = args.scale_on or args.databases[0]
    durations = [p for _, _, p in read.get(reference) or read_processes(reference)]
    scale = (sum(p.duration_s for p in durations)
             / sum(shape(ratio, exponent)(p.gmacs) for p in durations))
    print(f"best shape scaled on {reference} ({len(durations)} processes): "
          f"{scale * ratio:.1f} s + {scale:.2f} s x GMACs^{exponent:g}")


if __name__ == "__main__":
    main()
