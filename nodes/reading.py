"""The request's reading (language.stated.stated_constraints: places and roles, pinned and excluded UAVs, the
quantities, the demands a rule forbids, polarity on every salient span), computed once per run and kept in the
state as plain JSON under `reading`: the stepper and the inspector show it, an edit of it is what every gate then
reads, and validate, repair, fidelity and finalize never re-derive it from the text."""

from __future__ import annotations

from typing import Any

from ir.fidelity import StatedConstraints
from language.team import read_request
from nodes.state import State
from tools.world import World

READS = ("reading", "instruction")


def reading_of(state: State, world: World) -> StatedConstraints:
    """The run's reading: the one in the state, else (a checkpoint written before readings were kept) read now."""
    kept = state.get("reading")
    if kept:
        return StatedConstraints.model_validate(kept)
    return read_request(state.get("instruction") or "", world)


def reading_update(state: State, world: World) -> dict[str, Any]:
    """The state update that keeps the reading, once: empty when the state holds it already."""
    if state.get("reading"):
        return {}
    return {"reading": read_request(state.get("instruction") or "", world).model_dump(mode="json")}
