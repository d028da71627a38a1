"""Every registry model, timm-style: it builds, runs, has the right shape and the right size.

Runs on the backend KERAS_BACKEND names (see conftest.py). Heavy models (> 100M parameters or
slow to build) are marked `heavy`: `make zoo` runs them on TensorFlow only. Every model builds
and runs on TensorFlow; on JAX and torch one model per family does (its smallest that the
backend takes): the variants of a family share their builder and differ in widths and depths,
which is what the TensorFlow run and the parameter counts check, so the others are marked
`variant` and `make zoo` leaves them out there.
"""

from __future__ import annotations

import gc
import importlib
import math
import os

import keras
import numpy as np
import pytest

from xlabench.backends.base import seed_all
from xlabench.zoo import REGISTRY, ModelEntry, build_model

BACKEND = os.environ["KERAS_BACKEND"]
PARAMS_TOLERANCE = 0.005
#: Families whose parameter count follows the input size (position embeddings, token-mixing
#: MLPs, VGG's flattened classifier). Their published count is checked on a build at the
#: default resolution of its own; every other model's on the forward test's build, one build
#: fewer. A family whose size follows the resolution and is missing here fails that check.
SIZE_FOLLOWS_RESOLUTION = frozenset({"ViT", "DeiT", "MLP-Mixer", "VGG"})


def _cases(marks_for: callable, buildable_only: bool = False) -> list:
    """Every registry entry; with `buildable_only`, not those refused on this backend."""
    entries = [e for e in REGISTRY if not (buildable_only and e.unsupported_reason(BACKEND))]
    return [pytest.param(e, id=e.name, marks=marks_for(e)) for e in entries]


def _family_representatives(backend: str) -> frozenset[str]:
    """Per family, the smallest model (by published parameters) that builds on `backend`."""
    smallest: dict[str, ModelEntry] = {}
    for entry in REGISTRY:
        if entry.heavy or entry.unsupported_reason(backend):
            continue
        best = smallest.get(entry.family)
        if best is None or entry.params < best.params:
            smallest[entry.family] = entry
    return frozenset(e.name for e in smallest.values())


REPRESENTATIVES = _family_representatives(BACKEND)


def _forward_marks(entry: ModelEntry) -> list:
    """`heavy` as the entry says; `variant` for a model that is not its family's representative
    on this backend (a refusal is checked everywhere: it costs nothing)."""
    variant = entry.name not in REPRESENTATIVES and not entry.unsupported_reason(BACKEND)
    return _heavy(entry) + ([pytest.mark.variant] if variant else [])


def _heavy(entry: ModelEntry) -> list:
    return [pytest.mark.heavy] if entry.heavy else []


def _params_marks(entry: ModelEntry) -> list:
    return [pytest.mark.params, *_heavy(entry)]


def _size_needs_its_own_build(entry: ModelEntry) -> bool:
    return (entry.family in SIZE_FOLLOWS_RESOLUTION
            and entry.rule.smallest() != entry.default_resolution)


@pytest.fixture(autouse=True)
def _fresh_session():
    seed_all(0, BACKEND)
    yield
    keras.backend.clear_session()
    gc.collect()


def _trainable_count(model: keras.Model) -> int:
    return sum(math.prod(w.shape) for w in model.trainable_weights)


def _assert_published_size(entry: ModelEntry, model: keras.Model, resolution: int) -> None:
    ours = model.count_params() if entry.params_count == "total" else _trainable_count(model)
    assert abs(ours - entry.params) / entry.params <= PARAMS_TOLERANCE, (
        f"{entry.name} at {resolution} px: {ours:,} vs published {entry.params:,} "
        f"({entry.params_source}); if its size follows the resolution, its family belongs in "
        "SIZE_FOLLOWS_RESOLUTION")


def _forward(model: keras.Model, x):
    """One inference call. On JAX the whole forward is jitted: one XLA compile instead of one
    per op and shape, which is what makes eager JAX slow to *start* (not to run)."""
    if BACKEND != "jax":
        return model(x, training=False)
    import jax

    trainable = [v.value for v in model.trainable_variables]
    non_trainable = [v.value for v in model.non_trainable_variables]
    return jax.jit(lambda t, n, i: model.stateless_call(t, n, i, training=False)[0])(
        trainable, non_trainable, x
    )


def _flat(output) -> list[np.ndarray]:
    if isinstance(output, dict):
        return [np.asarray(keras.ops.convert_to_numpy(output[k])) for k in sorted(output)]
    return [np.asarray(keras.ops.convert_to_numpy(output))]


@pytest.mark.parametrize("entry", _cases(_forward_marks))
def test_builds_and_runs_at_smallest_resolution(entry: ModelEntry) -> None:
    resolution = entry.rule.smallest()
    if entry.unsupported_reason(BACKEND):
        # Known not to run here: check the refusal is still real, so the flag goes when fixed.
        with pytest.raises(ValueError, match=BACKEND):
            build_model(entry, resolution)
        return
    model = build_model(entry, resolution)
    x = keras.random.uniform((1, resolution, resolution, 3), 0.0, 255.0, seed=1)
    output = _forward(model, x)
    if entry.kind == "detector":
        assert set(output) == {"boxes", "classes"}
        assert output["classes"].shape[-1] == entry.num_classes
        assert output["boxes"].shape[:2] == output["classes"].shape[:2]
    else:
        assert tuple(output.shape) == (1, entry.num_classes)
    for array in _flat(output):
        assert np.isfinite(array).all(), f"{entry.name} produced NaN/inf"
    if not _size_needs_its_own_build(entry):
        _assert_published_size(entry, model, resolution)


@pytest.mark.parametrize("entry", [e for e in REGISTRY if e.source != "keras.applications"],
                         ids=lambda e: e.name)
def test_registry_resolution_rule_agrees_with_the_architecture(entry: ModelEntry) -> None:
    """The registry's declarative rule (checked without Keras) says what the builder says."""
    module = importlib.import_module(entry.builder.split(":")[0])
    for resolution in range(16, 700, 8):
        ours = entry.rule.check(resolution) is None
        theirs = module.check_resolution(entry.variant, resolution) is None
        assert ours == theirs, f"{entry.name} at {resolution}: registry {ours}, arch {theirs}"


# A refused model's refusal is checked by the forward test; counts don't depend on the backend.
@pytest.mark.parametrize("entry", [case for case in _cases(_params_marks, buildable_only=True)
                                   if _size_needs_its_own_build(case.values[0])])
def test_parameter_count_matches_published_at_the_default_resolution(entry: ModelEntry) -> None:
    """The families whose size follows the resolution; the others' counts are checked by the
    forward test."""
    _assert_published_size(entry, build_model(entry, entry.default_resolution),
                           entry.default_resolution)
