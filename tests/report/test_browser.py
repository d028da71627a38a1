"""The page in a real browser: Debian's Chromium driven by Playwright."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ARTIFACTS
from tests.report.conftest import Built
from xlabench.analysis import load_results
from xlabench.report import ReportOptions, build_findings
from xlabench.report.charts import ChartSpec, visible_rows

pytestmark = pytest.mark.browser
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
SCREENSHOT = ARTIFACTS / "report-browser.png"
CHART_STATE = """() => Array.from(document.querySelectorAll('div.chart')).map(div => ({
    key: div.dataset.chart,
    points: Number(div.getAttribute('data-points')),
    svg: div.querySelectorAll('svg.main-svg').length,
    traces: (div.data || []).length,
    drawn: div.querySelectorAll('.scatterlayer .trace, .barlayer .trace').length,
    xs: (div.data || []).reduce((n, t) => n + t.x.length, 0),
    data: JSON.stringify(div.data || []),
}))"""


@pytest.fixture(scope="module")
def page(built_report: Built, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    # `make test` installs Chromium (`make browser`); a missing browser is a failure, not a skip.
    assert CHROMIUM.exists(), "needs Debian's Chromium: `make browser` installs it"
    from playwright import sync_api
    profile = tmp_path_factory.mktemp("chromium-profile")  # a fresh user-data-dir
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True,
            viewport={"width": 1400, "height": 1000},
        )
        page = context.new_page()
        page.problems = []  # console errors and uncaught exceptions
        page.requests = []
        page.on("console", lambda m: m.type == "error" and page.problems.append(m.text))
        page.on("pageerror", lambda e: page.problems.append(str(e)))
        page.on("request", lambda r: page.requests.append(r.url))
        page.goto((built_report.out / "index.html").as_uri())
        page.wait_for_selector("body[data-rendered='1']", timeout=60_000)
        yield page
        context.close()


@pytest.fixture(scope="module")
def charts(built_report: Built) -> dict[str, ChartSpec]:
    findings = build_findings(load_results(built_report.db), ReportOptions())
    return {c.key: c for f in findings for c in f.charts}


def test_page_loads_without_errors_or_network(page: Any, built_report: Built) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOT))
    assert page.problems == []
    assert page.requests == [(built_report.out / "index.html").as_uri()]
    assert page.evaluate("() => [window.__xss, document.scripts.length]") == [None, 3]


def test_every_chart_renders_what_python_computes(page: Any, charts: dict) -> None:
    state = page.evaluate(CHART_STATE)
    assert {s["key"] for s in state} == set(charts)
    for chart in state:
        expected = len(visible_rows(charts[chart["key"]], {}))
        assert chart["svg"] >= 1 and chart["points"] == expected > 0, chart["key"]
        assert chart["traces"] >= 1 and chart["drawn"] == chart["traces"], chart["key"]
        assert chart["xs"] == expected, chart["key"]


def test_values_reach_plotly_escaped(page: Any) -> None:
    top = next(s for s in page.evaluate(CHART_STATE) if s["key"] == "top-models")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in top["data"]
    assert "<script>" not in top["data"]


def test_hover_shows_a_label(page: Any) -> None:
    page.locator("#chart-top-models .scatterlayer .point").first.hover(force=True)
    page.wait_for_selector("#chart-top-models .hoverlayer .hovertext", timeout=10_000)
    hover = page.locator("#chart-top-models .hoverlayer").text_content() or ""  # SVG: no innerText
    assert "samples/s" in hover and "provenance" in hover


def test_a_filter_changes_the_charts_and_tables(page: Any, charts: dict) -> None:
    before = {s["key"]: s["points"] for s in page.evaluate(CHART_STATE)}
    page.select_option("select[data-filter=device]", "t4")
    page.wait_for_selector("body[data-rendered='2']", timeout=60_000)
    after = {s["key"]: s for s in page.evaluate(CHART_STATE)}
    for key, chart in charts.items():
        wanted = {"device": "t4"} if "device" in chart.filter_columns() else {}
        assert after[key]["points"] == len(visible_rows(chart, wanted)), key
        assert after[key]["xs"] == after[key]["points"], key
    assert after["top-models"]["points"] < before["top-models"]
    shown = page.evaluate("""() => Array.from(document.querySelectorAll(
        '#top-models tbody tr')).filter(tr => !tr.hidden).map(tr => tr.dataset.fDevice)""")
    assert shown and set(shown) == {"t4"}
    page.screenshot(path=str(SCREENSHOT.with_name("report-browser-t4.png")))
    page.click("#reset-filters")
    page.wait_for_selector("body[data-rendered='3']", timeout=60_000)
    assert {s["key"]: s["points"] for s in page.evaluate(CHART_STATE)} == before
    assert page.problems == []


def test_chromium_is_debians() -> None:
    assert shutil.which("chromium") == str(CHROMIUM)


LATENCY_PICKS = """() => Array.from(document.querySelector(
    'input[data-bound-input=latency_ms_p99]').closest('.table-wrap').querySelectorAll(
    'tbody tr')).filter(tr => !tr.hidden).map(tr => tr.children[4].textContent)"""


def _deploy_page(page: Any, tmp_path: Path, records: list[Any]) -> tuple[Any, Any, list[str]]:
    """The deployment finding of `records` rendered alone in a new tab of the browser: (the
    finding, the tab, the page errors it raised)."""
    from tests.report.test_analysis import frame
    from xlabench.report.findings.deploy import deploy_finding
    from xlabench.report.html import html_page
    from xlabench.report.model import Context

    results = frame(records)
    finding = deploy_finding(Context(results, ReportOptions(), results.iloc[:0], None, None))
    html = tmp_path / "deploy.html"
    html.write_text(html_page([finding], [], "deploy"), encoding="utf-8")
    tab = page.context.new_page()
    problems: list[str] = []
    tab.on("pageerror", lambda e: problems.append(str(e)))
    tab.goto(html.as_uri())
    tab.wait_for_selector("body[data-rendered='1']", timeout=60_000)
    return finding, tab, problems


def test_the_latency_bound_changes_the_pick(page: Any, tmp_path: Path) -> None:
    from tests.report.conftest import deploy_records

    _, deploy, problems = _deploy_page(page, tmp_path, deploy_records())
    assert deploy.evaluate(LATENCY_PICKS) == ["tensorflow/xla fp32"]  # the 10 ms default
    deploy.fill("input[data-bound-input=latency_ms_p99]", "25")
    assert deploy.evaluate(LATENCY_PICKS) == ["onnxruntime/compiled fp32"]
    deploy.fill("input[data-bound-input=latency_ms_p99]", "6")
    assert deploy.evaluate(LATENCY_PICKS) == ["tensorflow/eager fp32"]
    deploy.fill("input[data-bound-input=latency_ms_p99]", "1")
    assert deploy.evaluate(LATENCY_PICKS) == []
    deploy.close()
    assert problems == []


DEPLOY_TABLES = """() => Array.from(document.querySelectorAll('#deploy .table-wrap')).map(
    wrap => ({title: wrap.previousElementSibling.textContent,
              rows: Array.from(wrap.querySelectorAll('tbody tr')).filter(tr => !tr.hidden)
                  .map(tr => Array.from(tr.children).map(td => td.textContent))}))"""


def test_the_deployment_section_opens_with_the_server_rate(page: Any, tmp_path: Path) -> None:
    """Scenario and bf16 results (tests/report/scenario_records.py): the page shows the
    Server table first, with the cells Python computed from the stored results."""
    from tests.report.scenario_records import scenario_records

    finding, deploy, problems = _deploy_page(page, tmp_path, scenario_records())
    shown = deploy.evaluate(DEPLOY_TABLES)
    deploy.close()
    assert [t["title"] for t in shown[:5]] == [t.title for t in finding.tables[:5]]
    assert shown[0]["title"] == "Highest Server rate with p99 within the bound"
    for on_page, table in zip(shown[:5], finding.tables[:5], strict=True):
        assert on_page["rows"] == table.cells(), table.title
    assert shown[0]["rows"][0][4] == "openvino/compiled bf16"
    assert problems == []
