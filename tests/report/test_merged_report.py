"""Two machines' databases merged into one: one report with two named devices, the study's
cross-device findings filled from measured results."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import make_record
from xlabench.analysis import load_results
from xlabench.core import Record
from xlabench.report import ReportOptions, build_findings, write_report
from xlabench.store import ResultStore
from xlabench.store.merge import merge_databases

pytest.importorskip("pandas")

#: Two CPU machines: one processor type, two core counts (what `taskset` gives here).
MACHINES = {
    "two": ({"accelerator": "cpu", "cpu_model": "AMD EPYC", "cpu_arch": "Zen 4",
             "cpu_threads": 2}, 2.0),
    "one": ({"accelerator": "cpu", "cpu_model": "AMD EPYC", "cpu_arch": "Zen 4",
             "cpu_threads": 1}, 1.0),
}
DEVICES = {"AMD EPYC (Zen 4) ×2", "AMD EPYC (Zen 4) ×1"}
MODELS = (("resnet50_v1", "ResNet_V1", "cnn", 40.0), ("mobilenet_v1", "MobileNet_V1", "cnn",
                                                       300.0),
          ("vit_b16", "ViT", "transformer", 20.0))


def _records(machine: str) -> list[Record]:
    env, scale = MACHINES[machine]
    records = []
    for model, family, kind, base in MODELS:
        for resolution in (64, 224):
            for mode, factor in (("eager", 1.0), ("xla", 1.5)):
                sps = base * scale * factor * (224 / resolution)
                record = make_record(model=model, family=family, kind=kind, mode=mode,
                                     resolution=resolution, throughput=sps)
                records.append(record.replace(env=env, env_id=f"env-{machine}"))
    return records


@pytest.fixture(scope="module")
def merged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("merged")
    sources = []
    for machine in MACHINES:
        path = folder / f"{machine}.db"
        with ResultStore(path) as store:
            store.save_many(_records(machine))
        sources.append(path)
    merge_databases(sources, folder / "all.db")
    return folder / "all.db"


def test_the_merged_database_names_both_devices(merged: Path) -> None:
    results = load_results(merged)
    assert set(results["device"]) == DEVICES
    assert results["origin_db"].notna().all()  # every row says where it was measured


def test_the_cross_device_findings_are_filled_for_each_device(merged: Path) -> None:
    findings = {f.key: f for f in build_findings(load_results(merged), ReportOptions())}
    top = findings["top-models"]
    assert top.empty is None
    assert set(top.tables[0].frame["device"]) == DEVICES  # fastest models per device
    per_core = [c for c in top.tables[0].shown_columns() if c.key == "sps_per_core"]
    assert per_core, "two core counts: samples/s per core beside the throughput"
    row = top.tables[0].frame.iloc[0]
    assert row["sps_per_core"] == row["throughput_sps"] / row["cpu_threads"]
    assert sum("fastest model" in line for line in top.summary) == 2
    fastest = findings["fastest"]
    per_device = fastest.tables[1].frame  # winners per resolution and device
    assert {(d, int(r)) for d, r in zip(per_device["device"], per_device["resolution"],
                                        strict=True)} == {(d, r) for d in DEVICES
                                                          for r in (64, 224)}
    kinds = findings["kinds"]  # speedups per device
    assert kinds.empty is None and set(kinds.tables[0].frame["device"]) == DEVICES


def test_the_report_of_a_merged_database_is_written(merged: Path, tmp_path: Path) -> None:
    files = write_report(load_results(merged), tmp_path / "out", ReportOptions(), "all.db")
    text = files.findings_md.read_text()
    for device in DEVICES:
        assert device in text
