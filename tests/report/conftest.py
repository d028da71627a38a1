"""A synthetic benchmark grid, a database holding it (plus the study's published CSV), and one
report built from it, shared by the report tests."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO, make_record
from xlabench.core import Parity, Record, Status
from xlabench.store import ResultStore
from xlabench.store.importer import read_study_csv

STUDY_CSV = REPO / "tests" / "data" / "study_best_per_resolution_and_gpu.csv"
EVIL = "<script>alert(1)</script>"
EVIL_ERROR = "<img src=x onerror=\"window.__xss=1\">"
EVIL_FILE = "<b onmouseover=alert(3)>evil.csv"  # no '/', so it is a file name
#: model, family, kind, throughput factor (eager, a100 = 2x t4)
MODELS = (
    ("resnet50_v1", "ResNet_V1", "cnn", 100.0),
    ("mobilenet_v1", "MobileNet_V1", "cnn", 300.0),
    ("mobilenet_v3_small", "MobileNet_V3", "cnn", 350.0),
    ("vit_b16", "ViT", "transformer", 80.0),
    ("mixer_b16", "MLP-Mixer", "mlp", 120.0),
    ("retinanet_r50", "RetinaNet", "detector", 30.0),
)
DEVICES = {"a100": 2.0, "t4": 1.0}
TF_FACTORS = {"eager": 1.0, "graph": 1.4}  # xla: 1.8 + 0.1 x model index


def grid_records() -> list[Record]:
    """TF eager/graph/xla and JAX eager/xla for every model on two devices, a batch sweep,
    failures, a parity failure and values that must be escaped."""
    records = []
    for device, scale in DEVICES.items():
        for i, (model, family, kind, base) in enumerate(MODELS):
            modes = [("tensorflow", m, f) for m, f in TF_FACTORS.items()]
            modes += [("tensorflow", "xla", 1.8 + 0.1 * i), ("jax", "eager", 0.9),
                      ("jax", "xla", 2.1)]
            records += [
                make_record(model=model, backend=backend, mode=mode, family=family, kind=kind,
                            throughput=base * scale * factor, accelerator=device)
                for backend, mode, factor in modes
            ]
        for batch in (8, 16):
            records.append(make_record(mode="xla", batch_size=batch, accelerator=device,
                                       throughput=100 * scale * 1.8 * batch / 4 * 0.9))
    return records + special_records()


def special_records() -> list[Record]:
    bad_parity = make_record(model="mobilenet_v1", family="MobileNet_V1", backend="jax",
                             mode="xla", batch_size=2, throughput=500.0)
    bad_parity = bad_parity.replace(parity=Parity("eager", 0.5, 0.2, 2e-3, False, "too far"))
    return [
        make_record(model="vgg16", family="VGG", status=Status.TIMEOUT),
        make_record(model="vgg19", family="VGG", status=Status.OOM, accelerator="t4"),
        bad_parity,
        make_record(model=EVIL, family=EVIL, mode="xla", throughput=50.0),
        make_record(model=EVIL, family=EVIL, mode="eager", throughput=40.0),
        make_record(model="vgg16", family="VGG", status=Status.FAILED).replace(error=EVIL_ERROR),
    ]


@dataclass(frozen=True)
class Built:
    db: Path
    out: Path


def fill_db(path: Path, tmp: Path) -> Path:
    """The grid plus the study's CSV and a published row with an unsafe name and file name."""
    evil_csv = tmp / EVIL_FILE
    evil_csv.write_text(STUDY_CSV.read_text().splitlines()[0] + "\n"
                        f"Evil,{EVIL},224,True,a100,1.0,2.0,3000.0\n")
    with ResultStore(path) as store:
        store.save_many(grid_records())
        store.save_many(read_study_csv(STUDY_CSV))
        store.save_many(read_study_csv(evil_csv))
    return path


