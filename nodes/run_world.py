"""The world a run is about lives in the state as JSON; nodes share one parsed World per distinct content."""

from __future__ import annotations

import json
from collections import OrderedDict
from functools import lru_cache
from typing import Any

from nodes.state import State
from tools.world import World, parse_world

_BY_IDENTITY: OrderedDict[int, tuple[dict[str, Any], World]] = OrderedDict()
_BY_IDENTITY_SIZE = 32


@lru_cache(maxsize=32)
def _parse(blob: str) -> World:
    return parse_world(json.loads(blob))


def world_from_state(state: State) -> World:
    """Within one run every node sees the same dict, so it is found by identity (the entry keeps the dict alive,
    so its id is not reused); a checkpoint reload gives a new dict, keyed then on its canonical JSON text."""
    data = state["world"]
    entry = _BY_IDENTITY.get(id(data))
    if entry is not None and entry[0] is data:
        _BY_IDENTITY.move_to_end(id(data))
        return entry[1]
    world = _parse(json.dumps(data, sort_keys=True))
    _BY_IDENTITY[id(data)] = (data, world)
    if len(_BY_IDENTITY) > _BY_IDENTITY_SIZE:
        _BY_IDENTITY.popitem(last=False)
    return world
