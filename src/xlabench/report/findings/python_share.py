"""Python's share: the same compiled program timed from Python (the worker) and from C++
(xlabench-native)."""

from __future__ import annotations

import pandas as pd

from xlabench.analysis import RankRule, python_share
from xlabench.report.charts import ChartSpec, HLine
from xlabench.report.model import CONFIG_COLUMNS, PROVENANCE, Context, Finding
from xlabench.report.tables import Column, Table

SHARE_RATIO = Column("native_over_python", "native/python [95% CI]", "ratio",
                     ci=("native_over_python_ci_low", "native_over_python_ci_high"))
SHARE_NOTE = (
    "Same program, same configuration, two runners: runner=python is the usual worker's timed "
    "loop, runner=native the exported artifact timed by xlabench-native in C++. CI method "
    "'paired t': both sides ran interleaved in one sweep; 'welch t': processes, not "
    "interleaved; 'bootstrap' / 'ci-ends': one process per side (see the speedups' note)."
    " 'significant': the interval excludes 1.00. 'compiler': 'same' where both sides "
    "run one compiler the same way (TF C API, OpenVINO), 'differs' where they do not: "
    "jax/xla native runs the PJRT plugin's older XLA, torch/compiled native an AOTInductor "
    "package against torch.compile in the worker — their ratio is not Python overhead alone."
)


def compiler_word(same: object) -> str:
    """'same', 'differs', or 'not recorded' (records from before the field existed)."""
    if same is True:
        return "same"
    return "differs" if same is False else "not recorded"


def python_share_finding(ctx: Context) -> Finding:
    """native / python throughput of every program measured with both runners."""
    title = "Python's share: the compiled program timed from Python and from C++"
    table = python_share(ctx.results)
    if table.empty:
        return Finding("python-share", title, part="beyond", empty=(
            "No configuration was measured both with runner python and with runner native "
            "(xlabench sweep --runner native)."))
    table = table.assign(compiler=[compiler_word(v) for v in table["same_compiler"]])
    data = table.assign(pair=[f"{m} {b}/{o} @{r} b{s}" for m, b, o, r, s in zip(
        table["model"], table["backend"], table["mode"], table["resolution"],
        table["batch_size"], strict=True)])
    chart = ChartSpec(
        key="python-share", title=title, kind="bar", data=data, x="pair",
        y="native_over_python", x_title="configuration",
        y_title="native / python throughput", series="device",
        error=("native_over_python_ci_low", "native_over_python_ci_high"),
        hover=(("model", "model"), ("device", "device"), ("backend", "backend"),
               ("mode", "mode"), ("python_sps", "python samples/s"),
               ("native_sps", "native samples/s"), ("native_over_python", "native/python"),
               ("native_over_python_ci_low", "CI low"), ("native_over_python_ci_high", "CI high"),
               ("launch_ms", "Python launch ms/batch"), ("ci_method", "CI method")),
        x_category=True, rank=RankRule("native_over_python", tiebreak="pair"),
        hlines=(HLine(1.0, "no Python overhead"),),
        note="Above 1: the program runs faster without Python around it.",
    )
    columns = (
        *CONFIG_COLUMNS,
        Column("python_sps", "python samples/s [CI]", "sps",
               ci=("python_ci_low_sps", "python_ci_high_sps")),
        Column("native_sps", "native samples/s [CI]", "sps",
               ci=("native_ci_low_sps", "native_ci_high_sps")), SHARE_RATIO,
        Column("launch_ms", "Python launch ms/batch", "ms"),
        Column("python_share_pct", "Python's share of its batch time", "share"),
        Column("compiler", "compiler"), Column("ci_method", "CI method"),
        Column("significant", "significant"), PROVENANCE,
    )
    ordered = table.sort_values("native_over_python", ascending=False)
    return Finding("python-share", title, _share_summary(table), [chart],
                   [Table("Per configuration", ordered, columns, note=SHARE_NOTE)],
                   part="beyond")


def _share_summary(table: pd.DataFrame) -> list[str]:
    """The median ratio, and which configurations differ significantly from 1.00."""
    same = table[table["compiler"] == "same"]
    if same.empty:
        lines = [f"No configuration of the {len(table)} runs the same compiler on both sides: "
                 "the ratios below are compiler differences as much as Python overhead."]
    else:
        lines = [f"Median native/python over {len(same)} configurations that run the same "
                 f"compiler on both sides: {same['native_over_python'].median():.2f}x "
                 f"(Python's median share of its batch time: "
                 f"{same['python_share_pct'].median():.0f}%)."]
    differ = table[table["compiler"] != "same"]
    if not differ.empty and not same.empty:
        lines.append(f"{len(differ)} more run different compilers or compile paths on the two "
                     f"sides (median {differ['native_over_python'].median():.2f}x): not Python "
                     "overhead alone.")
    significant = table["significant"].fillna(False).astype(bool)
    for word, side in (("faster", table["native_over_python"] > 1),
                       ("slower", table["native_over_python"] < 1)):
        rows = table[significant & side]
        names = [f"{m} {b}/{o} on {d} ({x:.2f}x)" for m, b, o, d, x in zip(
            rows["model"], rows["backend"], rows["mode"], rows["device"],
            rows["native_over_python"], strict=True)]
        if names:
            lines.append(f"Significantly {word} native: " + ", ".join(names) + ".")
    if not significant.any():
        lines.append("No configuration differs significantly from 1.00.")
    return lines
