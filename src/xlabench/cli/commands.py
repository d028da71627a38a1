"""Subcommands: run, results, export, models."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from xlabench.backends import missing_framework
from xlabench.cli.tables import (
    format_result,
    format_table,
    models_output,
    result_rows,
    with_scenario_columns,
)
from xlabench.core import BACKEND_MODES, PRECISIONS, WEIGHTS, MeasureSettings, Spec, UserError
from xlabench.core.backends import precision_problem
from xlabench.core.result import ResultPolicy
from xlabench.core.scenario import (
    DEFAULT_BATCH_WAIT_MS,
    DEFAULT_LATENCY_BOUND_MS,
    DEFAULT_MAX_DURATION_MS,
    DEFAULT_MIN_DURATION_MS,
    Scenario,
    ScenarioSettings,
    parse_scenario,
)
from xlabench.core.spec import RUNNERS
from xlabench.measure import interference
from xlabench.runner import DEFAULT_TIMEOUT_S, ensure_costs, native, scenario_run
from xlabench.store import DEFAULT_DB, ResultStore
from xlabench.store.export import full_csv, results_csv, study_csv
from xlabench.sweep import run_result
from xlabench.sweep.config import (
    DEFAULT_BATCH_SIZE,
    check_label,
    make_policy,
    policy_values,
    scenario_settings_from,
)
from xlabench.sweep.expand import default_resolution, own_precision_problem
from xlabench.zoo import KINDS, REGISTRY, ModelEntry, own

#: `results --processes`: one row per worker process.
PROCESS_COLUMNS = (
    ("id", "id"), ("result_id", "result"), ("process_index", "#"), ("model", "model"),
    ("backend", "backend"), ("mode", "mode"), ("resolution", "res"), ("batch_size", "batch"),
    ("precision", "prec"), ("device", "device"), ("status", "status"),
    ("throughput_sps", "samples/s"), ("rel_ci_halfwidth", "±CI"),
    ("interference_other_pct", "others %"), ("interference_flagged", "busy"),
    ("latency_ms_p50", "p50 ms"), ("compile_s", "compile s"), ("parity_passed", "parity"),
    ("source", "source"), ("error", "reason"),
)
#: `results`: one row per result (its processes combined).
RESULT_COLUMNS = (
    ("id", "id"), ("model", "model"), ("backend", "backend"), ("mode", "mode"),
    ("runner", "runner"), ("resolution", "res"), ("batch_size", "batch"), ("precision", "prec"),
    ("device", "device"), ("status", "status"), ("processes_shown", "k"),
    ("throughput_shown", "samples/s [CI]"), ("ci_confidence", "conf"),
    ("interference", "interference"), ("latency_ms_p50", "p50 ms"), ("compile_s", "compile s"),
    ("parity_passed", "parity"), ("source", "source"), ("error", "reason"),
)


def add_run(sub: Any) -> None:
    p = sub.add_parser("run", help="benchmark one model in one configuration")
    p.add_argument("model", help="model name or alias (see `xlabench models`), or your own "
                   "model: a .keras file or a package.module:function factory")
    p.add_argument("--backend", default="jax", choices=list(BACKEND_MODES))
    p.add_argument("--mode", default=None, help="eager | graph | xla | compiled (per backend)")
    p.add_argument("--resolution", type=int_arg("resolution"), default=None,
                   help="input size (default: the model's default resolution)")
    p.add_argument("--batch-size", type=int_arg("batch size"), default=None,
                   help=f"default {DEFAULT_BATCH_SIZE} (single-stream: 1, all it takes)")
    p.add_argument("--precision", default="fp32", choices=PRECISIONS)
    p.add_argument("--weights", default="random", choices=WEIGHTS)
    p.add_argument("--tf32", action="store_true", help="allow TF32 for float32 on GPUs")
    p.add_argument("--seed", type=int_arg("seed"), default=0)
    p.add_argument("--runner", default="python", choices=RUNNERS,
                   help="python, or native: time the exported artifact in xlabench-native")
    add_measure_args(p)
    add_scenario_args(p.add_argument_group("LoadGen scenario (MLPerf's load generator issues "
                                           "the queries instead of the timed loop)"))
    add_policy_args(p, ResultPolicy())
    p.add_argument("--timeout", type=float_arg("timeout"), default=DEFAULT_TIMEOUT_S,
                   help="seconds before a worker process is killed (default %(default)s; a "
                   "scenario adds the longest its LoadGen runs may take)")
    p.add_argument("--db", default=DEFAULT_DB, help="SQLite results file (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print the record as JSON on stdout")
    p.add_argument("--label", type=check_label, default=None, metavar="NAME",
                   help="name this run (1-64 letters, digits, . _ : + -), stored with its "
                   "processes and result, for `xlabench compare --label NAME`")
    p.add_argument("--unsafe-load", action="store_true",
                   help="let an own .keras file run the Python code it holds (Lambda layers; "
                   "Keras' safe_mode refuses them otherwise): only for files you trust")
    p.set_defaults(handler=run_command)


def add_measure_args(p: argparse.ArgumentParser) -> None:
    defaults = MeasureSettings()
    p.add_argument("--target-ci", type=float_arg("target CI"), default=defaults.target_rel_ci,
                   help="stop when the median's 95%% CI is within ± this (default %(default)s)")
    p.add_argument("--budget", type=float_arg("budget"), default=defaults.budget_s,
                   help="max seconds of sampling per worker process (default %(default)s)")
    p.add_argument("--min-sample-time", type=float_arg("min sample time"),
                   default=defaults.min_sample_s, help="seconds per sample (default %(default)s)")


#: Scenario flags (dest, and what they mean without --scenario): given alone they are refused.
SCENARIO_FLAGS = ("latency_bound_ms", "scenario_min_duration_s", "scenario_max_duration_s",
                  "scenario_min_queries", "batch_wait_ms")


#: What `--scenario` (sweep: `--scenarios`) runs, for its help.
SCENARIO_HELP = (f"{' | '.join(s.value for s in Scenario)}: MLPerf LoadGen's scenario "
                 "(single-stream: p90 latency, batch 1; offline: samples/s; server: the "
                 "highest Poisson rate whose p99 stays within --latency-bound-ms)")


def add_scenario_args(p: Any) -> None:
    """`--scenario` and its settings (`add_scenario_settings_args`)."""
    p.add_argument("--scenario", type=scenario_arg, default=None, help=SCENARIO_HELP)
    add_scenario_settings_args(p)


def add_scenario_settings_args(p: Any) -> None:
    """A scenario's settings; every default None ("not given": the scenario's own,
    core.scenario, so `sweep` keeps its file's values)."""
    p.add_argument("--latency-bound-ms", type=float_arg("latency bound (ms)"), default=None,
                   help=f"server: the p99 bound (default {DEFAULT_LATENCY_BOUND_MS:g})")
    p.add_argument("--scenario-min-duration-s", type=float_arg("scenario min duration (s)"),
                   default=None, help=f"each LoadGen run at least (default "
                   f"{DEFAULT_MIN_DURATION_MS / 1000:g}; MLPerf: 600)")
    p.add_argument("--scenario-max-duration-s", type=float_arg("scenario max duration (s)"),
                   default=None, help=f"each LoadGen run at most (default "
                   f"{DEFAULT_MAX_DURATION_MS / 1000:g})")
    p.add_argument("--scenario-min-queries", type=int_arg("scenario min queries", positive=True),
                   default=None, help="queries each run issues at least (offline: samples; "
                   "default: single-stream 100, offline 1, server 500; MLPerf offline: 24,576)")
    p.add_argument("--batch-wait-ms", type=non_negative_arg("batch wait (ms)"), default=None,
                   help="server: how long the oldest query waits for a batch to fill "
                   f"(default {DEFAULT_BATCH_WAIT_MS:g})")


