"""`cloudbrain bench run`: a run killed with SIGKILL and resumed ends with the same database as an uninterrupted
run (nothing lost, nothing counted twice), and the traces hold exactly the stored runs."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmark.generator import generate_splits
from evaluation.store import DB_FILE, TRACES_FILE, load_records
from tests.support.bench_db import stored_rows
from tests.support.cli import run_cli
from tests.support.paths import ROOT

METHODS = "cloudbrain_full,llm_p,tool_use_only"


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("data")
    generate_splits(["dev_mini"], data, master_seed=77, workers=1, limit=6)
    return data


def _argv(samples: Path, out: Path) -> list[str]:
    return [
        "bench", "run", "--split", "dev_mini", "--data", str(samples), "--method", METHODS, "--model", "rules",
        "--repeats", "2", "--workers", "2", "--memory-path", str(out.parent / "memory"), "--out", str(out), "--quiet",
    ]  # fmt: skip


def _table_count(out: Path, table: str) -> int:
    try:
        db = sqlite3.connect(out / DB_FILE)
        try:
            return db.execute(f"select count(*) from {table}").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error:
        return 0


def test_resume_after_kill_gives_the_same_database(samples, tmp_path, capsys):
    whole = tmp_path / "whole" / "out"
    code, out, _ = run_cli(capsys, *_argv(samples, whole))
    assert code == 0, out
    planned = 3 * 6 * 2
    assert f"{planned} run(s)" in out

    resumed = tmp_path / "resumed" / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    runner = subprocess.Popen(
        [sys.executable, "-m", "cli.main", *_argv(samples, resumed)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # the kill reaches the worker processes too
    )
    deadline = time.monotonic() + 300
    while _table_count(resumed, "runs") < 5 and runner.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(runner.pid, signal.SIGKILL)
    runner.wait()
    interrupted = _table_count(resumed, "runs")
    assert 0 < interrupted < planned, "the kill must land mid-run for this test to mean anything"

    code, out, _ = run_cli(capsys, *_argv(samples, resumed))
    assert code == 0, out
    assert f"{interrupted} of {planned} already done" in out

    for table in ("runs", "decisions", "attempts", "tool_calls", "metrics"):
        assert stored_rows(resumed, table) == stored_rows(whole, table), table
    keys = [json.loads(line)["run_key"] for line in (resumed / TRACES_FILE).read_text().splitlines()]
    assert len(keys) == len(set(keys)) == planned
    assert [
        r.model_dump(exclude={"llm_latency_sec", "tool_latency_sec", "total_latency_sec"})
        for r in load_records(resumed)
    ] == [
        r.model_dump(exclude={"llm_latency_sec", "tool_latency_sec", "total_latency_sec"}) for r in load_records(whole)
    ]
    assert len(list((resumed / "checkpoints").glob("worker-*.sqlite"))) >= 2  # one checkpoint file per worker


def test_unknown_method_and_changed_settings_are_one_line_errors(samples, tmp_path, capsys):
    out = tmp_path / "out"
    code, _, err = run_cli(capsys, *[a if a != METHODS else "no_such_method" for a in _argv(samples, out)])
    assert code == 2 and "unknown method no_such_method" in err and "Traceback" not in err
    argv = _argv(samples, out)
    code, _, _ = run_cli(capsys, *[a if a != METHODS else "llm_p" for a in argv], "--limit", "1")
    assert code == 0
    code, _, err = run_cli(capsys, *[a if a != METHODS else "llm_p" for a in argv], "--limit", "2")
    assert code == 2 and "other limit" in err


def test_oracle_is_skipped_for_methods_that_write_no_ir(samples, tmp_path, capsys):
    code, out, _ = run_cli(
        capsys,
        *[a if a != "rules" else "oracle" for a in _argv(samples, tmp_path / "out")],
        "--limit",
        "1",
    )
    assert code == 0
    records = load_records(tmp_path / "out")
    assert {r.method for r in records} == {"cloudbrain_full", "llm_p", "tool_use_only"}
    assert all(r.judged_success for r in records if r.label == "SAT"), [r for r in records if not r.judged_success]
