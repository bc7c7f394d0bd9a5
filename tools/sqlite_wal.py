"""SQLite files that several processes open at once (the benchmark's workers, two `cloudbrain` commands)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

SWITCH_RETRY_SEC = 0.05


def use_wal(connection: sqlite3.Connection, timeout_sec: float = 60.0) -> None:
    """Puts the connection's file in write-ahead-log mode (readers never block the writer). The switch takes an
    exclusive lock without waiting on the busy timeout, so processes opening a new file at the same moment get
    'database is locked': it is retried here for up to `timeout_sec`. A file already in WAL needs no switch."""
    deadline = time.monotonic() + timeout_sec
    while True:
        try:
            if connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
                return
            connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(SWITCH_RETRY_SEC)


def connect_wal(path: Path, timeout_sec: float = 60.0, **options: object) -> sqlite3.Connection:
    """A connection to the SQLite file at `path` (created with its folder if missing), in WAL mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path, timeout=timeout_sec, **options)
    use_wal(connection, timeout_sec)
    return connection
