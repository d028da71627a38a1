"""Own models through the CLI: bad input refused in one line with nothing written; a run; a
sweep of two own models and a registry model, run again (found done) and reported."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.sweep.conftest import seed_costs
from xlabench.store import ResultStore
from xlabench.sweep import build_config, expand
from xlabench.zoo import own

FACTORY = "tests.own.factories:build_custom"
QUICK = ["--budget", "1.5", "--min-sample-time", "0.02", "--target-ci", "0.1"]


def _xlabench(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.run([sys.executable, "-m", "xlabench.cli.main", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize(("name", "extra", "fragment"), [
    ("missing.keras", [], "no model file at"),
    ("random.keras", [], "is not a Keras model file"),
    ("model.onnx", [], "is not a Keras model file"),
    ("lambda.keras", [], "pass --unsafe-load"),
    ("custom.keras", [], "pass a factory"),
    ("unregistered.keras", [], "custom class Halve"),
    ("any_size.keras", [], "give the resolution"),
    ("cnn.keras", ["--resolution", "64"], "fixed at 32x32"),
    ("cnn.keras", ["--precision", "bf16"], "dtype it was saved with"),
    ("tests.own.factories:build_not_a_model", [], "not a keras.Model"),
    ("tests.own.nothing_here:build", [], "cannot import tests.own.nothing_here"),
])
def test_bad_own_models_are_one_line_and_write_nothing(own_files: Path, tmp_path: Path,
                                                       name: str, extra: list[str],
                                                       fragment: str) -> None:
    db = tmp_path / "r.db"
    reference = name if ":" in name else str(own_files / name)
    for command in (["run", reference, *extra], ["sweep", "--models", reference, *extra]):
        if command[0] == "sweep":
            command = [c.replace("--resolution", "--resolutions")
                       .replace("--precision", "--precisions") for c in command]
        done = _xlabench(*command, "--db", str(db))
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert done.returncode == 2 and len(lines) == 1, done.stderr
        assert fragment in lines[0] and "Traceback" not in done.stderr
        assert not db.exists()


@pytest.mark.slow
def test_run_an_own_model_file_on_a_runtime(own_files: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    model = str(own_files / "cnn.keras")
    done = _xlabench("run", model, "--backend", "openvino", "--mode", "compiled",
                     "--processes", "2", "--max-processes", "2", "--rerun-flagged", "0",
                     *QUICK, "--db", str(db))
    assert done.returncode == 0, done.stderr
    name = own.resolve(model).name
    shown = _xlabench("results", "--db", str(db), "--model", model)
    assert shown.returncode == 0 and name in shown.stdout and "openvino" in shown.stdout


@pytest.mark.slow
def test_a_sweep_of_own_and_registry_models_is_found_done_again_and_reported(own_files: Path,
                                                                 tmp_path: Path) -> None:
    """Measured, then found done by the next sweep: an own model's identity (its file's hash,
    its factory's name) holds across runs. Killing a sweep mid-result and resuming it is
    test_sweep_real's; an own model on a runtime is test_run_an_own_model_file_on_a_runtime's."""
    db = tmp_path / "own.db"
    models = f"{own_files / 'cnn.keras'},{FACTORY},mobilenet_v3_small"
    command = ["sweep", "--models", models, "--resolutions", "32", "--batch-sizes", "1",
               "--backends", "jax", "--modes", "xla", "--processes", "1",
               "--max-processes", "1", "--rerun-flagged", "0", *QUICK, "--db", str(db)]
    config = build_config(overrides={"models": models, "resolutions": [32], "batch_sizes": [1],
                                     "backends": ["jax"], "modes": ["xla"]})
    assert len(expand(config).specs) == 3
    seed_costs(db)
    first = _xlabench(*command)
    assert first.returncode == 0, first.stderr
    again = _xlabench(*command)
    assert again.returncode == 0, again.stderr
    assert "3 skipped (already done)" in again.stdout, again.stdout
    with ResultStore(db) as store:
        results = store.combined()
        rows = store.rows()
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    complete = conn.execute("SELECT COUNT(*) FROM combined_results WHERE complete = 1 AND "
                            "status = 'ok'").fetchone()[0]
    conn.close()
    assert complete == 3 and {r.status for r in results} == {"ok"}
    assert {r.k_total for r in results} == {1} and len(rows) == 3
    names = {own.resolve(str(own_files / "cnn.keras")).name, own.resolve(FACTORY).name,
             "mobilenet_v3_small"}
    assert {row["model"] for row in rows} == names

    out = tmp_path / "report"
    done = _xlabench("report", "--db", str(db), "--out", str(out))
    assert done.returncode == 0, done.stderr
    html = (out / "index.html").read_text()
    assert all(name in html for name in names)
