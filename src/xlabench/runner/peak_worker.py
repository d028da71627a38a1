"""The device peak's own process, started by `runner.peaks` (or by hand):

    python -m xlabench.runner.peak_worker OUT.json [--sizes 1024,2048,3072] [--calls 5]
        [--libraries torch,openvino,numpy] [--allow-busy]

It times every GEMM library the peak compares (`measure.peak.LIBRARIES`: each backend's that
provides one, wired here, and NumPy's) and writes the fp32 and bf16 peaks to OUT.json, unless
other processes used the CPUs meanwhile (exit 3) or no library could measure one (exit 1).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from xlabench.core.result import interference_reason
from xlabench.measure import interference
from xlabench.measure.peak import (
    DEFAULT_CALLS,
    DEFAULT_SIZES,
    best_peak,
    describe_skips,
    measure_candidates,
)
from xlabench.runner.peaks import gemm_makers


def main(argv: list[str]) -> int:
    makers = gemm_makers()
    parser = argparse.ArgumentParser(prog="python -m xlabench.runner.peak_worker")
    parser.add_argument("out")
    parser.add_argument("--sizes", default=",".join(str(n) for n in DEFAULT_SIZES))
    parser.add_argument("--calls", type=int, default=DEFAULT_CALLS)
    parser.add_argument("--libraries", default=",".join(makers),
                        help="GEMM libraries to compare (default: %(default)s)")
    parser.add_argument("--allow-busy", action="store_true",
                        help="write the peaks even when other processes used the CPUs")
    args = parser.parse_args(argv)
    sizes = tuple(int(n) for n in args.sizes.split(","))
    libraries = tuple(name.strip() for name in args.libraries.split(",") if name.strip())
    start = interference.snapshot()
    found = measure_candidates(makers, sizes, args.calls, libraries)
    busy = interference.between(start, interference.snapshot())
    why = interference_reason(busy)
    if why and not args.allow_busy:
        # a peak is stored once per environment and every later result is read against it:
        # one taken on a busy machine would stay too low for good
        print(f"not stored: measured under interference ({why})", file=sys.stderr)
        return 3
    peaks = {dtype: peak for dtype, candidates in found.items()
             if (peak := best_peak(dtype, candidates, sizes, args.calls)) is not None}
    if not peaks:
        skipped = [c for candidates in found.values() for c in candidates]
        print(f"no GEMM library could measure a peak: {describe_skips(skipped)}"[:400],
              file=sys.stderr)
        return 1
    tmp = f"{args.out}.tmp"  # write-then-rename: the parent never reads half a file
    other = busy.other_frac if busy else None
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump([{**p.to_dict(), "other_busy_frac": other} for p in peaks.values()], handle)
    os.replace(tmp, args.out)
    for peak in peaks.values():
        print(f"{peak.dtype}: {peak.gflops_s:.1f} GFLOP/s ({peak.library}, n={peak.size}); "
              f"theoretical {peak.theoretical_gflops_s or float('nan'):.0f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
