"""Is the spread between fresh processes xlabench's or the machine's? (issue 37, item 1)

Per runtime, fresh processes of xlabench and of the runtime's own harness on the same artifact
and settings, interleaved one by one.

Each pair runs one single-process `xlabench run ... --json` and one harness process, in a
random order per pair, back to back; a pair's two figures are one moment of the machine. The
harness per runtime:

  * openvino: `benchmark_app` on the worker's IR, with the worker's compile config
    (`backends.openvino.compile_config`: LATENCY hint, 1 stream, the worker's threads, f32),
    one synchronous request (`-api sync -nireq 1`), `-t --seconds`; its median latency;
  * iree: `iree-benchmark-module` on the worker's .vmfb, `--device=local-task`, the worker's
    task topology (`backends.iree.runtime_flags`), the exported weights fed as .npy inputs as
    the worker feeds them; repetitions of a 0.1 s minimum (xlabench's sample time), their
    median;
  * litert (compiled: XNNPACK): `litert-benchmark` (ai-edge-litert's CompiledModel tool, CPU,
    the worker's threads) on the worker's .tflite; its median;
  * every other backend (the frameworks: tensorflow/graph, jax/xla, torch/eager, ...): a bare
    loop in a fresh interpreter (this file with `--child bare`): the worker's process setup
    (`runner.worker.prepare_process`, the backend's `setup`: its thread settings), the same
    registry model and seed, the same input, the backend's own step (`make_runner`, so the
    same compiled callable), a warm-up as the spec's, then each call synced and timed with
    perf_counter for `--seconds`; its median.

xlabench's worker deletes its scratch directory (and so its artifact) when it ends, so the
artifact the harness runs is exported once per runtime by xlabench's own backend functions in a
fresh process (`--child export`), with the worker's spec, seed and setup, built as a worker
builds it (two IREE exports: weights bit-identical, the vmfb 446 of 181k bytes apart).

Spreads, per runtime and side: min-max of the per-process medians (max/min - 1) and the
standard deviation of their logs (about the relative SD); the ratio is xlabench's over the
harness's. Each pair's line shows both figures at that moment (and each xlabench process's
probe figure, where the record carries one), so drift of the machine shows as both moving.

The levels of the two sides need not agree (the x/h column): xlabench's process figure is
the median of 0.1 s samples of back-to-back steps, benchmark_app's and litert-benchmark's the
median of single calls (printed to 0.01 ms); the spreads are what is compared. Each process's
wall time is in the JSON.

Do not run it on a busy machine: it is a measurement. An xlabench process (build, compile,
warm-up, parity, sampling, latency steps) took about 45 s on the busy 2-core machine this was
written on (less when quiet), a harness 3-15 s: the defaults (5 runtimes x 8 pairs) take
roughly 20-40 minutes, one runtime 4-8:

    .venv/bin/python bench/process_spread.py --out spread.json
    .venv/bin/python bench/process_spread.py --runtimes openvino --pairs 12 --seconds 5
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xlabench_cli import xlabench_json

BIN = Path(sys.executable).parent
#: The runtime's own benchmark tool per backend; every other backend gets the bare loop.
HARNESS = {"openvino": "benchmark_app", "iree": "iree-benchmark-module",
           "litert": "litert-benchmark"}
BARE_LOOP = "bare loop"
#: Harnesses that round what they print: litert-benchmark's JSON rounds every latency to 0.01 ms
#: (ai_edge_litert/tools/benchmark_litert_model.py, `round(median_ms, 2)`): at 0.46 ms a step
#: of 2.2%, so equal figures mean a spread below that, not none.
HARNESS_RESOLUTION_MS = {"litert": 0.01}
DEFAULT_RUNTIMES = "openvino,iree,tensorflow/graph,jax/xla,torch/eager"
#: iree-benchmark-module's repetition length: xlabench's sample time (MeasureSettings).
IREE_REPETITION_S = 0.1
#: What a worker's record says it ran with, kept beside the harness's settings.
WORKER_SETTINGS = ("openvino_properties", "iree_config", "iree_worker_threads",
                   "litert_delegate_nodes")
TIME_UNIT_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


@dataclass(frozen=True)
class Target:
    """One runtime to compare: a backend, its mode, and the harness that runs beside xlabench."""

    backend: str
    mode: str

    @property
    def name(self) -> str:
        return f"{self.backend}/{self.mode}"

    @property
    def harness(self) -> str:
        return HARNESS.get(self.backend, BARE_LOOP)


# ------------------------------------------------------------------------ pure parts (tested)
def spread(medians_ms: list[float], resolution_ms: float = 0.0) -> dict[str, float]:
    """Between-process spread of per-process medians: min, max, max/min - 1, and the standard
    deviation of their logs (the relative SD, scale-free); `resolution_rel`: the step of the
    figures as printed, relative to their median (0: not rounded)."""
    logs = [math.log(m) for m in medians_ms]
    return {
        "resolution_rel": resolution_ms / statistics.median(medians_ms),
        "n": len(medians_ms),
        "median_ms": statistics.median(medians_ms),
        "min_ms": min(medians_ms),
        "max_ms": max(medians_ms),
        "range_rel": max(medians_ms) / min(medians_ms) - 1.0,
        "sd_log": statistics.stdev(logs) if len(logs) > 1 else float("nan"),
    }


def spread_ratio(ours: float, theirs: float) -> float:
    """xlabench's spread over the harness's (inf where the harness's is zero)."""
    if theirs == 0:
        return math.inf if ours > 0 else 1.0
    return ours / theirs


def parse_benchmark_app(text: str) -> float:
    """benchmark_app's median latency in ms (its `[ INFO ] Latency:` block, which says `us`
    below a millisecond)."""
    block = text.split("Latency:", 1)
    found = re.search(r"Median:\s*([0-9.]+)\s*(ms|us)", block[-1])
    if len(block) < 2 or not found:
        raise ValueError("no 'Latency: ... Median: X ms' in benchmark_app's output: "
                         + text[-600:].replace("\n", " | "))
    return float(found.group(1)) * (1e-3 if found.group(2) == "us" else 1.0)


def benchmark_app_properties(text: str) -> dict[str, str]:
    """The compiled model's properties benchmark_app prints (its step 8), to set beside the
    worker's `backend_info.openvino_properties`."""
    block = text.split("Querying optimal runtime parameters", 1)[-1].split("[Step 9", 1)[0]
    return dict(re.findall(r"^\[ INFO \]\s+([A-Z_]+): (.*)$", block, flags=re.MULTILINE))


def parse_iree_benchmark(text: str) -> float:
    """iree-benchmark-module's (Google Benchmark, --benchmark_format=json) median real time per
    call in ms: the `median` aggregate, or the single run's figure without repetitions."""
    rows = json.loads(text[text.index("{"):])["benchmarks"]
    medians = [r for r in rows if r.get("aggregate_name") == "median"]
    row = (medians or [r for r in rows if r.get("run_type", "iteration") == "iteration"])[0]
    return float(row["real_time"]) * TIME_UNIT_MS[row.get("time_unit", "ns")]


def parse_litert_benchmark(result: dict[str, Any]) -> float:
    """litert-benchmark's (--result_json) median latency in ms."""
    return float(result["latency"]["median_ms"])


# ------------------------------------------------------------- children (fresh interpreters)
def worker_state(spec: Any, scratch: str) -> tuple[Any, Any, Any]:
    """(backend module, model, input) as a worker has them before its first step: the same
    environment, dtype policy, seeds, backend setup, model build and input (runner/worker.py)."""
    from xlabench import backends
    from xlabench.runner.worker import DTYPE_POLICY, prepare_process

    prepare_process(spec, scratch)  # the backend's environment; a runtime's artifacts dir
    import keras

    from xlabench.backends.base import seed_all
    from xlabench.core.backends import model_precision
    from xlabench.zoo import build_for, entry_for

    backend = backends.load(spec.backend)
    keras.config.set_dtype_policy(DTYPE_POLICY[model_precision(spec.backend, spec.precision)])
    seed_all(spec.seed, spec.backend)
    backend.setup(spec)
    build_context = getattr(backend, "build_context", lambda _seed: contextlib.nullcontext())
    with build_context(spec.seed):
        model = build_for(spec, entry_for(spec))
    return backend, model, backend.make_input(spec)


def child_export(spec: Any, directory: str) -> dict[str, Any]:
    """Export and compile the worker's artifact into `directory` with xlabench's own backend
    functions; what the harness needs to run it (a manifest)."""
    import numpy as np

    from xlabench.backends import runtime

    _, model, x = worker_state(spec, directory)
    threads, info = runtime.cpu_count(), {}
    manifest: dict[str, Any] = {"threads": threads}
    if spec.backend == "openvino":
        from xlabench.backends import openvino

        compiled = openvino.compile_model(model, x, spec.precision, threads, info)
        request, host_x = compiled.create_infer_request(), runtime.host_input(x)
        call = functools.partial(request.infer, {0: host_x}, share_inputs=True)
        manifest.update(artifact=str(Path(directory) / "model.xml"),
                        config=info["openvino_config"])
    elif spec.backend == "iree":
        from xlabench.backends import iree

        function, args = iree.compile_model(model, x, threads, info)
        inputs = []
        for index, arg in enumerate(args):
            path = Path(directory) / f"arg{index}.npy"
            np.save(path, arg.to_host())
            inputs.append(str(path))
        call = functools.partial(function, *args)
        manifest.update(artifact=str(Path(directory) / "model.vmfb"), inputs=inputs,
                        runtime_flags=list(iree.runtime_flags(threads)), entry=iree.ENTRY,
                        driver=iree.DRIVER)
    elif spec.backend == "litert":
        from xlabench.backends import litert

        interpreter, input_index, _ = litert.compile_model(model, x, spec.mode, threads, info)
        interpreter.set_tensor(input_index, runtime.host_input(x))
        call = interpreter.invoke
        manifest.update(artifact=str(next(Path(directory).glob("*.tflite"))))
    else:
        raise SystemExit(f"no artifact to export for {spec.backend}")
    call()
    start = time.perf_counter()
    for _ in range(3):
        call()
    manifest["call_ms"] = (time.perf_counter() - start) / 3 * 1e3  # sizes litert's run count
    return manifest


def child_bare(spec: Any, seconds: float) -> dict[str, Any]:
    """The bare loop: the worker's model, input and step, warmed up as the spec says, then
    each call synced and timed for `seconds`; the median ms per call."""
    scratch = tempfile.mkdtemp(prefix="xlabench-bare-")
    backend, model, x = worker_state(spec, scratch)
    runner = backend.make_runner(model, spec.mode, x)
    backend.sync(runner.step())  # the first call: trace and compile
    warmup, start, steps = spec.measure, time.perf_counter(), 0
    while steps < warmup.warmup_min_steps or time.perf_counter() - start < warmup.warmup_min_s:
        backend.sync(runner.step())
        steps += 1
    call_s: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        begin = time.perf_counter()
        backend.sync(runner.step())
        call_s.append(time.perf_counter() - begin)
    shutil.rmtree(scratch, ignore_errors=True)
    return {"median_ms": statistics.median(call_s) * 1e3, "calls": len(call_s)}


def child(args: argparse.Namespace) -> int:
    from xlabench.core import Spec

    spec = Spec.from_dict(json.loads(Path(args.spec).read_text()))
    if args.child == "export":
        found = child_export(spec, args.directory)
    else:
        found = child_bare(spec, args.seconds)
    print(json.dumps(found))
    return 0


# ------------------------------------------------------------------------------ the parent
def run_command(command: list[str], what: str, with_stderr: bool = False) -> str:
    """stdout of a process that must succeed (else the reason, with its output's tail), and
    its stderr after it `with_stderr` (benchmark_app may log its report there)."""
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout)[-1500:]
        raise RuntimeError(f"{what} exited {done.returncode}:\n{tail}")
    return done.stdout + ("\n" + done.stderr if with_stderr else "")


