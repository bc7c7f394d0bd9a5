"""json_only: the model reads the request and the full world state (compacted JSON) and writes a typed decision as
structured output: a JSON Schema response_format with the status as an enum, the UAV as an enum
of the world's UAV ids and waypoints as [x, y, z, t] rows; no tools, no checks. An answer that is no valid
`Decision` (or executes without a known UAV and a route) becomes a confirmation request (first failing stage "ir")."""

from __future__ import annotations

from langchain_core.messages import HumanMessage, SystemMessage

from evaluation.methods.base import MethodRun, MethodSetup, MethodTask
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
    request_block,
    shown_world,
    state_char_budget,
    world_json,
)
from models.base import LLMTransportError

SYSTEM = f"""You are the dispatcher of a city's drone traffic. You have no tools: decide from the request and the \
full world state (JSON) whether to fly the request, refuse it or ask a human to confirm it.
{FLIGHT_RULES}
{WORLD_JSON_NOTE}
Answer with the decision as one JSON object: {DECISION_JSON_HINT}"""


class JsonOnly(ChatBaseline):
    name = "json_only"
    summary = "typed decision as structured output from the request and the full world JSON; no tools, no checks"

    def run(self, task: MethodTask, setup: MethodSetup) -> MethodRun:
        model = MeteredModel(self.chat_model(task, setup), setup.model)
        world = world_json(shown_world(task), state_char_budget(setup.budget))
        messages = [
            SystemMessage(SYSTEM),
            HumanMessage(f"{request_block(task)}\nWORLD:\n{world}\nAnswer with the decision JSON."),
        ]
        try:
            reply = model.invoke(messages, response_format=decision_response_format(task.world))
        except LLMTransportError as exc:
            return confirmation_run(f"model unavailable: {exc}", model.usage, failed_stage="ir")
        trace = {"raw_output": reply.text, "world_chars": len(world)}
        try:
            decision = checked_decision(json_object_in(reply.text), task.world)
        except InvalidAnswer as exc:
            return confirmation_run(f"invalid decision: {exc}", model.usage, failed_stage="ir", trace=trace)
        return method_run(decision, model.usage, trace=trace)
