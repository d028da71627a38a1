"""The CPU study (issue 38): `--preset study-cpu` in tiers, the published layout
(results/cpu/<device>/study.db with its ENVIRONMENT.json), `study-report` from every device's
database, and the README's findings checked against the report built from results/."""

from __future__ import annotations

import hashlib
import json
import math
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, make_record
from xlabench.core import Record, UserError
from xlabench.core.device import device_name, device_slug
from xlabench.core.result import ResultPolicy
from xlabench.measure import env as envinfo
from xlabench.store import ResultStore
from xlabench.sweep import build_config, cost, expand, format_plan
from xlabench.sweep.plan import Plan
from xlabench.sweep.presets import (
    GPU_MODELS,
    STUDY_CPU_TIER_S,
    STUDY_CPU_TIERS,
    STUDY_CPU_TIMEOUT_S,
    STUDY_PUBLISHED_MODELS,
)
from xlabench.zoo import REGISTRY

#: What every study-cpu model runs on, written out: a change to the grid must change this too.
STUDY_CPU_PAIRS = {"tensorflow/eager", "tensorflow/graph", "tensorflow/xla",
                   "openvino/compiled", "onnxruntime/compiled"}
PUBLISHED_CSV = REPO / "tests" / "data" / "study_best_per_resolution_and_gpu.csv"


NO_SUCH_TIER = max(STUDY_CPU_TIERS) + 1


def _model_s(model: str) -> float:
    """A study-cpu model's estimate as its dry run on a machine with no history prints it: the
    cost line's process time, the method's default processes on each of its engines."""
    line_s = cost.configuration_process_s(model, REGISTRY.get(model).default_resolution, 4)
    assert line_s is not None, f"{model} has no pinned MAC count"
    return len(STUDY_CPU_PAIRS) * ResultPolicy().min_processes * line_s


def _tier_of(model: str) -> list[int]:
    return [tier for tier, models in STUDY_CPU_TIERS.items() if model in models]


# ------------------------------------------------------------------------------ the grid
def _groups() -> tuple[list[str], list[str], list[str]]:
    """The study-cpu order, written out: the smallest model of each family (by MACs), the rest
    of the published-table models, everything else."""
    def smallest(model: str) -> bool:
        family = REGISTRY.get(model).family
        macs = [REGISTRY.get(m).macs or float("inf") for m in GPU_MODELS
                if REGISTRY.get(m).family == family]
        return (REGISTRY.get(model).macs or float("inf")) == min(macs)
    first = [m for m in GPU_MODELS if smallest(m)]
    published = [m for m in STUDY_PUBLISHED_MODELS if m not in first]
    rest = [m for m in GPU_MODELS if m not in first and m not in published]
    return first, published, rest


def test_every_gpu_model_is_in_exactly_one_tier() -> None:
    assert sorted(STUDY_CPU_TIERS) == list(range(1, len(STUDY_CPU_TIERS) + 1))
    assert all(STUDY_CPU_TIERS.values())  # no empty tier: a part with no models runs them all
    assert {m: _tier_of(m) for m in GPU_MODELS} == {m: [_tier_of(m)[0]] for m in GPU_MODELS}
    assert sum(len(models) for models in STUDY_CPU_TIERS.values()) == len(GPU_MODELS)


def test_tiers_are_the_study_order_cut_into_sittings() -> None:
    first, published, rest = _groups()
    assert len({REGISTRY.get(m).family for m in first}) == len(first)  # one per family
    ordered = [m for tier in sorted(STUDY_CPU_TIERS) for m in STUDY_CPU_TIERS[tier]]
    assert ordered == first + published + rest
    for group in (first, published, rest):
        tiers = [models for models in STUDY_CPU_TIERS.values() if set(models) & set(group)]
        assert all(set(models) <= set(group) for models in tiers)  # no tier mixes groups
        group_s = sum(_model_s(m) for m in group)
        assert len(tiers) <= math.ceil(group_s / STUDY_CPU_TIER_S) + 1
        for models in tiers:  # each fits a sitting, unless one model alone does not
            assert sum(map(_model_s, models)) <= STUDY_CPU_TIER_S or len(models) == 1


