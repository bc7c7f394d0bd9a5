"""Fixtures shared by every test module: the downtown example world, loaded once per session."""

from __future__ import annotations

import pytest
from graph_fixtures import DOWNTOWN

from tools.world import World, load_world


@pytest.fixture(scope="session")
def downtown() -> World:
    return load_world(DOWNTOWN)


@pytest.fixture(scope="session")
def world(downtown: World) -> World:
    return downtown
