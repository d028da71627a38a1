"""Experiment trackers: each configuration's result also becomes a W&B run and/or an MLflow run:
the store's row of the result (`ResultStore.result_rows`: its figure and interval as stored,
beside its latest process's other columns).

Trackers are a copy for convenience; the SQLite db is the record of truth. So a tracker that
fails (not installed, no network, bad URI) costs one warning line and never the sweep.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any, Protocol

from xlabench.core import one_line

Warn = Callable[[str], None]
WANDB_PROJECT = "xlabench"
MLFLOW_EXPERIMENT = "xlabench"


#: A result as the store reads it (`ResultStore.result_rows`).
ResultRow = dict[str, Any]


class Tracker(Protocol):
    name: str

    def log(self, row: ResultRow) -> None:
        """Log one result as one run; may raise (the caller counts and warns)."""

    def close(self) -> None: ...


def run_name(row: ResultRow) -> str:
    """The study's run name: ``{variant}@xla-{True|False}@res-{resolution}@device-{device}``."""
    return (f"{row['model']}@xla-{bool(row['compiled'])}@res-{row['resolution']}"
            f"@device-{row['accelerator']}")


def run_config(row: ResultRow, sweep_id: str) -> dict[str, Any]:
    """What identifies the run: the spec (backend and mode included) and its outcome."""
    return {
        "variant": row["model"], "family": row["family"], "kind": row["kind"],
        "backend": row["backend"], "mode": row["mode"], "xla": bool(row["compiled"]),
        "resolution": row["resolution"], "batch_size": row["batch_size"],
        "precision": row["precision"], "weights": row["weights"], "tf32": bool(row["tf32"]),
        "seed": row["seed"], "repeat": row["repeat"],
        "device": row["device"], "status": row["status"],
        "error": row["error"] or "", "spec_id": row["spec_id"], "env_id": row["env_id"],
        "sweep_id": sweep_id, "interference_flagged": bool(row["interference"]),
        "ci_method": row["ci_method"],
    }


#: The numbers of a run: (metric, the result row's column).
_METRICS = (
    ("duration_s", "duration_s"), ("throughput_sps", "throughput_sps"),
    ("throughput_ci_low_sps", "throughput_sps_ci_low"),
    ("throughput_ci_high_sps", "throughput_sps_ci_high"),
    ("rel_ci_halfwidth", "rel_ci_halfwidth"), ("batch_time_ms", "batch_time_ms"),
    ("latency_ms_p50", "latency_ms_p50"), ("latency_ms_p90", "latency_ms_p90"),
    ("latency_ms_p99", "latency_ms_p99"), ("compile_s", "compile_s"),
    ("first_call_s", "first_call_s"), ("params", "params"), ("processes", "processes"),
)


def run_metrics(row: ResultRow) -> dict[str, float]:
    """The numbers: throughput with its CI, latency, compile time, params, GMACs per image."""
    metrics: dict[str, Any] = {name: row.get(column) for name, column in _METRICS}
    macs = row.get("macs_per_image")
    metrics["gmacs_per_image"] = None if macs is None else macs / 1e9
    return {k: float(v) for k, v in metrics.items() if v is not None}


class WandbTracker:
    """One offline-or-online W&B run per record (WANDB_MODE, WANDB_DIR are honoured)."""

    name = "wandb"

    def __init__(self, sweep_id: str, project: str | None = None) -> None:
        import wandb

        self._wandb = wandb
        self.sweep_id = sweep_id
        self.project = project or os.environ.get("WANDB_PROJECT") or WANDB_PROJECT

    def log(self, row: ResultRow) -> None:
        wandb = self._wandb
        run = wandb.init(
            project=self.project, name=run_name(row), group=f"sweep-{self.sweep_id}",
            config=run_config(row, self.sweep_id), reinit="create_new",
            settings=wandb.Settings(console="off", silent=True, x_disable_stats=True),
        )
        try:
            run.log(run_metrics(row))
        finally:
            run.finish(exit_code=0 if row["status"] == "ok" else 1)

    def close(self) -> None:
        pass


class MlflowTracker:
    """One MLflow run per record, through MlflowClient (no global active run)."""

    name = "mlflow"

    def __init__(self, sweep_id: str, uri: str | None = None) -> None:
        # MLflow and alembic log INFO lines (database migrations) on stderr, which would tear
        # the progress bar; this process only needs their warnings.
        for logger in ("mlflow", "alembic"):
            logging.getLogger(logger).setLevel(logging.WARNING)
        from mlflow import MlflowClient

        self.sweep_id = sweep_id
        self.client = MlflowClient(tracking_uri=uri or None)
        found = self.client.get_experiment_by_name(MLFLOW_EXPERIMENT)
        self.experiment_id = (found.experiment_id if found
                              else self.client.create_experiment(MLFLOW_EXPERIMENT))

    def log(self, row: ResultRow) -> None:
        import time

        from mlflow.entities import Metric, Param

        config = run_config(row, self.sweep_id)
        tags = {k: str(config[k]) for k in ("status", "spec_id", "env_id", "sweep_id", "backend",
                                           "mode")}
        run = self.client.create_run(self.experiment_id, run_name=run_name(row), tags=tags)
        now_ms = int(time.time() * 1000)
        params = [Param(k, str(v)[:500]) for k, v in config.items()]
        metrics = [Metric(k, v, now_ms, 0) for k, v in run_metrics(row).items()]
        try:
            self.client.log_batch(run.info.run_id, metrics=metrics, params=params)
        finally:
            self.client.set_terminated(run.info.run_id,
                                       "FINISHED" if row["status"] == "ok" else "FAILED")

    def close(self) -> None:
        pass


class Trackers:
    """The enabled trackers; failures are counted and warned about once per tracker."""

    def __init__(self, trackers: list[Tracker], warn: Warn) -> None:
        self._trackers = trackers
        self._warn = warn
        self.failures: dict[str, int] = {}

    @classmethod
    def open(cls, sweep_id: str, wandb: bool, mlflow_uri: str | None, warn: Warn) -> Trackers:
        """Start the trackers asked for; one that cannot start is a warning, not an error."""
        makers: list[tuple[str, Callable[[], Tracker]]] = []
        if wandb:
            makers.append(("wandb", lambda: WandbTracker(sweep_id)))
        if mlflow_uri is not None:
            makers.append(("mlflow", lambda: MlflowTracker(sweep_id, mlflow_uri)))
        started: list[Tracker] = []
        for name, make in makers:
            try:
                started.append(make())
            except Exception as exc:  # noqa: BLE001 (a tracker never stops the sweep)
                warn(f"{name} logging is off: {one_line(exc)}")
        return cls(started, warn)

    def log(self, row: ResultRow) -> None:
        for tracker in self._trackers:
            try:
                tracker.log(row)
            except Exception as exc:  # noqa: BLE001 (a tracker never stops the sweep)
                count = self.failures.get(tracker.name, 0)
                self.failures[tracker.name] = count + 1
                if count == 0:
                    self._warn(f"{tracker.name} could not log {run_name(row)}: "
                               f"{one_line(exc)} (the sweep goes on; failures are counted)")

    def close(self) -> None:
        for tracker in self._trackers:
            try:
                tracker.close()
            except Exception as exc:  # noqa: BLE001 (a tracker never stops the sweep)
                self._warn(f"{tracker.name} did not close cleanly: {one_line(exc)}")

