"""Subcommand: compare (did a change make it faster? verdicts a CI job can act on)."""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path
from typing import Any

from xlabench.cli.args import percent_arg
from xlabench.core import UserError

FORMATS = ("table", "json", "csv")
#: Exit code of `--fail-on-slowdown` when a slowdown is established.
EXIT_SLOWDOWN = 1
CSV_COLUMNS = (
    "spec_id", "model", "backend", "mode", "resolution", "batch_size", "precision", "runner",
    "scenario", "latency_bound_ms", "unit",
    "baseline_sps", "baseline_ci_low", "baseline_ci_high", "baseline_k",
    "new_sps", "new_ci_low", "new_ci_high", "new_k",
    "baseline_figure", "baseline_figure_ci_low", "baseline_figure_ci_high",
    "new_figure", "new_figure_ci_low", "new_figure_ci_high",
    "ratio", "ratio_low", "ratio_high", "method", "verdict", "reason",
)
#: Under the table when a LoadGen scenario was compared: how its ratio reads.
SCENARIO_NOTE = ("scenario figures are in their own unit; every ratio is new/baseline as a "
                 "rate (higher is faster): for a p90 latency, the baseline's p90 over the new")


def add_compare(sub: Any) -> None:
    p = sub.add_parser(
        "compare", help="did it get faster? per-configuration verdicts between two runs",
        description="Compare two sides configuration by configuration: two databases "
        "(compare BASELINE.db NEW.db), or one database and two run labels "
        "(compare DB --baseline-label before --label after), or two environments "
        "(compare DB --baseline-env ID --env ID). Each side's figure for a configuration is its "
        "latest complete result. Verdict per configuration from the 95% interval of the ratio "
        "new/baseline: slower (ratio_high < 1 - t), faster (ratio_low > 1 + t), same (the "
        "interval within 1 ± t), inconclusive, or insufficient data (a side failed or has "
        "fewer than two processes). Databases are only read.",
    )
    p.add_argument("databases", nargs="+", metavar="DB",
                   help="the baseline database, then (optionally) the new one")
    p.add_argument("--baseline-label", default=None, metavar="NAME",
                   help="baseline side: only results stored with this --label")
    p.add_argument("--label", default=None, metavar="NAME",
                   help="new side: only results stored with this --label")
    p.add_argument("--baseline-env", default=None, metavar="ID",
                   help="baseline side: only results of this environment id (or a unique prefix)")
    p.add_argument("--env", default=None, metavar="ID",
                   help="new side: only results of this environment id (or a unique prefix)")
    p.add_argument("--threshold", type=percent_arg("threshold"), default=None, metavar="PCT",
                   help="smallest change that counts, in percent (default 5)")
    p.add_argument("--format", choices=FORMATS, default="table",
                   help="table (default), json or csv, on stdout")
    p.add_argument("--fail-on-slowdown", type=percent_arg("--fail-on-slowdown"), default=None,
                   metavar="PCT", help="exit 1 when some configuration's verdict at threshold "
                   "PCT percent is slower (the report's rule); 0 otherwise")
    p.set_defaults(handler=compare_command)


def _sides(args: argparse.Namespace) -> tuple[Any, Any]:
    from xlabench.analysis.compare import Side

    if len(args.databases) > 2:
        raise UserError(f"compare takes one or two databases, got {len(args.databases)}")
    first = Path(args.databases[0])
    second = Path(args.databases[-1])
    if len(args.databases) == 1 and not ((args.baseline_label or args.baseline_env)
                                         and (args.label or args.env)):
        raise UserError("one database: choose the sides with --baseline-label NAME --label "
                        "NAME, or --baseline-env ID --env ID (or give two databases)")
    return (Side(first, args.baseline_label, args.baseline_env),
            Side(second, args.label, args.env))


def compare_command(args: argparse.Namespace) -> int:
    # Imported here: the analysis package loads pandas for its other modules.
    from xlabench.analysis.compare import DEFAULT_THRESHOLD, compare

    threshold = DEFAULT_THRESHOLD if args.threshold is None else args.threshold / 100.0
    baseline, new = _sides(args)
    report = compare(baseline, new, threshold)
    if args.format == "json":
        print(json.dumps(report.to_dict(), indent=2))
    elif args.format == "csv":
        sys.stdout.write(_csv(report))
    else:
        print(format_compare(report))
    if args.fail_on_slowdown is None:
        return 0
    limit = args.fail_on_slowdown / 100.0
    slow = report.slowdowns(limit)
    for pair in slow:
        print(f"xlabench: slower by more than {args.fail_on_slowdown:g}%: {_name(pair.spec)} "
              f"{_ratio(pair)}", file=sys.stderr)
    if slow:
        return EXIT_SLOWDOWN
    print(f"xlabench: no configuration is established slower by more than "
          f"{args.fail_on_slowdown:g}%", file=sys.stderr)
    return 0