def test_the_grid_is_each_model_at_its_own_size_on_five_engines() -> None:
    config = build_config("study-cpu")
    grid = expand(config)
    assert not grid.skipped
    assert len(grid.specs) == len(GPU_MODELS) * len(STUDY_CPU_PAIRS)
    for model in GPU_MODELS:
        specs = [s for s in grid.specs if s.model == model]
        assert {f"{s.backend}/{s.mode}" for s in specs} == STUDY_CPU_PAIRS, model
        assert {(s.resolution, s.batch_size, s.precision) for s in specs} == {
            (REGISTRY.get(model).default_resolution, 4, "fp32")}
        assert {grid.tiers[s.spec_id()] for s in specs} == set(_tier_of(model))
    assert config.timeout_s == STUDY_CPU_TIMEOUT_S
    assert config.policy == ResultPolicy()  # the method's default processes per result


def test_a_tier_is_a_stable_part_of_the_whole_sweep() -> None:
    whole = expand(build_config("study-cpu"))
    first = expand(build_config("study-cpu", overrides={"tiers": ["1"]}))
    two = expand(build_config("study-cpu", file_values={"tiers": [1, 2]}))
    assert {s.model for s in first.specs} == set(STUDY_CPU_TIERS[1])
    assert {s.model for s in two.specs} == {*STUDY_CPU_TIERS[1], *STUDY_CPU_TIERS[2]}
    whole_ids = [s.spec_id() for s in whole.specs]
    assert [s.spec_id() for s in first.specs] == [i for i in whole_ids
                                                  if whole.tiers[i] == 1]
    # the tiers run one by one are one sweep: a resumed tier continues its results
    assert first.sweep_id() == two.sweep_id() == whole.sweep_id()
    assert first.sweep_id("x") != first.sweep_id()
    again = expand(build_config("study-cpu", overrides={"tiers": "1"}))
    assert [s.spec_id() for s in again.specs] == [s.spec_id() for s in first.specs]


def test_a_model_filter_keeps_each_model_in_its_own_tier() -> None:
    model = STUDY_CPU_TIERS[3][1]
    alone = expand(build_config("study-cpu", overrides={"models": model}))
    in_tier = expand(build_config("study-cpu", overrides={"models": model, "tiers": "3"}))
    assert set(alone.tiers.values()) == {3}
    assert [s.spec_id() for s in in_tier.specs] == [s.spec_id() for s in alone.specs]
    assert {f"{s.backend}/{s.mode}" for s in in_tier.specs} == STUDY_CPU_PAIRS
    with pytest.raises(UserError, match="no model given is in tier 1 of the preset"):
        expand(build_config("study-cpu", overrides={"models": model, "tiers": "1"}))


def test_presets_without_tiers_keep_their_sweep_id() -> None:
    grid = expand(build_config("demo"))
    joined = ",".join(sorted(s.spec_id() for s in grid.specs))
    assert grid.sweep_id() == hashlib.sha256(joined.encode()).hexdigest()[:12]
    assert not grid.tiers


@pytest.mark.parametrize(
    ("preset", "tiers", "fragment"),
    [
        ("study-cpu", str(NO_SUCH_TIER), f"preset 'study-cpu' has no tier {NO_SUCH_TIER}; it "
                                         f"has {', '.join(map(str, sorted(STUDY_CPU_TIERS)))}"),
        ("study-cpu", "1,0", "preset 'study-cpu' has no tier 0"),
        ("study-cpu", "one", "tier must be an integer, got 'one'"),
        ("gpu", "1", "preset 'gpu' has none"),
        (None, "1", "a sweep without a preset has none"),
    ],
)
def test_bad_tier(preset: str | None, tiers: str, fragment: str) -> None:
    with pytest.raises(UserError, match=re.escape(fragment)):
        build_config(preset, overrides={"tiers": tiers})


def _one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("xlabench: error:"), result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--preset", "study-cpu", "--tier", str(NO_SUCH_TIER)], f"has no tier {NO_SUCH_TIER}"),
        (["--preset", "gpu", "--tier", "1"], "preset 'gpu' has none"),
    ],
)
def test_cli_bad_tier_exits_2(run_cli, tmp_path: Path, args: list[str], fragment: str) -> None:
    result = run_cli("sweep", *args, "--dry-run", "--db", "never.db")
    assert fragment in _one_error_line(result)
    assert not (tmp_path / "never.db").exists()


