"""Fixtures of the integration tests: the graph tests run once per checkpointer, as langgraph's own tests do."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver


@pytest.fixture(params=["memory", "sqlite"])
def checkpointer(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseCheckpointSaver]:
    """An InMemorySaver, or a SqliteSaver on a real file under tmp_path (what `cloudbrain run --db` uses)."""
    if request.param == "memory":
        yield InMemorySaver()
        return
    connection = sqlite3.connect(tmp_path / "runs.sqlite", check_same_thread=False)
    saver = SqliteSaver(connection)
    saver.setup()
    yield saver
    connection.close()
