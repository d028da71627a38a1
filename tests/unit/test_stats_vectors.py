"""The shared statistics vectors: the Python method must give exactly what the C++ CTest checks.

tests/vectors/stats.json is read by this test and by native/tests/test_stats.cc; integers must
match exactly, floats to 1e-12 relative. Percentiles and medians are also checked against numpy,
which does not share our code.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from xlabench.measure import stats, timing

VECTORS = json.loads(
    (Path(__file__).resolve().parents[1] / "vectors" / "stats.json").read_text(encoding="utf-8")
)
REL = 1e-12


def _close(actual: float, expected: float | None) -> bool:
    if expected is None:  # JSON has no inf: null stands for a non-finite value
        return not math.isfinite(actual)
    return math.isclose(actual, expected, rel_tol=REL, abs_tol=0.0) or actual == expected


def test_the_vectors_cover_what_both_sides_check() -> None:
    ns = {case["n"] for case in VECTORS["median_ci_ranks"] if case["confidence"] == 0.95}
    assert set(range(1, 61)) <= ns
    assert all(VECTORS[k] for k in ("median", "percentile", "rel_ci_halfwidth", "steps_for",
                                    "is_steady"))


@pytest.mark.parametrize("case", VECTORS["median"], ids=lambda c: f"n{len(c['values'])}")
def test_median(case: dict[str, Any]) -> None:
    assert _close(stats.median(case["values"]), case["expected"])
    assert _close(float(np.median(case["values"])), case["expected"])


def test_percentiles_match_python_and_numpy() -> None:
    for case in VECTORS["percentile"]:
        assert _close(stats.percentile(case["values"], case["q"]), case["expected"]), case["q"]
        assert _close(float(np.percentile(case["values"], case["q"])), case["expected"])


def test_median_ci_ranks_are_exact() -> None:
    for case in VECTORS["median_ci_ranks"]:
        lo, hi, achieved = stats.median_ci_ranks(case["n"], case["confidence"])
        assert (lo, hi) == (case["lo"], case["hi"]), case
        assert _close(achieved, case["achieved"]), case


def test_rel_ci_halfwidth() -> None:
    for case in VECTORS["rel_ci_halfwidth"]:
        assert _close(stats.rel_ci_halfwidth(case["values"]), case["expected"]), case


def test_steps_for_and_is_steady() -> None:
    for case in VECTORS["steps_for"]:
        assert timing.steps_for(case["min_sample_s"], case["step_s"]) == case["expected"], case
    for case in VECTORS["is_steady"]:
        assert timing.is_steady(case["step_s"]) is case["expected"], case


TIMING = json.loads(
    (Path(__file__).resolve().parents[1] / "vectors" / "timing.json").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("scenario", TIMING["scenarios"], ids=lambda s: s["name"])
def test_timing_scenarios_replay_in_python(scenario: dict[str, Any]) -> None:
    from tests.vectors.generate_stats import replay

    got = replay(scenario["script"], scenario["sync_s"], scenario["settings"])
    want = scenario["expected"]
    assert {k: got[k] for k in ("warmup_steps", "warmup_steady", "steps_per_sample",
                                "target_met", "total_steps")} == {
        k: want[k] for k in ("warmup_steps", "warmup_steady", "steps_per_sample",
                             "target_met", "total_steps")}
    for key in ("sample_s", "latency_s"):
        assert len(got[key]) == len(want[key])
        assert all(_close(a, b) for a, b in zip(got[key], want[key], strict=True))
    assert _close(got["first_call_s"], want["first_call_s"])
