"""Which registry models does each deployment runtime take? (a survey, not a test)

Every model is built on the exporting Keras backend at its smallest resolution, or at
--resolution where the model allows it (batch 1, seeded random weights), traced once, converted
for that backend's runtimes (Keras-on-TensorFlow: OpenVINO, ONNX Runtime and LiteRT;
Keras-on-JAX: IREE), run once on each and compared with the Keras eager output
(xlabench.backends.coverage). Prints a markdown table and writes one JSON line per model to
--out. Each model is surveyed in a child process of its own: the converters keep
memory (one process over the > 20M models grew to 24 GB and was killed by the OOM killer on
mixer_b32), and a model that crashes, runs out of memory or hangs becomes a failed row with
the reason instead of ending the survey.

    KERAS_BACKEND=tensorflow .venv/bin/python bench/runtime_coverage.py --out coverage.jsonl
    KERAS_BACKEND=tensorflow .venv/bin/python bench/runtime_coverage.py --models resnet50_v1
    KERAS_BACKEND=jax .venv/bin/python bench/runtime_coverage.py --out iree.jsonl   # IREE
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import gc
import json
import os
import signal
import subprocess
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import contextlib

import keras

from coverage_table import merged  # bench/, this script's own folder
from xlabench.backends import jax as jax_backend
from xlabench.backends.base import seed_all
from xlabench.backends.coverage import runtimes_for, try_runtimes
from xlabench.runner.isolate import oom_kill_count, oom_killer_ran_since
from xlabench.zoo import REGISTRY, build_model

BACKEND = keras.backend.backend()
RUNTIMES = runtimes_for(BACKEND)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="*", help="glob over registry names")
    parser.add_argument("--except", dest="excluded", default="", metavar="MODELS",
                        help="comma-separated registry names to leave out")
    parser.add_argument("--out", default="runtime_coverage.jsonl")
    parser.add_argument("--skip-heavy", action="store_true")
    parser.add_argument("--min-params", type=float, default=0.0,
                        help="only models with more parameters than this")
    parser.add_argument("--max-params", type=float, default=float("inf"),
                        help="only models with at most this many parameters")
    parser.add_argument("--smallest-first", action="store_true",
                        help="by parameter count (conversion time grows with the weights)")
    parser.add_argument("--runtimes", default=",".join(RUNTIMES),
                        help=f"comma-separated subset of {', '.join(RUNTIMES)}")
    parser.add_argument("--skip-done", nargs="*", default=[], metavar="JSONL",
                        help="leave out models whose every chosen runtime a survey file has")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per model")
    parser.add_argument("--resolution", type=int, default=None,
                        help="survey at this resolution where the model allows it (default: "
                             "each model's smallest; a model that refuses it is left out)")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # survey this one model, print
    args = parser.parse_args()
    if args.resolution is not None and args.resolution <= 0:
        parser.error(f"--resolution must be a positive number of pixels, not {args.resolution}")
    args.resolution = args.resolution or 0  # 0: each model's smallest
    chosen = tuple(args.runtimes.split(","))
    unknown = sorted(set(chosen) - set(RUNTIMES))
    if unknown:
        parser.error(f"unknown runtime(s) for KERAS_BACKEND={BACKEND}: {', '.join(unknown)}")
    if args.child:
        print(json.dumps(survey(REGISTRY.get(args.child), chosen, args.resolution)), flush=True)
        return
    done = _surveyed(args.skip_done, chosen)
    entries = [e for e in REGISTRY if fnmatch.fnmatch(e.name, args.models)
               and not (args.skip_heavy and e.heavy)
               and args.min_params < e.params <= args.max_params
               and e.name not in done and e.name not in args.excluded.split(",")
               and not (args.resolution and e.rule.check(args.resolution))]
    if args.smallest_first:
        entries.sort(key=lambda e: e.params)
    with open(args.out, "w", encoding="utf-8") as out:
        for entry in entries:
            row = _survey_in_child(entry, chosen, args.timeout, args.resolution)
            out.write(json.dumps(row) + "\n")
            out.flush()
            cells = [_cell(row[r]) for r in chosen]
            print(f"| {entry.name} | {row['resolution']} | {' | '.join(cells)} | "
                  f"{row['seconds']:.1f} |", flush=True)


def _survey_in_child(entry, runtimes: tuple[str, ...], timeout_s: float,
                     resolution: int = 0) -> dict:
    """`survey` in a fresh process; a child that dies or hangs gives a failed row."""
    command = [sys.executable, os.path.abspath(__file__), "--child", entry.name,
               "--runtimes", ",".join(runtimes)]
    command += ["--resolution", str(resolution)] if resolution else []
    start, oom_kills_before = time.perf_counter(), oom_kill_count()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                              check=False)
    except subprocess.TimeoutExpired:
        reason = f"survey: no answer within {timeout_s:.0f} s"
    else:
        lines = done.stdout.strip().splitlines()
        if done.returncode == 0 and lines:
            return json.loads(lines[-1])
        reason = _death(done.returncode, done.stderr, oom_killer_ran_since(oom_kills_before))
    return {"model": entry.name, "family": entry.family, "heavy": entry.heavy,
            "resolution": resolution or entry.rule.smallest(),
            "seconds": time.perf_counter() - start,
            **{r: {"ok": False, "reason": reason} for r in runtimes}}


def _death(returncode: int, stderr: str, oom_killer_ran: bool) -> str:
    """Why a survey child gave no row, in one line."""
    if returncode >= 0:
        return f"survey: exit {returncode}: " + (stderr.strip().splitlines() or [""])[-1][:200]
    reason = f"survey: killed by {signal.Signals(-returncode).name}"
    if returncode != -signal.SIGKILL:
        return reason
    return reason + (" (the kernel's OOM killer: out of host memory)" if oom_killer_ran
                     else " (out of memory?)")


def _surveyed(paths: list[str], runtimes: tuple[str, ...]) -> set[str]:
    """Models that the survey files already hold for every one of `runtimes`."""
    return {model for model, found in merged(paths).items() if set(runtimes) <= set(found)}


def survey(entry, runtimes: tuple[str, ...] = RUNTIMES, resolution: int = 0) -> dict:
    start = time.perf_counter()
    seed_all(0, BACKEND)
    resolution = resolution or entry.rule.smallest()
    row: dict = {"model": entry.name, "family": entry.family, "heavy": entry.heavy,
                 "resolution": resolution}
    try:
        with jax_backend.build_context(0) if BACKEND == "jax" else contextlib.nullcontext():
            model = build_model(entry, resolution)
        x = keras.random.uniform((1, resolution, resolution, 3), 0.0, 255.0, seed=1)
        # A runtime the registry flags for this model is not converted again (it costs as much
        # as a good conversion): the row gives the flag's reason; the zoo test checks it holds.
        flagged = {r: entry.unsupported_reason(r) for r in runtimes if entry.unsupported_reason(r)}
        outcomes = try_runtimes(model, x, runtimes=tuple(r for r in runtimes if r not in flagged))
        row.update({name: dataclasses.asdict(o) for name, o in outcomes.items()})
        row.update({r: {"ok": False, "reason": f"flagged: {why}"} for r, why in flagged.items()})
    except Exception as exc:  # noqa: BLE001 (a model that does not build is reported too)
        row.update({r: {"ok": False, "reason": f"build: {type(exc).__name__}: {exc}"[:300]}
                    for r in runtimes})
    keras.backend.clear_session()
    gc.collect()
    row["seconds"] = time.perf_counter() - start
    return row


def _cell(outcome: dict) -> str:
    if not outcome["ok"]:
        return f"fails: {outcome['reason']}"
    return f"ok ({outcome['max_rel_diff']:.1e})"


if __name__ == "__main__":
    main()
