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
path, not Python. `--processes` fresh processes, per-call medians and ratios. Quiet machine.

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="efficient_b0")
    parser.add_argument("--resolution", type=int, default=224)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--block-s", type=float, default=0.5)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        with tempfile.TemporaryDirectory(prefix="xlabench-aoti-gap-") as directory:
            calls = build_callables(args.model, args.resolution, args.batch_size,
                                    args.threads, directory)
            print(json.dumps(time_calls(calls, args.rounds, args.block_s)))
        return 0
    found = []
    for _ in range(args.processes):
        command = [sys.executable, __file__, "--child", *sys.argv[1:]]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"error: a measuring process failed: {done.stderr.strip().splitlines()[-1]}",
                  file=sys.stderr)
            return 1
        found.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print("  ".join(f"{k} {1e3 * v:.2f} ms" for k, v in found[-1].items()), flush=True)
    print(f"\n{args.model}@{args.resolution} b{args.batch_size}, {args.threads} threads, "
          f"per process, compile / other (> 1: the other is faster):")
    for name in ("compile_decomp", "aoti_python"):
        ratios = [r["compile"] / r[name] for r in found]
        print(f"  {name:15s} " + " ".join(f"{ratio:.3f}" for ratio in ratios))
    return 0


if __name__ == "__main__":
    sys.exit(main())
