"""The report: files, every finding and table, escaping, partial databases, the CLI."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import make_record
from tests.report.conftest import EVIL, EVIL_ERROR, EVIL_FILE, STUDY_CSV, Built, grid_records
from xlabench.analysis import comparison_for, load_results, top_models
from xlabench.core import Record, Status
from xlabench.report import ReportOptions, build_findings, write_report
from xlabench.report.charts import visible_rows
from xlabench.report.html import filter_values, html_page, script_json
from xlabench.report.markdown import md_text
from xlabench.report.tables import Column, cell
from xlabench.store import ResultStore
from xlabench.store.importer import read_study_csv

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
STUDY_TITLES = ("1. Top-10", "2. The MobileNet family", "3. The fastest model",
                "4. Absolute speedup", "5. Relative speedup", "6. CNN against non-CNN",
                "7. Top-10 non-CNN")
FRAMEWORKS = ("tensorflow", "jax", "torch", "keras", "keras_hub")


def findings_of(records: list[Record], tmp_path: Path, csv: bool = False, **options: object):
    with ResultStore(tmp_path / "r.db") as store:
        store.save_many(records)
        if csv:
            store.save_many(read_study_csv(STUDY_CSV))
    results = load_results(tmp_path / "r.db")
    return results, build_findings(results, ReportOptions(**options))  # type: ignore[arg-type]


def test_report_files(built_report: Built) -> None:
    out = built_report.out
    html = (out / "index.html").read_text()
    charts = re.findall(r'id="chart-([a-z0-9-]+)"', html)
    assert len(charts) >= 14 and len(set(charts)) == len(charts)
    for key in charts:
        assert (out / f"{key}.png").read_bytes().startswith(PNG_MAGIC), key
    assert (out / "findings.md").stat().st_size > 1000


def test_every_finding_and_table_is_in_the_markdown_and_the_page(built_report: Built) -> None:
    results = load_results(built_report.db)
    findings = build_findings(results, ReportOptions())
    markdown = (built_report.out / "findings.md").read_text()
    html = (built_report.out / "index.html").read_text()
    study = [f for f in findings if f.part == "study"]
    assert [f.title[:len(t)] for f, t in zip(study, STUDY_TITLES, strict=False)] == list(
        STUDY_TITLES)
    for finding in findings:
        assert md_text(finding.title) in markdown and finding.key in html
        for table in finding.tables:
            assert f"**{md_text(table.title)}**" in markdown
            if not table.frame.empty:
                header = "| " + " | ".join(md_text(c.header) for c in table.shown_columns())
                assert header in markdown


def test_published_rows_are_marked_beside_local_ones(built_report: Built) -> None:
    markdown = (built_report.out / "findings.md").read_text()
    assert "published (study_best_per_resolution_and_gpu.csv; unsynced, no CI)" in markdown
    assert "| local |" in markdown
    assert "n/a (no CI)" in markdown


def test_the_page_is_self_contained(built_report: Built) -> None:
    html = (built_report.out / "index.html").read_text()
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=|<img[^>]+src=", html)
    assert "Plotly" in html and html.count("<script") == 3


def test_values_from_the_db_and_files_are_escaped(built_report: Built) -> None:
    html = (built_report.out / "index.html").read_text()
    markdown = (built_report.out / "findings.md").read_text()
    for raw in (EVIL, EVIL_ERROR, EVIL_FILE):
        assert raw not in html and raw not in markdown
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b onmouseover=alert(3)&gt;evil.csv" in html
    # the data block keeps the value intact for the charts, as JSON escapes
    block = re.search(r'id="xlabench-data">(.*?)</script>', html, re.S)
    assert block is not None and "<" not in block.group(1)
    assert EVIL in json.dumps(json.loads(block.group(1)))


@pytest.mark.parametrize("value", ["</script><script>alert(1)</script>", "a&b<!--", "\u2028"])
def test_script_json_cannot_close_the_script_element(value: str) -> None:
    text = script_json({"v": value})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"v": value}


@pytest.mark.parametrize(("text", "expected"), [
    ("a|b", "a\\|b"), ("<b>x</b>", "&lt;b&gt;x&lt;/b&gt;"), ("two\nlines", "two lines"),
    ("[x](y)", "\\[x\\](y)"),
])
def test_markdown_cells_are_inert(text: str, expected: str) -> None:
    assert md_text(text) == expected


def test_chart_rows_match_the_analysis(tmp_path: Path) -> None:
    results, findings = findings_of(grid_records(), tmp_path, csv=True)
    chart = next(c for f in findings for c in f.charts if c.key == "top-models")
    drawn = visible_rows(chart)
    table = top_models(results, comparison_for())
    assert drawn["model"].tolist() == table["model"].tolist()
    t4 = visible_rows(chart, {"device": "t4"})
    assert set(t4["device"]) == {"t4"} and len(t4) == 10 + 6  # published top-10 + 6 local


def test_filter_values_cover_every_dimension(tmp_path: Path) -> None:
    _, findings = findings_of(grid_records(), tmp_path, csv=True)
    values = filter_values(findings)
    assert values["device"] == ["a100", "t4", "v100"]
    assert values["backend"] == ["jax", "tensorflow"]
    assert values["resolution"][:3] == ["224", "240", "260"]  # numeric order


@pytest.mark.parametrize(
    ("records", "csv", "empty_keys"),
    [
        ([], False, "all"),
        ([], True, {"family-abs", "family-rel", "kinds", "decomposition", "speedup-ci",
                    "compile", "batch-size", "backends", "top-non-cnn"}),
        ([make_record(status=Status.OOM), make_record(status=Status.CRASHED)], False,
         "all"),
        ([make_record(backend="jax", mode="xla"), make_record(backend="jax", mode="eager")],
         False, {"family-abs", "mobilenets", "decomposition", "backends"}),
    ],
    ids=["empty", "published only", "failures only", "jax only"],
)
def test_partial_databases_say_what_is_missing(
    tmp_path: Path, records: list[Record], csv: bool, empty_keys: object
) -> None:
    _, findings = findings_of(records, tmp_path, csv=csv)
    empty = {f.key for f in findings if f.empty}
    keys = {f.key for f in findings}
    if empty_keys == "all":  # the health section always reports its counts
        assert empty == keys - {"health"}
    else:
        assert set(empty_keys) <= empty  # type: ignore[arg-type]
    page = html_page(findings, ["overview"], "t")
    assert page.count("<section") == len(findings)


def test_jax_comparison_on_request(tmp_path: Path) -> None:
    records = [make_record(backend="jax", mode=m, throughput=t)
               for m, t in (("eager", 100.0), ("xla", 300.0))]
    _, findings = findings_of(records, tmp_path, comparison=comparison_for("jax"))
    family = next(f for f in findings if f.key == "family-rel")
    assert family.empty is None and "jax xla vs eager" in family.title
    assert family.tables[0].frame["speedup_rel_pct"].tolist() == pytest.approx([200.0])


def test_chosen_slice_is_used(tmp_path: Path) -> None:
    records = [make_record(mode=m, throughput=t, accelerator=d)
               for d in ("a100", "t4") for m, t in (("eager", 100.0), ("xla", 150.0))]
    _, findings = findings_of(records, tmp_path, device="t4")
    family = next(f for f in findings if f.key == "family-abs")
    assert set(family.tables[0].frame["device"]) == {"t4"}
    assert family.charts[0].static_filter == {"device": "t4", "resolution": 224}


def test_gflops_finding_says_which_peak_each_row_used(tmp_path: Path) -> None:
    records = [make_record(model="c", accelerator="cpu"), make_record(model="g")]
    with ResultStore(tmp_path / "r.db") as store:
        store.save_many(records)
        store.put_peaks("e1", [{"dtype": "fp32", "gflops_s": 1640.0},
                               {"dtype": "bf16", "gflops_s": 8200.0}])
    findings = build_findings(load_results(tmp_path / "r.db"), ReportOptions())
    gflops = next(f for f in findings if f.key == "gflops")
    runs, peaks = gflops.tables
    assert "peak_source" in {c.key for c in runs.columns}
    sources = dict(zip(runs.frame["model"], runs.frame["peak_source"], strict=True))
    assert sources == {"c": "measured matmul fp32", "g": "datasheet"}
    (chart,) = gflops.charts
    assert "datasheet (a100)" in chart.note and "measured matmul fp32 (test cpu)" in chart.note
    assert {line.y for line in chart.hlines} == {19500.0, 1640.0}
    measured = peaks.frame[peaks.frame["peak_source"] == "measured matmul fp32"]
    assert measured[["device", "peak_tflops"]].values.tolist() == [["test cpu", 1.64]]


def test_write_report_to_a_new_nested_folder(tmp_path: Path) -> None:
    results = load_results(_db_with(tmp_path, [make_record()]))
    files = write_report(results, tmp_path / "a" / "b", ReportOptions(), "r.db")
    assert files.index_html.exists() and files.findings_md.exists() and files.pngs


def _db_with(tmp_path: Path, records: list[Record]) -> Path:
    with ResultStore(tmp_path / "r.db") as store:
        store.save_many(records)
    return tmp_path / "r.db"


BLOCKER = """
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {blocked!r}:
            with open({log!r}, 'a') as log:
                log.write(name + '\\n')
            raise ImportError('blocked for this test: ' + name)
