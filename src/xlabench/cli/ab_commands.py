"""Subcommand: ab (two sides of one grid, interleaved, until the verdict is clear)."""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from typing import Any

from xlabench.cli.args import percent_arg
from xlabench.cli.commands import float_arg, print_note, warn_if_busy
from xlabench.cli.compare_commands import EXIT_SLOWDOWN, FORMATS
from xlabench.core import UserError
from xlabench.core.spec import RUNNERS
from xlabench.measure.probe import SPANS_STATES_REL
from xlabench.store import DEFAULT_DB, ResultStore
from xlabench.sweep import ab
from xlabench.sweep.config import build_config
from xlabench.sweep.expand import expand

#: Per-process sampling of `ab`: short, so the budget buys more processes rather than longer
#: ones (Kalibera & Jones 2013: when processes differ more than samples do, only more
#: processes narrow the interval).
SAMPLE_BUDGET_S = 2.0
MIN_SAMPLE_S = 0.05
SHORT_MEASURE = {"min_samples": 5, "max_samples": 60, "warmup_min_steps": 3,
                 "warmup_min_s": 0.2, "warmup_max_s": 3.0, "latency_steps": 0}
#: Grid flags, as `sweep` takes them; (flag dest, setting key).
GRID_KEYS = (("models", "models"), ("resolutions", "resolutions"),
             ("batch_sizes", "batch_sizes"), ("backends", "backends"), ("modes", "modes"),
             ("precisions", "precisions"), ("runner", "runner"), ("unsafe_load", "unsafe_load"),
             ("target_ci", "target_ci"), ("sample_budget", "budget"),
             ("min_sample_time", "min_sample_time"))
CSV_COLUMNS = ("configuration", "verdict", "ratio", "ratio_low", "ratio_high", "rounds",
               "rounds_set_aside", "rounds_needed", "stopped_because", "a_median_sps",
               "a_processes", "b_median_sps", "b_processes", "environment_differences")


def add_ab(sub: Any) -> None:
    p = sub.add_parser(
        "ab", help="did my change make it faster? both sides interleaved until decided",
        description="Measure two sides of one grid of configurations round after round: each "
        "round runs one fresh process per side per undecided configuration, in a random order, "
        "and after each round the paired ratio b/a decides faster, slower, same (within "
        "--threshold) or another round. A decided configuration stops; the others share what "
        "is left of --budget and --max-rounds, and are inconclusive when it runs out. Both "
        "sides are stored in --db as one interleaved pair (labels a and b), so `xlabench "
        "compare DB --baseline-label a --label b` reads them too. A side changes the grid by "
        "KEY=VALUE: python=INTERPRETER (another virtual environment), env:NAME=VALUE, model=, "
        "backend=, mode=, precision=, runner=. No change on either side is an A/A comparison.",
    )
    grid = p.add_argument_group("grid (as `sweep` takes it; comma-separated, repeatable)")
    for flag, what in (("--models", "model names or your own model files"),
                       ("--resolutions", "input sizes (default: each model's own)"),
                       ("--batch-sizes", "batch sizes (default 4)"),
                       ("--backends", "backends (default: tensorflow)"),
                       ("--modes", "modes (default: every mode of each backend)"),
                       ("--precisions", "fp32, bf16, mixed (default fp32)")):
        grid.add_argument(flag, action="append", default=None, help=what)
    grid.add_argument("--runner", choices=RUNNERS, default=None, help="python (default), native")
    grid.add_argument("--unsafe-load", action="store_true", default=None,
                      help="let own .keras files run the Python code they hold")
    sides = p.add_argument_group("the two sides")
    sides.add_argument("--a", action="append", default=[], metavar="KEY=VALUE",
                       help="what side a changes (repeatable)")
    sides.add_argument("--b", action="append", default=[], metavar="KEY=VALUE",
                       help="what side b changes (repeatable)")
    sides.add_argument("--label-a", default=ab.DEFAULT_LABELS[0], metavar="NAME",
                       help="side a's label in the database (default a)")
    sides.add_argument("--label-b", default=ab.DEFAULT_LABELS[1], metavar="NAME",
                       help="side b's label in the database (default b)")
    decide = p.add_argument_group("deciding")
    decide.add_argument("--threshold", type=percent_arg("threshold"), default=5.0, metavar="PCT",
                        help="smallest change that counts, in percent (default 5)")
    decide.add_argument("--budget", type=float, default=ab.DEFAULT_BUDGET_S, metavar="S",
                        help="wall-clock seconds for the whole comparison (default 600)")
    decide.add_argument("--max-rounds", type=int, default=None, metavar="N",
                        help="most rounds per configuration (default 40)")
    decide.add_argument("--min-rounds", type=int, default=None, metavar="N",
                        help="fewest rounds before a verdict (default 3)")
    decide.add_argument("--interleave", choices=ab.INTERLEAVE, default=ab.INTERLEAVE[0],
                        help="samples (default): a round's two processes run together, taking "
                        "turns on the machine slice by slice; processes: one after the other")
    decide.add_argument("--seed", type=int, default=0,
                        help="seed of the order within each round (default 0; recorded)")
    decide.add_argument("--fail-on-slowdown", type=percent_arg("--fail-on-slowdown"), default=None,
                        metavar="PCT", help="exit 1 when the verdict at threshold PCT is slower "
                        "(a slowdown beyond PCT percent is established); 0 otherwise")
    measure = p.add_argument_group("each process")
    measure.add_argument("--sample-budget", type=float_arg("sample budget"),
                         default=SAMPLE_BUDGET_S, metavar="S",
                         help=f"seconds of sampling per process (default {SAMPLE_BUDGET_S:g})")
    measure.add_argument("--min-sample-time", type=float_arg("min sample time"),
                         default=MIN_SAMPLE_S, metavar="S",
                         help=f"seconds per sample (default {MIN_SAMPLE_S:g})")
    measure.add_argument("--target-ci", type=float_arg("target CI"), default=0.05,
                         help="a process stops sampling at this relative CI (default 0.05)")
    measure.add_argument("--timeout", type=float, default=600.0, metavar="S",
                         help="seconds before a worker is killed (default 600)")
    p.add_argument("--db", default=DEFAULT_DB, help=f"SQLite results file (default {DEFAULT_DB})")
    p.add_argument("--format", choices=FORMATS, default="table",
                   help="table (default), json or csv, on stdout; progress goes to stderr")
    p.set_defaults(handler=ab_command)


