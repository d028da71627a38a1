"""Own models resolved before anything runs: shapes, identity, and every bad input as one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from xlabench.core import BACKEND_MODES, Spec, UserError
from xlabench.core.backends import RUNTIMES
from xlabench.core.spec import NATIVE_RUNTIMES
from xlabench.sweep import build_config, expand
from xlabench.zoo import own


def test_a_keras_file_is_its_content(own_files: Path, tmp_path: Path) -> None:
    model = own.resolve(str(own_files / "cnn.keras"))
    assert model.name == f"cnn-{model.sha256[:8]}" and model.input_size == 32
    assert model.channels == 3 and model.factory == ""
    copy = tmp_path / "elsewhere" / "renamed.keras"
    copy.parent.mkdir()
    shutil.copy(own_files / "cnn.keras", copy)
    moved = own.resolve(str(copy))
    assert moved.sha256 == model.sha256 and moved.name.startswith("renamed-")
    spec = Spec(model.name, "jax", "xla", 32, **model.spec_fields())
    again = Spec(moved.name, "jax", "xla", 32, **moved.spec_fields())
    assert spec.spec_id() == again.spec_id()  # the same file under another path
    edited = tmp_path / "cnn.keras"
    edited.write_bytes(copy.read_bytes() + b"\0")  # a zip still; its content differs
    changed = own.resolve(str(edited))
    assert Spec(changed.name, "jax", "xla", 32, **changed.spec_fields()).spec_id() != spec.spec_id()


def test_registry_spec_ids_do_not_move() -> None:
    # fields an own model adds must leave every registry spec's id as it was
    assert Spec("resnet50_v1", "jax", "xla", 224).spec_id() == "3c941ae12a53ff4a"
    assert Spec("resnet50_v1", "jax", "xla", 224, runner="native").spec_id() == "8876b0d1ae8f8b1c"


def test_input_shape_comes_from_the_model(own_files: Path) -> None:
    assert own.resolve(str(own_files / "gray.keras")).channels == 1
    assert own.resolve(str(own_files / "legacy.h5")).input_size == 32
    any_size = own.resolve(str(own_files / "any_size.keras"))
    assert any_size.input_size is None
    config = build_config(overrides={"models": [str(own_files / "any_size.keras")],
                                     "backends": ["jax"]})
    with pytest.raises(UserError, match=r"does not fix its input size.*--resolution"):
        expand(config)
    config = build_config(overrides={"models": [str(own_files / "any_size.keras")],
                                     "backends": ["jax"], "resolutions": [48]})
    assert {s.resolution for s in expand(config).specs} == {48}


def test_a_fixed_size_model_refuses_other_resolutions(own_files: Path) -> None:
    config = build_config(overrides={"models": [str(own_files / "cnn.keras"), "mobilenet_v3_small"],
                                     "backends": ["jax"], "resolutions": [32, 64]})
    grid = expand(config)
    cnn = own.resolve(str(own_files / "cnn.keras")).name
    assert {(s.model, s.resolution) for s in grid.specs} == {
        (cnn, 32), ("mobilenet_v3_small", 32), ("mobilenet_v3_small", 64)}
    assert any("fixed at 32x32" in reason for reason in grid.skipped)


def test_a_saved_file_runs_in_its_own_dtype(own_files: Path) -> None:
    config = build_config(overrides={"models": [str(own_files / "cnn.keras")],
                                     "backends": ["jax"], "precisions": ["fp32", "bf16"]})
    grid = expand(config)
    assert {s.precision for s in grid.specs} == {"fp32"}
    assert any("dtype it was saved with" in reason for reason in grid.skipped)


@pytest.mark.parametrize(("name", "message"), [
    ("missing.keras", "no model file at"),
    ("random.keras", "is not a Keras model file"),
    ("other.keras", "zip archive but not a Keras model"),
    ("model.onnx", "is not a Keras model file"),
    ("cnn.weights.h5", "holds weights only"),
    ("lambda.keras", "Lambda layer.*--unsafe-load"),
    ("custom.keras", "custom class Scale.*pass a factory"),
    ("unregistered.keras", "custom class Halve.*not registered.*pass a factory"),
    ("rank3.keras", "rank 3"),
    ("two_inputs.keras", "2 inputs"),
    ("wide.keras", "32x48.*square"),
    ("channels_first.keras", "channels_first"),
])
def test_bad_files_are_one_line(own_files: Path, name: str, message: str) -> None:
    with pytest.raises(UserError, match=message) as caught:
        own.resolve(str(own_files / name))
    assert "\n" not in str(caught.value)


def test_lambda_is_allowed_when_asked(own_files: Path) -> None:
    model = own.resolve(str(own_files / "lambda.keras"), unsafe_load=True)
    assert model.unsafe_load and model.spec_fields()["unsafe_load"] is True


@pytest.mark.parametrize(("factory", "message"), [
    ("tests.own.no_such_module:build", "cannot import tests.own.no_such_module"),
    ("tests.own.factories:no_such_function", "has no function no_such_function"),
    ("tests.own.factories:build_not_a_model", "returned dict, not a keras.Model"),
    ("tests.own.factories:build_broken", "builds on no backend.*failed to build its model: "
     "ValueError: this factory is broken on purpose"),
])
def test_bad_factories_are_one_line(factory: str, message: str) -> None:
    with pytest.raises(UserError, match=message) as caught:
        own.resolve(factory)
    assert "\n" not in str(caught.value)


def test_a_factory_is_its_import_path_and_source() -> None:
    model = own.resolve("tests.own.factories:build_custom")
    assert model.name.startswith("build_custom-") and model.input_size == 32
    assert model.file.endswith("tests/own/factories.py")
    assert own.name_of("tests.own.factories:build_custom") == model.name
    other = own.resolve("tests.own.factories:build_any_size")
    assert other.sha256 != model.sha256 and other.input_size is None


def test_the_compare_and_runtimes_presets_take_own_models(own_files: Path) -> None:
    path = str(own_files / "cnn.keras")
    grid = expand(build_config("compare", overrides={"models": [path], "resolutions": [32]}))
    ways = {(s.backend, s.mode, s.runner) for s in grid.specs}
    every_way = sum(map(len, BACKEND_MODES.values())) + len(NATIVE_RUNTIMES)
    assert len(ways) == len(grid.specs) == every_way  # every backend/mode, and every native one
    runtimes = expand(build_config("runtimes", overrides={"models": [path]}))
    assert {s.resolution for s in runtimes.specs} == {32}  # the model's own size
    assert {s.backend for s in runtimes.specs} == {"tensorflow", *RUNTIMES}
