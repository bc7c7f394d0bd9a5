"""explain_decision: a plain-text explanation of a decision that cites only what it was given.

Every sentence about a tool ends with that tool result's request_id in brackets, every rule sentence with the rule
id; those are the only bracketed tokens in the text, because all text taken from the inputs has its brackets
replaced. So the citations are, by construction, a subset of the given request_ids and rule ids.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tools.contract import ToolOutput, ToolResult
from tools.registry import ToolSpec
from tools.rules import RULE_TEXT, RuleId
from tools.world import World

DECISION_KEYS = ("action", "decision", "status", "kind")
CITABLE_ID = re.compile(r"[A-Za-z0-9_.:-]+")


class ExplainArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    decision: dict[str, Any] = Field(description="e.g. {status: execute | human_confirm | ..., uav_id, reason}")
    tool_results: list[ToolResult] = Field(default_factory=list, description="ToolResult dumps to cite")
    rules: list[RuleId] = Field(default_factory=list, description="rule ids to cite")

    @field_validator("tool_results")
    @classmethod
    def _citable_ids(cls, results: list[ToolResult]) -> list[ToolResult]:
        bad = [r.request_id for r in results if not CITABLE_ID.fullmatch(r.request_id)]
        if bad:
            raise ValueError(f"request_id(s) {bad} must be letters, digits and _ . : - only")
        return results


def _plain(value: Any) -> str:
    """Input text with its brackets neutralised, so it can never look like a citation."""
    return str(value).replace("[", "(").replace("]", ")")


def _assignment(r: dict[str, Any]) -> str:
    return f"assign_uav chose {r.get('uav_id')} ({r.get('reason', '')})"


def _route(r: dict[str, Any]) -> str:
    return f"plan_route found a {r.get('length_m')} m route, ETA {r.get('eta_sec')} s, {r.get('energy_wh')} Wh"


def _verification(r: dict[str, Any]) -> str:
    rules = r.get("rules", {})
    passed = [rule for rule, verdict in rules.items() if verdict.get("status") == "pass"]
    return f"verification {'passed' if r.get('pass') else 'failed'}; rules passing: {', '.join(passed) or 'none'}"


def _simulation(r: dict[str, Any]) -> str:
    events = ", ".join(e.get("type", "") for e in r.get("events", [])) or "no events"
    return (
        f"simulation at {r.get('stress_level')} stress (seed {r.get('seed')}) "
        f"{'succeeded' if r.get('success') else 'failed'}: {events}; delay {r.get('delay_sec')} s"
    )


def _risk(r: dict[str, Any]) -> str:
    reasons = "; ".join(r.get("top_reasons", [])[:2])
    return f"risk is {r.get('level')} (score {r.get('score')})" + (f": {reasons}" if reasons else "")


def _airspace(r: dict[str, Any]) -> str:
    zones = [z.get("id") if isinstance(z, dict) else z for z in r.get("active_nfzs", r.get("no_fly_zones", []))]
    return f"airspace query: active no-fly zones {', '.join(map(str, zones)) or 'none'}"


SUMMARIES: dict[str, Callable[[dict[str, Any]], str]] = {
    "assign_uav": _assignment,
    "plan_route": _route,
    "verify_ltl_stl": _verification,
    "simulate_scenario": _simulation,
    "risk_assess": _risk,
    "query_airspace": _airspace,
}


def _tool_sentence(tool_result: ToolResult) -> str:
    if not tool_result.ok and tool_result.error is not None:
        body = f"{tool_result.tool} reported {tool_result.error.type}: {tool_result.error.message}"
    elif tool_result.tool in SUMMARIES and tool_result.result is not None:
        body = SUMMARIES[tool_result.tool](tool_result.result)
    else:
        body = f"{tool_result.tool} succeeded"
    return f"{_plain(body)} [{tool_result.request_id}]"


def _rule_status(rule: str, tool_results: list[ToolResult]) -> str:
    verdicts = [t.result["rules"] for t in tool_results if t.tool == "verify_ltl_stl" and "rules" in (t.result or {})]
    status = verdicts[-1].get(rule, {}).get("status") if verdicts else None
    return f": {status}" if status else ""


def _decision_sentence(decision: dict[str, Any]) -> str:
    action = next((decision[k] for k in DECISION_KEYS if decision.get(k)), "undecided")
    text = f"Decision: {action}"
    if decision.get("uav_id"):
        text += f" with {decision['uav_id']}"
    if decision.get("reason"):
        text += f", because {decision['reason']}"
    return _plain(text) + "."


def explain(world: World, args: ExplainArgs) -> ToolOutput:
    sentences = [_decision_sentence(args.decision)]
    sentences += [_tool_sentence(t) for t in args.tool_results]
    rules = list(dict.fromkeys(args.rules))
    sentences += [f"{rule} ({RULE_TEXT[rule]}){_rule_status(rule, args.tool_results)} [{rule}]" for rule in rules]
    citations = list(dict.fromkeys([*(t.request_id for t in args.tool_results), *rules]))
    return ToolOutput(result={"text": "\n".join(sentences), "citations": citations})


SPEC = ToolSpec(
    name="explain_decision",
    description=(
        "Explain a decision in plain text, citing only the given tool results (by request_id) and rule ids. "
        "Returns text and citations."
    ),
    args_model=ExplainArgs,
    body=explain,
    data_sources=("tool_results",),
    needs=("risk_assess",),
)