def run_args(args: argparse.Namespace, target: Target) -> list[str]:
    """The `xlabench run` arguments of one single-process result (also what builds the spec)."""
    return ["run", args.model, "--backend", target.backend, "--mode", target.mode,
            "--resolution", str(args.resolution), "--batch-size", str(args.batch_size),
            "--budget", str(args.seconds), "--processes", "1", "--max-processes", "1",
            "--rerun-flagged", "0"]


def write_spec(args: argparse.Namespace, target: Target, directory: str) -> str:
    """The worker's spec, made by xlabench's own command line from `run_args`; its file."""
    from xlabench.cli.commands import make_spec
    from xlabench.cli.main import build_parser

    spec = make_spec(build_parser().parse_args(run_args(args, target)))
    path = Path(directory) / f"{target.backend}-{target.mode}.spec.json"
    path.write_text(json.dumps(spec.to_dict()))
    return str(path)


def this_child(*extra: str) -> list[str]:
    return [sys.executable, __file__, "--child", *extra]


def xlabench_process(args: argparse.Namespace, target: Target, db: str) -> dict[str, Any]:
    """One fresh xlabench process: its median ms per batch, and what its record says."""
    (process,) = xlabench_json([*run_args(args, target), "--db", db, "--json"])["processes"]
    if process["status"] != "ok":
        raise RuntimeError(f"xlabench process {process['status']}: {process.get('error')}")
    throughput = process["throughput"]
    probes = [(process.get(k) or {}).get("gflops") for k in ("probe_before", "probe_after")]
    return {
        "median_ms": float(throughput["batch_time_ms_median"]),
        "median_sps": float(throughput["median_sps"]),
        "samples": len(throughput["sample_s"]),
        "sampled_s": sum(throughput["sample_s"]),
        "other_frac": (process.get("interference") or {}).get("other_frac"),
        "probe_gflops": [p for p in probes if p is not None],
        "settings": {k: v for k, v in (process.get("backend_info") or {}).items()
                     if k in WORKER_SETTINGS},
    }


