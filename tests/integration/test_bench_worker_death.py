"""A benchmark worker that dies (a native crash, the out-of-memory killer) costs only the run it was running: that
run is stored with the error `worker died: signal 11 (SIGSEGV)`, a fresh worker takes its place, the other runs go
on, and a resumed benchmark retries it and replaces its rows."""

from __future__ import annotations

import faulthandler
import os
import signal
import sqlite3
from pathlib import Path

import pytest

from benchmark.generator import generate_splits
from evaluation import runner
from evaluation.engines import EngineError, WorkerDied, process_engine
from evaluation.methods.base import Method, MethodRun, MethodSetup, MethodTask
from evaluation.runner import BenchConfig, run_bench
from evaluation.store import DB_FILE, TRACES_FILE

METHODS = ["tool_use_only", "llm_p"]


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("data")
    generate_splits(["dev_mini"], data, master_seed=4242, workers=1, limit=3)
    return data / "dev_mini.jsonl"


class DiesOn(Method):
    """The real method, except that on one sample it kills its own process, as a native crash would."""

    name = "dies_on"
    summary = "test only"

    def __init__(self, method: Method, sample_id: str):
        self.method, self.sample_id = method, sample_id

    def run(self, task: MethodTask, setup: MethodSetup) -> MethodRun:
        if task.sample_id == self.sample_id:
            faulthandler.disable()  # pytest's handler would print the worker's stack first
            os.kill(os.getpid(), signal.SIGSEGV)
        return self.method.run(task, setup)


def _runs(out: Path) -> dict[str, str | None]:
    db = sqlite3.connect(out / DB_FILE)
    try:
        return dict(db.execute("select run_key, error from runs").fetchall())
    finally:
        db.close()


def test_a_dead_worker_costs_only_its_run_and_a_resumed_benchmark_retries_it(samples, tmp_path, monkeypatch):
    victim = runner.load_samples(samples)[0]["sample_id"]
    real_get_method = runner.get_method
    # The workers are forked from this process, so they run the patched lookup.
    monkeypatch.setattr(runner, "get_method", lambda name: DiesOn(real_get_method(name), victim))
    config = BenchConfig(samples=str(samples), methods=METHODS, models=["rules"], repeats=2)
    out = tmp_path / "out"
    first = run_bench(config, out, workers=2, progress=False)

    runs = _runs(out)
    assert len(runs) == first.planned == 12  # every run is stored, the dead ones too
    died = {key for key, error in runs.items() if error}
    assert died == {key for key in runs if f"|{victim}|" in key}  # 2 methods x 2 repeats, nothing else
    assert {runs[key] for key in died} == {"worker died: signal 11 (SIGSEGV)"}

    monkeypatch.setattr(runner, "get_method", real_get_method)
    resumed = run_bench(config, out, workers=2, progress=False)
    assert resumed.ran == len(died) and resumed.already_done == 12 - len(died)
    runs = _runs(out)
    assert len(runs) == 12 and not any(runs.values())
    traced = [line for line in (out / TRACES_FILE).read_text(encoding="utf-8").splitlines() if line]
    assert len(traced) == 12  # the dead runs' trace lines were dropped before their retries were written


def _square_or_die(item: int) -> int:
    if item == 3:
        os.kill(os.getpid(), signal.SIGKILL)  # as the out-of-memory killer does
    return item * item


def _no_setup() -> None:
    pass


def _failing_setup() -> None:
    raise RuntimeError("no GPU here")


def test_the_process_engine_reports_which_item_a_dead_worker_held_and_goes_on():
    with process_engine(2, _no_setup, ()) as map_unordered:
        results = list(map_unordered(_square_or_die, range(8)))
    died = [r for r in results if isinstance(r, WorkerDied)]
    assert died == [WorkerDied(3, "signal 9 (SIGKILL)")]
    assert sorted(r for r in results if not isinstance(r, WorkerDied)) == [0, 1, 4, 16, 25, 36, 49]


def test_a_worker_that_cannot_set_up_is_one_engine_error():
    with pytest.raises(EngineError, match="a worker could not start: RuntimeError: no GPU here"):
        with process_engine(1, _failing_setup, ()):
            pass
