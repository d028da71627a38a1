"""How often is `xlabench ab` wrong, and how long does it take to decide?

(a) A/A: `xlabench ab` with no change on either side, over CONFIGURATIONS (two models x TF
    graph, JAX XLA, PyTorch eager, OpenVINO, ONNX Runtime: ten configurations), each compared
    --aa-per-config times with a fresh seed (default 4: forty comparisons). Nothing changed, so
    every "faster" or "slower" is false; the target is at most 5% (alpha), and "same" in most.
(b) A/B with a known true change of twice the threshold: two .keras files of one small
    convolutional network, the second with one more of its stacked convolutions (ten against
    nine: about 11% more work, a rate ratio near 0.90). A long reference comparison
    (--reference-budget seconds, threshold 1%) measures the true ratio; then --ab-runs short
    comparisons (default 20) at the default 5% threshold should call it slower in at least 95%.

Every comparison is one `xlabench ab` subprocess with its own budget (--budget, wall-clock
seconds), as a CI job would run it. It prints the rates and the median time to a verdict, and
asserts nothing. Run it on a quiet machine.

    .venv/bin/python bench/ab_error_rates.py                    # the acceptance run, hours
    .venv/bin/python bench/ab_error_rates.py --quick --workdir /tmp/abe   # minutes: it works
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

#: (backend, mode) pairs of the A/A part: one per framework and runtime.
BACKEND_MODES = (("tensorflow", "graph"), ("jax", "xla"), ("torch", "eager"),
                 ("openvino", "compiled"), ("onnxruntime", "compiled"))
MODELS = ("mobilenet_v3_small", "resnet50")
RESOLUTION = 64
BATCH_SIZE = 4
#: The A/B model files: `CONVS_A` and `CONVS_B` stacked 3x3 convolutions of WIDTH channels.
CONVS_A, CONVS_B, WIDTH = 9, 10, 32
THRESHOLD_PCT = 5.0
WRONG = ("faster", "slower")


def xlabench(*args: str) -> tuple[dict[str, Any], float]:
    """One `xlabench ab ... --format json`: its report and its wall time."""
    command = [sys.executable, "-m", "xlabench.cli.main", *args, "--format", "json"]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall_s = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout), wall_s


def ab(opts: argparse.Namespace, grid: list[str], db: Path, budget_s: float, seed: int,
       *extra: str) -> tuple[dict[str, Any], float]:
    return xlabench("ab", *grid, "--db", str(db), "--budget", f"{budget_s:g}", "--seed",
                    str(seed), "--sample-budget", f"{opts.sample_budget:g}", "--interleave",
                    opts.interleave, *extra)


def aa_part(opts: argparse.Namespace) -> None:
    pairs = [tuple(item.split(":", 1)) for item in opts.backends.split(",")]
    pairs = pairs[:1] if opts.quick else pairs
    models = MODELS[:1] if opts.quick else tuple(opts.models.split(","))
    verdicts: Counter[str] = Counter()
    decided_s: list[float] = []
    seed = opts.seed_offset
    for repeat in range(opts.aa_per_config):
        for model in models:
            for backend, mode in pairs:
                seed += 1
                grid = ["--models", model, "--resolutions", str(RESOLUTION), "--batch-sizes",
                        str(BATCH_SIZE), "--backends", backend, "--modes", mode]
                report, wall_s = ab(opts, grid, opts.workdir / "aa.db", opts.budget, seed)
                (c,) = report["configurations"]
                verdicts[c["verdict"]] += 1
                if c["verdict"] != "inconclusive":
                    decided_s.append(wall_s)
                print(f"A/A {repeat + 1} {model} {backend}/{mode}: {c['verdict']} "
                      f"{_interval(c)} in {c['rounds']} rounds, {wall_s:.0f} s, paired SD "
                      f"{_paired_sd(opts.workdir / 'aa.db', report['sweep_id'])}", flush=True)
    total = sum(verdicts.values())
    wrong = sum(verdicts[v] for v in WRONG)
    print(f"\nA/A: {total} comparisons over {len(models) * len(pairs)} configurations: "
          f"false faster/slower {wrong}/{total} ({100 * wrong / total:.1f}%), same "
          f"{verdicts['same']}/{total} ({100 * verdicts['same'] / total:.0f}%), inconclusive "
          f"{verdicts['inconclusive']}; median time to a verdict "
          f"{_median(decided_s)}", flush=True)


def build_model_files(workdir: Path) -> tuple[Path, Path]:
    """The two .keras files of the A/B part, built in a subprocess (Keras stays out of this
    one's imports)."""
    files = workdir / f"convs{CONVS_A}.keras", workdir / f"convs{CONVS_B}.keras"
    if all(f.exists() for f in files):
        return files
    script = (
        "import sys, keras\n"
        "def net(n, path):\n"
        f"    x = inputs = keras.Input(({RESOLUTION}, {RESOLUTION}, 3))\n"
        f"    x = keras.layers.Conv2D({WIDTH}, 3, padding='same', activation='relu')(x)\n"
        "    for _ in range(n - 1):\n"
        f"        x = keras.layers.Conv2D({WIDTH}, 3, padding='same', activation='relu')(x)\n"
        "    x = keras.layers.GlobalAveragePooling2D()(x)\n"
        "    keras.Model(inputs, keras.layers.Dense(10)(x)).save(path)\n"
        f"net({CONVS_A}, sys.argv[1]); net({CONVS_B}, sys.argv[2])\n")
    env = {**os.environ, "KERAS_BACKEND": "tensorflow"}
    subprocess.run([sys.executable, "-c", script, *map(str, files)], check=True, env=env)
    return files


def ab_part(opts: argparse.Namespace) -> None:
    base, more = build_model_files(opts.workdir)
    grid = ["--models", str(base), "--resolutions", str(RESOLUTION), "--batch-sizes",
            str(BATCH_SIZE), "--backends", "tensorflow", "--modes", "graph"]
    change = ("--b", f"model={more}")
    reference, wall_s = ab(opts, grid, opts.workdir / "reference.db", opts.reference_budget, 0,
                           *change, "--threshold", "1", "--max-rounds", "1000")
    (ref,) = reference["configurations"]
    print(f"reference: b/a {ref['ratio']:.3f} {_interval(ref)} in {ref['rounds']} rounds, "
          f"{wall_s:.0f} s", flush=True)
    calls: Counter[str] = Counter()
    decided_s: list[float] = []
    for run in range(opts.ab_runs):
        report, wall_s = ab(opts, grid, opts.workdir / "ab.db", opts.budget,
                            1000 + opts.seed_offset + run, *change)
        (c,) = report["configurations"]
        calls[c["verdict"]] += 1
        if c["verdict"] != "inconclusive":
            decided_s.append(wall_s)
        print(f"A/B {run + 1}: {c['verdict']} {_interval(c)} in {c['rounds']} rounds, "
              f"{wall_s:.0f} s", flush=True)
    total = sum(calls.values())
    print(f"\nA/B: reference b/a {ref['ratio']:.3f} (a true change of "
          f"{100 * (1 - ref['ratio']):.1f}%, {(1 - ref['ratio']) * 100 / THRESHOLD_PCT:.1f}x "
          f"the threshold); called slower {calls['slower']}/{total} "
          f"({100 * calls['slower'] / total:.0f}%), faster {calls['faster']}, same "
          f"{calls['same']}, inconclusive {calls['inconclusive']}; median time to a verdict "
          f"{_median(decided_s)}", flush=True)


def _interval(c: dict[str, Any]) -> str:
    aside = f" (+{c['rounds_set_aside']} set aside)" if c.get("rounds_set_aside") else ""
    if c.get("ratio_low") is None:
        return "(no interval)" + aside
    return f"{c['ratio']:.3f} [{c['ratio_low']:.3f}, {c['ratio_high']:.3f}]{aside}"


def _paired_sd(db: Path, sweep_id: str) -> str:
    """The SD of the comparison's per-round log-ratios, from its stored processes (what sets
    how many rounds a verdict needs)."""
    import sqlite3

    rows = sqlite3.connect(db).execute(
        "SELECT label, process_round, throughput_sps FROM results WHERE sweep_id = ? AND "
        "status = 'ok'", (sweep_id,)).fetchall()
    by_round: dict[int, dict[str, float]] = {}
    for label, round_, sps in rows:
        by_round.setdefault(round_, {})[label] = sps
    logs = [math.log(r["b"] / r["a"]) for r in by_round.values() if "a" in r and "b" in r]
    return f"{statistics.stdev(logs):.3f}" if len(logs) >= 2 else "-"


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} s" if values else "- (none decided)"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--workdir", type=Path, default=Path("ab-error-rates"),
                   help="databases and model files (default ./ab-error-rates)")
    p.add_argument("--parts", default="aa,ab", help="aa, ab or both (default aa,ab)")
    p.add_argument("--aa-per-config", type=int, default=4,
                   help="A/A comparisons per configuration (default 4: 40 in all)")
    p.add_argument("--models", default=",".join(MODELS),
                   help=f"A/A models, comma-separated (default {','.join(MODELS)})")
    p.add_argument("--ab-runs", type=int, default=20, help="A/B comparisons (default 20)")
    p.add_argument("--budget", type=float, default=600.0,
                   help="wall-clock seconds per comparison (default 600, ab's own)")
    p.add_argument("--reference-budget", type=float, default=1800.0,
                   help="seconds of the long reference A/B comparison (default 1800)")
    p.add_argument("--sample-budget", type=float, default=2.0,
                   help="seconds of sampling per process (default 2, ab's own)")
    p.add_argument("--interleave", choices=("samples", "processes"), default="samples",
                   help="how each round's pair shares the machine (default samples, ab's own)")
    p.add_argument("--backends", default=",".join(f"{b}:{m}" for b, m in BACKEND_MODES),
                   help="A/A backend:mode pairs, comma-separated (default: all five)")
    p.add_argument("--seed-offset", type=int, default=0,
                   help="added to every comparison's seed: a later run adds new comparisons "
                   "to an earlier one's instead of repeating them (default 0)")
    p.add_argument("--quick", action="store_true",
                   help="one A/A and one A/B comparison of a minute each: it works")
    opts = p.parse_args()
    if opts.quick:
        opts.aa_per_config, opts.ab_runs = 1, 1
        opts.budget, opts.reference_budget, opts.sample_budget = 60.0, 60.0, 0.5
    opts.workdir.mkdir(parents=True, exist_ok=True)
    parts = set(opts.parts.split(","))
    if "aa" in parts:
        aa_part(opts)
    if "ab" in parts:
        ab_part(opts)


if __name__ == "__main__":
    main()