def harness_process(args: argparse.Namespace, target: Target, spec_path: str,
                    manifest: dict[str, Any], scratch: str) -> dict[str, Any]:
    """One fresh process of the runtime's own harness: its median ms per batch."""
    if target.harness == BARE_LOOP:
        found = json.loads(run_command(
            this_child("bare", "--spec", spec_path, "--seconds", str(args.seconds)),
            "bare loop").strip().splitlines()[-1])
        return {"median_ms": found["median_ms"], "calls": found["calls"]}
    if target.backend == "openvino":
        text = run_command(benchmark_app_command(manifest, args.seconds, scratch),
                           "benchmark_app", with_stderr=True)
        from xlabench.backends.openvino import REPORTED

        properties = benchmark_app_properties(text)
        return {"median_ms": parse_benchmark_app(text),
                "properties": {k: properties[k] for k in REPORTED if k in properties}}
    if target.backend == "iree":
        return {"median_ms": parse_iree_benchmark(run_command(
            iree_command(manifest, args.seconds, scratch), "iree-benchmark-module"))}
    result = Path(scratch) / "litert.json"
    runs = max(20, int(args.seconds * 1e3 / max(manifest["call_ms"], 1e-3)))
    run_command([str(BIN / "litert-benchmark"), f"--model={manifest['artifact']}",
                 f"--num_threads={manifest['threads']}", f"--num_runs={runs}",
                 "--warmup_runs=5", f"--result_json={result}"], "litert-benchmark")
    return {"median_ms": parse_litert_benchmark(json.loads(result.read_text())), "runs": runs}


