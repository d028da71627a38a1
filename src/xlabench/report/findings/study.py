"""The 2023 study's seven findings, computed from whatever the database holds."""

from __future__ import annotations

import pandas as pd

from xlabench.analysis import (
    RankRule,
    compiled_runs,
    family_rule,
    fastest_per_resolution,
    fastest_rule,
    mobilenet_family,
    slower_than,
    speedup_by_family,
    speedup_by_kind,
    top_models,
    top_models_rule,
)
from xlabench.analysis.kinds import NON_CNN_KINDS
from xlabench.analysis.result_rows import core_counts_differ
from xlabench.report.charts import ChartSpec
from xlabench.report.model import (
    HOVER_PAIR,
    HOVER_RUN,
    MARKER_NOTE,
    NOISE,
    PROVENANCE,
    SPS,
    Context,
    Finding,
    origin_label,
)
from xlabench.report.tables import Column, Table

TOP_COLUMNS = (
    Column("device", "device"), Column("rank", "rank", "int"), Column("model", "model"),
    Column("family", "family"), Column("kind", "kind"), Column("resolution", "res", "int"),
    SPS, NOISE, Column("gmacs_per_image", "GMACs", "g"), Column("params_m", "params M", "g"),
    PROVENANCE,
)

#: Shown where CPUs of different core counts are compared.
PER_CORE = Column("sps_per_core", "samples/s per core", "sps")


def top_models_finding(ctx: Context, non_cnn: bool = False) -> Finding:
    """Findings 1 and 7: the fastest models with the compiler on each device."""
    cmp, n = ctx.options.comparison, ctx.options.top_n
    kinds = NON_CNN_KINDS if non_cnn else None
    what = "non-CNN models (transformer, MLP, hybrid)" if non_cnn else "models"
    number, key = ("7", "top-non-cnn") if non_cnn else ("1", "top-models")
    title = f"{number}. Top-{n} {what} by throughput with {cmp.compiled_mode} ({cmp.backend})"
    table = top_models(ctx.results, cmp, n, kinds=kinds)
    if table.empty:
        return Finding(key, title, empty=f"No successful {cmp.backend}/{cmp.compiled_mode} "
                                         f"runs of {what} in the database.")
    chart = ChartSpec(
        key=key, title=title, kind="scatter", data=compiled_runs(ctx.results, cmp, kinds),
        x="gmacs_per_image", y="throughput_sps", x_title="GMACs per image (the study's 'flop')",
        y_title="samples/s", series="device", size="params_m", label="model",
        error=("throughput_sps_ci_low", "throughput_sps_ci_high"),
        hover=(*HOVER_RUN, ("gmacs_per_image", "GMACs"), ("params_m", "params M")),
        log_x=True, log_y=True, rank=top_models_rule(n),
        note=f"Each model's best configuration; bubble area: parameters. {MARKER_NOTE}",
    )
    columns = (*TOP_COLUMNS, PER_CORE) if core_counts_differ(table) else TOP_COLUMNS
    return Finding(key, title, summary=_winners(table, "fastest model"), charts=[chart],
                   tables=[Table(f"Top-{n} per device", table, columns)])


def _winners(table: pd.DataFrame, what: str) -> list[str]:
    lines = []
    for (origin, device), group in table.groupby(["origin", "device"], sort=True):
        best = group.iloc[0]
        noisy = int(group["within_noise"].fillna(False).sum())
        tail = f"; {noisy} of {len(group)} ranks are within noise of a neighbour" if noisy else ""
        lines.append(f"{origin_label(origin, device)}: {what} {best['model']} at "
                     f"{best['throughput_sps']:.0f} samples/s{tail}.")
    return lines


def mobilenet_finding(ctx: Context) -> Finding:
    """Finding 2: MobileNet V1, V2, V3 side by side ("V3 Small is slower than V1 with XLA")."""
    cmp = ctx.options.comparison
    title = f"2. The MobileNet family, {cmp.baseline_mode} and {cmp.compiled_mode} ({cmp.backend})"
    runs = mobilenet_family(ctx.results, cmp)
    if runs.empty:
        return Finding("mobilenets", title, empty="No MobileNet runs in the database.")
    runs = runs.assign(trace=[f"{d} {m}" for d, m in zip(runs["device"], runs["mode"],
                                                          strict=True)])
    chart = ChartSpec(
        key="mobilenets", title=title, kind="bar", data=runs, x="model", y="throughput_sps",
        x_title="model", y_title="samples/s", series="trace",
        error=("throughput_sps_ci_low", "throughput_sps_ci_high"), hover=HOVER_RUN,
        x_category=True, rank=RankRule("throughput_sps", per=("origin", "device", "model", "mode")),
        note=f"Each model's best configuration per device and mode. {MARKER_NOTE}",
    )
    check = slower_than(runs, "mobilenet_v3_small", "mobilenet_v1", cmp.compiled_mode)
    columns = (Column("device", "device"), Column("model", "model"), Column("mode", "mode"),
               Column("resolution", "res", "int"), Column("batch_size", "batch", "int"), SPS,
               PROVENANCE)
    return Finding("mobilenets", title, summary=_v3_small_claim(check, cmp.compiled_mode),
                   charts=[chart], tables=[Table("MobileNet runs", runs, columns)])


