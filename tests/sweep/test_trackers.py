"""W&B (offline) and MLflow (local sqlite) for real: each stored record becomes one run."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.sweep.conftest import ScriptedExecutor, wandb_run
from xlabench.core import Status
from xlabench.sweep import build_config, run_sweep

pytest.importorskip("wandb")
pytest.importorskip("mlflow")


def _config(tmp_path: Path, **extra):
    return build_config(overrides={
        "models": "mobilenet_v3_small,resnet50", "resolutions": "32", "backends": "jax",
        "db": str(tmp_path / "r.db"), **extra,
    })


def test_wandb_offline_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            record_factory) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    executor = ScriptedExecutor(record_factory, fail={"resnet50_v1": Status.OOM})
    out = io.StringIO()
    summary = run_sweep(_config(tmp_path, log_wandb=True), out, executor=executor, tty=False)
    assert summary.tracker_failures == {}, out.getvalue()
    runs = [wandb_run(f) for f in sorted(tmp_path.glob("wandb/offline-run-*/run-*.wandb"))]
    assert len(runs) == 4
    by_name = {}
    for run in runs:
        by_name.setdefault(run["name"], []).append(run)
    assert set(by_name) == {
        "mobilenet_v3_small@xla-False@res-32@device-a100",
        "mobilenet_v3_small@xla-True@res-32@device-a100",
        "resnet50_v1@xla-False@res-32@device-a100",
        "resnet50_v1@xla-True@res-32@device-a100",
    }
    [ok] = by_name["mobilenet_v3_small@xla-True@res-32@device-a100"]
    assert ok["config"]["backend"] == "jax" and ok["config"]["mode"] == "xla"
    assert ok["config"]["status"] == "ok" and ok["config"]["resolution"] == 32
    assert ok["metrics"]["throughput_sps"] == pytest.approx(100.0)  # 3 processes combined
    assert ok["metrics"]["processes"] == 3
    assert ok["metrics"]["gmacs_per_image"] == pytest.approx(4.1)
    for key in ("throughput_ci_low_sps", "throughput_ci_high_sps", "latency_ms_p50",
                "compile_s", "params"):
        assert key in ok["metrics"], key
    [failed] = by_name["resnet50_v1@xla-False@res-32@device-a100"]
    assert failed["config"]["status"] == "oom" and "throughput_sps" not in failed["metrics"]


def test_mlflow_runs_read_back(tmp_path: Path, record_factory) -> None:
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = io.StringIO()
    summary = run_sweep(_config(tmp_path, log_mlflow=uri), out,
                        executor=ScriptedExecutor(record_factory), tty=False)
    assert summary.tracker_failures == {}, out.getvalue()
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("xlabench")
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 4
    names = {r.info.run_name for r in runs}
    assert "resnet50_v1@xla-True@res-32@device-a100" in names
    run = next(r for r in runs if r.info.run_name == "mobilenet_v3_small@xla-False@res-32@"
               "device-a100")
    assert run.data.params["backend"] == "jax" and run.data.params["mode"] == "eager"
    assert run.data.params["batch_size"] == "4" and run.data.tags["status"] == "ok"
    assert run.data.metrics["throughput_sps"] == pytest.approx(100.0)
    assert run.data.metrics["gmacs_per_image"] == pytest.approx(4.1)
    assert run.info.status == "FINISHED"
