"""Where does native's lead over Python come from? OpenVINO, one compiled IR, four ways.

bench/native_overhead.py measured native/python 1.08-1.17 for programs that run the same
compiler on both sides (2026-12-01, mobilenet_v3_small@224 b4). Per-call Python cost cannot
explain that much at 5-30 ms a batch, so this probe separates the candidates on one IR:

  * call:    `request.infer({0: x}, share_inputs=True)` as the Python worker does (a dict in, a
             dict of output copies out), the same without the output copies, and
             `request.infer()` on an input tensor bound once, as xlabench-native does; the
             same process, blocks interleaved;
  * process: the same two calls in a process that imported TensorFlow and Keras and built the
             model (the worker's state) against a fresh process that imported only OpenVINO;
             processes alternated, `--processes` of each.

It prints per-batch medians and the ratios. Run it on a quiet machine.

    .venv/bin/python bench/native_gap.py --resolution 224 --processes 3
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

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def export_ir(model_name: str, resolution: int, batch: int, directory: str) -> str:
    """The worker's OpenVINO IR of the model (seeded weights), saved; its path."""
    import keras

    from xlabench.backends import openvino as ov_backend
    from xlabench.backends import runtime
    from xlabench.backends.base import seed_all
    from xlabench.zoo import REGISTRY, build_model

    seed_all(0, "tensorflow")
    model = build_model(REGISTRY.get(model_name), resolution)
    x = keras.random.uniform((batch, resolution, resolution, 3), 0.0, 255.0, seed=1)
    os.environ[runtime.ARTIFACTS_ENV] = directory
    ov_backend.compile_model(model, x, "fp32", 2, {})
    return os.path.join(directory, "model.xml")


def time_calls(ir: str, threads: int, rounds: int, block_s: float) -> dict[str, float]:
    """Median seconds per call of the two call styles, in interleaved blocks."""
    import numpy as np
    import openvino as ov

    from xlabench.backends.openvino import compile_config

    core = ov.Core()
    compiled = core.compile_model(core.read_model(ir), "CPU", compile_config("fp32", threads))
    request = compiled.create_infer_request()
    shape = list(compiled.input(0).get_shape())
    x = np.random.default_rng(1).uniform(0, 255, shape).astype(np.float32)

    def worker_call() -> None:
        list(request.infer({0: x}, share_inputs=True).values())

    def shared_outputs_call() -> None:  # the worker's input dict, no output copies
        request.infer({0: x}, share_inputs=True, share_outputs=True)

    def native_call() -> None:
        request.infer()

    calls = {"worker_call": worker_call, "shared_outputs_call": shared_outputs_call,
             "native_call": native_call}
    request.set_input_tensor(0, ov.Tensor(x, shared_memory=True))
    for call in calls.values():  # warm-up, and the calls per block
        call()
    start = time.perf_counter()
    worker_call()
    per_block = max(1, int(block_s / (time.perf_counter() - start)))
    found: dict[str, list[float]] = {name: [] for name in calls}
    for index in range(rounds):
        order = list(calls) if index % 2 == 0 else list(reversed(calls))
        for name in order:
            if name == "native_call":  # the other calls set their own input tensor
                request.set_input_tensor(0, ov.Tensor(x, shared_memory=True))
            start = time.perf_counter()
            for _ in range(per_block):
                calls[name]()
            found[name].append((time.perf_counter() - start) / per_block)
    return {name: statistics.median(values) for name, values in found.items()}


def child(args: argparse.Namespace) -> None:
    """One measuring process: with the worker's state (--with-tf) or OpenVINO alone."""
    if args.with_tf:
        import keras  # noqa: F401 (the worker's process state: TensorFlow, Keras, a model)

        from xlabench.zoo import REGISTRY, build_model

        build_model(REGISTRY.get(args.model), args.resolution)
    print(json.dumps(time_calls(args.ir, args.threads, args.rounds, args.block_s)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mobilenet_v3_small")
    parser.add_argument("--resolution", type=int, default=224)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--block-s", type=float, default=0.25)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--with-tf", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--ir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return 0
    directory = tempfile.mkdtemp(prefix="xlabench-gap-")
    ir = export_ir(args.model, args.resolution, args.batch_size, directory)
    results: dict[str, list[dict[str, float]]] = {"with TF": [], "OpenVINO only": []}
    for index in range(2 * args.processes):
        state = ("with TF", "OpenVINO only")[index % 2]
        command = [sys.executable, __file__, "--child", "--ir", ir, "--model", args.model,
                   "--resolution", str(args.resolution), "--threads", str(args.threads),
                   "--rounds", str(args.rounds), "--block-s", str(args.block_s)]
        command += ["--with-tf"] if state == "with TF" else []
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        results[state].append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"{state:14s} " + "  ".join(f"{k} {1e3 * v:.3f} ms"
                                           for k, v in results[state][-1].items()), flush=True)
    print(f"\n{args.model}@{args.resolution} b{args.batch_size}, {args.threads} threads, "
          f"median over {args.processes} processes of each:")
    for state, found in results.items():
        worker = statistics.median(r["worker_call"] for r in found)
        native = statistics.median(r["native_call"] for r in found)
        print(f"  {state:14s} worker-style {1e3 * worker:.3f} ms, native-style "
              f"{1e3 * native:.3f} ms, worker/native {worker / native:.3f}")
    with_tf = statistics.median(r["worker_call"] for r in results["with TF"])
    alone = statistics.median(r["worker_call"] for r in results["OpenVINO only"])
    print(f"  process state: with TF / OpenVINO only (worker-style calls) {with_tf / alone:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