def scenario_settings(args: argparse.Namespace, backend: str, batch_size: int
                      ) -> ScenarioSettings:
    """The spec's scenario settings from the flags (`scenario_settings_for`)."""
    given = {key: getattr(args, key) for key in SCENARIO_FLAGS if getattr(args, key) is not None}
    return scenario_settings_from(args.scenario, backend, batch_size, given)


def check_scenario_flags(args: argparse.Namespace) -> None:
    """Scenario settings without a scenario would be silently ignored: refuse them."""
    given = [key for key in SCENARIO_FLAGS if getattr(args, key) is not None]
    if given and not args.scenario:
        flag = "--" + given[0].replace("_", "-")
        raise UserError(f"{flag} sets a LoadGen scenario: give --scenario too")


def add_policy_args(p: Any, defaults: ResultPolicy | None) -> None:
    """How many processes make a result. `defaults` None: flags default to "not given"."""
    shown = defaults or ResultPolicy()
    keep = defaults is not None
    p.add_argument("--processes", type=int_arg("processes"),
                   default=shown.min_processes if keep else None,
                   help="fresh worker processes per result, at least; a sweep asking for "
                   "more than a stored result has continues it (default "
                   f"{shown.min_processes})")
    p.add_argument("--max-processes", type=int_arg("max processes"),
                   default=shown.max_processes if keep else None,
                   help="add processes up to this many while the combined interval is wider "
                   f"than --result-target-ci (default {shown.max_processes})")
    p.add_argument("--result-target-ci", type=float_arg("result target CI"),
                   default=shown.target_rel_ci if keep else None,
                   help="target half-width of the combined 95%% interval, relative "
                   f"(default {shown.target_rel_ci})")
    p.add_argument("--result-budget", type=float_arg("result budget"),
                   default=shown.budget_s if keep else None,
                   help="wall seconds a result's processes may take before no more are added "
                   f"(default {shown.budget_s:g})")
    p.add_argument("--rerun-flagged", type=int_arg("rerun flagged"),
                   default=shown.rerun_flagged if keep else None,
                   help="extra rounds for processes measured under interference "
                   f"(default {shown.rerun_flagged})")


