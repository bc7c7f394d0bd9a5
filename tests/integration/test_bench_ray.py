"""`bench run --engine ray`: the runs spread over a (local, 2-CPU) Ray cluster's actors write the same results
database as the process pool: every table and every metric equal for the same samples and seeds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmark.generator import generate_splits
from tests.support.bench_db import stored_rows
from tests.support.cli import run_cli
from tests.support.paths import ROOT


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("data")
    generate_splits(["dev_mini"], data, master_seed=83, workers=1, limit=4)
    return data


def _run(capsys, samples: Path, out: Path, *engine: str) -> str:
    code, printed, err = run_cli(
        capsys, "bench", "run", "--split", "dev_mini", "--data", str(samples),
        "--method", "cloudbrain_full,llm_p,react", "--model", "rules", "--workers", "2",
        "--memory-path", str(out.parent / "memory"), "--out", str(out), "--quiet", *engine,
    )  # fmt: skip
    assert code == 0, err
    return printed


def test_ray_and_the_process_pool_store_the_same_results(samples, tmp_path, capsys):
    pooled, rayed = tmp_path / "pool" / "out", tmp_path / "ray" / "out"
    _run(capsys, samples, pooled)
    printed = _run(capsys, samples, rayed, "--engine", "ray")
    assert "12 run(s)" in printed
    for table in ("runs", "decisions", "attempts", "tool_calls", "metrics"):
        assert stored_rows(rayed, table) == stored_rows(pooled, table), table
    methods_with_tsr = {r["method"] for r in stored_rows(rayed, "metrics") if r["metric"] == "tsr"}
    assert methods_with_tsr == {"cloudbrain_full", "llm_p", "react"}


def test_an_unreachable_ray_cluster_is_one_line(samples, tmp_path):
    # A real process: Ray's log handler keeps the stderr it saw first, which in-process capture would swap.
    argv = [
        sys.executable, "-m", "cli.main", "bench", "run", "--split", "dev_mini", "--data", str(samples),
        "--method", "llm_p", "--model", "rules", "--engine", "ray", "--ray-address", "ray://127.0.0.1:9",
        "--out", str(tmp_path / "o"), "--quiet",
    ]  # fmt: skip
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "cannot start or reach the Ray cluster" in done.stderr and "Traceback" not in done.stderr
