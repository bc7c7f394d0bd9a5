"""Closing a round: the attempt record that repair, finalize and fallback append to the state."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nodes.state import State

# What closing a round reads: part of the READS of every node that closes one (repair, finalize, fallback).
ATTEMPT_READS = (
    "attempt_open",
    "round",
    "ir",
    "validation",
    "tool_results",
    "verdict",
    "simulation",
    "failure",
    "usage",
    "answer",
    "round_started_at",
)


def close_attempt(state: State) -> dict[str, Any]:
    """State update appending the current round as an Attempt, once (a round is open from generate_ir on)."""
    from ir.failure import Failure
    from nodes.state import Attempt, Usage

    if not state.get("attempt_open"):
        return {}
    failure = state.get("failure")
    attempt = Attempt(
        round=state.get("round", 0),
        ir=state.get("ir"),
        validation=state.get("validation"),
        tool_results=state.get("tool_results") or [],
        verdict=state.get("verdict"),
        simulation=state.get("simulation"),
        failure=Failure.model_validate(failure) if failure else None,
        usage=Usage.model_validate(state.get("usage") or {}),
        model=(state.get("answer") or {}).get("model", ""),
        prompt_version=(state.get("answer") or {}).get("prompt_version", ""),
        latency_sec=round(time.time() - state.get("round_started_at", time.time()), 4),
    )
    return {"attempts": [attempt.model_dump(mode="json")], "attempt_open": False}


def repair_rounds(values: Mapping[str, Any]) -> int:
    """The repair rounds a run used: the number of its last round that wrote an IR (round 0 writes the first IR),
    so 0 when the first IR passed or no repair ran. The one count `run`, `trace`, `step` and a fallback's reason
    report. The state's own `round` counts the repair node's visits instead: once repair gives up (K reached, or no
    candidate left) it stands one ahead of the rounds that ran."""
    if values.get("attempt_open"):  # the current round is not closed yet (a fallback deciding on it)
        return values.get("round", 0)
    attempts = values.get("attempts") or []
    return attempts[-1]["round"] if attempts else values.get("round", 0)


def last_ir(values: Mapping[str, Any]) -> dict[str, Any] | None:
    """The IR of the run's last round that wrote one: what its decision (and certificate) binds, and what
    `cloudbrain validate --ir` reads back."""
    irs = [attempt["ir"] for attempt in values.get("attempts") or [] if attempt.get("ir")]
    return irs[-1] if irs else None