# ------------------------------------------------------------------------------ formatting
def _sps(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" if abs(value) < 1000 else f"{value:.0f}"


def _figure(result: Any, scenario: str = "", unit: str = "") -> str:
    """A side's stored figure with its interval: samples/s, or a scenario's in its `unit`."""
    if result.status != "ok" or result.median_sps is None:
        return result.status
    figure = (result.median_sps, result.ci_low_sps, result.ci_high_sps)
    if scenario:
        from xlabench.store.scenario_rows import figure_interval

        figure = figure_interval(scenario, *figure)
    text = _sps(figure[0]) + (f" {unit}" if scenario else "")
    if figure[1] is not None and figure[2] is not None:
        text += f" [{_sps(figure[1])}, {_sps(figure[2])}]"
    return text + (f" k={result.k}" if result.k < 2 else "")


def _ratio(pair: Any) -> str:
    if pair.estimate is None:
        return "-"
    if pair.ratio is None:
        return f"{pair.estimate:.3f}"
    return f"{pair.estimate:.3f} [{pair.ratio.ratio_low:.3f}, {pair.ratio.ratio_high:.3f}]"


def _name(spec: Any) -> str:
    return (f"{spec.get('model')}@{spec.get('resolution')} b{spec.get('batch_size')} "
            f"{_backend_mode(spec)}")


def _backend_mode(spec: Any) -> str:
    text = f"{spec.get('backend')}/{spec.get('mode')}"
    if spec.get("runner") not in (None, "python"):
        text += f" {spec.get('runner')}"
    if spec.get("precision") not in (None, "fp32"):
        text += f" {spec.get('precision')}"
    if spec.get("scenario"):
        text += f" {spec.get('scenario')}"
    if spec.get("latency_bound_ms") is not None:
        text += f" p99<={spec.get('latency_bound_ms'):g}ms"
    return text


def format_compare(report: Any) -> str:
    """The table, then the environment differences, then a one-line summary."""
    from xlabench.cli.tables import format_table

    rows = []
    for pair in report.pairs:
        rows.append({
            "model": pair.spec.get("model") or pair.spec_id,
            "backend_mode": _backend_mode(pair.spec),
            "resolution": pair.spec.get("resolution"), "batch_size": pair.spec.get("batch_size"),
            "baseline": _figure(pair.baseline, pair.scenario, pair.unit),
            "new": _figure(pair.new, pair.scenario, pair.unit),
            "ratio": _ratio(pair), "verdict": pair.verdict + (" *" if pair.reason else ""),
        })
    scenarios = any(pair.scenario for pair in report.pairs)
    figure = "" if scenarios else " sps"  # then each cell names its unit
    columns = (("model", "model"), ("backend_mode", "backend/mode"), ("resolution", "res"),
               ("batch_size", "batch"), ("baseline", f"baseline{figure} [CI]"),
               ("new", f"new{figure} [CI]"), ("ratio", "ratio [CI]"), ("verdict", "verdict"))
    lines = [f"baseline: {_describe(report.baseline)}", f"new:      {_describe(report.new)}",
             "", format_table(rows, columns)]
    if scenarios:
        lines.append(SCENARIO_NOTE)
    reasons = [f"  * {_name(p.spec)}: {p.reason}" for p in report.pairs if p.reason]
    if reasons:
        lines += ["", "no verdict possible:", *reasons]
    paired = sum(p.ratio is not None and p.ratio.n_pairs > 0 for p in report.pairs)
    if paired:
        lines.append(f"{paired} ratio(s) paired by round (both ran interleaved in one sweep)")
    lines.append("")
    if report.env_differences:
        lines.append("environment differences (baseline -> new):")
        lines += [f"  {d.text}" for d in report.env_differences]
    else:
        lines.append("environment differences: none (same packages, flags, CPU, Python and OS)")
    skipped = []
    if report.only_baseline or report.only_new:
        skipped.append(f"{report.only_baseline} configuration(s) only in the baseline, "
                       f"{report.only_new} only in the new side")
    legacy = report.baseline.legacy_skipped + report.new.legacy_skipped
    if legacy:
        skipped.append(f"{legacy} result(s) without a combined result skipped")
    incomplete = report.baseline.incomplete_skipped + report.new.incomplete_skipped
    if incomplete:
        skipped.append(f"{incomplete} configuration(s) with only incomplete results skipped")
    if skipped:
        lines.append("not compared: " + "; ".join(skipped))
    counts = report.summary()
    lines.append(", ".join(f"{n} {verdict}" for verdict, n in counts.items())
                 + f" (threshold {100 * report.threshold:g}%)")
    return "\n".join(lines)


def _describe(side: Any) -> str:
    envs = sorted(side.envs)
    named = f"; environment{'s' * (len(envs) != 1)} {', '.join(envs)}" if envs else ""
    return side.side.describe() + named


def _csv(report: Any) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for pair in report.to_dict()["pairs"]:
        row = {key: pair.get(key) for key in CSV_COLUMNS}
        for side in ("baseline", "new"):
            figures = pair[side]
            row.update({f"{side}_sps": figures["sps"], f"{side}_ci_low": figures["ci_low"],
                        f"{side}_ci_high": figures["ci_high"], f"{side}_k": figures["k"],
                        f"{side}_figure": figures["figure"],
                        f"{side}_figure_ci_low": figures["figure_ci_low"],
                        f"{side}_figure_ci_high": figures["figure_ci_high"]})
        writer.writerow(row)
    return out.getvalue()


REGISTRARS = [add_compare]
