"""Does xlabench report the time a bare timing loop sees? (a benchmark, not a test)

For each model and backend/mode, in one run:
  * the tool: `run_isolated(spec)` (fresh worker, warm-up, calibrated samples, CI) and its
    reported median per-batch time;
  * a bare loop: a fresh process that builds the same model and input, warms up, then times
    `repeats` x `steps` calls with one sync at the end, written with plain framework calls.
Tool and bare runs alternate (`--rounds` of each), so slow drift of the machine hits both; the
ratio compares their medians. The spread (max/min) of the tool's rounds and of the bare loop's
rounds is printed beside it: the noise floor this machine allows. Target: within 3% for
compiled modes, 5% for eager modes.

    .venv/bin/python bench/fidelity.py                 # 3 models x 7 backend/modes
    .venv/bin/python bench/fidelity.py --models mobilenet_v3_small --resolution 64
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap

from xlabench.core import BACKEND_MODES, MeasureSettings, Spec
from xlabench.measure import stats
from xlabench.runner import run_isolated

TARGETS = {True: 0.03, False: 0.05}  # compiled: 3%, eager/graph: 5%

# Plain framework code, deliberately not using xlabench.backends: an independent witness.
BARE_LOOP = textwrap.dedent(
    """
    import json, os, sys, time
    model_name, backend, mode, resolution, batch, steps, repeats = sys.argv[1:8]
    resolution, batch, steps, repeats = int(resolution), int(batch), int(steps), int(repeats)
    os.environ["KERAS_BACKEND"] = backend
    import keras
    from xlabench.backends.base import seed_all
    from xlabench.zoo import REGISTRY, build_model
    seed_all(0, backend)
    model = build_model(REGISTRY.get(model_name), resolution)
    x = keras.random.uniform((batch, resolution, resolution, 3), 0.0, 255.0, seed=0)
    if backend == "tensorflow":
        import tensorflow as tf
        tf.config.optimizer.set_jit(False)
        if mode == "eager":
            fn = lambda: model(x, training=False)
        else:
            f = tf.function(lambda t: model(t, training=False), jit_compile=(mode == "xla"))
            fn = lambda: f(x)
        sync = lambda out: tf.test.experimental.sync_devices()
    elif backend == "jax":
        import jax
        if mode == "eager":
            fn = lambda: model(x, training=False)
        else:
            tv = [v.value for v in model.trainable_variables]
            ntv = [v.value for v in model.non_trainable_variables]
            f = jax.jit(lambda a, b, t: model.stateless_call(a, b, t, training=False)[0])
            fn = lambda: f(tv, ntv, x)
        sync = jax.block_until_ready
    else:
        import torch
        torch.set_grad_enabled(False)
        if mode == "eager":
            fn = lambda: model(x, training=False)
        else:
            class M(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.m = model
                def forward(self, t):
                    return self.m(t, training=False)
            f = torch.compile(torch.export.export(M(), (x,), strict=False).module(), dynamic=False)
            fn = lambda: f(x)
        sync = lambda out: torch.cuda.synchronize() if torch.cuda.is_available() else None
    for _ in range(max(5, steps // 2)):
        sync(fn())
    per_batch = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            out = fn()
        sync(out)
        per_batch.append((time.perf_counter() - start) / steps)
    print(json.dumps(per_batch))
    """
)


def bare_batch_s(spec: Spec, steps: int, repeats: int) -> float:
    """Median per-batch seconds from the bare loop, in a fresh process."""
    args = [spec.model, spec.backend, spec.mode, str(spec.resolution), str(spec.batch_size),
            str(steps), str(repeats)]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    done = subprocess.run([sys.executable, "-c", BARE_LOOP, *args], capture_output=True,
                          text=True, env=env, check=True, timeout=1800)
    return stats.median(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mobilenet_v3_small,resnet50_v1,efficient_b0")
    parser.add_argument("--resolution", type=int, default=96)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--budget", type=float, default=10.0)
    parser.add_argument("--backends", default="tensorflow,jax,torch")
    parser.add_argument("--rounds", type=int, default=3, help="tool and bare runs, alternating")
    args = parser.parse_args()
    settings = MeasureSettings(budget_s=args.budget, min_sample_s=0.2)
    print(f"{'model':20} {'backend/mode':20} {'tool ms':>9} {'bare ms':>9} {'ratio':>7} "
          f"{'target':>7}  ok   spread of rounds (max/min): tool, bare", flush=True)
    failures = 0
    for model in args.models.split(","):
        for backend in args.backends.split(","):
            for mode in BACKEND_MODES[backend]:
                spec = Spec(model, backend, mode, args.resolution, args.batch_size,
                            measure=settings)
                tool_runs, bare_runs = [], []
                for _ in range(args.rounds):
                    record = run_isolated(spec, timeout_s=1800)
                    if not record.ok or record.throughput is None:
                        break
                    tool_runs.append(record.throughput.batch_time_ms_median / 1000)
                    steps = max(10, record.throughput.steps_per_sample)
                    repeats = max(5, len(record.throughput.sample_s))
                    bare_runs.append(bare_batch_s(spec, steps, repeats))
                if len(tool_runs) < args.rounds:
                    print(f"{model:20} {backend + '/' + mode:20} tool failed: {record.error}")
                    failures += 1
                    continue
                tool_s, bare_s = stats.median(tool_runs), stats.median(bare_runs)
                ratio = tool_s / bare_s
                target = TARGETS[spec.compiled]
                ok = abs(ratio - 1) <= target
                failures += not ok
                spreads = [max(runs) / min(runs) for runs in (tool_runs, bare_runs)]
                print(f"{model:20} {backend + '/' + mode:20} {1000 * tool_s:9.3f} "
                      f"{1000 * bare_s:9.3f} {ratio:7.3f} {target:6.0%}  {'yes' if ok else 'NO '}"
                      f"  {spreads[0]:.3f}, {spreads[1]:.3f}", flush=True)
    print(f"{failures} outside target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
