"""Real sweeps through the CLI: kill -9 and resume, two pinned workers with trackers, Ray.

Each runs real workers (mobilenet_v3_small at 32, batch 1, a second of measuring) with the
model's costs pinned in the db first, so no test waits for a cost-counting process except
the costs one and the Ray one, which check that path on purpose.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.sweep.conftest import (
    MOBILENET_COSTS,
    ok_rows,
    process_env_has,
    seed_costs,
    sweep_toml,
    wandb_run,
)
from xlabench.core import Record
from xlabench.runner.worker import FAULT_ENV
from xlabench.store import ResultStore
from xlabench.sweep import build_config, expand, load_toml

pytestmark = pytest.mark.slow
MARK = "XLABENCH_TEST_SWEEP_MARK"


def _command(config: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "xlabench.cli.main", "sweep", "--config", str(config), *extra]


def _ok_per_spec(db: Path) -> dict[str, int]:
    with ResultStore(db) as store:
        rows = store.rows()
    counts: dict[str, int] = {}
    for row in rows:
        if row["status"] == "ok":
            counts[row["spec_id"]] = counts.get(row["spec_id"], 0) + 1
    return counts


def _complete_results(db: Path) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute("SELECT COUNT(*) FROM combined_results WHERE complete = 1 "
                            "AND status = 'ok'").fetchone()[0]
    finally:
        conn.close()


def test_kill_9_then_resume(tmp_path: Path) -> None:
    """Killed mid-result: the resumed sweep adds only the processes each result still needs."""
    db, config = tmp_path / "r.db", tmp_path / "sweep.toml"
    # no interference re-runs: a busy test machine must not change how many processes run
    config.write_text(sweep_toml(db, ["tensorflow", "torch"], ["eager", "graph"], processes=2,
                                 max_processes=2, rerun_flagged=0))
    seed_costs(db)
    expected = {s.spec_id() for s in expand(build_config(file_values=load_toml(config))).specs}
    assert len(expected) == 3  # tensorflow eager + graph, torch eager
    marker = uuid.uuid4().hex
    scratch = tmp_path / "tmp"  # what the killed processes cannot clean up stays in tmp_path
    scratch.mkdir()
    env = {**os.environ, MARK: marker, "TMPDIR": str(scratch)}
    sweep = subprocess.Popen(_command(config), cwd=tmp_path, env=env, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while ok_rows(db) < 1 and sweep.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sweep.poll() is None, f"the sweep ended before it could be killed: {sweep.stderr}"
    assert ok_rows(db) >= 1
    os.killpg(sweep.pid, signal.SIGKILL)  # the sweep's whole process group, mid-configuration
    sweep.wait()
    time.sleep(1.0)
    # the worker that was running had its own session; the kernel killed it with its parent
    assert process_env_has(marker) == []
    assert ok_rows(db) < 6
    done_before = _complete_results(db)

    again = subprocess.run(_command(config), cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert f"{done_before} skipped (already done)" in again.stdout
    # two processes per result, none lost, none duplicated; each result is complete
    assert _ok_per_spec(db) == {spec_id: 2 for spec_id in expected}
    assert _complete_results(db) == 3
    with ResultStore(db) as store:
        # k_total, not k: on a busy test machine a process may be flagged and left out of k
        assert {r.k_total for r in store.combined()} == {2}


def test_two_pinned_workers_with_trackers(tmp_path: Path) -> None:
    db, config = tmp_path / "r.db", tmp_path / "sweep.toml"
    config.write_text(sweep_toml(db, ["tensorflow", "torch"], ["eager"], processes=1,
                                 rerun_flagged=0))
    seed_costs(db)
    mlflow_uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path),
           "WANDB_SILENT": "true"}
    result = subprocess.run(
        _command(config, "--workers", "2", "--log-wandb", "--log-mlflow", mlflow_uri),
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert "2 done now" in result.stdout, result.stdout + result.stderr
    assert "could not log" not in result.stderr and "logging is off" not in result.stderr
    with ResultStore(db) as store:
        records = store.records()
    assert [r.status.value for r in records] == ["ok", "ok"]
    labels = {r.spec.label() for r in records}
    for record in records:
        assert record.env["cpu_threads"] == 1  # the worker saw only its own core
        assert record.env["flags"]["OMP_NUM_THREADS"] == "1"
        assert record.beside == tuple(labels - {record.spec.label()})  # ran side by side
        assert record.costs.macs_per_image == 1.2e6  # from the cache
    _check_trackers(tmp_path, mlflow_uri, records)


def _check_trackers(tmp_path: Path, mlflow_uri: str, records: list[Record]) -> None:
    from mlflow import MlflowClient

    names = {"mobilenet_v3_small@xla-False@res-32@device-cpu"}
    runs = [wandb_run(f) for f in tmp_path.glob("wandb/offline-run-*/run-*.wandb")]
    assert {r["name"] for r in runs} == names and len(runs) == 2
    assert {r["config"]["backend"] for r in runs} == {"tensorflow", "torch"}
    assert all(r["metrics"]["throughput_sps"] > 0 for r in runs)
    client = MlflowClient(tracking_uri=mlflow_uri)
    experiment = client.get_experiment_by_name("xlabench")
    mlruns = client.search_runs([experiment.experiment_id])
    assert {r.info.run_name for r in mlruns} == names and len(mlruns) == 2
    by_backend = {r.data.params["backend"]: r for r in mlruns}
    for record in records:
        run = by_backend[record.spec.backend]
        assert run.data.metrics["throughput_sps"] == pytest.approx(record.throughput.median_sps)
        assert run.data.params["spec_id"] == record.spec_id


def test_costs_are_counted_once_apart_and_a_failed_count_loses_no_result(tmp_path: Path) -> None:
    db, config = tmp_path / "r.db", tmp_path / "sweep.toml"
    config.write_text(sweep_toml(db, ["tensorflow"], ["eager"], processes=1, rerun_flagged=0))
    failing = {**os.environ, FAULT_ENV: "costs"}  # only the cost count fails
    first = subprocess.run(_command(config), cwd=tmp_path, env=failing, capture_output=True,
                           text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    assert "MACs/FLOPs not counted" in first.stderr and "injected" in first.stderr
    with ResultStore(db) as store:
        (record,) = store.records()
        assert store.get_costs("mobilenet_v3_small", 32)["macs_per_image"] is None
    assert record.ok and record.costs.params == MOBILENET_COSTS["params"]
    assert record.costs.macs_per_image is None and "injected" in record.costs.method

    config.write_text(sweep_toml(db, ["tensorflow"], ["eager", "graph"], processes=1,
                                 rerun_flagged=0))
    again = subprocess.run(_command(config), cwd=tmp_path, capture_output=True, text=True,
                           timeout=600)
    assert again.returncode == 0, again.stderr
    assert "1 skipped (already done)" in again.stdout
    with ResultStore(db) as store:
        costs = store.get_costs("mobilenet_v3_small", 32)
        graph = store.records(mode="graph")
    # counted by the second run (the failed count is tried again), in a process of its own
    assert costs["params"] == MOBILENET_COSTS["params"] and costs["macs_per_image"] > 0
    assert [r.costs.macs_per_image for r in graph] == [costs["macs_per_image"]]


@pytest.mark.ray
def test_ray_sweep_with_costs_and_resume(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    db, config = tmp_path / "r.db", tmp_path / "sweep.toml"
    config.write_text(sweep_toml(db, ["tensorflow", "torch"], ["eager"], executor="ray",
                                 ray_address="local", workers=1, processes=1,
                                 rerun_flagged=0))
    first = subprocess.run(_command(config), cwd=tmp_path, capture_output=True, text=True,
                           timeout=600)
    assert first.returncode == 0, first.stderr
    assert "2 done now" in first.stdout, first.stdout + first.stderr
    with ResultStore(db) as store:
        records = store.records()
        costs = store.get_costs("mobilenet_v3_small", 32)
    assert [r.status.value for r in records] == ["ok", "ok"]
    # counted once, by the driver before any task (a JAX process of its own), then stored
    assert costs is not None and costs["macs_per_image"] > 0
    assert all(r.costs.macs_per_image == costs["macs_per_image"] for r in records)
    env_ids = {r.env_id for r in records}
    assert len(env_ids) == 1

    again = subprocess.run(_command(config), cwd=tmp_path, capture_output=True, text=True,
                           timeout=600)
    assert again.returncode == 0, again.stderr
    assert "2 skipped (already done)" in again.stdout
    assert f"(environment {env_ids.pop()})" in again.stderr  # the workers' id, from the probe
    assert _ok_per_spec(db) == {r.spec_id: 1 for r in records}
