"""Bad input gets one clear line on stderr, a non-zero exit and no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest


def _assert_one_clear_line(result, fragment: str) -> None:
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("xlabench: error:")
    assert fragment in lines[0]
    assert "Traceback" not in result.stderr + result.stdout


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["run", "resnet5"], "did you mean resnet50_v1"),
        (["run", "inception_v3", "--resolution", "60"], "at least 75"),
        (["run", "nasnet_large", "--resolution", "224"], "fixed at 331"),
        (["run", "resnet50", "--resolution", "99999"], "resolution must be an integer"),
        (["run", "resnet50", "--batch-size", "0"], "batch size must be"),
        (["run", "resnet50", "--batch-size", "many"], "batch size must be an integer"),
        (["run", "resnet50", "--backend", "mxnet"], "invalid choice"),
        (["run", "resnet50", "--backend", "jax", "--mode", "graph"], "has no mode 'graph'"),
        (["run", "resnet50", "--timeout", "-1"], "timeout must be positive"),
        (["results", "--db", "missing.db"], "no database at missing.db"),
        (["models", "--family", "NoSuchNet"], "unknown family"),
        (["frobnicate"], "invalid choice"),
        (["run", "regnetx_002", "--weights", "imagenet"], "only keras.applications models"),
        # 0 is a value given, not "not given": the same line as -5
        (["run", "resnet50_v1", "--resolution", "0"], "resolution must be an integer from 16"),
        (["run", "resnet50_v1", "--resolution", "-5"], "resolution must be an integer from 16"),
        (["run", "resnet50_v1", "--mode", ""], "has no mode ''"),
        (["run", "resnet50_v1", "--processes", "0"], "processes must be >= 1"),
        (["run", "resnet50_v1", "--processes", "4", "--max-processes", "3"],
         "max processes (3) must be >= processes (4)"),
        (["run", "resnet50_v1", "--result-target-ci", "0"], "result target CI must be positive"),
        (["run", "resnet50_v1", "--rerun-flagged", "x"], "rerun flagged must be an integer"),
        (["sweep", "--models", "resnet50_v1", "--processes", "0"], "processes must be >= 1"),
        (["sweep", "--models", "resnet50_v1", "--result-budget", "-1"],
         "result budget must be positive"),
        (["sweep", "--models", "resnet50_v1", "--resolutions", "0", "--dry-run"],
         "resolution must be an integer from 16"),
    ],
)
def test_bad_input_one_line(run_cli, args: list[str], fragment: str) -> None:
    _assert_one_clear_line(run_cli(*args), fragment)


def test_foreign_db_is_refused_and_untouched(run_cli, tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("my notes, not a database\n")
    result = run_cli("results", "--db", str(path))
    _assert_one_clear_line(result, "not an xlabench database")
    assert path.read_text() == "my notes, not a database\n"
    result = run_cli("run", "mobilenet_v3_small", "--resolution", "32", "--db", str(path))
    _assert_one_clear_line(result, "not an xlabench database")
    assert path.read_text() == "my notes, not a database\n"


def test_missing_framework_says_how_to_install(run_cli, tmp_path: Path) -> None:
    # A real interpreter where torch cannot be imported: a sitecustomize that hides it.
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(
        "import sys\nclass _Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch' or name.startswith('torch.'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, _Hide())\n"
    )
    result = run_cli("run", "mobilenet_v3_small", "--backend", "torch", "--resolution", "32",
                     env={"PYTHONPATH": str(hide)})
    _assert_one_clear_line(result, "pip install")


def test_models_csv_has_the_required_columns(run_cli) -> None:
    result = run_cli("models", "--format", "csv")
    assert result.returncode == 0
    header = result.stdout.splitlines()[0].split(",")
    for column in ("name", "family", "kind", "source", "default_resolution", "params"):
        assert column in header


@pytest.mark.slow
def test_imagenet_weights_fail_with_one_line_when_downloads_are_impossible(run_cli) -> None:
    # conftest sets XLABENCH_OFFLINE: the worker refuses before touching the network.
    result = run_cli("run", "mobilenet_v3_small", "--weights", "imagenet", "--backend", "jax",
                     "--mode", "eager", "--db", "w.db")
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.startswith("xlabench:")]
    assert len(lines) == 1 and "cannot load ImageNet weights" in lines[0], result.stderr
    assert "downloads are disabled" in lines[0]
