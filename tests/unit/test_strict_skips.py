"""Under CI=true a test skipped because something `make setup` installs is missing fails;
a skip for the machine's own limits stays a skip (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, missing_setup

PROBES = {
    "test_in_a_test.py": ("import pytest\n\n\ndef test_missing():\n"
                          "    pytest.importorskip('xlabench_no_such_module')\n\n\n"
                          "def test_one_core():\n    pytest.skip('needs two cores')\n"),
    "test_in_a_module.py": ("import pytest\n\npytest.importorskip('xlabench_no_such_module')\n\n\n"
                            "def test_never_collected():\n    pass\n"),
}


def _outcomes(folder: Path, ci: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
         "--continue-on-collection-errors", "--rootdir", str(folder), "-c", os.devnull,
         str(folder)],
        cwd=REPO, env={**os.environ, "CI": ci}, capture_output=True, text=True, timeout=300)
    return done.stdout.strip().splitlines()[-1]


def test_a_missing_dependency_fails_under_ci_and_a_machine_limit_stays_a_skip(
    tmp_path: Path,
) -> None:
    for name, text in PROBES.items():
        (tmp_path / name).write_text(text)
    strict = _outcomes(tmp_path, "true")
    assert "1 failed" in strict and "1 skipped" in strict and "1 error" in strict, strict
    assert "3 skipped" in _outcomes(tmp_path, ""), "without CI=true they are skips"


def test_what_counts_as_missing_setup() -> None:
    assert missing_setup("could not import 'ray': No module named 'ray'")
    assert missing_setup("xlabench-native is not built (run `make setup`)")
    assert missing_setup("iree-base-compiler/runtime not installed")
    assert not missing_setup("this CPU has no bf16 inference in OpenVINO")
    assert not missing_setup("needs two cores")