def test_dry_run_gives_each_tier_its_eta(run_cli, tmp_path: Path) -> None:
    result = run_cli("sweep", "--preset", "study-cpu", "--tier", "1", "--tier", "2",
                     "--dry-run")
    assert result.returncode == 0, result.stderr
    tiers = {int(m) for m in re.findall(r"^  tier (\d): ", result.stdout, re.MULTILINE)}
    assert tiers == {1, 2}
    runs = 5 * len(STUDY_CPU_TIERS[1])
    # no database: every configuration estimated by the cost line, but those the registry
    # rules out (ONNX Runtime on ConvNeXt and RegNet), which take no time
    ways = ("tensorflow", "tensorflow", "tensorflow", "openvino", "onnxruntime")
    ruled_out = sum(REGISTRY.get(m).unsupported_reason(b) is not None
                    for m in STUDY_CPU_TIERS[1] for b in ways)
    assert ruled_out > 0
    assert re.search(rf"^  tier 1: {runs} of {runs} configurations to run, estimate "
                     rf"[0-9].* \({runs - ruled_out} from the cost line\)$", result.stdout,
                     re.MULTILINE)
    assert not (tmp_path / "xlabench.db").exists()


def test_plan_gives_each_tier_its_own_estimate() -> None:
    grid = expand(build_config("study-cpu", overrides={"tiers": "1,2"}))
    first = [s for s in grid.specs if grid.tiers[s.spec_id()] == 1]
    estimates = {first[1].spec_id(): 1800.0}  # first[0] is done
    plan = Plan(grid=grid, todo=grid.specs[1:], done=1, workers=1, process_s=estimates,
                processes_left={s.spec_id(): 1 for s in grid.specs[1:]})
    text = format_plan(plan, "study.db")
    n1, n2 = len(first), len(grid.specs) - len(first)
    assert (f"  tier 1: {n1 - 1} of {n1} configurations to run, estimate 30 min "
            f"({n1 - 2} without an estimate, not counted)") in text
    assert f"  tier 2: {n2} of {n2} configurations to run, estimate ?" in text


# ------------------------------------------------------------------------------ the layout
@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("AMD EPYC (Zen 4) ×2", "amd-epyc-zen-4-x2"),
        ("Intel Xeon Platinum 8375C ×8", "intel-xeon-platinum-8375c-x8"),
        ("a100", "a100"),
        ("  ", "unknown"),
    ],
)
def test_device_slug(name: str, slug: str) -> None:
    assert device_slug(name) == slug


def test_record_environment_adds_a_sitting(tmp_path: Path) -> None:
    from xlabench.cli.study_commands import ENVIRONMENT_FILE, record_environment

    fingerprint = envinfo.static_fingerprint()
    device = device_name(fingerprint)
    db = record_environment(tmp_path / "cpu", commit="abc123")
    assert db == tmp_path / "cpu" / device_slug(device) / "study.db"
    record_environment(tmp_path / "cpu", commit="def456")
    data = json.loads((db.parent / ENVIRONMENT_FILE).read_text(encoding="utf-8"))
    assert data["device"] == device and data["database"] == "study.db"
    assert [s["commit"] for s in data["sittings"]] == ["abc123", "def456"]
    assert {s["env_id"] for s in data["sittings"]} == {envinfo.env_id(fingerprint)}
    assert "hostname" not in data["fingerprint"]
    assert data["fingerprint"]["cpu_model"] == fingerprint["cpu_model"]
    assert not db.exists()  # the sweep creates it


def test_git_commit_of_a_checkout_and_of_none(tmp_path: Path) -> None:
    from xlabench.cli.study_commands import UNKNOWN_COMMIT, git_commit

    assert git_commit(tmp_path) == UNKNOWN_COMMIT
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout: no commit to read")
    assert re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", git_commit(REPO))


