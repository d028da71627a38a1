"""Is native AOTInductor slower than Python's torch.compile because of Python, or the compiler?

bench/native_overhead.py measured xlabench-native's AOTInductor package at 0.84-0.92 of the
Python worker's torch.compile throughput (2026-12-01, 224 px b4). The two sides do not run the
same program: the worker compiles `torch.export(...).module()` with torch.compile (Inductor,
Python wrapper, weights as module parameters); the native runner loads an AOTInductor package
of the decomposed export (Inductor in AOT mode, C++ wrapper, weights as constants). This probe
times, in one process and in interleaved blocks, on the same model, weights and input:

  * compile:         torch.compile(exported.module()), as the worker does;
  * compile_decomp:  torch.compile of the decomposed export, the capture AOTInductor gets;
  * aoti_python:     the AOTInductor package the native runner would load, loaded and called
                     from Python (torch._inductor.aoti_load_package).

If aoti_python is as slow against compile as the native runner was, the gap is the compile
path, not Python. `--processes` fresh processes, per-call medians and ratios.

Then (`--pair-rounds`, 0 to skip) one package, built once, timed by two kinds of fresh process
alternating, order flipped every round: Python calling `aoti_load_package` in blocks, and
`xlabench-native run` with its own method (the per-call median of its samples). Their ratio,
with the paired t interval over rounds (`combine.paired_ratio`), is the C++ process against a
Python one on the identical program. Quiet machine.

    .venv/bin/python bench/aoti_gap.py --model efficient_b0 --resolution 224 --processes 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ["KERAS_BACKEND"] = "torch"


def build_callables(model_name: str, resolution: int, batch: int, threads: int,
                    directory: str) -> dict:
    """The three ways of running one model's export, each warmed once."""
    import keras
    import torch

    from xlabench.backends.base import seed_all
    from xlabench.backends.torch import _forward_module
    from xlabench.zoo import REGISTRY, build_model

    torch.set_num_threads(threads)
    seed_all(0, "torch")
    model = build_model(REGISTRY.get(model_name), resolution)
    x = keras.random.uniform((batch, resolution, resolution, 3), 0.0, 255.0, seed=1)
    with torch.no_grad():
        exported = torch.export.export(_forward_module(model), (x,), strict=False)
        decomposed = torch.export.export(_forward_module(model), (x,),
                                         strict=False).run_decompositions()
        package = os.path.join(directory, "model.pt2")
        torch._inductor.aoti_compile_and_package(decomposed, package_path=package)
        calls = {"compile": torch.compile(exported.module(), dynamic=False),
                 "compile_decomp": torch.compile(decomposed.module(), dynamic=False),
                 "aoti_python": torch._inductor.aoti_load_package(package)}
        for call in calls.values():
            call(x)
    return {name: (lambda c=call: c(x)) for name, call in calls.items()}


def time_calls(calls: dict, rounds: int, block_s: float) -> dict[str, float]:
    """Median seconds per call of each callable, in blocks whose order flips every round."""
    import torch

    with torch.no_grad():
        start = time.perf_counter()
        calls["compile"]()
        per_block = max(1, int(block_s / (time.perf_counter() - start)))
        found: dict[str, list[float]] = {name: [] for name in calls}
        for index in range(rounds):
            order = list(calls) if index % 2 == 0 else list(reversed(calls))
            for name in order:
                start = time.perf_counter()
                for _ in range(per_block):
                    calls[name]()  # CPU kernels are synchronous: returns when computed
                found[name].append((time.perf_counter() - start) / per_block)
    return {name: statistics.median(values) for name, values in found.items()}


def export_package(args: argparse.Namespace, directory: str) -> None:
    """The native runner's artifact (package, input, manifest, run spec), as the worker's."""
    from pathlib import Path

    import keras
    import numpy as np
    import torch

    from xlabench.backends import load
    from xlabench.backends.base import seed_all
    from xlabench.core.spec import MeasureSettings, Spec
    from xlabench.runner import native
    from xlabench.zoo import REGISTRY, build_model

    torch.set_num_threads(args.threads)
    seed_all(0, "torch")
    model = build_model(REGISTRY.get(args.model), args.resolution)
    x = keras.random.uniform((args.batch_size, args.resolution, args.resolution, 3), 0.0, 255.0,
                             seed=1)
    spec = Spec(model=args.model, backend="torch", mode="compiled", resolution=args.resolution,
                batch_size=args.batch_size, runner="native",
                measure=MeasureSettings(budget_s=args.native_budget_s))
    artifact = Path(directory)
    exported = load(spec.backend).export_native(spec, model, x, artifact, args.threads)
    exported.pop("stages_s", None)
    native.write_artifact(artifact, "aoti", np.asarray(x.cpu(), dtype=np.float32), exported)
    native.write_run_spec(artifact, spec, args.threads)


