"""The IR-free baselines: direct_llm and json_only read answers tolerantly and never execute a malformed one; react
runs a real bind_tools loop (results and errors fed back, the budget capped); the `rules` chat model drives all
three end to end on the downtown example."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from evaluation.judge import judge
from evaluation.methods import get_method
from evaluation.methods.answering import decision_from_json, decision_from_text
from evaluation.methods.base import Budget, MethodSetup, MethodTask

INSTRUCTION = (
    "Send a drone with the defibrillator from hospital_A to accident_site_3 within 10 minutes, keep away from the "
    "school and the temporary no-fly zone."
)


class ScriptedChat(BaseChatModel):
    """Replies from a list, one per call; records the messages it was given (a test double for the loop)."""

    replies: list[AIMessage]
    seen: list[list[BaseMessage]] = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.seen.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=self.replies[len(self.seen) - 1])])


def call(name: str, args: dict[str, Any], n: int) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"c{n}"}])


@pytest.fixture
def task(world) -> MethodTask:
    return MethodTask(sample_id="t", instruction=INSTRUCTION, world=world)


def scripted(monkeypatch: pytest.MonkeyPatch, replies: list[AIMessage]) -> ScriptedChat:
    model = ScriptedChat(replies=replies, seen=[])
    monkeypatch.setattr("models.chat.make_chat_model", lambda *a, **k: model)
    return model


def test_text_answers_are_read_tolerantly_and_malformed_ones_are_none():
    good = decision_from_text("Sure.\ndecision: Execute\nUAV: uav_03\nWAYPOINTS: 0,0,60,0; 10,0,60,2.5\nREASON: ok")
    assert good is not None and good.status == "execute" and good.waypoints[1] == [10, 0, 60, 2.5]
    assert decision_from_text("DECISION: refuse\nREASON: too windy").status == "safe_refusal"
    assert decision_from_text("DECISION: execute\nUAV: uav_03\nWAYPOINTS: 0,0,60") is None  # one short point
    assert decision_from_text("I would fly it") is None
    assert decision_from_json('{"status": "execute", "uav_id": "uav_03", "waypoints": []}') is None
    assert decision_from_json("not json") is None


def test_react_feeds_results_and_errors_back_and_takes_the_planned_route(monkeypatch, task, world):
    model = scripted(
        monkeypatch,
        [
            call("assign_uav", {"origin": "nowhere_9", "destination": "accident_site_3"}, 1),
            call("assign_uav", {"origin": "hospital_A", "destination": "accident_site_3"}, 2),
            call("plan_route", {"uav_id": "uav_03", "start": "hospital_A", "goal": "accident_site_3"}, 3),
            AIMessage(content=json.dumps({"status": "execute", "uav_id": "uav_03", "reason": "planned"})),
        ],
    )
    run = get_method("react").run(task, MethodSetup(model="rules"))
    assert [(c.tool, c.ok) for c in run.tool_calls] == [
        ("assign_uav", False),
        ("assign_uav", True),
        ("plan_route", True),
    ]
    fed_back = [m for m in model.seen[1] if isinstance(m, ToolMessage)]
    assert json.loads(fed_back[0].content)["ok"] is False and "error" in json.loads(fed_back[0].content)
    assert run.first_failing_stage == "planning" and run.usage.llm_calls == 4
    assert (
        run.decision.status == "execute"
        and len(run.decision.waypoints) >= 2
        and run.trace["route_from"] == "plan_route"
    )


def test_react_stops_at_the_tool_call_cap(monkeypatch, task):
    scripted(monkeypatch, [call("query_airspace", {}, n) for n in range(10)])
    run = get_method("react").run(task, MethodSetup(model="rules", budget=Budget(max_tool_calls=3)))
    assert len(run.tool_calls) == 3 and run.decision.status == "human_confirm" and "budget" in run.decision.reason


def test_unreadable_answers_become_confirmation_requests_never_executes(monkeypatch, task):
    scripted(monkeypatch, [AIMessage(content="I think the drone should go now")] * 2)
    for name in ("direct_llm", "json_only"):
        run = get_method(name).run(task, MethodSetup(model="rules"))
        assert run.decision.status == "human_confirm" and run.first_failing_stage == "ir"


@pytest.mark.parametrize("name", ["direct_llm", "json_only", "react"])
def test_rules_model_end_to_end(name, task, world):
    run = get_method(name).run(task, MethodSetup(model="rules"))
    assert run.decision.status == "execute" and run.decision.uav_id in world.uav_index, run.decision.reason
    verdict = judge(
        run.decision, world, label="SAT", origin="hospital_A", destination="accident_site_3", deadline_sec=600
    )
    assert verdict.right_place
    if name == "react":  # the planner's route: safe; the straight flights of the tool-less methods may not be
        assert verdict.safe, verdict.violations
        assert [c.tool for c in run.tool_calls][-1] == "plan_route"