def policy_from_args(args: argparse.Namespace) -> ResultPolicy:
    values = {"processes": args.processes, "max_processes": args.max_processes,
              "result_target_ci": args.result_target_ci, "result_budget": args.result_budget,
              "rerun_flagged": args.rerun_flagged}
    return make_policy(policy_values(values))


def measure_settings(args: argparse.Namespace) -> MeasureSettings:
    return MeasureSettings(
        target_rel_ci=args.target_ci, budget_s=args.budget, min_sample_s=args.min_sample_time
    )


def make_spec(args: argparse.Namespace) -> Spec:
    """Validate the command line against the registry (or the own model) and build the Spec,
    before any work."""
    check_scenario_flags(args)
    entry, fields = model_entry(args.model, args.unsafe_load)
    # `is None`, not `or`: 0 is a value the user gave (and a bad one), not "not given".
    resolution = default_resolution(entry) if args.resolution is None else args.resolution
    mode = BACKEND_MODES[args.backend][-1] if args.mode is None else args.mode
    batch_size = args.batch_size
    if batch_size is None:  # single-stream issues one sample a query
        batch_size = 1 if args.scenario == Scenario.SINGLE_STREAM else DEFAULT_BATCH_SIZE
    scenario = {} if not args.scenario else {
        "scenario": args.scenario,
        "scenario_settings": scenario_settings(args, args.backend, batch_size)}
    spec = Spec(
        model=entry.name, backend=args.backend, mode=mode, resolution=resolution,
        batch_size=batch_size, precision=args.precision, weights=args.weights,
        seed=args.seed, tf32=args.tf32, measure=measure_settings(args), runner=args.runner,
        **scenario, **fields,
    )
    problem = (entry.check_resolution(resolution) or own_precision_problem(fields, args.precision)
               or precision_problem(args.backend, args.precision))
    if problem:
        raise UserError(problem)
    if args.weights != "random" and not entry.imagenet_weights:
        raise UserError(f"no {args.weights} weights for {entry.name}: only keras.applications "
                        "models can load them (use --weights random)")
    missing = missing_framework(args.backend)
    if missing:
        raise UserError(missing)
    native.require_runtime(spec)
    scenario_run.require_loadgen(spec)
    return spec


def model_entry(name: str, unsafe_load: bool = False) -> tuple[ModelEntry, dict[str, Any]]:
    """A registry model, or an own model file or factory with its spec fields."""
    if own.is_reference(name):
        model = own.resolve(name, unsafe_load)
        return model.entry(), model.spec_fields()
    return REGISTRY.get(name), {}


def run_command(args: argparse.Namespace) -> int:
    spec = make_spec(args)
    policy = policy_from_args(args)
    with ResultStore(args.db) as store:
        print(f"running {spec.label()}: at least {policy.min_processes} fresh worker processes "
              f"(timeout {args.timeout:g} s each)...", file=sys.stderr, flush=True)
        warn_if_busy()
        ensure_costs(store, [spec], note=print_note)
        result, records = run_result(spec, store, policy, sys.stderr, args.timeout,
                                     label=args.label)
    if args.json:
        print(json.dumps({"result": result.to_dict(),
                          "processes": [r.to_dict() for r in records]}, sort_keys=True))
    else:
        print(format_result(result, records, args.db))
    if result.status != "ok":
        print(f"xlabench: {spec.label()}: {result.status}: {result.error}", file=sys.stderr)
        return 1
    return 0


def print_note(line: str) -> None:
    """One line for the user on stderr (what a step before the benchmarks did or could not)."""
    print(line, file=sys.stderr, flush=True)


def warn_if_busy() -> None:
    """Say before the first process whether the machine is already busy (it is not refused:
    the processes it affects are flagged and re-run, and the user may want that)."""
    warning = interference.busy_before_start()
    if warning:
        print(warning, file=sys.stderr, flush=True)