def benchmark_app_command(manifest: dict[str, Any], seconds: float, scratch: str) -> list[str]:
    """benchmark_app with the worker's compile config (the file: the LATENCY hint too, which
    `-hint none` leaves alone) and the same knobs as flags (they take priority over the file,
    so they must agree with it); f32 input as the worker feeds (benchmark_app would make an
    image input u8 and convert it in the model); one synchronous request."""
    config = manifest["config"]
    config_path = Path(scratch) / "openvino_config.json"
    config_path.write_text(json.dumps({"CPU": config}))
    return [str(BIN / "benchmark_app"), "-m", manifest["artifact"], "-d", "CPU",
            "-load_config", str(config_path), "-hint", "none",
            "-nstreams", config["NUM_STREAMS"], "-nthreads", config["INFERENCE_NUM_THREADS"],
            "-infer_precision", config["INFERENCE_PRECISION_HINT"], "-ip", "f32", "-api", "sync",
            "-nireq", "1", "-t", str(max(1, round(seconds)))]


def iree_command(manifest: dict[str, Any], seconds: float, scratch: str) -> list[str]:
    """iree-benchmark-module on the worker's vmfb and weights (a flag file: hundreds of
    inputs), the worker's task topology, repetitions of xlabench's sample time."""
    flags = [f"--module={manifest['artifact']}", f"--device={manifest['driver']}",
             f"--function={manifest['entry']}", *manifest["runtime_flags"],
             *(f"--input=@{path}" for path in manifest["inputs"])]
    flagfile = Path(scratch) / "iree.flags"
    flagfile.write_text("\n".join(flags) + "\n")
    repetitions = max(3, round(seconds / IREE_REPETITION_S))
    return [str(BIN / "iree-benchmark-module"), f"--flagfile={flagfile}",
            f"--benchmark_min_time={IREE_REPETITION_S}s",
            f"--benchmark_repetitions={repetitions}", "--benchmark_format=json",
            "--benchmark_report_aggregates_only=true"]


