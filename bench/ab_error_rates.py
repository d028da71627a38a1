"""How often is `xlabench ab` wrong, and how long does it take to decide?

(a) A/A: `xlabench ab` with no change on either side, over CONFIGURATIONS (two models x TF
    graph, JAX XLA, PyTorch eager, OpenVINO, ONNX Runtime: ten configurations), each compared
    --aa-per-config times with a fresh seed (default 4: forty comparisons). Nothing changed, so
    every "faster" or "slower" is false; the target is at most 5% (alpha), and "same" in most.
(b) A/B with a known true change of twice the threshold: two .keras files of one small
    convolutional network, the second with one more of its stacked convolutions (ten against
    nine: about 11% more work, a rate ratio near 0.90). A long reference comparison
    (--reference-budget seconds, all of them) measures the true ratio; then --ab-runs short
    comparisons (default 20) at the default 5% threshold should call it slower in at least 95%.

Every comparison is one `xlabench ab` subprocess with its own budget (--budget, wall-clock
seconds), as a CI job would run it. Each one's outcome is appended to WORKDIR/comparisons.jsonl
(with the commit and the CPU it ran on); a comparison already there is not run again, so the
acceptance run spans several quiet stretches: run the same command again to go on. The rates
and the median time to a verdict are printed over everything in that ledger; the script
asserts nothing. Run it on a quiet machine.

    .venv/bin/python bench/ab_error_rates.py                    # the acceptance run, hours
    .venv/bin/python bench/ab_error_rates.py --quick --workdir /tmp/abe   # minutes: it works
    .venv/bin/python bench/ab_error_rates.py --summary          # the rates so far, no runs
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


def aa_part(opts: argparse.Namespace, ledger: Ledger) -> None:
    pairs = [tuple(item.split(":", 1)) for item in opts.backends.split(",")]
    pairs = pairs[:1] if opts.quick else pairs
    models = MODELS[:1] if opts.quick else tuple(opts.models.split(","))
    seed = opts.seed_offset
    for repeat in range(opts.aa_per_config):
        for model in models:
            for backend, mode in pairs:
                seed += 1
                key = {"part": "aa", "model": model, "backend": backend, "mode": mode,
                       "seed": seed, "budget_s": opts.budget, "interleave": opts.interleave}
                if ledger.has(key):
                    continue
                grid = ["--models", model, "--resolutions", str(RESOLUTION), "--batch-sizes",
                        str(BATCH_SIZE), "--backends", backend, "--modes", mode]
                report, wall_s = ab(opts, grid, opts.workdir / "aa.db", opts.budget, seed)
                entry = ledger.add(key, report, wall_s, opts.workdir / "aa.db")
                print(f"A/A {repeat + 1} {model} {backend}/{mode}: {entry['verdict']} "
                      f"{_interval(entry)} in {entry['rounds']} rounds, {wall_s:.0f} s, paired "
                      f"SD {_sd(entry)}", flush=True)
    summarise_aa(ledger)


def summarise_aa(ledger: Ledger) -> None:
    entries = ledger.part("aa")
    if not entries:
        print("A/A: none yet")
        return
    verdicts = Counter(e["verdict"] for e in entries)
    total, wrong = len(entries), sum(verdicts[v] for v in WRONG)
    configurations = {(e["model"], e["backend"], e["mode"]) for e in entries}
    backends = sorted({e["backend"] for e in entries})
    print(f"\nA/A: {total} comparisons over {len(configurations)} configurations "
          f"({', '.join(backends)}; {_sittings(entries)}): false faster/slower {wrong}/{total} "
          f"({100 * wrong / total:.1f}%), same {verdicts['same']}/{total} "
          f"({100 * verdicts['same'] / total:.0f}%), inconclusive {verdicts['inconclusive']}; "
          f"median time to a verdict {_median(_decided_s(entries))}", flush=True)


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
    env = {**os.environ, "KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "2"}
    subprocess.run([sys.executable, "-c", script, *map(str, files)], check=True, env=env)
    return files


def ab_part(opts: argparse.Namespace, ledger: Ledger) -> None:
    base, more = build_model_files(opts.workdir)
    grid = ["--models", str(base), "--resolutions", str(RESOLUTION), "--batch-sizes",
            str(BATCH_SIZE), "--backends", "tensorflow", "--modes", "graph"]
    change = ("--b", f"model={more}")
    reference_key = {"part": "reference", "seed": 0, "budget_s": opts.reference_budget,
                     "interleave": opts.interleave}
    if not ledger.has(reference_key):
        # No verdict stops it (a 1% threshold is crossed in a few rounds, its interval still
        # wide): it runs its whole budget, and its interval is the measurement.
        rounds = ("--min-rounds", "1000", "--max-rounds", "1000")
        report, wall_s = ab(opts, grid, opts.workdir / "reference.db", opts.reference_budget, 0,
                            *change, "--threshold", "1", *rounds)
        ledger.add(reference_key, report, wall_s, opts.workdir / "reference.db")
    for run in range(opts.ab_runs):
        key = {"part": "ab", "seed": 1000 + opts.seed_offset + run, "budget_s": opts.budget,
               "interleave": opts.interleave}
        if ledger.has(key):
            continue
        report, wall_s = ab(opts, grid, opts.workdir / "ab.db", opts.budget, key["seed"],
                            *change)
        entry = ledger.add(key, report, wall_s, opts.workdir / "ab.db")
        print(f"A/B {run + 1}: {entry['verdict']} {_interval(entry)} in {entry['rounds']} "
              f"rounds, {wall_s:.0f} s, paired SD {_sd(entry)}", flush=True)
    summarise_ab(ledger)


def summarise_ab(ledger: Ledger) -> None:
    references, entries = ledger.part("reference"), ledger.part("ab")
    for ref in references:
        print(f"reference: b/a {_interval(ref)} in {ref['rounds']} rounds, {ref['wall_s']:.0f} "
              f"s (a true change of {100 * (1 - ref['ratio']):.1f}%, "
              f"{(1 - ref['ratio']) * 100 / THRESHOLD_PCT:.1f}x the threshold)")
    if not entries:
        print("A/B: none yet")
        return
    calls = Counter(e["verdict"] for e in entries)
    total = len(entries)
    print(f"\nA/B ({_sittings(entries)}): called slower {calls['slower']}/{total} "
          f"({100 * calls['slower'] / total:.0f}%), faster {calls['faster']}, same "
          f"{calls['same']}, inconclusive {calls['inconclusive']}; median time to a verdict "
          f"{_median(_decided_s(entries))}", flush=True)


class Ledger:
    """WORKDIR/comparisons.jsonl: one line per finished comparison, read back on every run."""

    def __init__(self, path: Path) -> None:
        self.path = path
        lines = path.read_text().splitlines() if path.exists() else []
        self.entries: list[dict[str, Any]] = [json.loads(line) for line in lines if line]
        self.machine = {"commit": _commit(), "cpu": _cpu()}

    def has(self, key: dict[str, Any]) -> bool:
        return any(all(e.get(k) == v for k, v in key.items()) for e in self.entries)

    def part(self, part: str) -> list[dict[str, Any]]:
        return [e for e in self.entries if e["part"] == part]

    def add(self, key: dict[str, Any], report: dict[str, Any], wall_s: float, db: Path
            ) -> dict[str, Any]:
        (c,) = report["configurations"]
        entry = {**key, **{k: c.get(k) for k in ("verdict", "ratio", "ratio_low", "ratio_high",
                                                  "rounds", "rounds_set_aside")},
                 "wall_s": round(wall_s, 1), "paired_sd": _paired_sd(db, report["sweep_id"]),
                 "sweep_id": report["sweep_id"], **self.machine,
                 "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        self.entries.append(entry)
        with self.path.open("a") as out:
            out.write(json.dumps(entry) + "\n")
        return entry


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=False, cwd=Path(__file__).parent)
    return done.stdout.strip() or "unknown"


def _cpu() -> str:
    """The CPU kind as /proc/cpuinfo names it: family and model tell Zen 2, 4 and 5 apart."""
    fields: dict[str, str] = {}
    with Path("/proc/cpuinfo").open() as info:
        for line in info:
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    return f"{fields.get('model name', '?')} family {fields.get('cpu family', '?')} model " \
           f"{fields.get('model', '?')}"


def _sittings(entries: list[dict[str, Any]]) -> str:
    days = sorted({e["at"][:10] for e in entries})
    commits = sorted({e["commit"] for e in entries})
    return f"{', '.join(days)}; commits {', '.join(commits)}"


def _decided_s(entries: list[dict[str, Any]]) -> list[float]:
    return [e["wall_s"] for e in entries if e["verdict"] != "inconclusive"]


def _sd(entry: dict[str, Any]) -> str:
    return "-" if entry["paired_sd"] is None else f"{entry['paired_sd']:.3f}"


def _interval(c: dict[str, Any]) -> str:
    aside = f" (+{c['rounds_set_aside']} set aside)" if c.get("rounds_set_aside") else ""
    if c.get("ratio_low") is None:
        return "(no interval)" + aside
    return f"{c['ratio']:.3f} [{c['ratio_low']:.3f}, {c['ratio_high']:.3f}]{aside}"


def _paired_sd(db: Path, sweep_id: str) -> float | None:
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
    return round(statistics.stdev(logs), 4) if len(logs) >= 2 else None


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
    p.add_argument("--summary", action="store_true",
                   help="print the rates of the comparisons in WORKDIR's ledger; run nothing")
    p.add_argument("--quick", action="store_true",
                   help="one A/A and one A/B comparison of a minute each: it works")
    opts = p.parse_args()
    if opts.quick:
        opts.aa_per_config, opts.ab_runs = 1, 1
        opts.budget, opts.reference_budget, opts.sample_budget = 60.0, 60.0, 0.5
    opts.workdir.mkdir(parents=True, exist_ok=True)
    ledger = Ledger(opts.workdir / "comparisons.jsonl")
    parts = set(opts.parts.split(","))
    if opts.summary:
        summarise_aa(ledger)
        summarise_ab(ledger)
        return
    if "aa" in parts:
        aa_part(opts, ledger)
    if "ab" in parts:
        ab_part(opts, ledger)


if __name__ == "__main__":
    main()