def add_results(sub: Any) -> None:
    p = sub.add_parser("results", help="show stored results as a table")
    p.add_argument("--db", default=DEFAULT_DB)
    p.add_argument("--model", default=None, help="only this model")
    p.add_argument("--status", default=None, help="only this status (ok, failed, ...)")
    p.add_argument("--processes", action="store_true",
                   help="one row per worker process instead of one per result")
    p.set_defaults(handler=results_command)


def results_command(args: argparse.Namespace) -> int:
    store = open_existing(args.db)
    filters = {k: v for k, v in (("model", args.model), ("status", args.status)) if v}
    if args.model:
        filters["model"] = stored_model_name(args.model)
    with store:
        rows = store.rows(**filters) if args.processes else result_rows(store, **filters)
    if not rows:
        print(f"no results in {args.db}" + (f" matching {filters}" if filters else ""))
        return 0
    print(format_table(rows, with_scenario_columns(
        PROCESS_COLUMNS if args.processes else RESULT_COLUMNS, rows)))
    flagged = [r for r in rows if r.get("interference") or r.get("interference_flagged")]
    if flagged:
        print(f"{len(flagged)} measured under interference (another process used the CPUs); "
              "see `xlabench results --processes`")
    return 0


def stored_model_name(name: str) -> str:
    """The name results are stored under: a registry model's canonical name, an own model's
    readable name (its file or factory given, or the name itself, e.g. my_cnn-1a2b3c4d)."""
    if own.is_reference(name):
        return own.name_of(name)
    try:
        return REGISTRY.get(name).name
    except UserError:
        if re.fullmatch(r".+-[0-9a-f]{8}", name):
            return name
        raise


def add_export(sub: Any) -> None:
    p = sub.add_parser("export", help="export stored results as CSV")
    p.add_argument("--db", default=DEFAULT_DB)
    p.add_argument("--format", choices=("study-csv", "csv", "results-csv"), default="csv",
                   help="study-csv: the 2023 study's columns, one row per result; csv: every "
                   "stored field, one row per worker process; results-csv: one row per result "
                   "(its processes combined, with interval, confidence and interference)")
    p.add_argument("--out", required=True, help="output file ('-' for stdout)")
    p.set_defaults(handler=export_command)


def export_command(args: argparse.Namespace) -> int:
    with open_existing(args.db) as store:
        if args.format == "study-csv":
            text = study_csv(result_rows(store))
        elif args.format == "results-csv":
            text = results_csv(result_rows(store))
        else:
            text = full_csv(store.rows_with_records())
    write_output(args.out, text)
    return 0


def add_models(sub: Any) -> None:
    p = sub.add_parser("models", help="list the model registry")
    p.add_argument("--family", action="append", default=[], help="only this family (repeatable)")
    p.add_argument("--kind", action="append", default=[], choices=KINDS)
    p.add_argument("--format", choices=("table", "csv", "json"), default="table")
    p.set_defaults(handler=models_command)


def models_command(args: argparse.Namespace) -> int:
    entries = REGISTRY.select(families=args.family, kinds=args.kind)
    print(models_output([e.to_row() for e in entries], args.format), end="")
    return 0


def open_existing(path: str) -> ResultStore:
    """Open a db that must already exist (read commands never create one)."""
    if not Path(path).exists():
        raise UserError(f"no database at {path} (run a benchmark first, or pass --db)")
    return ResultStore(path)


def write_output(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        return
    out = Path(path)
    if not out.parent.exists():
        raise UserError(f"cannot write {path}: folder {out.parent} does not exist")
    out.write_text(text, encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)


def int_arg(what: str, positive: bool = False) -> Any:
    """An argparse `type` that turns a bad integer into one clear UserError line."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise UserError(f"{what} must be an integer, got {text!r}") from None
        if positive and value <= 0:
            raise UserError(f"{what} must be positive, got {text}")
        return value

    return parse


def scenario_arg(text: str) -> str:
    """An argparse `type` for a scenario name (an unknown one: one line naming the choices)."""
    return parse_scenario(text).value


def non_negative_arg(what: str) -> Any:
    """An argparse `type` for a number >= 0."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise UserError(f"{what} must be a number, got {text!r}") from None
        if not value >= 0:
            raise UserError(f"{what} must be >= 0, got {text}")
        return value

    return parse


def float_arg(what: str) -> Any:
    """An argparse `type` for a positive number."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise UserError(f"{what} must be a number, got {text!r}") from None
        if value <= 0:
            raise UserError(f"{what} must be positive, got {text}")
        return value

    return parse


REGISTRARS = [add_run, add_results, add_export, add_models]
