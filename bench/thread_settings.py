"""Which thread settings give stable processes? (issue 37, item 1, the frameworks)

Per backend, fresh single-process `xlabench run`s under each of its candidate thread settings
(environment variables the framework itself reads), interleaved: each round runs one process
per setting, in a random order, back to back, so the machine's slow spells fall on every
setting alike. Per setting it prints the processes' median samples/s, the spread between them
(the standard deviation of their logs, about the relative SD, and max/min - 1) and the median
probe (the worker's reference GEMM, GFLOP/s, before its timed phases), so a wide spread that
comes with low probe readings is the machine's, not the setting's.

A setting that changes how many cores a deployment would use (one intra-op thread on a 2-core
machine) is measured for what it tells, not as a candidate default: it misrepresents the
deployment.

Run it on a quiet machine (a process is 10-30 s here; the defaults take 15-25 minutes):

    .venv/bin/python bench/thread_settings.py --rounds 6
    .venv/bin/python bench/thread_settings.py --backends tensorflow --rounds 8 --out t.json
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import tempfile
from pathlib import Path
from typing import Any

from xlabench_cli import XlabenchError, xlabench_json

#: backend -> (mode, {setting name: environment}). Only variables the framework reads itself.
SETTINGS: dict[str, tuple[str, dict[str, dict[str, str]]]] = {
    "tensorflow": ("graph", {
        "default": {},
        # TensorFlow's inter-op pool defaults to the core count: two pools of two threads
        # each (plus the calling thread) on two vCPUs.
        "inter_op=1": {"TF_NUM_INTEROP_THREADS": "1"},
        "intra=1,inter=1 (one core)": {"TF_NUM_INTRAOP_THREADS": "1",
                                       "TF_NUM_INTEROP_THREADS": "1"},
    }),
    "torch": ("eager", {
        "default": {},
        # libgomp's threads spin (OMP_WAIT_POLICY unset = spin a while, then sleep) between the
        # many small parallel regions of an eager step.
        "OMP_WAIT_POLICY=PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE"},
        "OMP_WAIT_POLICY=ACTIVE": {"OMP_WAIT_POLICY": "ACTIVE"},
    }),
    "jax": ("xla", {
        "default": {},
        "eigen single-threaded (one core)": {
            "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"},
    }),
}


def one_process(model: str, backend: str, mode: str, env: dict[str, str], db: Path,
                opts: argparse.Namespace) -> dict[str, Any]:
    try:
        run = xlabench_json(["run", model, "--backend", backend, "--mode", mode,
                             "--resolution", str(opts.resolution), "--batch-size",
                             str(opts.batch_size), "--processes", "1", "--max-processes", "1",
                             "--budget", f"{opts.seconds:g}", "--db", str(db), "--json"], env)
    except XlabenchError as failed:
        return {"error": [failed.last_line]}
    (record,) = run["processes"]
    probe = record.get("probe_before") or {}
    return {"sps": record["throughput"]["median_sps"], "probe_gflops": probe.get("gflops"),
            "duration_s": record.get("duration_s")}


def spread(values: list[float]) -> dict[str, float]:
    logs = [math.log(v) for v in values]
    return {"n": len(values), "median_sps": statistics.median(values),
            "log_sd": statistics.stdev(logs) if len(logs) > 1 else float("nan"),
            "max_over_min": max(values) / min(values) - 1}


def study(backend: str, opts: argparse.Namespace, db: Path, rng: random.Random
          ) -> dict[str, Any]:
    mode, settings = SETTINGS[backend]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in settings}
    for round_index in range(opts.rounds):
        order = list(settings)
        rng.shuffle(order)
        for name in order:
            run = one_process(opts.model, backend, mode, settings[name], db, opts)
            runs[name].append(run)
            shown = (f"{run['sps']:8.1f} samples/s, probe {run['probe_gflops'] or 0:6.1f} "
                     f"GFLOP/s" if "sps" in run else f"failed: {run['error']}")
            print(f"{backend} round {round_index + 1} {name:32s} {shown}", flush=True)
    summary = {}
    for name, rows in runs.items():
        ok = [r for r in rows if "sps" in r]
        if not ok:
            continue
        summary[name] = {**spread([r["sps"] for r in ok]),
                         "probe_median_gflops": statistics.median(
                             r["probe_gflops"] for r in ok if r["probe_gflops"]),
                         "settings": settings[name], "runs": rows}
    return {"mode": mode, "settings": summary}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--backends", default=",".join(SETTINGS))
    p.add_argument("--model", default="mobilenet_v3_small")
    p.add_argument("--resolution", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--seconds", type=float, default=2.0,
                   help="sampling budget per process (default 2, ab's own)")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="write every figure as JSON here")
    opts = p.parse_args()
    rng = random.Random(opts.seed)
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for backend in opts.backends.split(","):
            if backend not in SETTINGS:
                raise SystemExit(f"thread_settings: no settings for backend {backend!r}")
            results[backend] = study(backend, opts, Path(scratch) / "runs.db", rng)
    print(f"\n{'backend':11s} {'setting':32s} {'n':>2s} {'median':>8s} {'log SD':>7s} "
          f"{'max/min-1':>9s} {'probe':>6s}")
    for backend, result in results.items():
        for name, s in result["settings"].items():
            print(f"{backend:11s} {name:32s} {s['n']:2d} {s['median_sps']:8.1f} "
                  f"{s['log_sd']:7.3f} {s['max_over_min']:9.1%} "
                  f"{s['probe_median_gflops']:6.1f}")
    if opts.out:
        opts.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
