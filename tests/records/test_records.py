"""Typed result records: every committed results file loads into them and is written back
unchanged; fields are attributes; every results path comes from results.path_for."""
import glob
import json
import os
import re

import pytest

from gemm_lessons import SIMULATOR
from gemm_lessons.runs import bench
from gemm_lessons.records import results
from gemm_lessons.records.schema import BankTruth, BenchRecord, CheckRow, Device, SgemmRow, TuningRecord, TuningRow

COMMITTED = sorted(p for p in glob.glob(os.path.join(results.RESULTS_DIR, "**", "*"), recursive=True)
                   if os.path.isfile(p))
# the typed kinds (the latency and primer-listing files are plain JSON, read by their modules)
RECORD_FILES = [p for p in COMMITTED if p.endswith(".json") and results.kind_of(p) in results.RECORDS]
H100 = "NVIDIA H100 80GB HBM3"


def test_every_committed_results_file_has_a_kind():
    assert RECORD_FILES and {results.kind_of(p) for p in RECORD_FILES} == {
        "bench", "tuning", "banks", "reproducibility", "experiment", "shapes"}
    assert {results.kind_of(p) for p in COMMITTED if p.endswith(".json")} <= set(results.PATHS)
    for p in COMMITTED:
        assert results.kind_of(p) is not None, p


@pytest.mark.parametrize("path", RECORD_FILES, ids=lambda p: os.path.relpath(p, results.RESULTS_DIR))
def test_committed_records_are_written_back_unchanged(path, tmp_path):
    text = open(path).read()
    rec = results.read(path)
    assert rec.to_dict() == json.loads(text)  # keys and values, hand-added notes included
    assert rec.to_json() == text  # byte for byte, in the order the writer used
    assert open(rec.write(tmp_path / "again.json")).read() == text


def test_records_have_the_types_of_their_kind():
    assert isinstance(results.load(), BenchRecord)
    assert isinstance(results.read(results.path_for("tuning", H100)), TuningRecord)
    assert isinstance(results.load_banks(H100), BankTruth)
    for kind in ("reproducibility", "experiment"):
        assert all(isinstance(results.read(p), BenchRecord) for p in results.files(kind))


def test_fields_are_attributes():
    path = results.path_for("bench", H100)
    raw = json.load(open(path))
    rec = results.load(H100)
    assert isinstance(rec.device, Device) and rec.device.name == raw["device"]["name"] == H100
    assert rec.device.peak_gflops == raw["device"]["peak_gflops"]
    row = rec.sgemm[0]
    assert isinstance(row, SgemmRow) and row.size == (raw["sgemm"][0]["M"], raw["sgemm"][0]["N"], raw["sgemm"][0]["K"])
    assert row.gflops == raw["sgemm"][0]["gflops"]  # the measured number, unchanged
    assert rec.transpose[0].shape == (8192, 8192)
    assert rec.compiler["warptile"]["registers"] == raw["compiler"]["warptile"]["registers"]
    assert rec.extra["git_commit_note"] == raw["git_commit_note"]  # hand-added, kept
    sweep = results.read(results.path_for("tuning", H100))
    assert isinstance(sweep.rows[0], TuningRow) and sweep.rows[0].config["BM"] in (64, 128)
    assert sweep.runs[0].extra["git_commit_note"].startswith("git_commit corrected")


def test_none_is_written_only_where_it_means_something():
    refused = CheckRow(kernel="vec", shape=[67, 45, 33], alpha=1.0, beta=0.0, passed=None, message="refused: K")
    assert refused.to_dict() == {"kernel": "vec", "shape": [67, 45, 33], "alpha": 1.0, "beta": 0.0,
                                 "passed": None, "message": "refused: K"}
    row = SgemmRow(kernel="vec", M=64, N=64, K=63, refused="K must be a multiple of 4")
    assert row.to_dict() == {"kernel": "vec", "M": 64, "N": 64, "K": 63, "refused": "K must be a multiple of 4"}
    assert SgemmRow.from_dict(row.to_dict()) == row


def test_unknown_keys_are_kept_after_the_known_ones():
    d = {"note": "measured twice", "kernel": "naive", "M": 1, "N": 2, "K": 3, "gflops": 1.5}
    row = SgemmRow.from_dict(d)
    assert row.extra == {"note": "measured twice"} and row.gflops == 1.5
    assert list(row.to_dict()) == ["kernel", "M", "N", "K", "gflops", "note"]
    assert "note='measured twice'" in repr(row) and "None" not in repr(row)


def test_path_for_builds_every_kind_of_results_file():
    d = results.RESULTS_DIR
    assert results.path_for("bench", H100) == os.path.join(d, "nvidia-h100-80gb-hbm3.json")
    assert results.path_for("tuning", H100) == os.path.join(d, "tuning-nvidia-h100-80gb-hbm3.json")
    assert results.path_for("plot", H100, "ladder") == os.path.join(d, "nvidia-h100-80gb-hbm3-ladder.png")
    assert results.path_for("reproducibility", H100, "run-a", directory="/tmp") == \
        "/tmp/reproducibility/nvidia-h100-80gb-hbm3-run-a.json"
    assert results.path_for("experiment", H100, "l2order") in COMMITTED
    for kind in ("banks", "ncu-banks", "ncu-transpose", "sanitizer", "reproducibility-report"):
        assert results.path_for(kind, H100) in COMMITTED, kind
    with pytest.raises(ValueError, match="name"):
        results.path_for("plot", H100)


