"""The turns' bookkeeping read from a record, and a pair whose workers cannot even start."""

from __future__ import annotations

import sys

from xlabench.core import Spec, Status
from xlabench.measure.turns import took_turns, waited_s
from xlabench.runner.turns import TurnJob, run_in_turns


def test_took_turns_and_waited_s_read_the_records_summary() -> None:
    alternated = {"turns": {"taken": 5, "waited_s": 2.5}}
    held_the_machine = {"turns": {"taken": 1, "waited_s": 0.0}}
    assert took_turns(alternated) and waited_s(alternated) == 2.5
    assert not took_turns(held_the_machine)
    assert not took_turns({}) and waited_s({}) == 0.0


def test_a_side_that_cannot_be_launched_is_a_failed_record_not_an_exception() -> None:
    spec = Spec("mobilenet_v3_small", "tensorflow", "graph", 32)
    # An environment value that is not a string: the launch itself raises (TypeError) before
    # any worker exists; each side must come back as a failure, and nothing must hang.
    broken = TurnJob(spec, sys.executable, {"XLABENCH_BROKEN": 1})  # type: ignore[dict-item]
    a, b = run_in_turns((broken, broken), first=0, timeout_s=30)
    for record in (a, b):
        assert record.status == Status.CRASHED
        assert "could not run the worker" in (record.error or "")