def _settings(args: argparse.Namespace) -> ab.AbSettings:
    from xlabench.measure.sequential import SequentialDesign

    defaults = SequentialDesign()
    design = SequentialDesign(
        threshold=args.threshold / 100.0, alpha=defaults.alpha,
        max_rounds=defaults.max_rounds if args.max_rounds is None else args.max_rounds,
        min_rounds=defaults.min_rounds if args.min_rounds is None else args.min_rounds)
    return ab.AbSettings(design, args.budget, args.timeout, args.seed, args.interleave)


def prepare(args: argparse.Namespace) -> ab.AbRun:
    """Everything validated and planned before the database is opened (UserError otherwise)."""
    settings = _settings(args)
    sides = (ab.parse_side(args.label_a, args.a), ab.parse_side(args.label_b, args.b))
    if sides[0].label == sides[1].label:
        raise UserError(f"both sides are labelled {sides[0].label!r}: give --label-a and "
                        "--label-b two names")
    overrides = {key: getattr(args, dest) for dest, key in GRID_KEYS}
    overrides["backends"] = overrides["backends"] or ["tensorflow"]
    overrides["measure"] = dict(SHORT_MEASURE)
    config = build_config(None, None, overrides)
    specs = expand(config).specs
    sweep_id = ab.new_sweep_id()
    configurations = ab.make_configurations(specs, sides, sweep_id, settings,
                                            bool(args.unsafe_load))
    for index, side in enumerate(sides):
        ab.check_interpreter(side, [c.specs[index].backend for c in configurations])
    return ab.AbRun(configurations, sides, settings, sweep_id)


def ab_command(args: argparse.Namespace) -> int:
    run = prepare(args)
    print_note(f"ab {run.sweep_id}: {len(run.configurations)} configuration(s); "
               f"{run.sides[0].describe()} against {run.sides[1].describe()}; seed "
               f"{run.settings.seed}; budget {run.settings.budget_s:g} s")
    warn_if_busy()
    with ResultStore(args.db) as store:
        ab.run_ab(run, store, print_note)
    if args.format == "json":
        print(json.dumps(ab.run_dict(run), indent=2))
    elif args.format == "csv":
        sys.stdout.write(_csv(run))
    else:
        print(format_ab(run))
    return _gate(run, args.fail_on_slowdown)


def _gate(run: ab.AbRun, fail_on_slowdown: float | None) -> int:
    if fail_on_slowdown is None:
        return 0
    slower = [c for c in run.configurations
              if ab.verdict_at(c, run.settings.design, fail_on_slowdown / 100.0) == "slower"]
    for c in slower:
        print(f"xlabench: slower by more than {fail_on_slowdown:g}%: {c.name()}",
              file=sys.stderr)
    if slower:
        return EXIT_SLOWDOWN
    print(f"xlabench: no configuration is established slower by more than "
          f"{fail_on_slowdown:g}%", file=sys.stderr)
    return 0


def _number(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def format_ab(run: ab.AbRun) -> str:
    rows = [("configuration", "verdict", "b/a", "interval", "rounds", "stopped because")]
    for c in run.configurations:
        d = ab.configuration_dict(run, c)
        interval = (f"[{_number(d['ratio_low'])}, {_number(d['ratio_high'])}]"
                    if d["ratio_low"] is not None else "-")
        rounds = str(d["rounds"]) + (f" (+{d['rounds_set_aside']} set aside)"
                                     if d["rounds_set_aside"] else "")
        rows.append((c.name(), d["verdict"], _number(d["ratio"]), interval, rounds,
                     d["stopped_because"]))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
             for r in rows]
    design = run.settings.design
    lines.append(f"b/a as a rate (above 1: b faster); threshold {100 * design.threshold:g}%, "
                 f"{run.rounds_run} round(s) in {run.wall_s:.0f} s; stored in sweep "
                 f"{run.sweep_id}")
    if any(c.rounds_set_aside for c in run.configurations):
        lines.append("set aside: rounds whose processes ran in different machine states "
                     "(their probes differ by more than "
                     f"{100 * SPANS_STATES_REL:g}%), stored and not paired")
    for c in run.configurations:
        diffs = ab.configuration_dict(run, c)["environment_differences"]
        if diffs:
            lines.append(f"{c.name()}: environments differ: " + "; ".join(
                d['text'] for d in diffs))
    return "\n".join(lines)


def _csv(run: ab.AbRun) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    for c in run.configurations:
        d = ab.configuration_dict(run, c)
        writer.writerow({
            **d, "a_median_sps": d["a"]["median_sps"], "a_processes": d["a"]["processes"],
            "b_median_sps": d["b"]["median_sps"], "b_processes": d["b"]["processes"],
            "environment_differences": "; ".join(
                x['text']
                for x in d["environment_differences"]),
        })
    return out.getvalue()


REGISTRARS = [add_ab]
