"""direct_llm: the model reads the request and a short summary of the state and answers in plain text; no tools,
no schema. The text is read tolerantly; an answer it cannot read becomes a confirmation request."""

from __future__ import annotations

from langchain_core.messages import HumanMessage, SystemMessage

from evaluation.methods.answering import (
    SYSTEM,
    chat_model,
    decision_from_text,
    invoke,
    model_failure,
    text_prompt,
    unparsed,
    world_summary,
)
from evaluation.methods.base import Method, MethodRun, MethodSetup, MethodTask, MethodUsage

MAX_TOKENS = 256


class DirectLLM(Method):
    name = "direct_llm"
    summary = "free-text answer from the request and a state summary; no tools, no schema"

    def run(self, task: MethodTask, setup: MethodSetup) -> MethodRun:
        usage = MethodUsage()
        messages = [
            SystemMessage(content=f"{SYSTEM}\n{text_prompt()}"),
            HumanMessage(content=f"{world_summary(task.world)}\n\nRequest: {task.instruction}"),
        ]
        try:
            model = chat_model(setup, task.world, task.instruction, min(MAX_TOKENS, setup.budget.max_new_tokens))
            reply = invoke(model, messages, usage)
        except Exception as exc:  # a model that cannot answer is an outcome of this method, not a crash
            return model_failure(exc, usage)
        decision = decision_from_text(reply.text)
        if decision is None:
            return unparsed(reply.text, usage)
        return MethodRun(decision=decision, usage=usage, trace={"raw_output": reply.text[:4000]})
