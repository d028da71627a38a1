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
