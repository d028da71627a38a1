"""Sweep orchestration overhead and run-to-run repeatability (a benchmark, not a test).

Runs the same 12-configuration sweep twice through the CLI, each into its own fresh db:
2 tiny models x 6 backend/mode pairs at resolution 32, once per result policy: "old" is one
process per configuration (what xlabench did before results became several processes), "new"
the defaults every user gets (at least 3 processes, more while the interval is wide). Prints

* time cost: each sweep's wall time, and new / old;
* overhead: the sweep's wall time minus the sum of its workers' own wall times
  (`Record.duration_s`, measured by the parent around each worker), as a share of the wall time
  (target: under 10%);
* repeatability: the median absolute relative difference of throughput between the two runs,
  and the Spearman rank correlation of the 12 configurations' throughputs.

Usage:
    JAX_PLATFORMS=cpu .venv/bin/python bench/sweep_overhead.py [--budget 3] [--workers 1]
    .venv/bin/python bench/sweep_overhead.py --policies new new   # two runs at the defaults
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from xlabench.measure import stats
from xlabench.store import ResultStore

MODELS = ("mobilenet_v3_small", "mobilenet_v2")
PAIRS = ("jax/eager", "jax/xla", "tensorflow/eager", "tensorflow/graph", "tensorflow/xla",
         "torch/eager")  # torch/compiled left out: minutes of Inductor compile on 2 cores
OVERHEAD_TARGET = 0.10
#: result-policy flags per name: "old" reproduces one process per configuration
POLICY_FLAGS = {"old": ["--processes", "1", "--max-processes", "1", "--rerun-flagged", "0"],
                "new": []}


def sweep_file(db: Path, budget_s: float) -> str:
    """A sweep over MODELS x PAIRS at 32 (`modes` applies per backend: no torch/xla etc.)."""
    backends = sorted({p.split("/")[0] for p in PAIRS})
    return "\n".join([
        f"models = {list(MODELS)!r}".replace("'", '"'),
        "resolutions = [32]", "batch_sizes = [2]",
        f"backends = {backends!r}".replace("'", '"'),
        'modes = ["eager", "graph", "xla"]', f'db = "{db}"', "timeout = 900",
        "[measure]", "min_sample_s = 0.05", f"budget_s = {budget_s}", "warmup_min_s = 0.3",
        "warmup_max_s = 5.0", "latency_steps = 10",
    ]) + "\n"


def run_once(folder: Path, name: str, policy: str, budget_s: float,
             workers: int) -> dict[str, object]:
    """One sweep through the CLI in a fresh db; its wall time and per-configuration results."""
    db, config = folder / f"{name}.db", folder / f"{name}.toml"
    config.write_text(sweep_file(db, budget_s))
    command = [sys.executable, "-m", "xlabench.cli.main", "sweep", "--config", str(config),
               "--workers", str(workers), *POLICY_FLAGS[policy]]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=os.environ)
    wall_s = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"sweep {name} failed:\n{done.stderr}")
    with ResultStore(db) as store:
        records, results = store.records(), store.combined()
    failed = [f"{r.spec.label()}: {r.error}" for r in records if not r.ok]
    ok = [r for r in results if r.status == "ok" and r.median_sps]
    if failed or len(ok) != len(MODELS) * len(PAIRS):
        sys.exit(f"sweep {name}: expected {len(MODELS) * len(PAIRS)} ok results; "
                 f"failures: {failed}")
    return {
        "wall_s": wall_s, "policy": policy, "processes": len(records),
        "worker_s": sum(r.duration_s or 0.0 for r in records),
        "throughput": {r.spec_id: r.median_sps for r in ok},
    }


def report_overhead(name: str, run: dict[str, object], workers: int) -> float:
    wall_s, worker_s = float(run["wall_s"]), float(run["worker_s"])
    # With N workers the workers' times overlap; N x wall is the capacity they could fill.
    capacity_s = wall_s * workers
    overhead_s = capacity_s - worker_s
    share = overhead_s / capacity_s
    verdict = "ok" if share < OVERHEAD_TARGET else "ABOVE TARGET"
    print(f"sweep {name} ({run['policy']} defaults, {run['processes']} processes): wall "
          f"{wall_s:.1f} s x {workers} worker(s), in workers {worker_s:.1f} s,"
          f" overhead {overhead_s:.1f} s = {100 * share:.1f}% of wall "
          f"({overhead_s / 12:.2f} s per configuration; target < "
          f"{100 * OVERHEAD_TARGET:.0f}%: {verdict})")
    return share


def report_repeatability(a: dict[str, float], b: dict[str, float]) -> None:
    ids = sorted(a)
    rel = [abs(b[i] - a[i]) / a[i] for i in ids]
    rho = stats.rank_correlation([a[i] for i in ids], [b[i] for i in ids])
    print(f"repeatability over {len(ids)} configurations: median |dthroughput|/throughput = "
          f"{100 * stats.median(rel):.1f}% (max {100 * max(rel):.1f}%), "
          f"Spearman rank correlation = {rho:.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=3.0, help="sampling seconds per config")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--policies", nargs=2, choices=sorted(POLICY_FLAGS),
                        default=["old", "new"], help="the result policy of each of the 2 runs")
    args = parser.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with tempfile.TemporaryDirectory(prefix="xlabench-bench-") as tmp:
        runs = [run_once(Path(tmp), name, policy, args.budget, args.workers)
                for name, policy in zip("AB", args.policies, strict=True)]
    for name, run in zip("AB", runs, strict=True):
        report_overhead(name, run, args.workers)
    print(f"time cost: B / A = {float(runs[1]['wall_s']) / float(runs[0]['wall_s']):.2f}x "
          f"({args.policies[1]} / {args.policies[0]} defaults)")
    report_repeatability(runs[0]["throughput"], runs[1]["throughput"])  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
