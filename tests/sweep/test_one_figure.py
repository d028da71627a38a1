"""One figure per result: `results`, `export`, the report, the trackers and `compare` show
the figure the sweep stored, identically.

The database is made by real sweeps (scripted workers): re-runs of a configuration, flagged
processes, repeats, results stored under two policies, a row from before results had
processes, and a result whose processes were stored without a figure."""

from __future__ import annotations

import csv
import io
import math
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import make_record
from tests.sweep.conftest import ScriptedExecutor
from xlabench.analysis import load_results
from xlabench.analysis.result_rows import every_result, latest_per_config
from xlabench.core import Spec
from xlabench.core.record import ProcessInfo
from xlabench.core.result import ResultPolicy
from xlabench.store import ResultStore
from xlabench.store.export import results_csv
from xlabench.sweep import build_config, run_result, run_sweep

pytest.importorskip("pandas")

FIGURE = ("throughput_sps", "throughput_sps_ci_low", "throughput_sps_ci_high")


def _script(spec: Spec, n: int) -> tuple[float, float]:
    """Process n of a spec: a throughput that differs by model, mode, repeat and process, and
    every fourth process measured under interference (others used 40% of its CPUs)."""
    base = {"eager": 40.0, "xla": 90.0}[spec.mode] * (2.0 if "mobilenet" in spec.model else 1.0)
    wobble = 1.0 + 0.03 * math.sin(7 * n + spec.repeat + len(spec.model))
    flagged = n % 4 == 3
    return base * wobble * (0.5 if flagged else 1.0), 0.4 if flagged else 0.0


def _sweep(db: Path, record_factory, **overrides: object) -> None:
    config = build_config(overrides={
        "models": "mobilenet_v3_small,resnet50", "resolutions": "32", "backends": "jax",
        "db": str(db), **overrides})
    executor = ScriptedExecutor(record_factory, script=_script)
    run_sweep(config, io.StringIO(), executor=executor, tty=False)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.conftest import make_record as record_factory

    path = tmp_path_factory.mktemp("one-figure") / "r.db"
    _sweep(path, record_factory)  # three processes each, the default policy
    _sweep(path, record_factory, processes=2, repeats=2)  # repeats, a policy of two
    executor = ScriptedExecutor(record_factory, script=_script)
    with ResultStore(path) as store:
        for spec in _specs(path)[:3]:  # `xlabench run` re-runs, another policy
            for _ in range(3):
                run_result(spec, store, ResultPolicy(min_processes=4, max_processes=6),
                           io.StringIO(), 60.0, executor=executor)
        store.save(make_record(model="vgg16", family="VGG", throughput=30.0))  # v1-style row
        orphan = make_record(model="vgg19", family="VGG", throughput=20.0)
        store.save(orphan.replace(process=ProcessInfo(result_id="orphan", index=0)))
    return path


def _specs(db: Path) -> list[Spec]:
    with ResultStore(db) as store:
        found = {r.spec_id: r.spec for r in store.records() if r.spec.repeat == 0}
    return list(found.values())


def _store_figures(db: Path) -> dict[str, tuple[float, ...]]:
    with ResultStore(db) as store:
        return {_key(r): tuple(r[c] for c in FIGURE) for r in store.result_rows(status="ok")}


def _key(row: dict) -> str:
    result_id = row["result_id"]
    return result_id if isinstance(result_id, str) and result_id else f"row{row['id']}"


def test_the_database_holds_what_the_figure_rules_are_about(db: Path) -> None:
    with ResultStore(db) as store:
        results = store.combined()
    assert len({r.spec_id for r in results}) < len(results)  # re-runs
    assert any(r.k_flagged for r in results)  # flagged processes left out
    assert any(r.drift_rel_sd is not None for r in results)  # intervals hold the drift
    assert {r.target_rel_ci for r in results} == {0.05}
    with sqlite3.connect(db) as conn:
        policies = {row[0] for row in conn.execute("SELECT policy_json FROM combined_results")}
    assert len(policies) == 3  # results stored under three policies


def test_the_report_shows_each_result_as_stored(db: Path) -> None:
    stored = _store_figures(db)
    frame = every_result(load_results(db))
    shown = {_key(r): tuple(r[c] for c in FIGURE) for r in frame.to_dict("records")}
    assert set(shown) == set(stored)
    for key, figure in stored.items():
        assert shown[key] == pytest.approx(figure, rel=1e-12), key


def test_the_report_picks_the_latest_result_of_each_configuration(db: Path) -> None:
    stored = _store_figures(db)
    latest = latest_per_config(load_results(db))
    for row in latest.to_dict("records"):
        assert tuple(row[c] for c in FIGURE) == pytest.approx(stored[_key(row)], rel=1e-12)
    assert len(latest) == len(latest.drop_duplicates(["model", "backend", "mode"]))


def test_the_export_shows_each_result_as_stored(db: Path) -> None:
    stored = _store_figures(db)
    with ResultStore(db) as store:
        text = results_csv(store.result_rows(status="ok"))
    exported = {_key(r): tuple(float(r[c]) for c in FIGURE)
                for r in csv.DictReader(io.StringIO(text))}
    assert set(exported) == set(stored)
    for key, figure in stored.items():
        assert exported[key] == pytest.approx(figure, rel=1e-12), key


def test_the_trackers_log_the_stored_figure(db: Path, tmp_path: Path) -> None:
    from xlabench.sweep.trackers import run_metrics

    with ResultStore(db) as store:
        for result in store.combined(status="ok"):
            (row,) = store.result_rows(result_id=result.result_id)  # what a sweep logs
            metrics = run_metrics(row)
            logged = (metrics["throughput_sps"], metrics["throughput_ci_low_sps"],
                      metrics["throughput_ci_high_sps"], metrics["processes"])
            assert logged == (result.median_sps, result.ci_low_sps, result.ci_high_sps,
                              result.k)


def test_compare_shows_each_result_as_stored(db: Path, tmp_path: Path) -> None:
    import json
    import shutil
    import subprocess
    import sys

    stored = _store_figures(db)
    copy = shutil.copy(db, tmp_path / "copy.db")  # the same results on both sides
    done = subprocess.run([sys.executable, "-m", "xlabench.cli.main", "compare", str(db),
                           str(copy), "--format", "json"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    pairs = json.loads(done.stdout)["pairs"]
    with ResultStore(db) as store:
        latest = {r.spec_id: r.result_id for r in store.combined(status="ok", complete=1)}
    assert len(pairs) == len(latest)
    for pair in pairs:
        figure = stored[latest[pair["spec_id"]]]  # each side: the latest result of the spec
        for side in ("baseline", "new"):
            shown = (pair[side]["sps"], pair[side]["ci_low"], pair[side]["ci_high"])
            assert shown == pytest.approx(figure, rel=1e-12)
