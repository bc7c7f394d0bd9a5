"""Checkpointers: a SQLite file by default, or a PostgreSQL database given as a `postgres://` URL.

SQLite: one saver per file per process (SQLite is not for several writers from several processes; parallel
benchmark workers each get their own shard file). PostgreSQL: one saver (one connection) per URL per process;
any number of processes, the runner's workers included, share one database (each run has its own thread id).
"""

from __future__ import annotations

import atexit
import os
import re
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.sqlite_wal import connect_wal

if TYPE_CHECKING:  # langgraph loads when a store opens, not when a parser names the default
    from langgraph.checkpoint.base import BaseCheckpointSaver

DEFAULT_DB = ".cloudbrain/runs.sqlite"
POSTGRES_SCHEMES = ("postgres://", "postgresql://")
# Keyed by process too: a connection inherited across fork() (the runner's workers) must never be reused.
_SAVERS: dict[tuple[int, str], BaseCheckpointSaver] = {}
_LOCK = threading.Lock()


class CheckpointerError(RuntimeError):
    """The checkpoint store cannot be opened (e.g. no PostgreSQL server at the URL); the message says why."""


def is_postgres_url(target: str | Path) -> bool:
    return str(target).startswith(POSTGRES_SCHEMES)


def thread_config(thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    """The config that addresses a thread (at one of its checkpoints, or its latest) in a store and a graph."""
    configurable = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable, "recursion_limit": 200}


def display_name(target: str | Path) -> str:
    """The target as shown in outputs: a URL's password masked."""
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", str(target))


def open_checkpointer(target: str | Path = DEFAULT_DB) -> BaseCheckpointSaver:
    """The saver for a SQLite file path or a postgres:// URL (cached: one per target per process)."""
    return postgres_checkpointer(str(target)) if is_postgres_url(target) else sqlite_checkpointer(target)


def sqlite_checkpointer(path: str | Path = DEFAULT_DB) -> BaseCheckpointSaver:
    from langgraph.checkpoint.sqlite import SqliteSaver

    resolved = Path(path).resolve()
    with _LOCK:
        saver = _SAVERS.get((os.getpid(), str(resolved)))
        if saver is None:
            # WAL before setup(), which switches without waiting: workers sharing one new file would race there
            connection = connect_wal(resolved, check_same_thread=False)
            saver = SqliteSaver(connection)
            saver.setup()
            # In WAL mode NORMAL still survives a killed process (only a power cut may lose the last commits) and
            # spares an fsync per checkpoint write: ~1 ms each, a few dozen per run.
            connection.execute("PRAGMA synchronous=NORMAL")
            _SAVERS[(os.getpid(), str(resolved))] = saver
        return saver


@atexit.register
def close_sqlite_savers() -> None:
    """Close this process's SQLite connections at exit: the last one closed folds the write-ahead log into the file
    and removes it (`-wal`, `-shm`), so the .sqlite file alone holds every run. Interpreter shutdown would close
    them too, but not a connection left in a reference cycle (a `cloudbrain warm` command's, whose imported modules
    are out of the collector's reach)."""
    with _LOCK:
        for key, saver in list(_SAVERS.items()):
            if key[0] == os.getpid() and isinstance(getattr(saver, "conn", None), sqlite3.Connection):
                saver.conn.close()
                del _SAVERS[key]


# How long a process waits for another one's setup of the same database before it gives up with a clear error.
SETUP_WAIT_S = 120.0
_SETUP_LOCK = "SELECT pg_try_advisory_lock(hashtext('cloudbrain_checkpoint_setup')) AS got"
_SETUP_UNLOCK = "SELECT pg_advisory_unlock(hashtext('cloudbrain_checkpoint_setup'))"


def _set_up_one_at_a_time(saver: BaseCheckpointSaver, connection: Any) -> None:
    """PostgresSaver.setup, one process at a time per database (two `cloudbrain ops` or benchmark workers may open
    one new database at the same moment). Unserialised, both build an index CONCURRENTLY on the same table and
    PostgreSQL kills one as a deadlock. The lock is polled, never waited on: a statement blocked in
    pg_advisory_lock holds a snapshot, which the holder's CONCURRENTLY build waits for (a deadlock again)."""
    deadline = time.monotonic() + SETUP_WAIT_S
    while not connection.execute(_SETUP_LOCK).fetchone()["got"]:
        if time.monotonic() > deadline:
            raise CheckpointerError(
                f"cannot open the PostgreSQL checkpointer: another process has been setting up its tables for "
                f"over {SETUP_WAIT_S:.0f} s"
            )
        time.sleep(0.05)
    try:
        saver.setup()
    finally:
        connection.execute(_SETUP_UNLOCK)


def postgres_checkpointer(url: str) -> BaseCheckpointSaver:
    """langgraph-checkpoint-postgres on one autocommit connection, its tables created on first use."""
    with _LOCK:
        saver = _SAVERS.get((os.getpid(), url))
        if saver is None:
            # Imported here: psycopg loads libpq, which a SQLite-only run never needs.
            import psycopg
            from langgraph.checkpoint.postgres import PostgresSaver
            from psycopg.rows import dict_row

            try:
                # The settings PostgresSaver documents: autocommit for its own transactions, no server-side
                # prepared statements (they break behind poolers such as PgBouncer), rows as dicts.
                connection = psycopg.Connection.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)
            except psycopg.OperationalError as exc:
                first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise CheckpointerError(f"cannot open the PostgreSQL checkpointer: {first_line}") from None
            saver = PostgresSaver(connection)
            try:
                _set_up_one_at_a_time(saver, connection)
            except BaseException:
                connection.close()  # a saver that never set up is not cached: its connection goes with it
                raise
            _SAVERS[(os.getpid(), url)] = saver
        return saver
