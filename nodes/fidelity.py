"""fidelity: the verified, simulated plan does what the request asked (intent fidelity): the UAV it
pins, the places it names, its deadline, altitude band and return leg; and, conversely, every place and quantity
of the IR comes from the request or a documented default (ir.provenance). The last gate before finalize.

The request is read apart from the model (language.stated.stated_constraints; the judgement in ir.fidelity), so a model that
misread or relaxed a stated constraint is caught here. A mismatch is repaired like any failure (the counterexample
names the stated values); if the rounds run out, fallback asks the operator (human_confirm), never executes.

A fleet mission is held to the request as a team (ir.fidelity.team_fidelity_findings): every named site served,
the whole mass carried, no UAV flown that the request leaves out, and each member within the stated limits.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from ir.failure import failure_record
from ir.fidelity import fidelity_findings, team_fidelity_findings
from ir.provenance import unsourced_findings
from language.defaults import documented_defaults
from nodes.context import Context
from nodes.reading import reading_of
from nodes.run_world import world_from_state
from nodes.state import State
from nodes.team import carries_team

READS = ("instruction", "world", "candidate", "ir", "reading", "team_candidates")
STAGE = "fidelity"


def fidelity(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    world = world_from_state(state)
    instruction = state.get("instruction") or ""
    stated = reading_of(state, world)
    candidate, ir = state.get("candidate") or {}, state.get("ir") or {}
    if carries_team(state):
        members = state.get("team_candidates") or []
        defaults = documented_defaults(world, stated, ir, None, instruction)
        findings = team_fidelity_findings(world, stated, members, ir) + unsourced_findings(stated, ir, defaults)
    else:
        defaults = documented_defaults(world, stated, ir, candidate.get("uav_id"), instruction)
        findings = fidelity_findings(world, stated, candidate, ir) + unsourced_findings(stated, ir, defaults)
    if not findings:
        return {"failure": None}
    first = findings[0]
    return {
        "failure": failure_record(
            STAGE,
            first.error_type,
            recoverable=True,
            message="; ".join(f.message for f in findings),
            failure_stage=STAGE,
            field=first.field,
            value=first.value,
            allowed=first.allowed,
            suggested_repair="keep every constraint the request states: "
            + (f"use one of {first.allowed}" if first.allowed else first.message),
        )
    }
