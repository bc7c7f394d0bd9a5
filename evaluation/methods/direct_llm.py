"""direct_llm: the model reads the request and a short summary of the state and answers in plain text: no tools,
no schema, no checks. The text is read tolerantly; an answer that cannot be read, or that
executes without a UAV of this world and a route, becomes a confirmation request (first failing stage "ir")."""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from evaluation.methods.base import MethodRun, MethodSetup, MethodTask
from evaluation.methods.prompts import (
    FLIGHT_RULES,
    ChatBaseline,
    InvalidAnswer,
    MeteredModel,
    checked_decision,
    confirmation_run,
    method_run,
    request_block,
    shown_world,
    state_char_budget,
    state_summary,
)
from ir.decision import Decision, Status
from models.base import LLMTransportError
from models.rules_chat import PLAIN_DECISION_FORMAT, PLAIN_STATUS_WORDS
from tools.world import World

SYSTEM = f"""You are the dispatcher of a city's drone traffic. You have no tools: decide from the request and the \
state summary alone whether to fly the request, refuse it or ask a human to confirm it.
{FLIGHT_RULES}"""
# Last in the prompt, where a small model attends most.
FORMAT_REQUEST = f"Answer in exactly this format and nothing else:\n{PLAIN_DECISION_FORMAT}"

# The format's words, and the other words models use for them.
STATUS_BY_WORD: dict[str, Status] = {
    **{word: status for status, word in PLAIN_STATUS_WORDS.items()},
    **dict.fromkeys(("execute", "fly", "approve", "approved"), "execute"),
    **dict.fromkeys(("safe_refusal", "refusal", "refused", "reject", "decline"), "safe_refusal"),
    **dict.fromkeys(("human_confirm", "confirmation", "ask", "clarify", "escalate"), "human_confirm"),
}
# "KEY: value" at a line start, markdown emphasis and list marks allowed around the key.
FIELD = re.compile(r"^[\s*#>_-]*(DECISION|UAV|WAYPOINTS|REASON)[\s*_]*[:=][\s*_`]*", re.IGNORECASE | re.MULTILINE)
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
WAYPOINT_SEPARATORS = re.compile(r"[;\n\])]")


def plain_fields(text: str) -> dict[str, str]:
    """KEY -> value; a value runs up to the next key, so waypoints may span lines. The first of a key counts."""
    matches = list(FIELD.finditer(text))
    fields: dict[str, str] = {}
    for match, following in zip(matches, [*matches[1:], None]):
        end = following.start() if following else len(text)
        fields.setdefault(match.group(1).upper(), text[match.end() : end].strip())
    return fields


def plain_waypoints(section: str) -> list[list[float]]:
    """x,y,z,t groups separated by ';', new lines or closing brackets; a group without 4 numbers is an error."""
    rows = []
    for chunk in WAYPOINT_SEPARATORS.split(section):
        numbers = NUMBER.findall(chunk)
        if not numbers:
            continue
        if len(numbers) != 4:
            raise InvalidAnswer(f"waypoint {chunk.strip()!r} is not x,y,z,t")
        rows.append([float(n) for n in numbers])
    return rows


def plain_decision(text: str, world: World) -> Decision:
    fields = plain_fields(text)
    if "DECISION" not in fields:
        raise InvalidAnswer("no DECISION line")
    word = re.match(r"[a-z_]*", fields["DECISION"].lower().strip("`'\" ")).group(0)
    if word not in STATUS_BY_WORD:
        raise InvalidAnswer(f"unknown decision {fields['DECISION'][:40]!r}")
    reason = next(iter(fields.get("REASON", "").splitlines()), "")
    answer: dict[str, Any] = {"status": STATUS_BY_WORD[word], "reason": reason}
    if answer["status"] == "execute":
        uav = re.match(r"[\w.-]*", fields.get("UAV", "").strip("`'\" "))
        answer["uav_id"] = uav.group(0) or None
        answer["waypoints"] = plain_waypoints(fields.get("WAYPOINTS", ""))
    return checked_decision(answer, world)


class DirectLLM(ChatBaseline):
    name = "direct_llm"
    summary = "plain-text answer from the request and a state summary; no tools, no schema, no checks"

    def run(self, task: MethodTask, setup: MethodSetup) -> MethodRun:
        model = MeteredModel(self.chat_model(task, setup), setup.model)
        messages = [
            SystemMessage(SYSTEM),
            HumanMessage(
                f"{request_block(task)}\nSTATE:\n{state_summary(shown_world(task), state_char_budget(setup.budget))}\n{FORMAT_REQUEST}"
            ),
        ]
        try:
            reply = model.invoke(messages)
        except LLMTransportError as exc:
            return confirmation_run(f"model unavailable: {exc}", model.usage, failed_stage="ir")
        trace = {"raw_output": reply.text}
        try:
            decision = plain_decision(reply.text, task.world)
        except InvalidAnswer as exc:
            return confirmation_run(f"unparseable answer: {exc}", model.usage, failed_stage="ir", trace=trace)
        return method_run(decision, model.usage, trace=trace)
