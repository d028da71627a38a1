"""Parity verdicts and environment naming."""

from __future__ import annotations

import numpy as np
import pytest

from xlabench.measure import env, parity


def test_parity_passes_small_differences_and_fails_large_ones() -> None:
    ref = [np.array([[10.0, -5.0, 1.0]])]
    close = [ref[0] + 1e-4]
    far = [ref[0] + np.array([[0.0, 0.5, 0.0]])]
    assert parity.compare(close, ref, 2e-3, "eager").passed
    result = parity.compare(far, ref, 2e-3, "eager")
    assert not result.passed and result.max_rel_diff == pytest.approx(0.05)


def test_beyond_tolerance_the_reference_s_own_spread_is_the_floor() -> None:
    ref = [np.array([[10.0, -5.0, 1.0]])]
    far = [ref[0] + np.array([[0.0, 5.0, 0.0]])]  # max rel diff 0.5

    def never() -> float:
        raise AssertionError("the spread is measured only beyond the tolerance")

    assert parity.compare([ref[0] + 1e-4], ref, 2e-3, "eager", never).own_spread_rel is None
    within = parity.compare(far, ref, 2e-3, "eager", lambda: 0.8)
    assert within.passed and within.own_spread_rel == 0.8 and within.rtol == 2e-3
    assert "within eager's own 0.8" in within.reason
    beyond = parity.compare(far, ref, 2e-3, "eager", lambda: 0.1)
    assert not beyond.passed and beyond.own_spread_rel == 0.1
    assert "> eager's own spread 0.1" in beyond.reason

    def broken() -> float:
        raise ValueError("fixed batch")

    unmeasured = parity.compare(far, ref, 2e-3, "eager", broken)
    assert not unmeasured.passed and unmeasured.own_spread_rel is None
    assert "not measured: ValueError: fixed batch" in unmeasured.reason


def _keras_model(couple_the_batch: bool):
    """A real Keras model on the active backend: per image, or one whose output for an image
    depends on the rest of its batch (it subtracts the batch mean), so that run alone an
    image's output is the bias alone."""
    import keras

    keras.utils.set_random_seed(0)
    inputs = keras.Input((3,))
    hidden = inputs
    if couple_the_batch:
        hidden = keras.layers.Lambda(
            lambda t: t - keras.ops.mean(t, axis=0, keepdims=True))(inputs)
    return keras.Model(inputs, keras.layers.Dense(2, bias_initializer="zeros")(hidden))


@pytest.mark.parametrize("batch", [1, 4])
def test_a_per_image_network_agrees_with_itself_and_a_batch_coupled_one_does_not(
        batch: int) -> None:
    import keras

    from xlabench import backends
    from xlabench.core.spec import BACKEND_MODES

    name = keras.backend.backend()
    backend, mode = backends.load(name), BACKEND_MODES[name][0]
    x = np.random.default_rng(1).uniform(0, 1, (batch, 3)).astype(np.float32)
    for coupled in (False, True):
        model = _keras_model(coupled)
        reference = parity.flatten_outputs(backend.to_numpy(model(x, training=False)))
        spread = parity.reference_spread(backend, model, mode, x, reference)
        if not coupled:
            assert spread < 1e-5
        elif batch > 1:  # alone, the image is its own mean: its output is the zero bias
            assert spread == pytest.approx(1.0)
        else:  # the image twice is its own mean too: both outputs are the zero bias
            assert spread == 0.0


def test_non_finite_outputs_fail_parity() -> None:
    ref = [np.array([1.0, 2.0])]
    assert not parity.compare([np.array([np.nan, 2.0])], ref, 1.0, "eager").passed
    assert not parity.compare([np.array([np.inf, 2.0])], ref, 1.0, "eager").passed


def test_nested_outputs_are_flattened_in_a_stable_order() -> None:
    out = {"classes": np.ones((1, 2)), "boxes": [np.zeros(3)]}
    arrays = parity.flatten_outputs(out)
    assert [a.shape for a in arrays] == [(3,), (1, 2)]


def test_tolerance_depends_on_precision() -> None:
    assert parity.rtol_for("fp32", tf32=False) < parity.rtol_for("fp32", tf32=True)
    assert parity.rtol_for("bf16", tf32=False) > parity.rtol_for("fp32", tf32=True)


@pytest.mark.parametrize(
    ("name", "short"),
    [
        ("NVIDIA A100-SXM4-40GB", "a100"),
        ("Tesla V100-SXM2-16GB", "v100"),
        ("Tesla T4", "t4"),
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("NVIDIA H200", "h200"),
        ("NVIDIA GeForce RTX 4090", "rtx4090"),
    ],
)
def test_gpu_names_are_normalised_like_the_study(name: str, short: str) -> None:
    assert env.normalize_gpu_name(name) == short


def test_env_id_ignores_volatile_fields() -> None:
    fingerprint = env.static_fingerprint()
    changed = {**fingerprint, "gpu_clocks_mhz": [{"sm": 1}], "hostname": "elsewhere"}
    assert env.env_id(fingerprint) == env.env_id(changed)
    assert env.env_id(fingerprint) != env.env_id({**fingerprint, "cpu_model": "other"})
    # the accelerator is the first GPU's short name, "cpu" where there is none (on any machine)
    gpu_list = fingerprint["gpus"]
    assert fingerprint["accelerator"] == (
        env.normalize_gpu_name(gpu_list[0]["name"]) if gpu_list else "cpu")
