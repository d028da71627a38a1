"""Which knob narrows the spread between fresh processes? Each candidate environment runs the
same configuration as single-process `xlabench run` commands, candidates interleaved round by
round (so a drift hits every candidate alike). Prints, per candidate: the median throughput,
the between-process spread (standard deviation of log medians, %, with its 90% chi-square
interval: with 6 processes a spread is only known to within about a factor of two) and the
median throughput relative to the baseline. A knob is worth a default only if it narrows the
spread clearly (its interval below the baseline's estimate) without slowing the typical result.

    .venv/bin/python bench/spread_knobs.py --rounds 6
    .venv/bin/python bench/spread_knobs.py --model resnet50_v1 --resolution 64 \\
        --backend torch --mode eager
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys

from xlabench_cli import XlabenchError, xlabench_json

#: name -> environment variables added to the worker's (the launching process passes its own
#: environment to each worker). Each is recorded in the env fingerprint's flags.
CANDIDATES: dict[str, dict[str, str]] = {
    "default": {},
    "OMP_WAIT_POLICY=PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE"},
    "OMP_PROC_BIND=close, OMP_PLACES=cores": {"OMP_PROC_BIND": "close", "OMP_PLACES": "cores"},
    "MALLOC_ARENA_MAX=1, PYTHONHASHSEED=0": {"MALLOC_ARENA_MAX": "1", "PYTHONHASHSEED": "0"},
    # transparent huge pages for malloc (glibc >= 2.35): fewer TLB misses, less layout luck
    "GLIBC_TUNABLES=glibc.malloc.hugetlb=1": {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"},
}
#: chi-square quantiles (5%, 95%) for 3..11 degrees of freedom, for the spread's interval
CHI2 = {3: (0.352, 7.815), 4: (0.711, 9.488), 5: (1.145, 11.07), 6: (1.635, 12.59),
        7: (2.167, 14.07), 8: (2.733, 15.51), 9: (3.325, 16.92), 10: (3.940, 18.31),
        11: (4.575, 19.68)}


def one_process(args: argparse.Namespace, extra: dict[str, str]) -> float:
    try:
        run = xlabench_json(["run", args.model, "--resolution", str(args.resolution),
                             "--backend", args.backend, "--mode", args.mode, "--processes", "1",
                             "--max-processes", "1", "--rerun-flagged", "0", "--db", args.db,
                             "--json"], extra)
    except XlabenchError as failed:
        raise SystemExit(str(failed)) from None
    (process,) = run["processes"]
    figures = process.get("interference") or {}
    if figures.get("other_frac", 0) > 0.10:
        print(f"  (process flagged for interference: {figures['other_frac']:.0%})", flush=True)
    return float(process["throughput"]["median_sps"])


def spread(values: list[float]) -> tuple[float, float, float]:
    logs = [math.log(v) for v in values]
    sd = statistics.stdev(logs)
    df = len(values) - 1
    low_q, high_q = CHI2.get(df, (df * 0.5, df * 2.0))
    return sd, sd * math.sqrt(df / high_q), sd * math.sqrt(df / low_q)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    # the default is the configuration whose processes differ most in bench/interval_hold_rate.py
    # (TF XLA MobileNetV3Small: single processes up to 60% faster than the typical one)
    parser.add_argument("--model", default="mobilenet_v3_small")
    parser.add_argument("--resolution", type=int, default=96)
    parser.add_argument("--backend", default="tensorflow")
    parser.add_argument("--mode", default="xla")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--db", default="/tmp/xlabench-knobs.db")
    parser.add_argument("--candidates", nargs="+", choices=list(CANDIDATES),
                        default=list(CANDIDATES), help="default always runs first")
    args = parser.parse_args()
    chosen = {name: CANDIDATES[name] for name in dict.fromkeys(["default", *args.candidates])}
    found: dict[str, list[float]] = {name: [] for name in chosen}
    for round_index in range(args.rounds):
        for name, extra in chosen.items():
            found[name].append(one_process(args, extra))
            print(f"[{round_index + 1}/{args.rounds}] {name}: {found[name][-1]:.2f} samples/s",
                  flush=True)
    base = statistics.median(found["default"])
    print(f"\n{args.model}@{args.resolution} b4 {args.backend}/{args.mode}, {args.rounds} "
          "fresh processes per candidate, interleaved")
    print("| candidate | median samples/s | vs default | between-process spread "
          "[90% interval] |")
    print("| --- | --- | --- | --- |")
    for name, values in found.items():
        sd, low, high = spread(values)
        print(f"| {name} | {statistics.median(values):.2f} | "
              f"{statistics.median(values) / base:.3f} | {100 * sd:.1f}% "
              f"[{100 * low:.1f}, {100 * high:.1f}] |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
