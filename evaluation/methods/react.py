"""react: a tool-calling loop (LangChain `bind_tools`): the model calls the action tools one at a time, sees each
result or error, and ends with a decision. No IR, no validator, no verifier or simulator counterexamples. The
budget caps its model calls and tool calls; running out ends in a confirmation request."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage

from evaluation.methods.answering import (
    SYSTEM,
    chat_model,
    decision_from_json,
    decision_schema,
    invoke,
    model_failure,
    world_summary,
)
from evaluation.methods.base import Method, MethodRun, MethodSetup, MethodTask, MethodUsage, TracedToolCall
from ir.decision import Decision
from models.chat import bind_tools_and_answer_format, tool_message_content
from nodes.gates import ACTION_TOOLS
from tools.catalog import default_registry

MAX_TOKENS = 256
TOOLS = sorted(ACTION_TOOLS)
PLANNING_TOOLS = frozenset({"assign_uav", "plan_route"})


def tool_schemas(names: list[str]) -> list[dict[str, Any]]:
    """OpenAI tool schemas of registered tools, from their pydantic argument models."""
    registry = default_registry()
    return [
        {
            "type": "function",
            "function": {
                "name": n,
                "description": registry.spec(n).description,
                "parameters": registry.spec(n).args_schema(),
            },
        }
        for n in names
    ]


class ReAct(Method):
    name = "react"
    summary = "tool-calling loop (bind_tools): one tool at a time, tool errors only, then a decision; no IR"

    def run(self, task: MethodTask, setup: MethodSetup) -> MethodRun:
        usage, budget = MethodUsage(), setup.budget
        registry = default_registry()
        messages: list[BaseMessage] = [
            SystemMessage(
                content=f"{SYSTEM}\nUse the tools one at a time. When done, answer with a JSON decision: "
                "status, uav_id, waypoints (from plan_route), reason."
            ),
            HumanMessage(content=f"{world_summary(task.world)}\n\nRequest: {task.instruction}"),
        ]
        calls: list[TracedToolCall] = []
        last_route: dict[str, Any] | None = None
        first_failure: str | None = None
        try:
            model = chat_model(setup, task.world, task.instruction, min(MAX_TOKENS, budget.max_new_tokens))
            answer_format = {
                "type": "json_schema",
                "json_schema": {"name": "decision", "schema": decision_schema(task.world)},
            }
            bound = bind_tools_and_answer_format(model, tool_schemas(TOOLS), answer_format)
        except Exception as exc:  # a model that cannot answer is an outcome of this method, not a crash
            return model_failure(exc, usage)
        while usage.llm_calls < budget.max_llm_calls:
            try:
                reply = invoke(bound, messages, usage)
            except Exception as exc:
                return model_failure(exc, usage)
            messages.append(reply)
            if not reply.tool_calls:
                return self._final(reply.text, last_route, calls, usage, first_failure)
            for call in reply.tool_calls:
                if len(calls) >= budget.max_tool_calls:
                    break
                result = registry.call(call["name"], task.world, call.get("args") or {})
                error = result.error.type if result.error else None
                calls.append(
                    TracedToolCall(
                        tool=call["name"],
                        ok=result.ok,
                        error_type=error,
                        args=call.get("args"),
                        latency_sec=result.latency_sec,
                    )
                )
                if not result.ok and first_failure is None:
                    first_failure = "planning" if call["name"] in PLANNING_TOOLS else "tool"
                if result.ok and call["name"] == "plan_route":
                    last_route = result.result
                text = tool_message_content(result)
                messages.append(ToolMessage(content=text, tool_call_id=call["id"], name=call["name"]))
            if len(calls) >= budget.max_tool_calls:
                break
        decision = Decision(status="human_confirm", reason="budget exhausted before a decision")
        return MethodRun(
            decision=decision, tool_calls=calls, first_failing_stage=first_failure or "policy", usage=usage
        )

    @staticmethod
    def _final(
        text: str, route: dict[str, Any] | None, calls: list[TracedToolCall], usage: MethodUsage, failure: str | None
    ) -> MethodRun:
        decision = decision_from_json(text)
        trace: dict[str, Any] = {"final_answer": text[:4000]}
        if decision is None:
            try:
                said_execute = json.loads(text).get("status") == "execute"
            except (json.JSONDecodeError, AttributeError):
                said_execute = False
            if not (said_execute and route):
                return MethodRun(
                    decision=Decision(status="human_confirm", reason="final answer is not a valid decision"),
                    tool_calls=calls, first_failing_stage="ir", usage=usage, trace=trace,
                )  # fmt: skip
            decision = Decision(
                status="execute", uav_id=route.get("uav_id"), waypoints=route["waypoints"], reason="plan_route's route"
            )
            trace["route_from"] = "plan_route"  # the answer said execute without waypoints: it meant the planned route
        return MethodRun(
            decision=decision,
            tool_calls=calls,
            first_failing_stage=failure,
            usage=usage,
            success_round=None,
            trace=trace,
        )
