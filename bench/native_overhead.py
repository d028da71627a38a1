"""Python's share: the same compiled program timed from Python and from xlabench-native.

For each model and compiled backend/mode, in one run, alternating (`--rounds` of each, the
order flipped every round so slow drift of the machine hits both):
  * runner=python: the usual worker times the program from Python;
  * runner=native: the worker exports the artifact and xlabench-native times it in C++.
The ratio is native / python throughput, and its interval is the report's: a paired t
interval of the per-round log ratios (`combine.paired_ratio`, the speedup machinery), so
it holds the between-process variation (fresh processes here differ by 10-20%, several times
more than one process's interval) and a drift that hits both sides of a round cancels. With a
single round it falls back to the two processes' CI ends, which describe one process each and
are marked so. The jax/xla row compares two different XLA versions (the PJRT plugin's and
jaxlib's): it is not Python overhead alone. The torch/compiled row compares torch.compile with
an AOTInductor package, two compile paths of Inductor; bench/aoti_gap.py times that one
package from Python and from C++.

The harness self-check: after its latency phase, every native run does `--self-check-rounds`
(20) rounds, each of one method sample wrapped in the steady clock from outside the timing library
(plus an extra sync) and one block of as many steps and one sync timed by the steady clock
alone, the two adjacent in time and their order flipped every round. Printed per run:
  * independent: the median over rounds of independent / library seconds - 1, with the
    order-statistic 95% interval of that median (paired, so the machine's drift over the run
    cancels). The 3% target is judged on this: ok when the interval lies within +-3%, FAIL
    when the median is outside, "wide" when the rounds cannot resolve 3% either way;
  * wrapped: median wrapped / median library seconds - 1 (the library's clock and sync as seen
    from outside; a missing sync shows up here).

    .venv/bin/python bench/native_overhead.py                           # 3 models x 4 runtimes
    .venv/bin/python bench/native_overhead.py --models mobilenet_v3_small --resolution 64
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass

from xlabench.core import MeasureSettings, Record, Spec
from xlabench.core.spec import NATIVE_RUNTIMES
from xlabench.measure.combine import paired_ratio
from xlabench.measure.stats import median, median_ci
from xlabench.runner import Placement, run_isolated
from xlabench.runner.native import SELF_CHECK_ENV, compiled_runtimes

SELF_CHECK_TOLERANCE = 0.03
SELF_CHECK_ROUNDS = 20


@dataclass(frozen=True)
class Pair:
    python: Record
    native: Record


def _spec(model: str, backend: str, mode: str, args: argparse.Namespace, runner: str) -> Spec:
    measure = MeasureSettings(budget_s=args.budget, warmup_max_s=args.budget)
    return Spec(model, backend, mode, args.resolution, batch_size=args.batch_size,
                measure=measure, runner=runner)


def _run(spec: Spec, args: argparse.Namespace) -> Record:
    placement = Placement(env={SELF_CHECK_ENV: str(args.self_check_rounds)})
    record = run_isolated(spec, args.timeout, placement=placement)
    state = "ok" if record.ok else f"{record.status.value}: {record.error}"
    sps = record.throughput.median_sps if record.throughput else math.nan
    print(f"  {spec.label():60s} {sps:9.2f} samples/s  {state}", file=sys.stderr, flush=True)
    return record


def ratio(pair: Pair) -> tuple[float, float, float]:
    """native/python throughput, with the interval from the two CIs' far ends."""
    p, n = pair.python.throughput, pair.native.throughput
    if p is None or n is None:
        return math.nan, math.nan, math.nan
    low = (n.ci_low_sps or n.median_sps) / (p.ci_high_sps or p.median_sps)
    high = (n.ci_high_sps or n.median_sps) / (p.ci_low_sps or p.median_sps)
    return n.median_sps / p.median_sps, low, high


@dataclass(frozen=True)
class SelfCheck:
    rounds: int
    steps: int
    wrapped: float  # median wrapped / median library - 1
    independent: float  # median over rounds of independent / library - 1
    low: float  # the 95% interval of `independent`
    high: float
    verdict: str  # ok, FAIL or wide (the interval reaches past the tolerance, the median not)


