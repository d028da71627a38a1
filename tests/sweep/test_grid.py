"""The grid: expansion, presets, TOML, flag overrides, and bad input as one clear line."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from xlabench.core import BACKEND_MODES, Spec, UserError
from xlabench.core.backends import FRAMEWORKS, RUNTIMES
from xlabench.sweep import build_config, expand, load_toml
from xlabench.sweep.presets import CLASSIFIER_KINDS, DEMO_MEASURE, GPU_MODELS
from xlabench.zoo import REGISTRY

#: The demo's pairs: the three frameworks' modes (not the deployment runtimes).
FRAMEWORK_PAIRS = {f"{b}/{m}" for b in FRAMEWORKS for m in BACKEND_MODES[b]}
ALL_PAIRS = len(FRAMEWORK_PAIRS)
#: Written out, not derived: a mode added to a runtime must be added to the presets' tests too.
RUNTIME_PAIRS = {"openvino/compiled", "onnxruntime/basic", "onnxruntime/compiled",
                 "litert/basic", "litert/compiled", "iree/compiled", "executorch/basic",
                 "executorch/compiled"}
STUDY_PAIRS = FRAMEWORK_PAIRS | RUNTIME_PAIRS


def _pairs(specs) -> Counter[str]:
    return Counter(f"{s.backend}/{s.mode}" for s in specs)


def test_cartesian_product_with_repeats() -> None:
    config = build_config(overrides={
        "models": "mobilenet_v3_small,resnet50", "resolutions": "32,default",
        "batch_sizes": ["1", "4"], "backends": "jax,torch", "repeats": 2,
    })
    grid = expand(config)
    # 2 models x 2 resolutions x 2 batches x (jax: 2 + torch: 2 modes) x 2 repeats
    assert len(grid.specs) == 2 * 2 * 2 * 4 * 2
    assert {s.repeat for s in grid.specs} == {0, 1}
    assert {s.resolution for s in grid.specs} == {32, 224}
    assert {s.model for s in grid.specs} == {"mobilenet_v3_small", "resnet50_v1"}
    assert len({s.spec_id() for s in grid.specs}) == len(grid.specs)
    # repeats outermost: every first repeat comes before any second one
    repeats = [s.repeat for s in grid.specs]
    assert repeats == sorted(repeats)


def test_mode_list_applies_per_backend() -> None:
    config = build_config(overrides={"models": "mobilenet_v3_small", "resolutions": "32",
                                     "modes": "eager,xla,compiled,graph"})
    grid = expand(config)
    asked = {"eager", "xla", "compiled", "graph"}  # the runtimes' basic is not asked for
    assert _pairs(grid.specs) == {f"{b}/{m}": 1 for b, ms in BACKEND_MODES.items() for m in ms
                                  if m in asked}
    # the reasons are Spec's own refusals (the grid keeps no copy of its rules)
    assert grid.skipped[_refusal("jax", "compiled")] == 1
    assert grid.skipped[_refusal("torch", "graph")] == 1


def _refusal(backend: str, mode: str, **fields: object) -> str:
    """What Spec says when asked for `backend`/`mode` (and `fields`)."""
    with pytest.raises(UserError) as refused:
        Spec("mobilenet_v3_small", backend, mode, 32, **fields)
    return str(refused.value)


def test_native_runner_skips_are_specs_refusals() -> None:
    config = build_config(overrides={"models": "mobilenet_v3_small", "resolutions": "32",
                                     "backends": "tensorflow,jax", "runner": "native"})
    grid = expand(config)
    assert {(s.backend, s.mode) for s in grid.specs} == {("tensorflow", "graph"),
                                                         ("tensorflow", "xla"), ("jax", "xla")}
    assert grid.skipped == {_refusal("tensorflow", "eager", runner="native"): 1,
                            _refusal("jax", "eager", runner="native"): 1}


def test_jax_first_within_each_model() -> None:
    grid = expand(build_config(overrides={"models": "mobilenet_v3_small", "resolutions": "32"}))
    assert grid.specs[0].backend == "jax"  # its worker counts the model's costs for free


def test_refused_resolution_is_skipped_and_counted() -> None:
    config = build_config(overrides={"models": "inception_v3,resnet50", "resolutions": "64",
                                     "backends": "jax"})
    grid = expand(config)
    assert {s.model for s in grid.specs} == {"resnet50_v1"}
    [(reason, count)] = grid.skipped.items()
    assert "inception_v3 needs a resolution of at least 75" in reason and count == 2


def test_duplicates_collapse() -> None:
    config = build_config(overrides={"models": ["resnet50", "resnet50_v1", "resnet5*_v1"],
                                     "resolutions": "32,32", "backends": "jax"})
    assert len(expand(config).specs) == 2


def test_study_preset() -> None:
    config = build_config("study")
    grid = expand(config)
    classifiers = [e for e in REGISTRY if e.kind in CLASSIFIER_KINDS]
    detectors = [e for e in REGISTRY if e.kind == "detector"]
    assert len(grid.specs) == len(STUDY_PAIRS) * (len(classifiers) + 2 * len(detectors))
    for spec in grid.specs:
        entry = REGISTRY.get(spec.model)
        if entry.kind == "detector":
            assert spec.resolution in (320, 640)
        else:
            assert spec.resolution == entry.default_resolution
        assert (spec.batch_size, spec.precision, spec.repeat) == (4, "fp32", 0)
    assert set(_pairs(grid.specs)) == STUDY_PAIRS  # the runtimes beside the frameworks
    assert {"openvino", "onnxruntime"} <= {s.backend for s in grid.specs}


@pytest.fixture(scope="module")
def runtimes_grid():
    return expand(build_config("runtimes"))


def test_runtimes_preset_runs_every_model(runtimes_grid) -> None:
    assert RUNTIMES == ("openvino", "onnxruntime", "litert", "iree", "executorch")
    assert {s.model for s in runtimes_grid.specs} == {e.name for e in REGISTRY}
    assert not runtimes_grid.skipped  # every default resolution is accepted
    # per model: 11 backend/modes (TF's three, OpenVINO, ORT's two, LiteRT's two, IREE,
    # ExecuTorch's two) x batch 1 and 4
    assert len(runtimes_grid.specs) == 11 * 2 * len(REGISTRY)


@pytest.mark.parametrize("model", [e.name for e in REGISTRY])
def test_runtimes_preset_per_model(runtimes_grid, model: str) -> None:
    specs = [s for s in runtimes_grid.specs if s.model == model]
    pairs = {"tensorflow/eager", "tensorflow/graph", "tensorflow/xla", *RUNTIME_PAIRS}
    expected = {(pair, batch) for pair in pairs for batch in (1, 4)}
    assert {(f"{s.backend}/{s.mode}", s.batch_size) for s in specs} == expected
    assert len(specs) == len(expected)  # one of each, no repeats
    default = REGISTRY.get(model).default_resolution
    assert {(s.resolution, s.precision, s.runner) for s in specs} == {(default, "fp32", "python")}


def test_study_preset_narrowed_by_kind_and_backend() -> None:
    config = build_config("study", overrides={"kinds": "cnn", "backends": "jax"})
    specs = expand(config).specs
    assert specs and all(REGISTRY.get(s.model).kind == "cnn" for s in specs)
    assert all(s.resolution == REGISTRY.get(s.model).default_resolution for s in specs)
    assert _pairs(specs).keys() == {"jax/eager", "jax/xla"}


STUDY_CSV = Path(__file__).resolve().parents[1] / "data" / "study_best_per_resolution_and_gpu.csv"


def test_gpu_preset_covers_the_published_tables_and_every_family() -> None:
    published = {row.split(",")[1] for row in STUDY_CSV.read_text().splitlines()[1:] if row}
    assert published <= set(GPU_MODELS)
    grid = expand(build_config("gpu"))
    assert {REGISTRY.get(s.model).family for s in grid.specs} == {e.family for e in REGISTRY}
    assert set(_pairs(grid.specs)) == {"jax/eager", "jax/xla", "torch/eager", "torch/compiled"}
    assert len(grid.specs) == 4 * len(GPU_MODELS)
    assert all(s.resolution == REGISTRY.get(s.model).default_resolution for s in grid.specs)


def test_demo_preset() -> None:
    config = build_config("demo")
    grid = expand(config)
    # MobileNet on every pair but torch/compiled, both runtimes and TF/XLA natively; ResNet50
    # in TF graph and XLA
    pairs = Counter(f"{s.model} {s.backend}/{s.mode} {s.runner}" for s in grid.specs)
    mobilenet = {p for p in pairs if p.startswith("mobilenet_v3_small")}
    assert len(mobilenet) == ALL_PAIRS - 1 + 2 + 1
    assert "mobilenet_v3_small torch/compiled python" not in pairs
    assert {"mobilenet_v3_small openvino/compiled python",
            "mobilenet_v3_small onnxruntime/compiled python",
            "mobilenet_v3_small tensorflow/xla native"} <= mobilenet
    assert set(pairs) - mobilenet == {"resnet50_v1 tensorflow/graph python",
                                      "resnet50_v1 tensorflow/xla python"}
    assert max(pairs.values()) == 1
    assert {s.resolution for s in grid.specs} == {64}
    assert config.policy.min_processes == config.policy.max_processes == 3
    assert {s.measure for s in grid.specs} == {DEMO_MEASURE}
    assert config.db == "demo.db"


def test_toml_then_flags(tmp_path: Path) -> None:
    path = tmp_path / "sweep.toml"
    path.write_text(
        'preset = "demo"\nbackends = ["jax"]\nbatch-sizes = [1, 2]\nrepeats = 3\n'
        'workers = 2\nlog_mlflow = true\n[measure]\nbudget_s = 7.0\nlatency_steps = 4\n'
    )
    config = build_config(None, load_toml(path), {"batch_sizes": "8", "budget": 2.5,
                                                  "log_wandb": None})
    specs = expand(config).specs
    assert config.preset == "demo" and config.workers == 2 and config.log_mlflow == ""
    assert {s.batch_size for s in specs} == {8}  # the flag wins over the file
    assert {s.backend for s in specs} == {"jax"}  # the file wins over the preset
    assert {s.repeat for s in specs} == {0, 1, 2}
    measure = specs[0].measure
    assert (measure.budget_s, measure.latency_steps) == (2.5, 4)
    assert measure.warmup_max_s == DEMO_MEASURE.warmup_max_s  # untouched preset setting


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        ({"models": "resnet5"}, "did you mean resnet50_v1"),
        ({"models": "nosuch*"}, "no model matches"),
        ({"families": "NoSuchNet"}, "unknown family"),
        ({"kinds": "robot"}, "unknown kind"),
        ({"backends": "mxnet"}, "unknown backend"),
        ({"modes": "turbo"}, "unknown mode"),
        ({"precisions": "fp8"}, "unknown precision"),
        ({"resolutions": "big"}, "resolution must be an integer from 16 to 2048 or 'default'"),
        ({"batch_sizes": "0", "models": "resnet50"}, "batch size must be"),
        ({"repeats": 0}, "repeats must be"),
        ({"workers": 0}, "workers must be"),
        ({"executor": "slurm"}, "unknown executor"),
        ({"backends": "jax", "modes": "graph"}, "the grid is empty"),
        ({"models": "nasnet_large", "resolutions": "224"}, "the grid is empty"),
        ({"kinds": "detector", "families": "ResNet_V1"}, "the grid is empty"),
    ],
)
def test_bad_input(overrides: dict, fragment: str) -> None:
    with pytest.raises(UserError, match=fragment):
        expand(build_config(overrides=overrides))


def test_unknown_kind_with_a_preset() -> None:
    with pytest.raises(UserError, match="unknown kind 'robot'"):
        build_config("study", overrides={"kinds": "robot"})


def test_unknown_preset_and_key() -> None:
    with pytest.raises(UserError, match="unknown preset 'paper'; choose from study, gpu, demo, "
                                        "compare, runtimes"):
        build_config("paper")
    with pytest.raises(UserError, match="unknown sweep setting 'batch'"):
        build_config(file_values={"batch": 4})
    with pytest.raises(UserError, match="unknown measure setting 'budget'"):
        build_config(file_values={"measure": {"budget": 4}})


def test_bad_toml(tmp_path: Path) -> None:
    path = tmp_path / "sweep.toml"
    path.write_text("models = [resnet50\n")
    with pytest.raises(UserError, match=r"sweep.toml is not valid TOML: .*line 1"):
        load_toml(path)
    with pytest.raises(UserError, match="no sweep file at"):
        load_toml(tmp_path / "missing.toml")


def _assert_one_clear_line(result, fragment: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("xlabench: error:"), result.stderr
    assert fragment in lines[0]
    assert "Traceback" not in result.stderr + result.stdout


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--models", "resnet5"], "did you mean resnet50_v1"),
        (["--families", "NoSuchNet"], "unknown family"),
        (["--preset", "paper"], "invalid choice: 'paper'"),
        (["--backends", "jax", "--modes", "graph"], "the grid is empty"),
        (["--config", "bad.toml"], "bad.toml is not valid TOML"),
        (["--config", "missing.toml"], "no sweep file at missing.toml"),
        (["--models", "resnet50", "--workers", "99"], "needs at least 99 CPU cores"),
        (["--models", "resnet50", "--batch-sizes", "x"], "batch size must be an integer"),
    ],
)
def test_cli_bad_input_one_line(run_cli, tmp_path: Path, args: list[str], fragment: str) -> None:
    (tmp_path / "bad.toml").write_text("models = 'unterminated\n")
    result = run_cli("sweep", *args, "--db", "never.db")
    _assert_one_clear_line(result, fragment)
    assert not (tmp_path / "never.db").exists()  # nothing ran, nothing was created


def test_cli_dry_run_prints_plan_and_creates_nothing(run_cli, tmp_path: Path) -> None:
    result = run_cli("sweep", "--preset", "study", "--dry-run")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "configurations in the grid" in out and "tensorflow/graph" in out
    assert "torch/compiled" in out
    # no database, no history: the registry's models are estimated by the cost line
    assert re.search(r"^estimate: [0-9].*\([0-9]+ from the cost line", out, re.MULTILINE), out
    assert "openvino/compiled" in out and "onnxruntime/basic" in out
    assert not (tmp_path / "xlabench.db").exists()


def test_runtime_backends_sweep_their_precisions_after_the_frameworks() -> None:
    config = build_config(overrides={"models": "mobilenet_v3_small", "resolutions": "32",
                                     "backends": "executorch,iree,litert,onnxruntime,"
                                                 "openvino,jax",
                                     "precisions": "fp32,bf16"})
    grid = expand(config)
    backends = list(dict.fromkeys(s.backend for s in grid.specs))
    assert backends == ["jax", "openvino", "onnxruntime", "litert", "iree", "executorch"]
    runtime_specs = [s for s in grid.specs if s.backend != "jax"]
    # OpenVINO alone executes bf16 (its precision hint on the fp32 model).
    assert {(s.backend, s.precision) for s in runtime_specs if s.precision != "fp32"} == {
        ("openvino", "bf16")}
    assert _pairs(runtime_specs).keys() == RUNTIME_PAIRS
    assert grid.skipped == {"onnxruntime has no bf16 precision": 2,
                            "litert has no bf16 precision": 2,
                            "iree has no bf16 precision": 1,
                            "executorch has no bf16 precision": 2}
