"""Subcommand: sweep."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from xlabench.cli.commands import (
    SCENARIO_HELP,
    add_measure_args,
    add_policy_args,
    add_scenario_settings_args,
    print_note,
    warn_if_busy,
)
from xlabench.core.spec import BACKEND_MODES, RUNNERS
from xlabench.measure.scenarios import load_loadgen
from xlabench.runner import native
from xlabench.sweep import PRESETS, Sweep, build_config, format_plan, format_summary, load_toml
from xlabench.sweep.config import EXECUTORS, SCENARIO_KEYS, TIERS_KEY, SweepConfig
from xlabench.sweep.expand import expand

#: Flags whose values override the preset and the TOML file; (flag dest, setting key).
OVERRIDES = (
    ("models", "models"), ("families", "families"), ("kinds", "kinds"),
    ("resolutions", "resolutions"), ("batch_sizes", "batch_sizes"), ("backends", "backends"),
    ("modes", "modes"), ("precisions", "precisions"), ("repeats", "repeats"), ("db", "db"),
    ("timeout", "timeout"), ("executor", "executor"), ("workers", "workers"),
    ("ray_address", "ray_address"), ("log_wandb", "log_wandb"), ("log_mlflow", "log_mlflow"),
    ("target_ci", "target_ci"), ("budget", "budget"), ("min_sample_time", "min_sample_time"),
    ("processes", "processes"), ("max_processes", "max_processes"),
    ("result_target_ci", "result_target_ci"), ("result_budget", "result_budget"),
    ("rerun_flagged", "rerun_flagged"),
    ("runner", "runner"), ("label", "label"), ("unsafe_load", "unsafe_load"),
    ("scenarios", "scenarios"), ("tiers", TIERS_KEY), *((key, key) for key in SCENARIO_KEYS),
)


def add_sweep(sub: Any) -> None:
    p = sub.add_parser(
        "sweep", help="run a grid of configurations (resumable; local or on Ray)",
        description="Run models x resolutions x batch sizes x backends x modes x precisions x "
        "repeats; each configuration's result is several isolated worker processes, run "
        "interleaved with the other modes of the same model, every process stored. Settings "
        "come from --preset, then --config, then flags (later wins). Running the same command "
        "again skips configurations that already succeeded in this environment.",
    )
    p.add_argument("--preset", choices=list(PRESETS), default=None,
                   help="study: the study's grid (with the runtimes); gpu: JAX and torch on a GPU; "
                   "demo: a small CPU grid (make demo); runtimes: every deployment runtime against "
                   "TensorFlow, batch 1 and 4; compare: three models at 224 "
                   "on every backend/mode and runner, side by side; study-cpu: the gpu preset's "
                   "models on TF eager/graph/XLA, OpenVINO and ONNX Runtime, in tiers (--tier)")
    p.add_argument("--config", metavar="SWEEP.toml", default=None,
                   help="TOML file with the same keys as the flags (e.g. batch_sizes = [1, 4])")
    grid = p.add_argument_group("grid (comma-separated lists; repeatable)")
    for flag, what in (
        ("--models", "model names, aliases or globs (default: all), or your own models: "
         ".keras files and package.module:function factories"),
        ("--families", "model families (default: all)"),
        ("--kinds", "cnn, transformer, mlp, hybrid, detector (default: all)"),
        ("--resolutions", "input sizes, or 'default' for each model's own (default: default)"),
        ("--batch-sizes", "batch sizes (default: 4)"),
        ("--backends", f"{', '.join(BACKEND_MODES)} (default: all)"),
        ("--modes", f"{', '.join(dict.fromkeys(m for ms in BACKEND_MODES.values() for m in ms))}; "
         "each backend runs those it has (default: all)"),
        ("--precisions", "fp32, bf16, mixed (default: fp32)"),
    ):
        grid.add_argument(flag, action="append", default=None, help=what)
    grid.add_argument("--scenarios", "--scenario", action="append", default=None,
                      help=f"{SCENARIO_HELP}; each configuration runs each scenario instead of "
                      "the timed loop (single-stream: batch 1 only)")
    grid.add_argument("--repeats", type=int, default=None, help="runs of each configuration")
    grid.add_argument("--tier", "--tiers", dest="tiers", action="append", default=None,
                      metavar="N", help="run these tiers of a tiered preset (study-cpu: 1 = one "
                      "model per family, 2 = the rest of the study's published-table models, "
                      "3 = the rest, if any); e.g. --tier 1,2 (default: all)")
    grid.add_argument("--runner", choices=RUNNERS, default=None,
                      help="python, or native: xlabench-native times the exported compiled "
                           "artifacts (modes without a native runtime are left out)")
    run = p.add_argument_group("running")
    run.add_argument("--db", default=None, help="SQLite results file (default xlabench.db)")
    run.add_argument("--timeout", type=float, default=None,
                     help="seconds before a worker is killed (default 1800)")
    run.add_argument("--executor", choices=EXECUTORS, default=None, help="default local")
    run.add_argument("--workers", type=int, default=None,
                     help="configurations at once; local default 1 (clean numbers), each on its "
                     "own cores or GPU; ray default: the cluster's GPUs (or CPUs)")
    run.add_argument("--ray-address", default=None,
                     help="Ray cluster: auto (running cluster), local (start one), ray://host:port")
    run.add_argument("--log-wandb", action="store_true", default=None,
                     help="log each result as a W&B run (WANDB_MODE, WANDB_PROJECT honoured)")
    run.add_argument("--log-mlflow", nargs="?", const="", default=None, metavar="URI",
                     help="log each result as an MLflow run (default URI: MLflow's own)")
    run.add_argument("--label", default=None, metavar="NAME",
                     help="name this sweep (1-64 letters, digits, . _ : + -), stored with every "
                     "process and result, for `xlabench compare --label NAME`; configurations "
                     "already done in this environment are still skipped")
    run.add_argument("--unsafe-load", action="store_true", default=None,
                     help="let own .keras files run the Python code they hold (Lambda layers; "
                     "Keras' safe_mode refuses them otherwise): only for files you trust")
    run.add_argument("--dry-run", action="store_true",
                     help="print the plan and a time estimate; run nothing")
    run.add_argument("--pilot", action="store_true",
                     help="with --dry-run, on a machine with no history in the db: first run "
                     "3 pilot processes (about a minute) to estimate at this machine's pace, "
                     "as a sweep itself does before a plan of 30 minutes or more")
    run.add_argument("--history-from", action="append", default=[], metavar="DB",
                     help="another machine's database (repeatable; e.g. results/cpu/*/study.db): "
                     "a configuration with no history here is estimated from its time there, "
                     "scaled by how the two machines compare on what both ran")
    measure = p.add_argument_group("measurement")
    add_measure_args(measure)
    add_scenario_settings_args(p.add_argument_group("LoadGen scenario settings"))
    processes = p.add_argument_group("processes per result")
    add_policy_args(processes, None)
    # None = not given, so the preset's or the file's measurement settings stay.
    p.set_defaults(handler=sweep_command, target_ci=None, budget=None, min_sample_time=None)


def sweep_config(args: argparse.Namespace) -> SweepConfig:
    """The sweep's configuration from preset, file and flags (flags win)."""
    file_values = load_toml(args.config) if args.config else None
    overrides = {key: getattr(args, dest) for dest, key in OVERRIDES}
    return build_config(args.preset, file_values, overrides)


def sweep_command(args: argparse.Namespace) -> int:
    config = sweep_config(args)
    if any(part.scenarios for part in config.parts):
        load_loadgen()  # LoadGen missing: its install hint, before anything runs
    if any(part.runner == "native" for part in config.parts):
        for spec in expand(config).specs:
            native.require_runtime(spec)
    with Sweep(config, dry_run=args.dry_run, history_from=args.history_from) as sweep:
        if args.pilot or not args.dry_run:
            sweep.ensure_pace(print_note)
        plan_text = format_plan(sweep.plan, config.db, sweep.env_ids)
        if args.dry_run:
            print(plan_text)
            return 0
        print(plan_text, file=sys.stderr, flush=True)
        warn_if_busy()
        sweep.count_costs(note=print_note)
        summary = sweep.run(sys.stderr)
    print(format_summary(summary))
    return 0


REGISTRARS = [add_sweep]