def self_check(record: Record) -> SelfCheck | None:
    """The native run's self-check rounds compared (see the module docstring), or None."""
    check = record.backend_info.get("native_self_check")
    if not record.ok or not check or not check["library_s"]:
        return None
    library, wrapped = check["library_s"], check["wrapped_s"]
    # ratio - 1 is monotone in the log-ratio: the same order statistics, the same interval
    paired = [i / lib - 1.0 for i, lib in zip(check["independent_s"], library, strict=True)]
    mid = median(paired)
    low, high, _ = median_ci(paired)
    inside = max(-low, high) <= SELF_CHECK_TOLERANCE
    verdict = "FAIL" if abs(mid) > SELF_CHECK_TOLERANCE else "ok" if inside else "wide"
    return SelfCheck(check["rounds"], check["steps"], median(wrapped) / median(library) - 1.0,
                     mid, low, high, verdict)


def _check_text(c: SelfCheck) -> str:
    return (f"{100 * c.independent:+.1f}% [{100 * c.low:+.1f}, {100 * c.high:+.1f}] "
            f"{c.verdict} (wrapped {100 * c.wrapped:+.1f}%, {c.rounds}x{c.steps} steps)")


def rounds_ratio(pairs: list[Pair]) -> tuple[float, float, float, str] | None:
    """native/python over the rounds with both sides measured: the paired t interval of the
    per-round ratios, or with one round that round's CI ends; None without a good round."""
    good = {i: p for i, p in enumerate(pairs) if p.python.throughput and p.native.throughput}
    paired = paired_ratio({i: p.native.throughput.median_sps for i, p in good.items()},
                          {i: p.python.throughput.median_sps for i, p in good.items()})
    if paired is not None:
        return paired.ratio, paired.ratio_low, paired.ratio_high, paired.method
    if not good:
        return None
    return (*ratio(next(iter(good.values()))), "one round: CI ends of one process each")


def _summary(name: str, pairs: list[Pair]) -> str:
    found = rounds_ratio(pairs)
    if found is None:
        return f"{name:44s} no successful pair"
    mid, low, high, method = found
    checks = [c for c in (self_check(p.native) for p in pairs) if c]
    check = "; ".join(_check_text(c) for c in checks)
    runtimes = {p.native.backend_info.get("native_runtime") for p in pairs}
    same = all(p.native.backend_info.get("same_compiler", True) for p in pairs)
    note = "" if same else "  (different XLA: not Python overhead alone)"
    if "aoti" in runtimes:  # bench/aoti_gap.py: the package alone runs as fast from Python
        note = "  (AOTInductor package vs torch.compile: two compile paths, two processes)"
    return (f"{name:44s} native/python {mid:5.3f} [{low:5.3f}, {high:5.3f}] ({method})  "
            f"self-check {check or 'n/a'}{note}")


def _as_dict(check: SelfCheck | None) -> dict | None:
    return None if check is None else asdict(check)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mobilenet_v3_small,resnet50_v1,efficient_b0")
    parser.add_argument("--resolution", type=int, default=224)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3,
                        help="processes of each side; the ratio's interval has rounds - 1 df")
    parser.add_argument("--budget", type=float, default=10.0)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--self-check-rounds", type=int, default=SELF_CHECK_ROUNDS)
    parser.add_argument("--runtimes", default=",".join(sorted(set(NATIVE_RUNTIMES.values()))))
    parser.add_argument("--json", default=None, help="also write every pair's numbers here")
    args = parser.parse_args(argv)
    wanted = set(args.runtimes.split(",")) & set(compiled_runtimes())
    configs = [(b, m) for (b, m), rt in NATIVE_RUNTIMES.items() if rt in wanted]
    lines, dump = [], []
    for model in args.models.split(","):
        for backend, mode in configs:
            pairs = []
            for round_index in range(args.rounds):
                order = ("python", "native") if round_index % 2 == 0 else ("native", "python")
                done = {r: _run(_spec(model, backend, mode, args, r), args) for r in order}
                pairs.append(Pair(done["python"], done["native"]))
                dump.append({"model": model, "backend": backend, "mode": mode,
                             "round": round_index, "ratio": ratio(pairs[-1]),
                             "self_check": _as_dict(self_check(done["native"])),
                             "python": done["python"].to_dict(),
                             "native": done["native"].to_dict()})
            lines.append(_summary(f"{model}@{args.resolution} b{args.batch_size} "
                                  f"{backend}/{mode}", pairs))
            print(lines[-1], flush=True)  # as each finishes: a long run stopped keeps its rows
            if args.json:
                with open(args.json, "w", encoding="utf-8") as handle:
                    json.dump(dump, handle)
    print("\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
