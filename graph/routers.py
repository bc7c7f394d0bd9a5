"""Every routing decision of the graph, as pure functions of the state: failure type -> next node.

Routers name the *logical* next step; graph/builder.py maps a step that an ablation removed to the next
enabled node, so nothing here knows about ablations. Read this file to see every failure route at a glance.
"""

from __future__ import annotations

from typing import Literal

from nodes.state import State

END_NODE = "__end__"


def _failed(state: State) -> bool:
    return bool(state.get("failure"))


def _recoverable(state: State) -> bool:
    failure = state.get("failure") or {}
    return bool(failure.get("recoverable"))


def route_after_validate(state: State) -> Literal["execute_tools", "repair", "fallback"]:
    """A failing validation stage goes to repair with the validator's `allowed` values; a request whose stated
    constraints contradict each other (unrecoverable: no IR can meet them) ends in fallback before any tool runs."""
    if not _failed(state):
        return "execute_tools"
    return "repair" if _recoverable(state) else "fallback"


def route_after_execute(state: State) -> Literal["verify", "repair", "fallback"]:
    """Recoverable tool errors (no_path, capacity_low...) are repaired; unrecoverable ones end in fallback."""
    if not _failed(state):
        return "verify"
    return "repair" if _recoverable(state) else "fallback"


def route_after_verify(state: State) -> Literal["simulate", "repair", "fallback"]:
    """A rule violation or contradictory specs (spec_unsat) are repaired; an unusable spec is not."""
    if not _failed(state):
        return "simulate"
    return "repair" if _recoverable(state) else "fallback"


def route_after_simulate(state: State) -> Literal["fidelity", "repair"]:
    """A terminal event or a risk above max_risk_level is repaired (a new route or UAV may avoid it)."""
    return "repair" if _failed(state) else "fidelity"


def route_after_fidelity(state: State) -> Literal["finalize", "repair"]:
    """A plan that drops a stated constraint (pinned UAV, named place, deadline, altitude, return leg) is repaired;
    when the rounds run out, fallback asks the operator."""
    return "repair" if _failed(state) else "finalize"


def route_after_repair(state: State) -> Literal["generate_ir", "fallback"]:
    """The loop's own cap: after K repair rounds the run ends in fallback (recursion_limit is no guard)."""
    return "fallback" if state.get("repair_exhausted") else "generate_ir"


def route_after_fallback(state: State) -> Literal["validate", "__end__"]:
    """An operator who edits the IR sends it back through validation; everything else ends the run."""
    reply = state.get("operator_reply") or {}
    return "validate" if reply.get("action") == "edit" else END_NODE


def route_on_node_error() -> Literal["fallback"]:
    """A node that still raises after its retry policy (e.g. LLM transport) ends in fallback, never a crash; only a
    component that cannot work at all (ir.failure.ComponentUnavailable: a model backend that cannot answer, the
    embedding model not built) stops the run without a decision."""
    return "fallback"
