"""bench/xlabench_cli.py, the one place the bench scripts run an xlabench command and read its
JSON: a real command's JSON read back, a real failure's reason kept, warning lines skipped."""

from __future__ import annotations

import pytest

from tests.bench_scripts import load_bench_script

cli = load_bench_script("xlabench_cli")


def test_a_command_s_json_is_read_back() -> None:
    rows = cli.xlabench_json(["models", "--family", "MobileNet_V3", "--format", "json"])
    assert "mobilenet_v3_small" in {row["name"] for row in rows}


def test_a_failed_command_raises_with_its_one_line_reason() -> None:
    with pytest.raises(cli.XlabenchError) as failed:
        cli.xlabench_json(["run", "no_such_model", "--json"])
    assert failed.value.returncode != 0
    assert "no_such_model" in failed.value.last_line


def test_lines_before_the_json_are_skipped() -> None:
    assert cli.json_text('a warning [1]\n{"a": [1]}\n') == '{"a": [1]}\n'
    assert cli.json_text("no json here\n") is None
