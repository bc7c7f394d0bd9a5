"""CloudBrain-Bench generation: byte-identical re-runs, worker-count independence, schema and stats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark.checks import derive_checks
from benchmark.generator import SCHEMA_FILE, STATS_FILE, generate_splits, jobs_for
from benchmark.sample import SCHEMA_PATH, read_samples, render_schema
from benchmark.splits import SPLITS

LIMIT = 12


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path, Path]:
    """dev_mini's first samples three times: twice in one process, once with two workers."""
    dirs = [tmp_path_factory.mktemp(name) for name in ("first", "again", "parallel")]
    for directory, workers in zip(dirs, (1, 1, 2)):
        generate_splits(["dev_mini"], directory, master_seed=7, workers=workers, limit=LIMIT)
    return dirs[0], dirs[1], dirs[2]


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_same_seed_gives_byte_identical_files(runs):
    first, again, _ = runs
    assert set(_files(first)) == {"dev_mini.jsonl", STATS_FILE, SCHEMA_FILE}
    assert _files(first) == _files(again)


def test_worker_count_does_not_change_a_byte(runs):
    first, _, parallel = runs
    assert _files(first) == _files(parallel)


def test_another_seed_gives_other_samples(runs, tmp_path):
    generate_splits(["dev_mini"], tmp_path, master_seed=8, workers=1, limit=2)
    other = [s.generation_seed for s in read_samples(tmp_path / "dev_mini.jsonl")]
    mine = [s.generation_seed for s in read_samples(runs[0] / "dev_mini.jsonl")[:2]]
    assert other != mine


def test_every_line_is_a_valid_sample_with_all_fields(runs):
    samples = read_samples(runs[0] / "dev_mini.jsonl")
    assert len(samples) == LIMIT
    assert len({s.sample_id for s in samples}) == LIMIT
    for sample in samples:
        assert sample.split == "dev_mini" and sample.data_tier == "synthetic"
        assert sample.instruction.zh and sample.instruction.en
        assert sample.gold_ir.task_id == sample.sample_id
        assert sample.source_provenance.generator_version
        assert sample.world.city_layout in SPLITS["dev_mini"].layouts
        assert sample.checks == derive_checks(sample)  # the checks the task states, written beside it
        if sample.label == "SAT":
            gold = sample.gold_decision  # one UAV's route, or a fleet sample's team of routed members
            assert gold.status == "execute" and (gold.waypoints or (gold.team and all(m.waypoints for m in gold.team)))
        else:
            assert sample.gold_decision.status in ("safe_refusal", "human_confirm")


def test_samples_follow_the_split_schedule(runs):
    schedule = [job.scenario_type for job in jobs_for(SPLITS["dev_mini"], 7, LIMIT)]
    assert [s.scenario_type for s in read_samples(runs[0] / "dev_mini.jsonl")] == schedule


def test_split_stats_describe_the_file(runs):
    stats = json.loads((runs[0] / STATS_FILE).read_text())
    split = stats["splits"][0]
    samples = read_samples(runs[0] / "dev_mini.jsonl")
    assert split["num_samples"] == len(samples) == stats["overall"]["num_samples"]
    assert sum(split["scenario_counts"].values()) == len(samples)
    assert sum(split["label_counts"].values()) == len(samples)
    sat = sum(s.label == "SAT" for s in samples)
    assert split["sat_rate"] == round(sat / len(samples), 4)
    unknown = sum(s.label == "UNKNOWN" for s in samples)
    assert split["unknown_rate"] == round(unknown / len(samples), 4)
    proofs = [s.source_provenance.proof["outcome"] for s in samples if s.source_provenance.proof]
    assert split["proofs"]["run"] == len(proofs) and split["proofs"]["unknown"] == unknown
    fleet = sorted(len(s.world.fleet) for s in samples)
    assert (split["uav_count"]["min"], split["uav_count"]["max"]) == (
        fleet[0],
        fleet[-1],
    )
    assert split["gold_trace_length"]["max"] == max(len(s.gold_tool_trace) for s in samples)


def test_written_and_committed_schemas_match_the_model(runs):
    assert (runs[0] / SCHEMA_FILE).read_text(encoding="utf-8") == render_schema()
    assert SCHEMA_PATH.read_text(encoding="utf-8") == render_schema(), "run: python -m benchmark.sample"
    assert "gold_tool_trace" in json.loads(render_schema())["required"]
