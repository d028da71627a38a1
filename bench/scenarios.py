"""How each way of running a model behaves when deployed: MLPerf LoadGen scenarios, fp32 and bf16.

Per model, runtime and precision, each in its own fresh worker process (`xlabench run`, the
real LoadGen driving the backend's compiled model):

  * SingleStream: one query at a time, batch 1; LoadGen's early-stopping p90 (MLPerf's figure);
  * Offline: every query at once, batches of --batch on the backend's concurrency; samples/s;
  * Server: the highest Poisson rate whose p99 stays within each --bounds-ms (a search, each
    tried rate a full LoadGen run), batches of --batch with a --batch-wait-ms dynamic wait.

Results go into --db (one process per configuration: the LoadGen run is itself the sample;
give --processes for an interval). It prints one table with LoadGen's validity per figure and
the bf16/fp32 ratio where both ran. A configuration that fails (bf16 a runtime cannot run, no
Server rate within a bound) prints its one-line reason. Run it on a quiet machine.

    .venv/bin/python bench/scenarios.py                       # the issue's table (long)
    .venv/bin/python bench/scenarios.py --models mobilenet_v3_small --ways openvino/compiled \\
        --min-duration-s 2 --bounds-ms 50                     # minutes: it works
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from xlabench_cli import XlabenchError, xlabench_json

DEFAULT_MODELS = ("mobilenet_v3_small", "resnet50_v1")
DEFAULT_WAYS = ("openvino/compiled", "onnxruntime/compiled", "tensorflow/graph",
                "tensorflow/xla")
DEFAULT_BOUNDS_MS = (50.0, 200.0)


def xlabench_run(args: argparse.Namespace, model: str, way: str, precision: str,
                 scenario: str, batch: int, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """One `xlabench run` of a scenario; its record as JSON (a failed one included)."""
    backend, mode = way.split("/")
    try:
        return xlabench_json(
            ["run", model, "--backend", backend, "--mode", mode, "--resolution",
             str(args.resolution), "--batch-size", str(batch), "--precision", precision,
             "--scenario", scenario, "--scenario-min-duration-s", str(args.min_duration_s),
             "--scenario-max-duration-s", str(args.max_duration_s), "--processes",
             str(args.processes), "--db", str(args.db), "--json", *extra], accept_failed=True)
    except XlabenchError as failed:
        return {"status": "failed", "error": f"exit {failed.returncode}: {failed.last_line}"}


def figure(run: dict[str, Any]) -> tuple[str, float | None]:
    """(what to print, the figure) of one `xlabench run --json`: the result's combined figure
    in its unit (core.scenario.rate_to_figure), with LoadGen's validity of its last process."""
    from xlabench.core.scenario import rate_to_figure

    processes, result = run.get("processes", []), run.get("result") or {}
    last = processes[-1] if processes else run
    if result.get("status") != "ok" or result.get("median_sps") is None:
        return f"— ({str(last.get('error', 'no record'))[:70]})", None
    outcome = last["scenario"]
    loadgen = outcome["loadgen"]
    valid = loadgen.get("valid", loadgen.get("peak_rate_per_s") is not None)
    value = rate_to_figure(outcome["scenario"], result["median_sps"])
    return f"{value:.4g} ({'VALID' if valid else 'INVALID'})", value


def measure_way(args: argparse.Namespace, model: str, way: str, precision: str
                ) -> dict[str, tuple[str, float | None]]:
    """Every scenario of one way of running `model` at one precision."""
    cells = {"single-stream p90 ms": figure(
        xlabench_run(args, model, way, precision, "single-stream", 1))}
    cells["offline samples/s"] = figure(
        xlabench_run(args, model, way, precision, "offline", args.batch))
    for bound in args.bounds_ms:
        cells[f"server q/s p99<{bound:g}ms"] = figure(xlabench_run(
            args, model, way, precision, "server", args.batch,
            ("--latency-bound-ms", str(bound), "--batch-wait-ms", str(args.batch_wait_ms))))
    return cells


def print_table(rows: list[tuple[str, str, str, dict[str, tuple[str, float | None]]]]) -> None:
    columns = list(rows[0][3]) if rows else []
    print("| model | way | precision | " + " | ".join(columns) + " |")
    print("|---" * (3 + len(columns)) + "|")
    by_key = {(m, w, p): cells for m, w, p, cells in rows}
    for model, way, precision, cells in rows:
        print(f"| {model} | {way} | {precision} | "
              + " | ".join(cells[c][0] for c in columns) + " |")
    print("\nbf16 / fp32 (higher is better for rates; for the p90 a ratio below 1 is faster):")
    for (model, way, precision), cells in by_key.items():
        fp32 = by_key.get((model, way, "fp32"))
        if precision != "bf16" or fp32 is None:
            continue
        ratios = [f"{c}: {cells[c][1] / fp32[c][1]:.2f}" for c in columns
                  if cells[c][1] and fp32[c][1]]
        print(f"  {model} {way}: " + ("; ".join(ratios) or "no pair of figures"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--ways", default=",".join(DEFAULT_WAYS), help="backend/mode,...")
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument("--resolution", type=int, default=224)
    parser.add_argument("--batch", type=int, default=4, help="offline/server max batch")
    parser.add_argument("--batch-wait-ms", type=float, default=2.0)
    parser.add_argument("--bounds-ms", default=",".join(f"{b:g}" for b in DEFAULT_BOUNDS_MS))
    parser.add_argument("--min-duration-s", type=float, default=5.0)
    parser.add_argument("--max-duration-s", type=float, default=60.0)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--db", type=Path, default=Path("bench-scenarios.db"))
    args = parser.parse_args()
    args.bounds_ms = [float(b) for b in args.bounds_ms.split(",") if b]
    rows = []
    for model in args.models.split(","):
        for way in args.ways.split(","):
            for precision in args.precisions.split(","):
                start = time.perf_counter()
                cells = measure_way(args, model, way, precision)
                print(f"# {model} {way} {precision}: {time.perf_counter() - start:.0f} s",
                      file=sys.stderr, flush=True)
                rows.append((model, way, precision, cells))
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
