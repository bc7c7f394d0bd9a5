"""Converse accounting: what a plan asserts about the request came from it.

ir.fidelity checks that what the request says is in the plan; this checks the other way. Every place of the IR
(origin, destination, stops, hand-off points) is one the request points to (`StatedConstraints.referenced`: an id,
a name, a kind the world has one of) or a documented default the caller passes in with why (the entity nearest a
named UAV for a return, the base nearest it, the depot nearest a site, the hub nearest a closed destination when the
request allows a hand-off). A deadline or a cargo mass the request does not state is not the plan's to invent.

What needs no source: the UAV when the request pins none (the nearest suitable one assign_uav finds; a pinned one is
ir.fidelity's), and an altitude band, reserve or separation at the defaults or tighter (a repair may raise the
floor to clear a roof; relaxing a stated value is ir.fidelity's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ir.fidelity import StatedConstraints
from ir.finding import Finding

# IR entity field -> the word a finding uses for one of its places
PLACE_FIELDS = {
    "origin": "origin",
    "destination": "destination",
    "waypoints": "stop",
    "handoff_points": "hand-off point",
}


def unsourced_findings(
    stated: StatedConstraints, ir: Mapping[str, Any] | None, defaults: Mapping[str, Mapping[str, str]]
) -> list[Finding]:
    """One finding per IR place or quantity with no source in the request; `defaults` maps an entity field to the
    ids a documented default allows there, each with why."""
    if not ir:
        return []
    entities = ir.get("entities") or {}
    findings = []
    for field, word in PLACE_FIELDS.items():
        value = entities.get(field)
        for ref in value if isinstance(value, list) else [value]:
            if ref is None or ref in stated.referenced or ref in defaults.get(field, {}):
                continue
            # a round trip ends where it began: its destination is sourced as its origin is
            if field == "destination" and ref == entities.get("origin") and stated.return_leg:
                if ref in defaults.get("origin", {}):
                    continue
            message = f"{word} {ref} is not in the request"
            allowed = list(stated.referenced) + list(defaults.get(field, {}))
            findings.append(
                Finding(f"unsourced_{field}", f"entities.{field}", ref, message, allowed=allowed, rule="R8")
            )
    constraints = ir.get("constraints") or {}
    deadline = constraints.get("deadline_sec")
    if deadline is not None and stated.deadline_sec is None:
        message = f"deadline {float(deadline):g} s is not in the request"
        findings.append(Finding("unsourced_deadline", "constraints.deadline_sec", deadline, message, [None], "R8"))
    payload = float(constraints.get("payload_kg") or 0.0)
    if payload > 0 and stated.payload_kg is None:
        message = f"cargo mass {payload:g} kg is not in the request"
        findings.append(Finding("unsourced_payload", "constraints.payload_kg", payload, message, [0.0], "R8"))
    return findings
