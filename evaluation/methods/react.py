"""react: ReAct as a real tool-calling loop: the model, with the action tools bound
(`bind_tools`), calls them one at a time on the task's world and reads each result or error (type, message,
suggested actions) before its next step, until it answers with a decision JSON or the budget's model or tool calls
run out (then a confirmation request). No IR, no validator, no verifier or simulator: tool errors are its only
feedback. The tools' argument schemas name this world's ids as enums, as the agent's IR schema does.

An answer that executes without waypoints after a successful plan_route call flies that call's route (the trace
says which call): the prompt offers this, so a model need not copy a long route. First failing stage: the first
failed tool call ("planning" for assign_uav and plan_route, "tool" for the others), else "ir" for an answer that
is no valid decision or for no answer at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.tool import ToolCall

from evaluation.methods.base import MethodRun, MethodSetup, MethodTask, MethodUsage, TracedToolCall
from evaluation.methods.chat import bind_tools_and_answer_format, tool_message_content
from evaluation.methods.cloudbrain import PLANNING_TOOLS
from evaluation.methods.prompts import (
    DECISION_JSON_HINT,
    FLIGHT_RULES,
    WORLD_JSON_NOTE,
    ChatBaseline,
    InvalidAnswer,
    MeteredModel,
    checked_decision,
    confirmation_run,
    decision_response_format,
    json_object_in,
    method_run,
    prompt_tokens_allowed,
    request_block,
    shown_world,
    state_char_budget,
    world_json,
)
from evaluation.records import Stage
from models.base import LLMTransportError
from models.grounded_schema import WorldIds, grounded_tool_args, ltl_pattern
from tools.catalog import ACTION_TOOLS, TOOL_ORDER, default_registry
from tools.registry import ToolRegistry
from tools.world import World

# Room for the tool calls and results of an episode, beside the world: 3,000 of the default 7,168 prompt tokens
# (measured on dev_mini with the rules model driving the local model's prompt format: three calls and their
# results took 1,800-2,800 tokens); a smaller prompt budget keeps the same share.
CONVERSATION_SHARE = 0.42

SYSTEM = f"""You are the dispatcher of a city's drone traffic. Work out the operator's request with the tools, one \
call at a time, reading each result before the next call: query_airspace shows the active no-fly zones, assign_uav \
picks an idle UAV that can do the task, plan_route plans a safe 4D route, query_city_state lists the places in an \
area.
{FLIGHT_RULES}
{WORLD_JSON_NOTE}
When you are done, call no tool and answer with the decision as one JSON object: {DECISION_JSON_HINT}
To fly the route of your last successful plan_route call, answer "execute" with "waypoints": []."""


def action_registry() -> ToolRegistry:
    """The action tools only: calling any other (the verifier, the simulator) is an unknown_tool error."""
    catalog = default_registry()
    return ToolRegistry([catalog.spec(name) for name in TOOL_ORDER if name in ACTION_TOOLS])


def tool_definitions(world: World, registry: ToolRegistry) -> list[dict[str, Any]]:
    """OpenAI tool definitions of the registry's tools, their id arguments enums of this world's ids."""
    ids = WorldIds.of(world)
    atoms = ltl_pattern(ids.ltl_atoms())
    definitions = []
    for tool in registry.describe():
        parameters = grounded_tool_args(tool["args"], ids, atoms)
        parameters["required"] = [a for a in tool["args"].get("required", []) if a in parameters["properties"]]
        function = {"name": tool["name"], "description": tool["description"], "parameters": parameters}
        definitions.append({"type": "function", "function": function})
    return definitions


@dataclass
class Episode:
    """What one ReAct run has done: its tool calls, the last route planned and its first failure."""

    world: World
    registry: ToolRegistry
    calls: list[TracedToolCall] = field(default_factory=list)
    route: dict[str, Any] | None = None  # the result of the last successful plan_route call
    route_call_id: str | None = None
    failed_stage: Stage | None = None

    def run_tool(self, call: ToolCall) -> ToolMessage:
        name, args = call["name"], call["args"]
        result = self.registry.call(name, self.world, args)
        error_type = result.error.type if result.error else None
        self.calls.append(
            TracedToolCall(tool=name, ok=result.ok, error_type=error_type, args=args, latency_sec=result.latency_sec)
        )
        if result.ok and name == "plan_route":
            self.route, self.route_call_id = result.result, call["id"]
        elif not result.ok and self.failed_stage is None:
            self.failed_stage = "planning" if name in PLANNING_TOOLS else "tool"
        return ToolMessage(content=tool_message_content(result), tool_call_id=call["id"], name=name)

    @property
    def corrections(self) -> int:
        """Failed calls the model went on from (a later call followed): its tries at correcting itself."""
        return sum(1 for call in self.calls[:-1] if not call.ok)

    def answered(self, text: str, usage: MethodUsage) -> MethodRun:
        trace: dict[str, Any] = {"final_answer": text}
        try:
            answer = json_object_in(text)
            if self.route is not None and answer.get("status") == "execute" and not answer.get("waypoints"):
                route_uav = self.route.get("uav_id") or answer.get("uav_id")
                answer = {**answer, "uav_id": route_uav, "waypoints": self.route["waypoints"]}
                trace["route_from_call"] = self.route_call_id
            decision = checked_decision(answer, self.world)
        except InvalidAnswer as exc:
            return self.unanswered(f"unparseable answer: {exc}", usage, trace)
        return method_run(
            decision,
            usage,
            failed_stage=self.failed_stage,
            tool_calls=self.calls,
            trace=trace,
            corrections=self.corrections,
        )

    def unanswered(self, reason: str, usage: MethodUsage, trace: dict[str, Any] | None = None) -> MethodRun:
        stage = self.failed_stage or "ir"
        return confirmation_run(
            reason, usage, failed_stage=stage, tool_calls=self.calls, trace=trace, corrections=self.corrections
        )


class ReAct(ChatBaseline):
    name = "react"
    summary = "ReAct tool-calling loop over the action tools, tool errors as the only feedback; no IR, no verifier"

    def run(self, task: MethodTask, setup: MethodSetup) -> MethodRun:
        budget = setup.budget
        registry = action_registry()
        chat = bind_tools_and_answer_format(
            self.chat_model(task, setup),
            tool_definitions(task.world, registry),
            decision_response_format(task.world),
        )
        model = MeteredModel(chat, setup.model)
        episode = Episode(task.world, registry)
        world = world_json(
            shown_world(task), state_char_budget(budget, int(CONVERSATION_SHARE * prompt_tokens_allowed(budget)))
        )
        messages: list[BaseMessage] = [
            SystemMessage(SYSTEM),
            HumanMessage(f"{request_block(task)}\nWORLD:\n{world}"),
        ]
        while model.usage.llm_calls < budget.max_llm_calls:
            try:
                reply = model.invoke(messages)
            except LLMTransportError as exc:
                return episode.unanswered(f"model unavailable: {exc}", model.usage)
            messages.append(reply)
            if not reply.tool_calls:
                return episode.answered(reply.text, model.usage)
            for call in reply.tool_calls:
                if len(episode.calls) >= budget.max_tool_calls:
                    return episode.unanswered(f"budget exhausted: {budget.max_tool_calls} tool calls", model.usage)
                messages.append(episode.run_tool(call))
        return episode.unanswered(
            f"budget exhausted: {budget.max_llm_calls} model calls without a final answer", model.usage
        )
