"""Fixtures of the integration tests: the graph tests run once per checkpointer (in memory, a SQLite file and a
real PostgreSQL database), as langgraph's own tests do."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver

from tests.support.postgres import fresh_database


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def checkpointer(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseCheckpointSaver]:
    """An InMemorySaver, a SqliteSaver on a real file under tmp_path (what `cloudbrain run --db` uses), or a
    PostgresSaver on a fresh database of the session's server (what `--db postgres://...` uses)."""
    if request.param == "memory":
        yield InMemorySaver()
        return
    if request.param == "postgres":
        with PostgresSaver.from_conn_string(fresh_database(request.getfixturevalue("postgres_url"))) as saver:
            saver.setup()
            yield saver
        return
    connection = sqlite3.connect(tmp_path / "runs.sqlite", check_same_thread=False)
    saver = SqliteSaver(connection)
    saver.setup()
    yield saver
    connection.close()