def measure_target(args: argparse.Namespace, target: Target, workdir: str,
                   rng: random.Random) -> dict[str, Any]:
    """All pairs of one runtime, interleaved; the figures and both spreads."""
    scratch = tempfile.mkdtemp(prefix=f"{target.backend}-", dir=workdir)
    db = str(Path(workdir) / "spread.db")  # one store: xlabench's machine peaks and costs once
    spec_path = write_spec(args, target, scratch)
    manifest: dict[str, Any] = {}
    if target.harness != BARE_LOOP:
        manifest = json.loads(run_command(
            this_child("export", "--spec", spec_path, "--directory", scratch),
            "artifact export").strip().splitlines()[-1])
    pairs: list[dict[str, Any]] = []
    start = time.time()
    for index in range(args.pairs):
        order = rng.sample(["xlabench", "harness"], 2)
        pair: dict[str, Any] = {"pair": index, "order": order,
                                "at_s": round(time.time() - start, 1)}
        for side in order:
            began = time.perf_counter()
            pair[side] = (xlabench_process(args, target, db) if side == "xlabench"
                          else harness_process(args, target, spec_path, manifest, scratch))
            pair[side]["wall_s"] = round(time.perf_counter() - began, 1)
        pair["ratio"] = pair["xlabench"]["median_ms"] / pair["harness"]["median_ms"]
        pairs.append(pair)
        print_pair(target, pair)
    ours = spread([p["xlabench"]["median_ms"] for p in pairs])
    theirs = spread([p["harness"]["median_ms"] for p in pairs],
                    HARNESS_RESOLUTION_MS.get(target.backend, 0.0))
    return {"runtime": target.name, "harness": target.harness, "manifest": manifest,
            "pairs": pairs, "xlabench": ours, "harness_spread": theirs,
            "sd_ratio": spread_ratio(ours["sd_log"], theirs["sd_log"]),
            "range_ratio": spread_ratio(ours["range_rel"], theirs["range_rel"]),
            "level_ratio": ours["median_ms"] / theirs["median_ms"]}


def print_pair(target: Target, pair: dict[str, Any]) -> None:
    ours, theirs = pair["xlabench"], pair["harness"]
    probe = " ".join(f"{g:.1f}" for g in ours["probe_gflops"])
    flag = f"  other {ours['other_frac']:.0%}" if ours.get("other_frac") else ""
    print(f"  {target.name:18s} pair {pair['pair']:2d} +{pair['at_s']:6.1f} s  "
          f"{'->'.join(s[0] for s in pair['order'])}  xlabench {ours['median_ms']:8.3f} ms  "
          f"harness {theirs['median_ms']:8.3f} ms  x/h {pair['ratio']:.3f}"
          + (f"  probe {probe} GFLOP/s" if probe else "") + flag, flush=True)


def print_table(found: list[dict[str, Any]]) -> None:
    print(f"\n{'runtime':18s} {'harness':22s} {'n':>3s}  {'xlabench sd/range':>18s}  "
          f"{'harness sd/range':>17s}  {'ratio sd/range':>14s}  {'x/h level':>9s}")
    for row in found:
        if "error" in row:
            print(f"{row['runtime']:18s} {row['harness']:22s}   -  {row['error'].splitlines()[0]}")
            continue
        ours, theirs = row["xlabench"], row["harness_spread"]
        print(f"{row['runtime']:18s} {row['harness']:22s} {ours['n']:3d}  "
              f"{100 * ours['sd_log']:7.1f}%/{100 * ours['range_rel']:5.1f}%     "
              f"{_harness_spread(theirs)}    {_ratios(row)}   {row['level_ratio']:9.3f}")


