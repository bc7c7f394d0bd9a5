"""Turning a failed ToolResult into the Failure the routers read and the counterexample the LLM gets."""

from __future__ import annotations

from typing import Any

from ir.failure import failure_record
from tools.contract import ToolResult


def failure_from_tool(stage: str, result: ToolResult, *, step_id: str | None = None) -> dict[str, Any]:
    """A tool's own counterexample when it produced one (verifier, simulator), else one built from its error."""
    error = result.error
    error_type = error.type if error else "tool_failed"
    own = (result.result or {}).get("counterexample")
    if isinstance(own, dict):
        details = {**own, "failure_type": own.get("failure_type") or error_type}
    else:
        details = {
            "failure_stage": f"{stage}.{result.tool}",
            "field": f"tool_plan[{step_id}]" if step_id else None,
            "suggested_repair": "; ".join(error.suggested_actions) if error and error.suggested_actions else None,
        }
        factors = (result.result or {}).get("factors") or []
        if factors:  # a risk assessment: what it is about, and the reasons with their shares
            details["offending_entity"] = factors[0].get("entity")
            details["reasons"] = (result.result or {}).get("top_reasons") or []
    recoverable = bool(error and error.recoverable)
    # what is in the way, as ids: the planner's blockers, else the entity the tool's counterexample names
    named = details.get("offending_entity")
    blockers = (error.blockers if error else []) or ([named] if named else [])
    message = error.message if error else ""
    return failure_record(stage, error_type, recoverable=recoverable, message=message, blockers=blockers, **details)
