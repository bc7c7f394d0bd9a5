"""The world a run is about lives in the state as JSON; nodes share one parsed World per distinct content."""

from __future__ import annotations

import json
from functools import lru_cache

from graph.state import State
from tools.world import World, parse_world


@lru_cache(maxsize=32)
def _parse(blob: str) -> World:
    return parse_world(json.loads(blob))


def world_from_state(state: State) -> World:
    # Keyed on the canonical JSON text: a checkpoint reload gives a new dict with the same content.
    return _parse(json.dumps(state["world"], sort_keys=True))