def _v3_small_claim(check: pd.DataFrame, mode: str) -> list[str]:
    if check.empty:
        return [f"The study's claim (V3 Small slower than V1 with {mode}) cannot be checked: "
                f"no configuration has both mobilenet_v3_small and mobilenet_v1 in {mode}."]
    lines = []
    for row in check.to_dict("records"):
        verdict = "holds" if row["slower"] else "does not hold"
        noise = {True: " (but the CIs overlap: within noise)", False: ""}.get(
            row["within_noise"], " (no CI to tell noise)")
        lines.append(
            f"{origin_label(row['origin'], row['device'])} @{row['resolution']} "
            f"b{row['batch_size']} {row['precision']}: "
            f"mobilenet_v3_small {row['throughput_sps_slow']:.0f} vs mobilenet_v1 "
            f"{row['throughput_sps_fast']:.0f} samples/s with {mode}: the study's claim "
            f"{verdict}{noise}.")
    return lines


def fastest_finding(ctx: Context) -> Finding:
    """Finding 3: the fastest model at each resolution, overall and on each device."""
    cmp = ctx.options.comparison
    title = f"3. The fastest model at each resolution with {cmp.compiled_mode} ({cmp.backend})"
    runs = compiled_runs(ctx.results, cmp)
    if runs.empty:
        return Finding("fastest", title, empty=f"No successful {cmp.backend}/"
                                               f"{cmp.compiled_mode} runs in the database.")
    charts, tables = [], []
    for by_device in (False, True):
        where = "on each device" if by_device else "over all devices"
        charts.append(ChartSpec(
            key=f"fastest-{'device' if by_device else 'all'}", title=f"Fastest model {where}",
            kind="bar", data=runs, x="resolution", y="throughput_sps", x_title="resolution",
            y_title="samples/s", series="device" if by_device else None, label="model",
            error=("throughput_sps_ci_low", "throughput_sps_ci_high"), hover=HOVER_RUN,
            x_category=True, rank=fastest_rule(by_device, top_n=1), note=MARKER_NOTE,
            label_limit=60,
        ))
        winners = fastest_per_resolution(ctx.results, cmp, by_device=by_device)
        tables.append(Table(f"Fastest {where}", winners, _fastest_columns(by_device),
                            note="'within noise': the winner's CI overlaps the runner-up's."))
    summary = [f"@{r['resolution']} {r['model']}" + _published(r['origin'])
               for r in fastest_per_resolution(ctx.results, cmp).to_dict("records")]
    claims = _study_winner_claims(fastest_per_resolution(ctx.results, cmp, by_device=True))
    return Finding("fastest", title,
                   summary=["Fastest over all devices: " + ", ".join(summary), *claims],
                   charts=charts, tables=tables)


def _study_winner_claims(winners: pd.DataFrame) -> list[str]:
    """At each resolution the study published a winner for: whether its fastest model is the
    fastest on each measured device too, with the measured winner's interval."""
    published = winners[winners["origin"] == "published"]
    lines = []
    for row in winners[winners["origin"] != "published"].to_dict("records"):
        theirs = published[published["resolution"] == row["resolution"]]
        if theirs.empty:
            continue
        claimed = {m: sorted(map(str, g["device"])) for m, g in theirs.groupby("model")}
        study = ", ".join(f"{m} on {', '.join(d)}" for m, d in sorted(claimed.items()))
        verdict = "holds" if row["model"] in claimed else "does not hold"
        noise = {True: f" (but within noise of the runner-up {row['runner_up']})"}.get(
            row["within_noise"], "")
        low, high = row["throughput_sps_ci_low"], row["throughput_sps_ci_high"]
        interval = f" [{low:.1f}, {high:.1f}]" if pd.notna(low) and pd.notna(high) else ""
        lines.append(
            f"@{row['resolution']} on {row['device']}: fastest {row['model']} at "
            f"{row['throughput_sps']:.1f} samples/s{interval}; the study's fastest was {study}: "
            f"its claim {verdict} here{noise}.")
    return lines


def _published(origin: object) -> str:
    return " (published)" if origin == "published" else ""


def _fastest_columns(by_device: bool) -> tuple[Column, ...]:
    device = (Column("device", "device"),) if by_device else ()
    return (*device, Column("resolution", "res", "int"), Column("model", "fastest model"), SPS,
            Column("runner_up", "runner-up"), Column("runner_up_sps", "runner-up samples/s", "sps"),
            Column("within_noise", "winner vs runner-up", "noise"), PROVENANCE)


SPEEDUP_TEXT = {
    "speedup_abs_sps": ("absolute", "samples/s gained (compiled - baseline)", "sps"),
    "speedup_rel_pct": ("relative", "% gained (compiled / baseline - 1)", "pct"),
}