def test_cli_study_env_prints_the_db_path(run_cli, tmp_path: Path) -> None:
    result = run_cli("study-env", "--root", "out/cpu")
    assert result.returncode == 0, result.stderr
    db = Path(result.stdout.strip())
    slug = device_slug(device_name(envinfo.static_fingerprint()))
    assert db == Path("out/cpu") / slug / "study.db"
    data = json.loads((tmp_path / db.parent / "ENVIRONMENT.json").read_text(encoding="utf-8"))
    assert [s["commit"] for s in data["sittings"]] == ["unknown"]  # tmp_path: no checkout


# ------------------------------------------------------------------------------ the report
#: Two machine kinds, each in its own device folder as `make study` lays them out, with each
#: model's TF eager samples/s: MobileNetV3-Small wins on Zen 4, MobileNetV1 (the study's
#: winner at 224 on the A100) on Zen 5.
MACHINES = {
    "amd-epyc-zen-4-x2": ({"accelerator": "cpu", "cpu_model": "AMD EPYC", "cpu_arch": "Zen 4",
                           "cpu_threads": 2}, {"mobilenet_v1": 300.0, "mobilenet_v3_small": 500.0}),
    "amd-epyc-zen-5-x2": ({"accelerator": "cpu", "cpu_model": "AMD EPYC", "cpu_arch": "Zen 5",
                           "cpu_threads": 2}, {"mobilenet_v1": 700.0, "mobilenet_v3_small": 500.0}),
}
FAMILIES = {"mobilenet_v1": "MobileNet_V1", "mobilenet_v3_small": "MobileNet_V3"}


def _machine_records(env: dict, eager_sps: dict[str, float]) -> list[Record]:
    records = []
    for model, sps in eager_sps.items():
        for mode, factor in (("eager", 1.0), ("graph", 1.4), ("xla", 0.8)):
            record = make_record(model=model, family=FAMILIES[model], mode=mode,
                                 throughput=sps * factor)
            records.append(record.replace(env=env, env_id=f"env-{env['cpu_arch']}"))
    return records


def _study_folder(root: Path) -> dict[Path, str]:
    """Two devices' databases under `root`, and an xla-flags.db beside one; each file's
    SHA-256."""
    from tests.report.test_analysis import _store_figure as store_figure
    from tests.report.test_xla_flags import side as ab_side

    hashes = {}
    for slug, (env, eager_sps) in MACHINES.items():
        db = root / slug / "study.db"
        db.parent.mkdir(parents=True)
        with ResultStore(db) as store:
            store.save_many(_machine_records(env, eager_sps))
        hashes[db] = hashlib.sha256(db.read_bytes()).hexdigest()
    flags_db = root / "amd-epyc-zen-4-x2" / "xla-flags.db"
    with ResultStore(flags_db) as store:  # one ab: XLA's defaults against TF graph
        for label, mode, ratio, minute in (("xla", "xla", 1.0, 0), ("graph", "graph", 4.0, 1)):
            for record in ab_side("ab-1", label, mode, ratio, "", minute):
                store.save(record, "ab-1", label)
            store_figure(store, f"ab-1-{label}", ResultPolicy())
    hashes[flags_db] = hashlib.sha256(flags_db.read_bytes()).hexdigest()
    return hashes