def _harness_spread(theirs: dict[str, float]) -> str:
    """The harness's spread; where every figure printed the same, below its rounding step."""
    step = theirs.get("resolution_rel", 0.0)
    if theirs["range_rel"] == 0 and step:
        return f"{'<' + format(100 * step, '.1f') + '%':>8s}/{'<' + format(100 * step, '.1f'):>5s}%"
    return f"{100 * theirs['sd_log']:7.1f}%/{100 * theirs['range_rel']:5.1f}%"


def _ratios(row: dict[str, Any]) -> str:
    ours, theirs = row["xlabench"], row["harness_spread"]
    step = theirs.get("resolution_rel", 0.0)
    if theirs["range_rel"] == 0 and step:  # at least this much wider
        return f">{ours['sd_log'] / step:5.2f}/>{ours['range_rel'] / step:4.2f}"
    return f"{row['sd_ratio']:6.2f}/{row['range_ratio']:5.2f}"


def targets(text: str) -> list[Target]:
    from xlabench.core import BACKEND_MODES

    found = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        backend, _, mode = item.partition("/")
        if backend not in BACKEND_MODES:
            raise argparse.ArgumentTypeError(f"unknown backend {backend!r} in {item!r}")
        mode = mode or BACKEND_MODES[backend][-1]
        if mode not in BACKEND_MODES[backend]:
            raise argparse.ArgumentTypeError(f"{backend} has no mode {mode!r}")
        if backend == "litert" and mode != "compiled":  # the tool always applies XNNPACK
            raise argparse.ArgumentTypeError("litert-benchmark runs XNNPACK: litert/compiled")
        found.append(Target(backend, mode))
    return found


def measure_all(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every runtime in turn; one that fails says why and the others go on. Artifacts and
    xlabench's store live in a temporary directory: the figures go to --out."""
    rng = random.Random(args.seed)
    found: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="xlabench-spread-") as workdir:
        for target in args.runtimes:
            try:
                found.append(measure_target(args, target, workdir, rng))
            except (RuntimeError, ValueError, KeyError) as exc:
                print(f"  {target.name}: skipped: {exc}", flush=True)
                found.append({"runtime": target.name, "harness": target.harness,
                              "error": str(exc)})
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mobilenet_v3_small")
    parser.add_argument("--resolution", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--runtimes", type=targets, default=DEFAULT_RUNTIMES,
                        help=f"backend[/mode],... (default {DEFAULT_RUNTIMES}; also litert)")
    parser.add_argument("--pairs", type=int, default=8,
                        help="xlabench+harness pairs per runtime (default 8)")
    parser.add_argument("--seconds", type=float, default=3.0,
                        help="measuring seconds per process: the harness's time, xlabench's "
                             "--budget (it may stop earlier at its 2%% target) (default 3)")
    parser.add_argument("--seed", type=int, default=0, help="of the order within pairs")
    parser.add_argument("--out", help="JSON file with every figure")
    parser.add_argument("--child", choices=("export", "bare"), help=argparse.SUPPRESS)
    parser.add_argument("--spec", help=argparse.SUPPRESS)
    parser.add_argument("--directory", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    if args.pairs < 2 or args.seconds <= 0:
        parser.error("--pairs must be at least 2 and --seconds positive")
    found = measure_all(args)
    print(f"\n{args.model}@{args.resolution} b{args.batch_size}, {args.pairs} pairs, "
          f"{args.seconds:g} s a process; spread = SD of log per-process medians / max/min-1; "
          "ratio = xlabench's / harness's")
    print_table(found)
    if args.out:
        Path(args.out).write_text(json.dumps({"settings": {
            k: v for k, v in vars(args).items() if k in (
                "model", "resolution", "batch_size", "pairs", "seconds", "seed")},
            "runtimes": found}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
