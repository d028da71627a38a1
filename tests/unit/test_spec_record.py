"""Spec validation, identity and the Record JSON round trip."""

from __future__ import annotations

import dataclasses

import pytest

from xlabench.core import (
    BACKENDS,
    COMPILED_MODES,
    BackendInfo,
    Costs,
    MeasureSettings,
    Parity,
    Record,
    Spec,
    Status,
    Throughput,
    UserError,
    failure,
)
from xlabench.core.backends import compiled_mode_names
from xlabench.core.errors import one_line


def test_spec_id_is_stable_and_sensitive() -> None:
    a = Spec("resnet50_v1", "jax", "xla", 224)
    assert a.spec_id() == Spec("resnet50_v1", "jax", "xla", 224).spec_id()
    assert a.spec_id() != Spec("resnet50_v1", "jax", "xla", 224, batch_size=8).spec_id()
    assert a.spec_id() != Spec("resnet50_v1", "jax", "eager", 224).spec_id()
    changed = Spec("resnet50_v1", "jax", "xla", 224, measure=MeasureSettings(budget_s=5))
    assert a.spec_id() != changed.spec_id()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"backend": "mxnet"}, "unknown backend"),
        ({"mode": "graph"}, "has no mode 'graph'"),
        ({"resolution": 8}, "resolution must be an integer from 16"),
        ({"batch_size": 0}, "batch size must be"),
        ({"precision": "fp8"}, "unknown precision"),
        ({"weights": "laion"}, "unknown weights"),
    ],
)
def test_spec_rejects_bad_values(kwargs: dict, message: str) -> None:
    base = {"model": "m", "backend": "jax", "mode": "xla", "resolution": 224}
    with pytest.raises(UserError, match=message):
        Spec(**{**base, **kwargs})


def test_graph_mode_only_on_tensorflow() -> None:
    assert Spec("m", "tensorflow", "graph", 64).compiled is False
    assert Spec("m", "tensorflow", "xla", 64).compiled is True
    assert Spec("m", "torch", "compiled", 64).baseline_mode == "eager"


@pytest.mark.parametrize("described", BACKENDS, ids=lambda b: b.name)
def test_a_spec_is_compiled_in_the_modes_its_backend_flags(described: BackendInfo) -> None:
    for mode in described.modes:
        assert Spec("m", described.name, mode, 64).compiled == (mode in described.compiled_modes)
    assert {m for b in BACKENDS for m in b.compiled_modes} == COMPILED_MODES


def test_a_mode_name_compiled_in_one_backend_only_is_refused() -> None:
    """"compiled" is read from the mode's name: a new backend that names a mode "compiled"
    and forgets to flag it (or flags a "basic") would make every reading of it wrong."""
    torch = next(b for b in BACKENDS if b.name == "torch")
    unflagged = dataclasses.replace(torch, name="newcomer", compiled_modes=())
    with pytest.raises(ValueError, match=r"\['compiled'\] are compiled in one backend"):
        compiled_mode_names((*BACKENDS, unflagged))
    assert compiled_mode_names(BACKENDS) == COMPILED_MODES


def test_record_round_trip_keeps_everything() -> None:
    spec = Spec("resnet50_v1", "torch", "compiled", 64, batch_size=2)
    record = Record(
        spec=spec, status=Status.OK, family="ResNet_V1", kind="cnn",
        throughput=Throughput(10.0, 9.0, 11.0, 0.97, 0.1, False, 3, (0.6, 0.61, 0.59), 200.0),
        parity=Parity("eager", 1e-6, 1e-7, 2e-3, True),
        costs=Costs(params=5, macs_per_image=1e9), env={"accelerator": "cpu"}, env_id="abc",
    )
    again = Record.from_json(record.to_json())
    assert again == record
    assert again.spec_id == spec.spec_id()


def test_failure_reason_is_one_line() -> None:
    record = failure(Spec("m", "jax", "eager", 32), Status.CRASHED, "boom\nsecond line\n")
    assert record.error == "boom"
    assert not record.ok


def test_one_line_reads_text_and_exceptions_alike() -> None:
    assert one_line("\n  first  \nsecond") == "first"
    assert one_line(ValueError("\nbad value\ntraceback...")) == "ValueError: bad value"
    assert one_line(KeyError()) == "KeyError"  # an empty message: its type alone
    assert one_line("") == "unknown error"
    long = one_line(RuntimeError("x" * 1000))
    assert len(long) == 300 and long.startswith("RuntimeError: x") and long.endswith("...")


def test_the_runner_field_keeps_old_spec_ids() -> None:
    # Ids computed by the code before `runner` existed: stored results must still match.
    assert Spec("resnet50_v1", "jax", "xla", 224).spec_id() == "3c941ae12a53ff4a"
    short = MeasureSettings(budget_s=3.0)
    old = Spec("mobilenet_v3_small", "tensorflow", "graph", 32, batch_size=2, measure=short)
    assert old.spec_id() == "fe34a13cd6f0953a"
    native = Spec("resnet50_v1", "jax", "xla", 224, runner="native")
    assert native.spec_id() != "3c941ae12a53ff4a"
    assert Spec.from_dict(native.to_dict()) == native
    assert Spec.from_dict({k: v for k, v in old.to_dict().items() if k != "runner"}) == old


def test_native_runner_needs_a_native_runtime() -> None:
    assert Spec("resnet50_v1", "tensorflow", "xla", 32, runner="native").native_runtime == "tf_c"
    assert Spec("resnet50_v1", "openvino", "compiled", 32,
                runner="native").native_runtime == "openvino"
    with pytest.raises(UserError, match="no native runtime"):
        Spec("resnet50_v1", "tensorflow", "eager", 32, runner="native")
    with pytest.raises(UserError, match="unknown runner"):
        Spec("resnet50_v1", "tensorflow", "xla", 32, runner="cython")