def family_speedup_finding(ctx: Context, metric: str) -> Finding:
    """Findings 4 and 5: each family's best variant's speedup, at one device and resolution."""
    cmp = ctx.options.comparison
    name, unit, fmt = SPEEDUP_TEXT[metric]
    number, key = ("4", "family-abs") if metric == "speedup_abs_sps" else ("5", "family-rel")
    title = f"{number}. {name.capitalize()} speedup of {cmp.label}, per model family"
    if ctx.speedups.empty:
        return Finding(key, title, empty=_no_pairs(ctx))
    table = speedup_by_family(ctx.speedups, metric, ctx.device, ctx.resolution)
    where = f"{ctx.device} at resolution {ctx.resolution}" if ctx.resolution is not None \
        else str(ctx.device)
    low, high = family_rule(metric).ci_low, family_rule(metric).ci_high
    data = ctx.speedups.assign(slice=[f"{d} @{r}" for d, r in zip(
        ctx.speedups["device"], ctx.speedups["resolution"], strict=True)])
    chart = ChartSpec(
        key=key, title=title, kind="bar", data=data, x="family", y=metric,
        x_title="family (label: its best variant)", y_title=unit, series="slice", label="model",
        error=(str(low), str(high)), hover=HOVER_PAIR, x_category=True, rank=family_rule(metric),
        static_filter={"device": ctx.device, "resolution": ctx.resolution},
        note=f"Best variant = the largest {name} speedup in the family. The page shows every "
             f"device @ resolution (filter to one); the PNG and tables show {where}.",
    )
    columns = (
        Column("rank", "rank", "int"), Column("family", "family"),
        Column("model", "best variant"), Column("baseline_sps", "baseline samples/s", "sps"),
        Column("compiled_sps", "compiled samples/s", "sps"),
        Column(metric, f"{name} speedup [95% CI]", fmt, ci=(str(low), str(high))),
        Column("ci_method", "CI method"), NOISE, PROVENANCE,
    )
    slices = sorted({f"{d} @{r}" for d, r in zip(ctx.speedups["device"],
                                                   ctx.speedups["resolution"], strict=True)})
    empty = f"No pairs on {where}; there are pairs on {', '.join(slices)} (--device, --resolution)."
    summary = [] if table.empty else [
        f"On {where}, the largest {name} speedup is {table.iloc[0]['family']} "
        f"({table.iloc[0]['model']})."]
    return Finding(key, title, summary=summary, charts=[chart],
                   tables=[Table(f"Per family on {where}", table, columns, empty=empty)])


def _no_pairs(ctx: Context) -> str:
    cmp = ctx.options.comparison
    return (f"No configuration was measured both in {cmp.baseline_mode} and in "
            f"{cmp.compiled_mode} on {cmp.backend}, so there is no speedup to show.")


def kind_finding(ctx: Context) -> Finding:
    """Finding 6: relative speedups of CNN against non-CNN models (detectors apart)."""
    cmp = ctx.options.comparison
    title = f"6. CNN against non-CNN models: relative speedup of {cmp.label}"
    if ctx.speedups.empty:
        return Finding("kinds", title, empty=_no_pairs(ctx))
    summary = speedup_by_kind(ctx.speedups)
    chart = ChartSpec(
        key="kinds", title=title, kind="scatter", data=ctx.speedups, x="kind_group",
        y="speedup_rel_pct", x_title="kind", y_title="% gained (compiled / baseline - 1)",
        series="device", error=("speedup_rel_ci_low_pct", "speedup_rel_ci_high_pct"),
        hover=HOVER_PAIR, x_category=True,
        note=f"One point per configuration; non-CNN = transformer, MLP, hybrid. {MARKER_NOTE}",
    )
    columns = (
        Column("device", "device"), Column("kind_group", "kind"), Column("configs", "configs"),
        Column("median_rel_pct", "median speedup", "pct"),
        Column("min_rel_pct", "min", "pct"), Column("max_rel_pct", "max", "pct"),
        Column("significant_configs", "significant", "int"), Column("origin", "origin"),
    )
    return Finding("kinds", title, summary=_kind_lines(summary), charts=[chart],
                   tables=[Table("Relative speedup by kind", summary, columns)])


def _kind_lines(summary: pd.DataFrame) -> list[str]:
    lines = []
    for (origin, device), group in summary.groupby(["origin", "device"], sort=True):
        parts = [f"{r['kind_group']} median {r['median_rel_pct']:+.1f}% ({r['configs']} configs)"
                 for r in group.to_dict("records")]
        if "non-CNN" not in set(group["kind_group"]):
            parts.append("no non-CNN models measured, so the comparison is one-sided")
        lines.append(f"{origin_label(origin, device)}: " + "; ".join(parts) + ".")
    return lines


def study_findings(ctx: Context) -> list[Finding]:
    """The study's findings 1 to 7, in its order."""
    return [
        top_models_finding(ctx), mobilenet_finding(ctx), fastest_finding(ctx),
        family_speedup_finding(ctx, "speedup_abs_sps"),
        family_speedup_finding(ctx, "speedup_rel_pct"), kind_finding(ctx),
        top_models_finding(ctx, non_cnn=True),
    ]