def test_study_report_from_every_device_reads_only(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    from xlabench.cli.study_commands import study_report

    hashes = _study_folder(tmp_path / "cpu")
    before = sorted(p.name for p in (tmp_path / "cpu").rglob("*"))
    findings_md = study_report(tmp_path / "cpu", tmp_path / "report", PUBLISHED_CSV)
    text = findings_md.read_text(encoding="utf-8")
    assert findings_md == tmp_path / "report" / "findings.md"
    assert (tmp_path / "report" / "index.html").exists()
    assert list((tmp_path / "report").glob("*.png"))
    assert "AMD EPYC (Zen 4) ×2" in text and "AMD EPYC (Zen 5) ×2" in text
    assert "a100" in text  # the study's published numbers beside ours
    # finding 3 says, per measured device, whether the study's winner at 224 wins there too
    claims = [line for line in text.splitlines() if "the study's fastest was" in line]
    zen4 = next(line for line in claims if "@224 on AMD EPYC (Zen 4) ×2:" in line)
    zen5 = next(line for line in claims if "@224 on AMD EPYC (Zen 5) ×2:" in line)
    assert "fastest mobilenet_v3_small at 400.0 samples/s" in zen4
    assert "mobilenet_v1 on a100" in zen4 and zen4.endswith("its claim does not hold here.")
    assert "fastest mobilenet_v1 at 560.0 samples/s" in zen5
    assert zen5.endswith("its claim holds here.")
    # the devices side by side, and the flags' ab pairs from the xla-flags.db beside one
    assert "2 models were measured on 2 devices" in text
    assert "AMD EPYC (Zen 5) ×2 over AMD EPYC (Zen 4) ×2, median throughput ratio" in text
    assert "m on a100: graph / XLA defaults 4.00x \\[" in text  # markdown escapes [
    assert {db: hashlib.sha256(db.read_bytes()).hexdigest() for db in hashes} == hashes
    assert sorted(p.name for p in (tmp_path / "cpu").rglob("*")) == before  # no -wal, no copy


def test_cli_study_report_without_results_exits_2(run_cli, tmp_path: Path) -> None:
    result = run_cli("study-report", "--root", "results/cpu", "--out", "results/report")
    assert "no study results in results/cpu/" in _one_error_line(result)
    assert not (tmp_path / "results").exists()


# ------------------------------------------------------------------------------ README
#: A number as the README and the report write it (4.3, 2.44, 1530); a digit inside a name
#: (EfficientNet-B7, regnetx_016) is no number.
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)*(?!\w)")
FINDINGS_HEADING = re.compile(r"^## Findings\s*$", re.MULTILINE)


def findings_section(readme: str) -> str | None:
    """The README's '## Findings' section up to the next '## ' heading, or None."""
    found = FINDINGS_HEADING.search(readme)
    if found is None:
        return None
    rest = readme[found.end():]
    end = re.search(r"^## ", rest, re.MULTILINE)
    return rest[:end.start()] if end else rest


def missing_numbers(section: str, report: str) -> list[str]:
    """The numbers of `section` that are no number of `report`; link targets, image paths
    and code spans (file names, commands) are not figures."""
    prose = re.sub(r"`[^`]*`", " ", re.sub(r"\]\([^)]*\)", "]", section))
    known = set(NUMBER.findall(report))
    return [n for n in dict.fromkeys(NUMBER.findall(prose)) if n not in known]


def test_findings_section_and_its_numbers() -> None:
    readme = ("# x\n\n## Findings\n\nOn AMD EPYC (Zen 4) ×2, XLA is 4.3× slower "
              "[3.9, 4.8] ([report](results/report/index.html)), `make study-run TIER=1`.\n"
              "### More\nEfficientNet-B7 at 600 px: 0.27 samples/s.\n## Next\n1999\n")
    section = findings_section(readme)
    assert section is not None and "1999" not in section and "0.27" in section
    report = "AMD EPYC (Zen 4) ×2: 4.3 [3.9, 4.8]; B7 @600 0.27 samples/s"
    assert missing_numbers(section, report) == []
    assert missing_numbers(section, report.replace("4.3", "4.30")) == ["4.3"]
    assert missing_numbers(section, report.replace("0.27", "0.3")) == ["0.27"]
    assert findings_section("# x\n## Usage\n") is None


def test_readme_findings_are_the_reports_numbers(tmp_path: Path) -> None:
    section = findings_section((REPO / "README.md").read_text(encoding="utf-8"))
    if section is None:
        pytest.skip("README.md has no '## Findings' section yet")
    from xlabench.cli.study_commands import STUDY_ROOT, study_databases, study_report

    root = REPO / STUDY_ROOT
    try:
        study_databases(root)
    except UserError:
        pytest.skip(f"no study results in {STUDY_ROOT}/ yet: nothing to check the README against")
    pytest.importorskip("pandas")
    findings_md = study_report(root, tmp_path / "report", PUBLISHED_CSV)
    missing = missing_numbers(section, findings_md.read_text(encoding="utf-8"))
    assert not missing, f"README Findings numbers not in the report built from results/: {missing}"