sys.meta_path.insert(0, _Block())
"""


def test_report_builds_without_any_framework(run_cli, tmp_path: Path) -> None:
    db = _db_with(tmp_path, grid_records()[:20])
    hide = tmp_path / "hide"
    hide.mkdir()
    log = tmp_path / "attempts.log"
    (hide / "sitecustomize.py").write_text(BLOCKER.format(blocked=set(FRAMEWORKS), log=str(log)))
    result = run_cli("report", "--db", str(db), "--out", str(tmp_path / "out"),
                     env={"PYTHONPATH": str(hide)})
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "index.html").exists()
    assert not log.exists(), f"tried to import: {log.read_text()}"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["report", "--db", "missing.db"], "no database at missing.db"),
        (["report", "--db", "{db}", "--backend", "jax", "--baseline", "graph"],
         "backend jax has no baseline mode 'graph'"),
        (["report", "--db", "{db}", "--top", "0"], "top must be positive"),
        (["report", "--db", "{db}", "--out", "{db}"], "it is a file, not a folder"),
    ],
)
def test_report_cli_errors_are_one_line(run_cli, tmp_path: Path, args: list[str],
                                        fragment: str) -> None:
    db = _db_with(tmp_path, [])
    result = run_cli(*(a.format(db=db) for a in args))
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0] and "Traceback" not in result.stderr


def test_report_cli_end_to_end(run_cli, tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    assert run_cli("import", str(STUDY_CSV), "--db", str(db)).returncode == 0
    result = run_cli("report", "--db", str(db), "--out", "rep", "--backend", "tensorflow",
                     "--baseline", "graph", "--top", "3")
    assert result.returncode == 0, result.stderr
    markdown = (tmp_path / "rep" / "findings.md").read_text()
    assert "Top-3 models" in markdown and "tensorflow xla vs graph" in markdown
    assert len(pd.read_csv(STUDY_CSV)) == 36


@pytest.mark.parametrize(
    ("column", "row", "text"),
    [
        (Column("v", "v", "sps", ci=("lo", "hi")), {"v": 10.0, "lo": 9.0, "hi": 11.5},
         "10.0 [9.0, 11.5]"),
        (Column("v", "v", "sps", ci=("lo", "hi")), {"v": 10.0, "lo": None, "hi": None}, "10.0"),
        (Column("v", "v", "ratio"), {"v": 2.0}, "2.00x"),
        (Column("v", "v", "pct"), {"v": 12.34}, "+12.3%"),
        (Column("v", "v", "noise"), {"v": pd.NA}, "n/a (no CI)"),
        (Column("v", "v", "noise"), {"v": True}, "within noise"),
        (Column("v", "v", "parity"), {"v": 0.0}, "FAIL"),
        (Column("v", "v", "parity"), {"v": float("nan")}, "–"),
        (Column("v", "v", "int"), {"v": float("inf")}, "∞"),
        (Column("v", "v"), {}, "–"),
    ],
)
def test_table_cells(column: Column, row: dict, text: str) -> None:
    assert cell(column, row) == text


# ----------------------------------------------------- one result, read the same way everywhere
#: resnet50_v1 on TF XLA, a100, 224 px, batch 4 in the fixtures' grid: 100 x 2 (a100) x 1.8 (XLA)
#: samples/s, with its one process's own interval of +-2% (make_record).
KNOWN_RESULT = ("resnet50_v1", "tensorflow", "xla", "a100", "224", "4")
TABLE_KEYS = ("model", "backend", "mode", "device", "res", "batch")  # `xlabench results`
CSV_KEYS = ("model", "backend", "mode", "device", "resolution", "batch_size")  # results-csv
KNOWN_FIGURE = "360.0 [352.8, 367.2]"


def _fixed_width_rows(table: str) -> list[dict[str, str]]:
    """`xlabench results`' table as dicts: the dashes under the header give each column's span."""
    header, dashes, *rows = table.splitlines()
    spans = [m.span() for m in re.finditer(r"-+", dashes)]
    spans[-1] = (spans[-1][0], None)  # the last column runs to the end of its line
    names = [header[a:b].strip() for a, b in spans]
    return [{n: row[a:b].strip() for n, (a, b) in zip(names, spans, strict=True)} for row in rows]


def test_every_result_reads_the_same_in_results_and_results_csv(
    run_cli, built_report: Built
) -> None:
    """Each timed-loop result of the database (re-runs, repeats and failures included), joined
    by id: the `results` table shows exactly the figure and interval results-csv exports."""
    listed = run_cli("results", "--db", str(built_report.db))
    exported = run_cli("export", "--db", str(built_report.db), "--format", "results-csv",
                       "--out", "-")
    assert listed.returncode == 0 and exported.returncode == 0, listed.stderr + exported.stderr
    table = {row["id"]: row for row in _fixed_width_rows(listed.stdout)}
    checked = 0
    for row in csv.DictReader(io.StringIO(exported.stdout)):
        if row["status"] != "ok" or row.get("scenario"):
            continue
        figure, low, high = (row[k] for k in (
            "throughput_sps", "throughput_sps_ci_low", "throughput_sps_ci_high"))
        # an imported row of the study's CSV has a figure and no interval
        want = f"{float(figure):.1f}" + (f" [{float(low):.1f}, {float(high):.1f}]"
                                         if low and high else "")
        assert table[row["id"]]["samples/s [CI]"] == want
        checked += 1
    assert checked >= 10


def test_one_result_reads_the_same_in_results_export_and_report(
    run_cli, built_report: Built
) -> None:
    """The figure and interval of one known result, as each reader shows it: the `results`
    table's row, results-csv's figure and interval columns, the report's tables (the grid holds
    this interval once, so finding it is finding this result's row)."""
    listed = run_cli("results", "--db", str(built_report.db), "--model", KNOWN_RESULT[0])
    exported = run_cli("export", "--db", str(built_report.db), "--format", "results-csv",
                       "--out", "-")
    assert listed.returncode == 0 and exported.returncode == 0, listed.stderr + exported.stderr
    table_row = next(r for r in _fixed_width_rows(listed.stdout)
                     if tuple(r[k] for k in TABLE_KEYS) == KNOWN_RESULT)
    csv_row = next(r for r in csv.DictReader(io.StringIO(exported.stdout))
                   if tuple(r[k] for k in CSV_KEYS) == KNOWN_RESULT)
    shown = {
        "results": "  ".join(table_row.values()),
        "results-csv": (f"{csv_row['throughput_sps']} [{csv_row['throughput_sps_ci_low']}, "
                        f"{csv_row['throughput_sps_ci_high']}]"),
        "findings.md": (built_report.out / "findings.md").read_text(),
        "index.html": (built_report.out / "index.html").read_text(),
    }
    expected = {"results": KNOWN_FIGURE, "results-csv": KNOWN_FIGURE,
                "findings.md": md_text(KNOWN_FIGURE), "index.html": f"<td>{KNOWN_FIGURE}</td>"}
    missing = {view: shown[view][:300] for view, want in expected.items()
               if want not in shown[view]}
    assert not missing, f"{KNOWN_FIGURE} is not shown by: {missing}"


def test_a_process_without_interference_figures_is_not_flagged_in_the_report(
    built_report: Built
) -> None:
    """make_record has no interference figures (as where /proc cannot be read): nothing is
    flagged (docs/method.md), and `results` shows no flag for it; the report must agree."""
    markdown = (built_report.out / "findings.md").read_text()
    rows = [line for line in markdown.splitlines() if md_text(KNOWN_FIGURE) in line]
    assert rows
    flagged = [row for row in rows if "FLAGGED" in row or "under interference" in row]
    assert not flagged, flagged[0]