def time_package(directory: str, threads: int, rounds: int, block_s: float) -> float:
    """Median seconds per call of the package called from Python, in blocks."""
    import numpy as np
    import torch

    torch.set_num_threads(threads)
    with open(os.path.join(directory, "artifact.json"), encoding="utf-8") as handle:
        manifest = json.load(handle)
    shape = manifest["inputs"][0]["shape"]
    x = torch.from_numpy(np.fromfile(os.path.join(directory, "input.bin"),
                                     dtype="<f4").reshape(shape))
    package = torch._inductor.aoti_load_package(os.path.join(directory, "model.pt2"))
    with torch.no_grad():
        return time_calls({"compile": lambda: package(x)}, rounds, block_s)["compile"]


def time_native(directory: str, threads: int) -> float:
    """Median seconds per call of xlabench-native's samples on the same artifact."""
    from xlabench.runner import native

    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    done = subprocess.run([str(native.binary()), "run", directory, "--spec",
                           os.path.join(directory, "spec.json")],
                          capture_output=True, text=True, env=env, check=True)
    throughput = native.parse_result(done.stdout)["throughput"]
    return statistics.median(throughput["sample_s"]) / int(throughput["steps_per_sample"])


def pair_rounds(args: argparse.Namespace) -> None:
    from xlabench.measure import combine

    with tempfile.TemporaryDirectory(prefix="xlabench-aoti-pair-") as directory:
        _child(["--export-to", directory])
        python_sps: dict[int, float] = {}
        native_sps: dict[int, float] = {}
        for index in range(args.pair_rounds):
            for side in (("python", "native") if index % 2 == 0 else ("native", "python")):
                if side == "python":
                    seconds = float(_child(["--time-package", directory]))
                    python_sps[index] = args.batch_size / seconds
                else:
                    native_sps[index] = args.batch_size / time_native(directory, args.threads)
            print(f"  round {index}: python {python_sps[index]:.2f} samples/s, "
                  f"native {native_sps[index]:.2f}", flush=True)
    ratio = combine.paired_ratio(native_sps, python_sps)
    if ratio is not None:
        print(f"  one package, native / python throughput {ratio.ratio:.3f} "
              f"[{ratio.ratio_low:.3f}, {ratio.ratio_high:.3f}] "
              f"(paired t, {args.pair_rounds} rounds)")


def _child(extra: list[str]) -> str:
    """This script in a fresh process with `extra`; its last line of output."""
    done = subprocess.run([sys.executable, __file__, *sys.argv[1:], *extra],
                          capture_output=True, text=True)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["no message"]
        raise SystemExit(f"error: a measuring process failed: {lines[-1]}")
    lines = done.stdout.strip().splitlines()
    return lines[-1] if lines else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="efficient_b0")
    parser.add_argument("--resolution", type=int, default=224)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--block-s", type=float, default=0.5)
    parser.add_argument("--pair-rounds", type=int, default=3)
    parser.add_argument("--native-budget-s", type=float, default=4.0)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--export-to", help=argparse.SUPPRESS)
    parser.add_argument("--time-package", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.export_to:
        export_package(args, args.export_to)
        return 0
    if args.time_package:
        print(time_package(args.time_package, args.threads, args.rounds, args.block_s))
        return 0
    if args.child:
        with tempfile.TemporaryDirectory(prefix="xlabench-aoti-gap-") as directory:
            calls = build_callables(args.model, args.resolution, args.batch_size,
                                    args.threads, directory)
            print(json.dumps(time_calls(calls, args.rounds, args.block_s)))
        return 0
    found = []
    for _ in range(args.processes):
        found.append(json.loads(_child(["--child"])))
        print("  ".join(f"{k} {1e3 * v:.2f} ms" for k, v in found[-1].items()), flush=True)
    if found:
        print(f"\n{args.model}@{args.resolution} b{args.batch_size}, {args.threads} threads, "
              f"per process, compile / other (> 1: the other is faster):")
    for name in ("compile_decomp", "aoti_python") if found else ():
        ratios = [r["compile"] / r[name] for r in found]
        print(f"  {name:15s} " + " ".join(f"{ratio:.3f}" for ratio in ratios))
    if args.pair_rounds:
        print(f"\nthe same package, Python process against xlabench-native, "
              f"{args.pair_rounds} rounds:")
        pair_rounds(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
