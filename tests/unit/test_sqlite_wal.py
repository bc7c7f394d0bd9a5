"""The WAL switch of a file another process is reading: SQLite refuses it at once, whatever the busy timeout; the
benchmark's workers opening the shared response cache together failed there ('a worker could not start')."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from tools.sqlite_wal import connect_wal, use_wal


def _reader_holding_a_lock(path: Path) -> sqlite3.Connection:
    reader = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    reader.execute("CREATE TABLE IF NOT EXISTS t (x)")
    reader.execute("BEGIN")
    reader.execute("SELECT * FROM t").fetchall()  # a shared lock until COMMIT
    return reader


def test_a_plain_switch_fails_at_once_while_another_connection_reads(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    reader = _reader_holding_a_lock(path)
    writer = sqlite3.connect(path, timeout=30, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        writer.execute("PRAGMA journal_mode=WAL")
    reader.execute("COMMIT")


def test_use_wal_waits_for_the_reader_and_switches(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    reader = _reader_holding_a_lock(path)
    threading.Timer(0.3, lambda: reader.execute("COMMIT")).start()
    connection = connect_wal(path, timeout_sec=10, check_same_thread=False)
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_use_wal_gives_up_after_its_timeout(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    reader = _reader_holding_a_lock(path)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        use_wal(sqlite3.connect(path, timeout=0.1, isolation_level=None), timeout_sec=0.3)
    reader.execute("COMMIT")
