"""Published numbers in the 2023 study's CSV schema, turned into Records.

The study measured each number once: 100 iterations of batch 4 in FP32 with TensorFlow,
divided into wall time with no device sync, and published no spread. Imported records say so
in `provenance`; their `Throughput` has a median and no CI (the CI fields are None).

Re-importing does not duplicate: a published measurement is identified by its spec (model,
mode, resolution, batch, precision), its accelerator and its number. Rows already in the db
with the same identity (from any imported file) are skipped, so importing the same file twice,
or two files that share rows, stores each measurement once.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from xlabench.core import Costs, Record, Spec, Status, Throughput, UserError
from xlabench.core.backends import STUDY_BACKEND
from xlabench.store.db import ResultStore
from xlabench.store.export import STUDY_COLUMNS

#: Study model name -> (canonical name, family, kind), or None if unknown. The store layer
#: may not import the registry, so the caller passes this in.
Resolver = Callable[[str], tuple[str, str, str] | None]
IMPORT_ENV_ID = "import"
STUDY_BATCH_SIZE = 4
STUDY_ITERATIONS = 100
_TRUE, _FALSE = {"true", "1", "yes"}, {"false", "0", "no"}


def read_study_csv(path: Path, resolve: Resolver | None = None) -> list[Record]:
    """Records for every row of a CSV in the study's schema, or a UserError for the first bad row.

    Args:
        path: the CSV file; its name becomes the records' source, ``import:<name>``.
        resolve: maps the study's model name to the registry's; unknown names are kept.

    Raises:
        UserError: one line naming the file, the line number and what is wrong.
    """
    data = _read_bytes(path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path.name}: not UTF-8 text (byte {exc.start})") from None
    origin = {"file": path.name, "sha256": hashlib.sha256(data).hexdigest()}
    reader = csv.reader(io.StringIO(text, newline=""))
    header = _check_header(path.name, next(reader, None))
    records = []
    for fields in reader:
        if not any(f.strip() for f in fields):
            continue  # blank lines carry no data
        where = f"{path.name}: line {reader.line_num}"
        if len(fields) != len(header):
            raise UserError(f"{where}: expected {len(header)} fields, got {len(fields)}")
        row = {name: value.strip() for name, value in zip(header, fields, strict=True)}
        records.append(_record(row, where, reader.line_num, origin, resolve))
    if not records:
        raise UserError(f"{path.name}: no data rows after the header")
    return records


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"no such file: {path}") from None
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from None


def _check_header(name: str, header: list[str] | None) -> list[str]:
    if header is None:
        raise UserError(f"{name}: empty file; expected the header {','.join(STUDY_COLUMNS)}")
    names = [h.strip() for h in header]
    missing = [c for c in STUDY_COLUMNS if c not in names]
    extra = [c for c in names if c not in STUDY_COLUMNS]
    if missing or extra or len(names) != len(STUDY_COLUMNS):
        problems = [f"missing {missing}" if missing else "", f"unexpected {extra}" if extra else ""]
        detail = "; ".join(p for p in problems if p) or "duplicate columns"
        raise UserError(f"{name}: line 1: not the study's columns ({detail})")
    return names


#: The study's constructor mix-up (its keras_legacy/model_mapping.py): these names ran the
#: architecture on the right.
STUDY_BUILT_AS = {
    f"regnet{block}_{published}": f"regnet{block}_{built}"
    for block in "xy"
    for published, built in (("006", "008"), ("008", "016"), ("016", "002"))
}


def _record(
    row: dict[str, str], where: str, line: int, origin: dict[str, str], resolve: Resolver | None
) -> Record:
    study_name = _text(row, "model_variant", where)
    family = _text(row, "model_family", where)
    # Stored under the architecture the study really ran, so comparisons are like with like;
    # the published name stays in the provenance.
    ran = STUDY_BUILT_AS.get(study_name, study_name)
    known = resolve(ran) if resolve else None
    model, family, kind = known if known else (ran, family, "cnn")
    xla = _bool(row, "xla", where)
    throughput = _number(row, "throughput (samples/sec)", where, positive=True)
    assert throughput is not None
    try:
        spec = Spec(model=model, backend=STUDY_BACKEND, mode="xla" if xla else "eager",
                    resolution=_int(row, "resolution", where), batch_size=STUDY_BATCH_SIZE)
    except UserError as exc:
        raise UserError(f"{where}: {exc}") from None
    return Record(
        spec=spec, status=Status.OK, family=family, kind=kind,
        throughput=_published_throughput(throughput),
        costs=_costs(row, where), env={"accelerator": _text(row, "accelerator", where).lower()},
        env_id=IMPORT_ENV_ID, source=f"import:{origin['file']}",
        provenance=_provenance(origin, line, study_name),
    )


def _published_throughput(median_sps: float) -> Throughput:
    return Throughput(
        median_sps=median_sps, ci_low_sps=None, ci_high_sps=None, ci_confidence=None,
        rel_ci_halfwidth=None, target_met=False, steps_per_sample=STUDY_ITERATIONS, sample_s=(),
        batch_time_ms_median=1000.0 * STUDY_BATCH_SIZE / median_sps,
    )


def _costs(row: dict[str, str], where: str) -> Costs:
    gmacs = _number(row, "flop (giga)", where, required=False)
    params_m = _number(row, "params (million)", where, required=False)
    return Costs(
        params=None if params_m is None else round(params_m * 1e6),
        macs_per_image=None if gmacs is None else gmacs * 1e9,
        method="published: the study's 'flop (giga)' is GMACs per image",
    )


def _provenance(origin: dict[str, str], line: int, study_name: str) -> dict[str, Any]:
    misbuilt = {"built_as": STUDY_BUILT_AS[study_name],
                "misbuilt": f"published as {study_name}, which the study built with the "
                            f"{STUDY_BUILT_AS[study_name]} constructor"} \
        if study_name in STUDY_BUILT_AS else {}
    return {
        **misbuilt,
        **origin, "line": line, "study_model_name": study_name,
        "measured_by": "keras-xla-benchmarks study (2023), published numbers",
        "device_sync": False, "spread": None, "iterations": STUDY_ITERATIONS,
        "batch_size": STUDY_BATCH_SIZE, "framework": STUDY_BACKEND, "precision": "fp32",
        "note": "one number per configuration: 100 iterations x batch 4 / wall time, "
                "without device sync and without spread",
    }


def _text(row: dict[str, str], column: str, where: str) -> str:
    if not row[column]:
        raise UserError(f"{where}: column {column!r} is empty")
    return row[column]


def _bool(row: dict[str, str], column: str, where: str) -> bool:
    value = row[column].lower()
    if value in _TRUE | _FALSE:
        return value in _TRUE
    raise UserError(f"{where}: column {column!r} must be True or False, got {row[column]!r}")


def _int(row: dict[str, str], column: str, where: str) -> int:
    try:
        return int(row[column])
    except ValueError:
        raise UserError(
            f"{where}: column {column!r} must be an integer, got {row[column]!r}"
        ) from None


def _number(
    row: dict[str, str], column: str, where: str, positive: bool = False, required: bool = True
) -> float | None:
    text = row[column]
    if not text and not required:
        return None
    try:
        value = float(text)
    except ValueError:
        raise UserError(f"{where}: column {column!r} must be a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        need = "a positive" if positive else "a non-negative"
        raise UserError(f"{where}: column {column!r} must be {need} number, got {text!r}")
    return value


def import_key(record: Record) -> tuple[str, str, float | None]:
    """What identifies a published measurement: spec, accelerator and the number."""
    median = record.throughput.median_sps if record.throughput else None
    return record.spec_id, str(record.env.get("accelerator")), _rounded(median)


def split_new(store: ResultStore, records: Iterable[Record]) -> tuple[list[Record], int]:
    """Records not yet in the db (nor repeated earlier in `records`), and how many were skipped."""
    seen = {
        (row["spec_id"], row["accelerator"], _rounded(row["throughput_sps"]))
        for row in store.rows(env_id=IMPORT_ENV_ID)
    }
    fresh, skipped = [], 0
    for record in records:
        key = import_key(record)
        if key in seen:
            skipped += 1
            continue
        seen.add(key)
        fresh.append(record)
    return fresh, skipped


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
