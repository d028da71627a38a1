"""Does a CPU sweep on Ray measure what the local executor measures? (a benchmark, not a test)

The same configurations twice on this machine, each into its own database: once with the local
executor (`--nodes` pinned workers, the CPUs split as `--workers N` splits them), once with the
Ray executor on a local cluster of `--nodes` Ray nodes, each started under `taskset` on one of
those same CPU shares with `--num-cpus` = its size (tests/sweep/ray_cluster.py). On Ray each
task owns its node and pins its worker to the node's cores, so the two should agree. Prints each
configuration's combined samples/s with its interval, local beside Ray, the ratio, whether the
intervals overlap, and the cores each Ray process was pinned to. Run it on a quiet machine.

    .venv/bin/python bench/ray_placement.py                  # the grid of the original report
    .venv/bin/python bench/ray_placement.py --processes 1 --tiny   # a quick check that it runs
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.sweep.ray_cluster

from tests.sweep.ray_cluster import LocalRayCluster

from xlabench.core.result import Result
from xlabench.store import ResultStore
from xlabench.sweep.executors import physical_cores, split_cpus

#: Seconds, not minutes, per process: only to see that the script works.
TINY_MEASURE = {"min_sample_s": 0.02, "budget_s": 1.0, "warmup_min_s": 0.1, "warmup_max_s": 2.0,
                "latency_steps": 3, "min_samples": 3}


def _list(values: str) -> str:
    return "[" + ", ".join(f'"{v.strip()}"' for v in values.split(",") if v.strip()) + "]"


def sweep_file(args: argparse.Namespace, db: Path, executor: str, workers: int,
               address: str = "") -> str:
    lines = [f"models = {_list(args.models)}", f"backends = {_list(args.backends)}",
             f"modes = {_list(args.modes)}", f"resolutions = [{args.resolutions}]",
             f'db = "{db}"', f'executor = "{executor}"', f"workers = {workers}",
             f"processes = {args.processes}", f"max_processes = {args.processes}",
             "rerun_flagged = 0", f"timeout = {args.timeout}"]
    if args.batch_sizes:
        lines.append(f"batch_sizes = [{args.batch_sizes}]")
    if address:
        lines.append(f'ray_address = "{address}"')
    if args.tiny:
        lines.append("[measure]")
        lines += [f"{k} = {v}" for k, v in TINY_MEASURE.items()]
    return "\n".join(lines) + "\n"


def run_sweep(config: Path, text: str, env: dict[str, str] | None = None) -> float:
    config.write_text(text)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "xlabench.cli.main", "sweep", "--config",
                           str(config)], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"sweep failed ({config.name}):\n{done.stderr[-3000:]}")
    return time.perf_counter() - start


def results(db: Path) -> tuple[dict[str, Result], dict[str, str], dict[str, list[str]]]:
    """Combined results by spec id, labels by spec id, and each spec's Ray placements."""
    with ResultStore(db) as store:
        combined = {r.spec_id: r for r in store.combined() if r.status == "ok"}
        records = store.records()
    labels = {r.spec_id: r.spec.label() for r in records}
    placed: dict[str, list[str]] = {}
    for record in records:
        where = record.backend_info.get("placement")
        if where:
            cores = ",".join(map(str, where.get("cpus", []))) or "-"
            placed.setdefault(record.spec_id, []).append(
                f"{where['node_id'][:6]}:{cores}{' own' if where.get('owns_node') else ''}")
    return combined, labels, placed


def interval(result: Result | None) -> str:
    if result is None or result.median_sps is None:
        return "—"
    low, high = result.ci_low_sps, result.ci_high_sps
    bounds = f" [{low:.4g}, {high:.4g}]" if low is not None and high is not None else ""
    flag = " !" if result.flagged else ""
    return f"{result.median_sps:.4g}{bounds} k={result.k}{flag}"


def overlap(a: Result | None, b: Result | None) -> str:
    if a is None or b is None or None in (a.ci_low_sps, a.ci_high_sps, b.ci_low_sps,
                                          b.ci_high_sps):
        return "?"
    return "yes" if a.ci_low_sps <= b.ci_high_sps and b.ci_low_sps <= a.ci_high_sps else "NO"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="mobilenet_v3_small")
    parser.add_argument("--backends", default="tensorflow,openvino")
    parser.add_argument("--modes", default="graph,compiled")
    parser.add_argument("--resolutions", default="64")
    parser.add_argument("--batch-sizes", default="", help="default: the grid's")
    parser.add_argument("--processes", type=int, default=3, help="per result, both executors")
    parser.add_argument("--nodes", type=int, default=2,
                        help="Ray nodes, and local workers (the CPUs split the same way)")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--ray-first", action="store_true", help="run the Ray sweep first")
    parser.add_argument("--tiny", action="store_true", help="seconds of measuring, not minutes")
    parser.add_argument("--keep", metavar="DIR", default=None, help="keep the databases here")
    args = parser.parse_args()

    cpus = sorted(os.sched_getaffinity(0))
    shares = split_cpus(cpus, args.nodes, physical_cores(cpus))
    print(f"CPU shares (local workers = Ray nodes): {shares}")
    folder = Path(args.keep or tempfile.mkdtemp(prefix="xlabench-ray-placement-"))
    folder.mkdir(parents=True, exist_ok=True)
    local_db, ray_db = folder / "local.db", folder / "ray.db"

    def local() -> float:
        return run_sweep(folder / "local.toml", sweep_file(args, local_db, "local", args.nodes))

    def ray() -> float:
        with LocalRayCluster(shares) as cluster:
            print(f"Ray nodes: { {k[:6]: v for k, v in cluster.node_cpus.items()} }")
            return run_sweep(folder / "ray.toml",
                             sweep_file(args, ray_db, "ray", args.nodes, cluster.address),
                             cluster.driver_env())

    walls = {}
    for name, sweep in (("ray", ray), ("local", local)) if args.ray_first else (
            ("local", local), ("ray", ray)):
        walls[name] = sweep()
        print(f"{name} sweep: {walls[name]:.0f} s")

    on_local, labels, _ = results(local_db)
    on_ray, ray_labels, placed = results(ray_db)
    labels.update(ray_labels)
    width = max((len(v) for v in labels.values()), default=10)
    print(f"\n{'configuration'.ljust(width)}  {'local samples/s [CI]':32}  "
          f"{'ray samples/s [CI]':32}  ray/local  overlap  ray placements")
    for spec_id in sorted(labels, key=labels.get):
        a, b = on_local.get(spec_id), on_ray.get(spec_id)
        ratio = (f"{b.median_sps / a.median_sps:.3f}" if a and b and a.median_sps
                 and b.median_sps else "—")
        print(f"{labels[spec_id].ljust(width)}  {interval(a):32}  {interval(b):32}  "
              f"{ratio:>9}  {overlap(a, b):>7}  {' '.join(placed.get(spec_id, []))}")
    print(f"\n('!' = flagged for interference; databases in {folder})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
