"""PostgreSQL checkpoints beyond the graph tests (which run on it too, see conftest.py): `cloudbrain run --db
postgres://...` and `trace` read back from it, the benchmark runner's two workers share one database, and an
unreachable server is a one-line error."""

from __future__ import annotations

import sqlite3
import threading

import psycopg
import pytest

from benchmark.generator import generate_splits
from evaluation.store import DB_FILE, load_records
from graph import checkpoint
from graph.checkpoint import CheckpointerError, postgres_checkpointer
from tests.support.cli import run_cli, run_json
from tests.support.paths import DOWNTOWN
from tests.support.postgres import fresh_database

INSTRUCTION = "Send a drone from hospital_A to accident_site_3 within 10 minutes"


def _threads(url: str) -> set[str]:
    with psycopg.connect(url) as connection:
        return {row[0] for row in connection.execute("select distinct thread_id from checkpoints")}


def test_run_and_trace_on_postgres(postgres_url, tmp_path, capsys):
    url = fresh_database(postgres_url)
    code, out = run_json(
        capsys, "run", "--world", str(DOWNTOWN), "--instruction", INSTRUCTION, "--model", "rules",
        "--checkpointer", url, "--thread", "pg-run", "--memory-path", str(tmp_path / "memory"),
    )  # fmt: skip
    assert code == 0 and out["status"] == "execute" and out["db"].startswith("postgresql://")
    assert _threads(url) == {"pg-run"}
    code, report = run_json(capsys, "trace", "--db", url, "--thread", "pg-run")
    assert code == 0 and report["final"]["status"] == "execute" and report["rounds"]


def test_two_bench_workers_share_one_postgres_database(postgres_url, tmp_path, capsys):
    url = fresh_database(postgres_url)
    data = tmp_path / "data"
    generate_splits(["dev_mini"], data, master_seed=91, workers=1, limit=3)
    out = tmp_path / "out"
    code, printed, _ = run_cli(
        capsys, "bench", "run", "--split", "dev_mini", "--data", str(data), "--method", "cloudbrain_full,llm_p",
        "--model", "rules", "--workers", "2", "--checkpointer", url, "--memory-path", str(tmp_path / "memory"),
        "--out", str(out), "--quiet",
    )  # fmt: skip
    assert code == 0, printed
    assert len(load_records(out)) == 6
    with sqlite3.connect(out / DB_FILE) as db:
        graph_runs = {row[0] for row in db.execute("select thread_id from runs where method = 'cloudbrain_full'")}
    assert len(graph_runs) == 3 and _threads(url) == graph_runs  # every graph run checkpointed there; llm_p: none
    assert not list((out / "checkpoints").glob("worker-*.sqlite"))  # nothing went to per-worker files


@pytest.mark.parametrize("command", ["run", "bench"])
def test_an_unreachable_postgres_is_one_line(command, tmp_path, capsys):
    url = "postgresql://nobody@127.0.0.1:9/nowhere?connect_timeout=2"
    argv = (
        ["run", "--world", str(DOWNTOWN), "--instruction", INSTRUCTION, "--model", "rules", "--checkpointer", url]
        if command == "run"
        else ["bench", "run", "--split", "dev_mini", "--method", "llm_p", "--model", "rules", "--checkpointer", url,
              "--out", str(tmp_path / "out"), "--quiet"]
    )  # fmt: skip
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and "cannot open the PostgreSQL checkpointer" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def _tables(url: str) -> set[str]:
    with psycopg.connect(url) as connection:
        return {row[0] for row in connection.execute("select tablename from pg_tables where schemaname = 'public'")}


def test_a_second_process_waits_for_the_first_ones_setup(postgres_url):
    """Two processes opening one new database at once used to build the same index CONCURRENTLY and PostgreSQL
    killed one as a deadlock (CI, two `cloudbrain ops`). Setup now goes one process at a time: while another session
    holds the setup lock, opening the checkpointer creates nothing; it finishes once the lock is let go."""
    url = fresh_database(postgres_url)
    opened: list[object] = []
    with psycopg.connect(url, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(hashtext('cloudbrain_checkpoint_setup'))")
        opener = threading.Thread(target=lambda: opened.append(postgres_checkpointer(url)))
        opener.start()
        opener.join(timeout=1.5)
        assert opener.is_alive() and not opened and _tables(url) == set()
        other.execute("SELECT pg_advisory_unlock(hashtext('cloudbrain_checkpoint_setup'))")
        opener.join(timeout=30)
    assert opened and {"checkpoints", "checkpoint_writes", "checkpoint_migrations"} <= _tables(url)


def test_a_setup_held_up_too_long_is_one_clear_error(postgres_url, monkeypatch):
    url = fresh_database(postgres_url)
    monkeypatch.setattr(checkpoint, "SETUP_WAIT_S", 0.3)
    with psycopg.connect(url, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(hashtext('cloudbrain_checkpoint_setup'))")
        with pytest.raises(CheckpointerError, match="another process has been setting up its tables"):
            postgres_checkpointer(url)
    assert _tables(url) == set()
