"""A labelled sweep (`--label`) measures its grid under that label, whatever else the database
holds, and resumes its own results only."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

from tests.sweep.conftest import ScriptedExecutor
from xlabench.sweep import build_config, run_sweep


def _sweep(db: Path, record_factory, label: str | None) -> int:
    config = build_config(overrides={"models": "mobilenet_v3_small", "resolutions": "32",
                                     "backends": "jax", "db": str(db), "label": label})
    executor = ScriptedExecutor(record_factory)
    run_sweep(config, io.StringIO(), executor=executor, tty=False)
    return len(executor.asked)


def _labels(db: Path) -> dict[str | None, int]:
    with sqlite3.connect(db) as conn:
        return dict(conn.execute(
            "SELECT label, COUNT(*) FROM combined_results GROUP BY label").fetchall())


def test_a_label_measures_again_and_resumes_its_own(tmp_path: Path, record_factory) -> None:
    db = tmp_path / "r.db"
    assert _sweep(db, record_factory, None) == 6  # jax eager and xla, three processes each
    assert _sweep(db, record_factory, "after") == 6  # done unlabelled: not done as `after`
    assert _sweep(db, record_factory, "after") == 0  # its own results: resumed, nothing to do
    assert _sweep(db, record_factory, None) == 0  # an unlabelled sweep takes any result
    assert _labels(db) == {None: 2, "after": 2}
