"""Turning a failed ToolResult into the Failure the routers read and the counterexample the LLM gets."""

from __future__ import annotations

from typing import Any

from graph.state import Counterexample, Failure
from tools.contract import ToolResult


def failure_from_tool(stage: str, result: ToolResult, *, step_id: str | None = None) -> dict[str, Any]:
    """A tool's own counterexample when it produced one (verifier, simulator), else one built from its error."""
    error = result.error
    error_type = error.type if error else "tool_failed"
    body = result.result or {}
    if isinstance(body.get("counterexample"), dict):
        counterexample = Counterexample.model_validate({**body["counterexample"], "failure_type": body["counterexample"].get("failure_type") or error_type})
    else:
        counterexample = Counterexample(
            failure_stage=f"{stage}.{result.tool}",
            failure_type=error_type,
            field=f"tool_plan[{step_id}]" if step_id else None,
            suggested_repair="; ".join(error.suggested_actions) if error and error.suggested_actions else None,
        )
    return Failure(
        stage=stage,
        error_type=error_type,
        recoverable=bool(error and error.recoverable),
        message=error.message if error else "",
        counterexample=counterexample,
    ).model_dump(mode="json")
