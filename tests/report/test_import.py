"""Importing published numbers in the study's CSV schema."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from tests.report.conftest import STUDY_CSV
from xlabench.cli.report_commands import resolve_study_name
from xlabench.core import Status, UserError
from xlabench.store import ResultStore
from xlabench.store.export import STUDY_COLUMNS, study_csv
from xlabench.store.importer import STUDY_BUILT_AS, read_study_csv

HEADER = ",".join(STUDY_COLUMNS)
GOOD = "MobileNet_V1,mobilenet_v1,224,True,a100,0.57,4.25,2608.05"


def test_study_csv_becomes_records_with_provenance(study_csv_copy: Path) -> None:
    records = read_study_csv(study_csv_copy, resolve=resolve_study_name)
    assert len(records) == 36
    first = records[0]
    spec = first.spec
    assert (spec.model, spec.backend, spec.mode, spec.resolution, spec.batch_size,
            spec.precision) == ("mobilenet_v1", "tensorflow", "xla", 224, 4, "fp32")
    assert first.status is Status.OK and first.source == f"import:{study_csv_copy.name}"
    assert first.env == {"accelerator": "a100"} and first.env_id == "import"
    tp = first.throughput
    assert tp is not None and tp.median_sps == 2608.05
    assert (tp.ci_low_sps, tp.ci_high_sps, tp.rel_ci_halfwidth, tp.sample_s) == (
        None, None, None, ())
    assert first.costs.params == 4_250_000 and first.costs.macs_per_image == pytest.approx(0.57e9)
    prov = first.provenance
    assert prov["device_sync"] is False and prov["spread"] is None
    assert (prov["iterations"], prov["batch_size"], prov["line"]) == (100, 4, 2)
    assert prov["file"] == study_csv_copy.name and len(prov["sha256"]) == 64


def test_names_resolve_through_the_registry_or_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "names.csv"
    path.write_text(f"{HEADER}\nEfficientNet,efficient_b1,240,True,a100,0.7,7.86,710\n"
                    "MyNets,my_custom_net,224,True,a100,1.0,2.0,500\n")
    known, unknown = read_study_csv(path, resolve=resolve_study_name)
    assert (known.spec.model, known.family, known.kind) == ("efficient_b1", "EfficientNet_V1",
                                                            "cnn")
    assert (unknown.spec.model, unknown.family, unknown.kind) == ("my_custom_net", "MyNets", "cnn")
    assert unknown.provenance["study_model_name"] == "my_custom_net"


def test_an_alias_becomes_the_canonical_name(tmp_path: Path) -> None:
    path = tmp_path / "alias.csv"
    path.write_text(f"{HEADER}\nResNet,resnet50,224,False,t4,4.1,25.6,300\n")
    (record,) = read_study_csv(path, resolve=resolve_study_name)
    assert (record.spec.model, record.spec.mode, record.family) == ("resnet50_v1", "eager",
                                                                   "ResNet_V1")


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("", "empty file"),
        ("model,throughput\nx,1\n", "line 1: not the study's columns"),
        (HEADER.replace("xla", "jit") + f"\n{GOOD}\n", "missing ['xla']"),
        (f"{HEADER}\n", "no data rows"),
        (f"{HEADER}\n{GOOD}\n{GOOD},extra\n", "line 3: expected 8 fields, got 9"),
        (f"{HEADER}\n{GOOD}\n" + GOOD.replace("2608.05", "fast"), "line 3: column "
         "'throughput (samples/sec)' must be a number, got 'fast'"),
        (f"{HEADER}\n" + GOOD.replace("2608.05", "-1"), "must be a positive number"),
        (f"{HEADER}\n" + GOOD.replace("2608.05", "0"), "must be a positive number"),
        (f"{HEADER}\n" + GOOD.replace("2608.05", "nan"), "must be a positive number"),
        (f"{HEADER}\n" + GOOD.replace("True", "maybe"), "column 'xla' must be True or False"),
        (f"{HEADER}\n" + GOOD.replace(",224,", ",big,"), "'resolution' must be an integer"),
        (f"{HEADER}\n" + GOOD.replace(",224,", ",99999,"), "line 2: resolution must be"),
        (f"{HEADER}\n" + GOOD.replace("mobilenet_v1", ""), "'model_variant' is empty"),
        (f"{HEADER}\n" + GOOD.replace("a100", ""), "'accelerator' is empty"),
        (f"{HEADER}\n" + GOOD.replace("0.57", "-2"), "'flop (giga)' must be a non-negative"),
    ],
)
def test_a_malformed_csv_names_its_first_bad_row(
    tmp_path: Path, content: str, fragment: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(UserError) as info:
        read_study_csv(path)
    message = str(info.value)
    assert message.startswith("bad.csv: ") and fragment in message and "\n" not in message


def test_missing_costs_are_allowed_and_blank_lines_skipped(tmp_path: Path) -> None:
    path = tmp_path / "ok.csv"
    path.write_text(f"\ufeff{HEADER}\n\n" + GOOD.replace("0.57,4.25", ",") + "\n\n")
    (record,) = read_study_csv(path)
    assert record.costs.params is None and record.costs.macs_per_image is None
    assert record.provenance["line"] == 3


def test_export_of_imported_rows_gives_the_published_numbers_back(
    tmp_path: Path, study_csv_copy: Path
) -> None:
    with ResultStore(tmp_path / "r.db") as store:
        store.save_many(read_study_csv(study_csv_copy))
        exported = list(csv.DictReader(io.StringIO(study_csv(store.rows()))))
    original = list(csv.DictReader(STUDY_CSV.open()))
    for row in original:  # the study's misbuilt RegNets come back as the architecture that ran
        row["model_variant"] = STUDY_BUILT_AS.get(row["model_variant"], row["model_variant"])
    key = ["model_variant", "accelerator", "resolution"]
    assert sorted(tuple(r[k] for k in key) for r in exported) == sorted(
        tuple(r[k] for k in key) for r in original)
    by_key = {tuple(r[k] for k in key): r for r in exported}
    for row in original:
        back = by_key[tuple(row[k] for k in key)]
        for column in ("flop (giga)", "params (million)", "throughput (samples/sec)"):
            assert float(back[column]) == pytest.approx(float(row[column]), abs=0.006)


def _one_line(result, fragment: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("xlabench: error:"), result.stderr
    assert fragment in lines[0] and "Traceback" not in result.stderr


def test_cli_import_is_all_or_nothing_and_idempotent(run_cli, tmp_path: Path,
                                                     study_csv_copy: Path) -> None:
    db = tmp_path / "r.db"
    first = run_cli("import", str(study_csv_copy), "--db", str(db))
    assert first.returncode == 0, first.stderr
    assert "imported 36 rows" in first.stderr
    again = run_cli("import", str(study_csv_copy), "--db", str(db))
    assert again.returncode == 0 and "imported 0 rows" in again.stderr
    assert "36 already in the db" in again.stderr
    bad = tmp_path / "half.csv"
    lines = STUDY_CSV.read_text().splitlines()
    bad.write_text("\n".join([*lines[:5], lines[5].replace("True", "sometimes"), *lines[6:]]))
    _one_line(run_cli("import", str(bad), "--db", str(db)), "half.csv: line 6: column 'xla'")
    with ResultStore(db) as store:
        assert store.count() == 36  # nothing of half.csv, though its first 4 rows were fine


def test_cli_import_of_a_missing_file(run_cli, tmp_path: Path) -> None:
    _one_line(run_cli("import", "nope.csv", "--db", str(tmp_path / "r.db")), "no such file")
    assert not (tmp_path / "r.db").exists()


@pytest.mark.parametrize("resolve", [resolve_study_name, None], ids=["registry", "no-registry"])
@pytest.mark.parametrize(("published", "built"), [("regnetx_016", "regnetx_002"),
                                                  ("regnety_008", "regnety_016")])
def test_the_studys_misbuilt_regnets_are_stored_as_what_ran(
    tmp_path: Path, published: str, built: str, resolve
) -> None:
    path = tmp_path / "study.csv"
    row = f"RegNet,{published},224,True,t4,0.1,2.71,1921.77"
    path.write_text(",".join(STUDY_COLUMNS) + f"\n{row}\n")
    (record,) = read_study_csv(path, resolve)
    assert record.spec.model == built
    assert record.provenance["study_model_name"] == published
    assert f"published as {published}" in record.provenance["misbuilt"]
