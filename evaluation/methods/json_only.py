"""json_only: the model reads the request and the full world and writes a typed decision under a JSON schema
(structured output; UAV ids as an enum); no tools. An answer that is not a valid Decision is a confirmation
request."""

from __future__ import annotations

from langchain_core.messages import HumanMessage, SystemMessage

from evaluation.methods.answering import (
    SYSTEM,
    chat_model,
    decision_from_json,
    decision_schema,
    invoke,
    model_failure,
    unparsed,
    world_json,
)
from evaluation.methods.base import Method, MethodRun, MethodSetup, MethodTask, MethodUsage

MAX_TOKENS = 384


class JsonOnly(Method):
    name = "json_only"
    summary = "typed decision under a JSON schema from the request and the full world; no tools"

    def run(self, task: MethodTask, setup: MethodSetup) -> MethodRun:
        usage = MethodUsage()
        schema = decision_schema(task.world)
        messages = [
            SystemMessage(content=f"{SYSTEM}\nAnswer with one JSON object: status, uav_id, waypoints, reason."),
            HumanMessage(content=f"World: {world_json(task.world)}\n\nRequest: {task.instruction}"),
        ]
        response_format = {"type": "json_schema", "json_schema": {"name": "decision", "schema": schema}}
        try:
            model = chat_model(setup, task.world, task.instruction, min(MAX_TOKENS, setup.budget.max_new_tokens))
            reply = invoke(model, messages, usage, response_format=response_format)
        except Exception as exc:  # a model that cannot answer is an outcome of this method, not a crash
            return model_failure(exc, usage)
        decision = decision_from_json(reply.text)
        if decision is None:
            return unparsed(reply.text, usage, "answer is not a valid decision")
        return MethodRun(decision=decision, usage=usage, trace={"raw_output": reply.text[:4000]})