@pytest.mark.skipif(not SIMULATOR, reason="on a GPU the bench would run")
def test_bench_refuses_on_the_simulator():
    with pytest.raises(SystemExit, match="needs a GPU"):
        bench.main([])


def test_recorded_numbers_say_why_they_are_not_measured(monkeypatch):
    from gemm_lessons.core import backend
    monkeypatch.delenv(backend.FILLED_ENV, raising=False)
    assert backend.not_measured_why() == "not measured here: CUDA simulator"
    monkeypatch.setenv(backend.FILLED_ENV, "1")  # tools/refresh_outputs.py --into --gpu-notebook
    assert "not measured in this notebook's GPU run" in backend.not_measured_why()


EXPERIMENT_FILES = sorted(p for p in glob.glob(os.path.join(results.EXPERIMENTS_DIR, "*", "*"))
                          if os.path.isfile(p) and not p.endswith((".py", ".cu", ".md")))


def _experiment_of(path):
    """(name, kind) of the experiment record at ``path``, judged by its folder and file name, or None."""
    import fnmatch

    folder, base = os.path.split(os.path.abspath(path))
    for kind, pattern in results.EXPERIMENTS.get(os.path.basename(folder), {}).items():
        if fnmatch.fnmatchcase(base, pattern.format(device="*", suffix="*")):
            return os.path.basename(folder), kind
    return None


def test_every_experiment_record_is_found_by_the_one_reader():
    """experiments/<name>/ holds a probe, its records and a README; every record there is one that
    results.experiment names, and every experiment named there has its records and a README."""
    assert EXPERIMENT_FILES
    for p in EXPERIMENT_FILES:
        assert _experiment_of(p) is not None, p
    for name, kinds in results.EXPERIMENTS.items():
        assert any(_experiment_of(p) == (name, kind) for p in EXPERIMENT_FILES for kind in kinds), name
    assert results.experiment("launch") == os.path.join(results.EXPERIMENTS_DIR, "launch",
                                                        "launch-probe-nvidia-h100-80gb-hbm3.json")
    assert results.experiment("splitk", run="run1", directory="/tmp") == \
        "/tmp/splitk-probe-run1-nvidia-h100-80gb-hbm3.json"
    assert results.experiment_record("launch")["device"] == H100
    assert results.experiment_record("launch", device="no such GPU") is None
    for p in EXPERIMENT_FILES:  # JSON everywhere but Nsight Compute's CSV and text kept for people
        assert p.endswith(".json") or _experiment_of(p)[1] in ("ncu", "log") or _experiment_of(p)[1].startswith("ncu_"), p


def test_the_l2_sources_record_splits_the_l2_misses_as_its_readme_says():
    """experiments/l2_sources/README.md: of naive's L2 misses, the SMs' requests missed about what
    DRAM read; the rest were lookups of requests from the LTC fabric (the other L2 partition)."""
    header, calls, launches = results.ncu_record(results.experiment("l2_sources", "ncu"))
    assert "H100" in header and "commit" in header and "Nsight Compute" in header
    k = dict(zip(calls, launches))["naive"]
    gb = {name: 32 * k[f"lts__t_sectors_{name}.sum"] / 1e9
          for name in ("lookup_miss", "srcunit_tex_lookup_miss", "srcunit_ltcfabric_lookup_miss")}
    dram = 32 * k["dram__sectors_read.sum"] / 1e9
    sm, fabric = gb["srcunit_tex_lookup_miss"], gb["srcunit_ltcfabric_lookup_miss"]
    assert abs(sm + fabric - gb["lookup_miss"]) < 0.01 * gb["lookup_miss"]
    assert (f"{gb['lookup_miss']:.1f}", f"{sm:.1f}", f"{dram:.1f}", f"{fabric:.1f}") == ("49.6", "33.2", "33.1", "16.3")
    assert f"{100 * abs(sm / dram - 1):.1f}" == "0.2"  # "0.2% apart"


def test_the_dbuf_experiment_is_a_bench_record_written_back_unchanged(tmp_path):
    path = results.experiment("dbuf", "bench")
    text = open(path).read()
    rec = BenchRecord.read(path)
    assert rec.device.name == H100 and rec.to_json() == text


def test_each_experiment_has_a_readme_and_its_probes_stand_alone():
    """experiments/<name>/: a README for every folder, every folder a key of results.EXPERIMENTS;
    probes import only the package and experiments._shared (no sys.path edits)."""
    root = results.EXPERIMENTS_DIR
    folders = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)) and d != "__pycache__")
    assert folders == sorted(results.EXPERIMENTS)
    for d in folders:
        assert os.path.isfile(os.path.join(root, d, "README.md")), d
    for path in glob.glob(os.path.join(root, "**", "*.py"), recursive=True):
        text = open(path).read()
        assert not re.search(r"sys\.path\s*(\.|\[|\+?=)", text), path
        others = set(re.findall(r"^\s*(?:from|import) experiments\.(\w+)", text, flags=re.M))
        assert others <= {"_shared"}, (path, others)


def test_tools_holds_only_what_its_readme_lists():
    """tools/ is the GPU workflow: every file in it is named in tools/README.md."""
    tools = os.path.join(os.path.dirname(results.RESULTS_DIR), "tools")
    readme = open(os.path.join(tools, "README.md")).read()
    for name in os.listdir(tools):
        path = os.path.join(tools, name)
        if os.path.isdir(path) and not any(f for folder, _, files in os.walk(path) if "__pycache__" not in folder
                                           for f in files):
            continue  # an empty folder (or only compiled Python) left by an older checkout: git keeps none
        if name not in ("README.md", "__pycache__"):
            assert f"`{name}" in readme, name