@pytest.fixture(scope="package")
def built_report(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """One report from the full grid, built once for the whole package."""
    from xlabench.analysis import load_results
    from xlabench.report import ReportOptions, write_report

    tmp = tmp_path_factory.mktemp("report")
    db = fill_db(tmp / "grid.db", tmp)
    out = tmp / "out"
    write_report(load_results(db), out, ReportOptions(), db.name)
    return Built(db, out)


@pytest.fixture
def study_csv_copy(tmp_path: Path) -> Path:
    """A private copy of the study's CSV (tests may not change the shared one)."""
    return Path(shutil.copy(STUDY_CSV, tmp_path / STUDY_CSV.name))


def deploy_records() -> list[Record]:
    """Runtimes where the deployment answer is known (see test_deploy.py).

    resnet50_v1 @b4 on a100: TF eager 100, TF XLA 200, ONNX Runtime compiled 300 (parity
    passed), OpenVINO 400 with FAILED parity, ONNX Runtime basic 350 with no parity check.
    vit_b16 @b4: ONNX Runtime 300 against TF XLA 299 (intervals overlap).
    resnet50_v1 @b1 (latency p99): ORT 500 sps 20 ms, TF XLA 300 sps 8 ms, TF eager 100 sps 5 ms.
    mobilenet_v1 (peak host MB): ORT b8 900 sps 6000 MB, ORT b4 600 sps 3000 MB, TF XLA b4
    200 sps 2000 MB. Coverage: ViT unsupported on OpenVINO, mixer failed then ok on ORT.
    """
    from xlabench.core import Latency
    from xlabench.core.record import Memory

    def run(model: str, backend: str, mode: str, sps: float, **spec: object) -> Record:
        family = {"vit_b16": "ViT", "mobilenet_v1": "MobileNet_V1",
                  "mixer_b16": "MLP-Mixer"}.get(model, "ResNet_V1")
        return make_record(model=model, backend=backend, mode=mode, throughput=sps,
                           family=family, **spec)

    def lat(record: Record, p99_ms: float) -> Record:
        return record.replace(latency=Latency(p99_ms / 2, p99_ms * 0.9, p99_ms, (0.001,)))

    def mem(record: Record, host_mb: float) -> Record:
        return record.replace(memory=Memory(peak_host_mb=host_mb))

    bad = Parity("keras_eager", 0.5, 0.2, 2e-3, False, "too far")
    return [
        run("resnet50_v1", "tensorflow", "eager", 100.0),
        run("resnet50_v1", "tensorflow", "xla", 200.0),
        run("resnet50_v1", "onnxruntime", "compiled", 300.0),
        run("resnet50_v1", "openvino", "compiled", 400.0).replace(parity=bad),
        run("resnet50_v1", "onnxruntime", "basic", 350.0).replace(parity=None),
        run("vit_b16", "tensorflow", "xla", 299.0),
        run("vit_b16", "onnxruntime", "compiled", 300.0),
        lat(run("resnet50_v1", "onnxruntime", "compiled", 500.0, batch_size=1), 20.0),
        lat(run("resnet50_v1", "tensorflow", "xla", 300.0, batch_size=1), 8.0),
        lat(run("resnet50_v1", "tensorflow", "eager", 100.0, batch_size=1), 5.0),
        mem(run("mobilenet_v1", "onnxruntime", "compiled", 900.0, batch_size=8), 6000.0),
        mem(run("mobilenet_v1", "onnxruntime", "compiled", 600.0), 3000.0),
        mem(run("mobilenet_v1", "tensorflow", "xla", 200.0), 2000.0),
        run("vit_b16", "openvino", "compiled", 1.0, status=Status.UNSUPPORTED),
        run("mixer_b16", "onnxruntime", "compiled", 1.0, status=Status.FAILED),
        run("mixer_b16", "onnxruntime", "compiled", 250.0),
        run("mobilenet_v1", "openvino", "compiled", 1.0, status=Status.OOM),
    ]
