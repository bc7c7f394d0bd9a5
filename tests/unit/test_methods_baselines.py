"""The chat baselines (direct_llm, json_only, react) and the chat models they run on.

The methods run on a scripted chat model (replies fixed or computed from the conversation it is shown), on the
deterministic `rules` chat model, and once on the embedded local model (its tool calling; slow, so kept short).
"""

from __future__ import annotations

import json
import math
import socket
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from evaluation.methods import get_method
from evaluation.methods.base import Budget, MethodSetup, MethodTask
from evaluation.methods.chat import make_chat_model, tool_message_content
from evaluation.methods.direct_llm import DirectLLM, plain_decision
from evaluation.methods.json_only import JsonOnly
from evaluation.methods.prompts import (
    decision_response_format,
    shown_world,
    state_char_budget,
    state_summary,
    world_json,
)
from evaluation.methods.react import ReAct, action_registry, tool_definitions
from ir.decision import Decision
from models.local_backend import LocalChatModel, chat_messages, turn_schema
from models.local_model import LocalModelError
from models.rules_chat import RulesChatModel, decision_answer, decision_as_plain_text
from tests.support.scripted_chat import answer, calls, last_tool_output, scripted
from tools.catalog import ACTION_TOOLS, default_registry
from tools.world import UAVStatus, World

INSTRUCTION = (
    "Send a drone with the defibrillator (1 kg) from hospital_A to accident_site_3 within 10 minutes, keep away from "
    "the school and the temporary no-fly zone."
)
PLAN_ROUTE_TOOL = {
    "type": "function",
    "function": {
        "name": "plan_route",
        "description": "A route.",
        "parameters": {
            "type": "object",
            "properties": {"start": {"type": "string"}, "goal": {"type": "string"}},
            "required": ["start"],
        },
    },
}


@pytest.fixture
def task(downtown: World) -> MethodTask:
    return MethodTask(sample_id="t1", instruction=INSTRUCTION, world=downtown)


def method_setup(model: str = "scripted", **budget: int) -> MethodSetup:
    return MethodSetup(model=model, budget=Budget(**budget))


def idle_uav(world: World) -> str:
    return next(u.id for u in world.fleet if u.status is UAVStatus.idle)


# --- react ----------------------------------------------------------------------------------------------------
def test_react_feeds_tool_results_back_and_flies_the_planned_route(task):
    registry = default_registry()
    route_args = {"start": "hospital_A", "goal": "accident_site_3"}

    def plan_with_the_assigned_uav(messages: list[BaseMessage]) -> AIMessage:
        assigned = last_tool_output(messages)["result"]["uav_id"]  # the assign_uav result came back to the model
        return calls("plan_route", {**route_args, "uav_id": assigned}, "c2")

    chat, factory = scripted(
        calls("assign_uav", {"origin": "hospital_A", "destination": "accident_site_3"}, "c1"),
        plan_with_the_assigned_uav,
        answer(reason="the planned route"),
    )
    run = ReAct(factory).run(task, method_setup())

    traced_route_args = run.tool_calls[1].args
    expected = registry.call("plan_route", task.world, traced_route_args).result
    assert [c.tool for c in run.tool_calls] == ["assign_uav", "plan_route"] and all(c.ok for c in run.tool_calls)
    assert run.decision.status == "execute"
    assert run.decision.waypoints == expected["waypoints"] and run.decision.uav_id == expected["uav_id"]
    assert run.trace["route_from_call"] == "c2" and run.first_failing_stage is None
    assert run.usage.llm_calls == 3 and len(chat.seen) == 3
    assert {t["function"]["name"] for t in chat.options[0]["tools"]} == ACTION_TOOLS


def test_react_feeds_tool_errors_back_with_their_suggested_actions(task):
    bad_route = {"start": "hospital_Z", "goal": "accident_site_3"}
    expected_error = default_registry().call("plan_route", task.world, bad_route).error
    seen_errors: list[dict[str, Any]] = []

    def refuse_after_reading(messages: list[BaseMessage]) -> AIMessage:
        seen_errors.append(last_tool_output(messages)["error"])
        return answer(status="safe_refusal", reason="no route")

    chat, factory = scripted(
        calls("verify_ltl_stl", {"waypoints": []}, "c1"),  # registered, but not one of react's tools
        calls("plan_route", bad_route, "c2"),
        refuse_after_reading,
    )
    run = ReAct(factory).run(task, method_setup())

    assert [(c.tool, c.ok) for c in run.tool_calls] == [("verify_ltl_stl", False), ("plan_route", False)]
    assert run.tool_calls[0].error_type == "unknown_tool"
    # what the model reads: the error as the tool gave it, less the ids kept for the failure record and ops
    assert seen_errors == [expected_error.model_dump(exclude={"blockers"})] and expected_error.suggested_actions
    assert run.decision.status == "safe_refusal" and run.first_failing_stage == "tool"  # the first failure


def test_react_stops_at_the_tool_call_budget(task):
    chat, factory = scripted(calls("query_airspace", {}, "again"))
    run = ReAct(factory).run(task, method_setup(max_tool_calls=2, max_llm_calls=8))
    assert len(run.tool_calls) == 2 and run.usage.llm_calls == 3
    assert run.decision.status == "human_confirm" and "budget exhausted" in run.decision.reason


def test_react_stops_at_the_model_call_budget(task):
    chat, factory = scripted(calls("query_airspace", {}, "again"))
    run = ReAct(factory).run(task, method_setup(max_llm_calls=3))
    assert run.usage.llm_calls == 3 and len(chat.seen) == 3 and len(run.tool_calls) == 3
    assert run.decision.status == "human_confirm" and "3 model calls" in run.decision.reason
    assert run.first_failing_stage == "ir"


def test_react_without_a_route_cannot_execute_with_empty_waypoints(task):
    chat, factory = scripted(answer(uav_id=idle_uav(task.world), reason="go"))
    run = ReAct(factory).run(task, method_setup())
    assert run.decision.status == "human_confirm" and run.decision.reason.startswith("unparseable answer")
    assert run.first_failing_stage == "ir" and "route_from_call" not in run.trace


# --- direct_llm and json_only ---------------------------------------------------------------------------------
def test_direct_llm_reads_the_plain_format_tolerantly(task):
    uav = idle_uav(task.world)
    text = (
        "Here is my decision.\n**DECISION:** Execute\n- UAV: `" + uav + "`\n"
        "WAYPOINTS: (10, 20, 0, 0); (10, 20, 60, 4.5)\n[200.5,300,60,30]\nREASON: straight there\nthanks"
    )
    chat, factory = scripted(AIMessage(content=text))
    run = DirectLLM(factory).run(task, method_setup())
    assert run.decision.status == "execute" and run.decision.uav_id == uav
    assert run.decision.waypoints == [[10, 20, 0, 0], [10, 20, 60, 4.5], [200.5, 300, 60, 30]]
    assert run.decision.reason == "straight there" and run.success_round == 0
    prompt = chat.seen[0][-1].text
    assert INSTRUCTION in prompt and all(e.id in prompt for e in task.world.entities)
    assert "response_format" not in chat.options[0]


@pytest.mark.parametrize(
    "text",
    [
        "I would fly uav_03 straight there.",  # no DECISION line
        "DECISION: maybe",
        "DECISION: execute\nUAV: uav_99\nWAYPOINTS: 1,2,3,4; 5,6,7,8",  # no such UAV
        "DECISION: execute\nUAV: {uav}\nWAYPOINTS: 1,2,3; 5,6,7,8",  # a waypoint of three numbers
        "DECISION: execute\nUAV: {uav}\nWAYPOINTS: 1,2,3,4",  # a single waypoint
    ],
)
def test_direct_llm_asks_for_confirmation_on_an_unreadable_answer(task, text):
    chat, factory = scripted(AIMessage(content=text.format(uav=idle_uav(task.world))))
    run = DirectLLM(factory).run(task, method_setup())
    assert run.decision.status == "human_confirm" and run.decision.reason.startswith("unparseable answer")
    assert run.first_failing_stage == "ir" and run.trace["raw_output"] == chat.replies[0].text


def test_the_plain_format_reads_back_what_it_writes(downtown):
    decision = Decision(
        status="execute", uav_id=idle_uav(downtown), waypoints=[[1.5, 2, 0, 0], [1.5, 2, 45, 3.25]], reason="up"
    )
    assert plain_decision(decision_as_plain_text(decision), downtown) == decision
    refusal = Decision(status="safe_refusal", reason="the destination is inside a no-fly zone")
    assert plain_decision(decision_as_plain_text(refusal), downtown) == refusal


def test_json_only_offers_the_decision_schema_and_accepts_a_valid_decision(task):
    uav = idle_uav(task.world)
    chat, factory = scripted(answer(uav_id=uav, waypoints=[[0, 0, 30, 0], [50, 0, 30, 10]], reason="ok"))
    run = JsonOnly(factory).run(task, method_setup())
    assert run.decision == Decision(
        status="execute", uav_id=uav, waypoints=[[0, 0, 30, 0], [50, 0, 30, 10]], reason="ok"
    )
    schema = chat.options[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["uav_id"]["anyOf"][0]["enum"] == [u.id for u in task.world.fleet]
    assert '"fleet"' in chat.seen[0][-1].text  # the full world JSON is in the prompt


@pytest.mark.parametrize(
    "fields",
    [
        {"uav_id": "uav_99", "waypoints": [[0, 0, 30, 0], [50, 0, 30, 10]]},
        {"uav_id": "{uav}", "waypoints": [[0, 0, 30], [50, 0, 30, 10]]},
        {"uav_id": "{uav}", "waypoints": [[0, 0, 30, 0]]},
        {"status": "go"},
    ],
)
def test_json_only_asks_for_confirmation_on_an_invalid_decision(task, fields):
    fields = {k: v.format(uav=idle_uav(task.world)) if isinstance(v, str) else v for k, v in fields.items()}
    chat, factory = scripted(answer(**fields))
    run = JsonOnly(factory).run(task, method_setup())
    assert run.decision.status == "human_confirm" and run.decision.reason.startswith("invalid decision")
    assert run.first_failing_stage == "ir"


def test_a_cut_world_notes_how_many_rows_it_left_out(downtown):
    full = json.loads(world_json(downtown, 1_000_000))
    cut = json.loads(world_json(downtown, len(json.dumps(full, separators=(",", ":"))) - 200))
    heights = [row[full["buildings"]["columns"].index("height_m")] for row in full["buildings"]["rows"]]
    assert heights == sorted(heights, reverse=True)  # the lowest buildings are the first to go
    assert cut["buildings"]["omitted_rows"] + len(cut["buildings"]["rows"]) == len(downtown.buildings)
    assert cut["entities"] == full["entities"]


def test_a_world_over_the_budget_gives_up_rows_until_it_fits(downtown):
    full = json.loads(world_json(downtown, 1_000_000))
    bare = world_json(downtown, 0)  # every table emptied: only the counts of what was left out stay
    tables = [name for name, value in full.items() if isinstance(value, dict) and "rows" in value]
    assert all(json.loads(bare)[name] == {"omitted_rows": len(full[name]["rows"])} for name in tables)
    budget = len(bare) + 600
    cut_text = world_json(downtown, budget)
    cut = json.loads(cut_text)
    assert len(cut_text) <= budget and "rows" not in cut["buildings"]  # the lowest buildings went first
    idle = sum(1 for uav in downtown.fleet if uav.status == "idle")
    assert 0 < idle < len(downtown.fleet) and len(cut["fleet"].get("rows", [])) <= idle  # then the grounded UAVs
    kept = {name: len(cut[name].get("rows", [])) for name in tables}
    shortened = [name for name in tables if cut[name].get("omitted_rows") and name not in ("buildings", "fleet")]
    assert shortened and min(kept[name] for name in shortened) >= max(kept.values()) - 1  # then the longest first
    for name in tables:  # each table keeps its first rows
        assert cut[name].get("rows", []) == full[name]["rows"][: kept[name]]


@pytest.mark.parametrize(("instruction", "shown"), [("Fly to the eye clinic", False), ("飞往北侧的眼科诊所", True)])
def test_a_view_names_places_only_in_the_requests_languages(downtown, instruction, shown):
    first = downtown.entities[0]
    world = downtown.model_copy(
        update={"entities": [first.model_copy(update={"names": {"zh": "北侧的眼科诊所"}}), *downtown.entities[1:]]}
    )
    task = MethodTask(sample_id="s", instruction=instruction, world=world)
    views = [world_json(shown_world(task), 1_000_000), state_summary(shown_world(task))]
    assert all(("北侧的眼科诊所" in view) is shown for view in views)
    assert all(first.name in view for view in views[1:]) and ('"names"' in views[0]) is shown


def _section(summary: str, title: str) -> list[str]:
    lines = summary.splitlines()
    rows = lines[lines.index(title) + 1 :]
    return rows[: next((i for i, line in enumerate(rows) if not line.startswith("- ")), len(rows))]


def test_a_cut_state_summary_cuts_the_longest_list_first_and_says_so(downtown):
    full = state_summary(downtown)
    cut = state_summary(downtown, len(full) - 120)
    assert len(cut) <= len(full) - 120 and "more left out)" in cut and "more left out)" not in full
    assert cut.splitlines()[0] == full.splitlines()[0] and cut.splitlines()[-1] == full.splitlines()[-1]
    places_full, places_cut = _section(full, "Places (x,y):"), _section(cut, "Places (x,y):")
    titles = [line for line in full.splitlines() if line.endswith(":")]
    assert len(places_full) == len(downtown.entities) == max(len(_section(full, t)) for t in titles)
    kept = places_cut[:-1]
    assert kept == places_full[: len(kept)]  # the longest list (the places here) gives up its last lines
    assert places_cut[-1] == f"- ({len(places_full) - len(kept)} more left out)"


@pytest.mark.parametrize(("method", "marker"), [(DirectLLM, "STATE:\n"), (JsonOnly, "WORLD:\n"), (ReAct, "WORLD:\n")])
def test_the_prompt_budget_sizes_the_state_a_baseline_is_shown(task, method, marker):
    shown = {}
    for cap in (None, 1024):
        chat, factory = scripted(answer(status="safe_refusal"))
        method(factory).run(task, method_setup(max_prompt_tokens=cap))
        shown[cap] = chat.seen[0][-1].text.split(marker, 1)[1]
    small = state_char_budget(Budget(max_prompt_tokens=1024))
    if method is DirectLLM:
        assert shown[1024].startswith(state_summary(task.world, small) + "\n")
    else:  # json_only shows exactly the budget's world; react keeps room for its conversation: no larger one
        view = world_json(task.world, small)
        world = shown[1024].removesuffix("\nAnswer with the decision JSON.")
        assert world == view if method is JsonOnly else len(world) <= len(view)
    assert len(shown[1024]) < len(shown[None])


@pytest.mark.parametrize("method", [DirectLLM, JsonOnly, ReAct])
def test_a_model_that_cannot_answer_ends_in_a_confirmation_request(task, method):
    def fail(messages: list[BaseMessage]) -> AIMessage:
        raise LocalModelError("prompt of 9000 tokens exceeds the context")

    chat, factory = scripted(fail)
    run = method(factory).run(task, method_setup())
    assert run.decision.status == "human_confirm" and "exceeds the context" in run.decision.reason
    assert run.decision.reason.startswith("model unavailable") and run.first_failing_stage == "ir"


def test_an_unreachable_openai_server_is_reported_not_raised(task):
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    def factory(model: str, **options: Any) -> BaseChatModel:
        return make_chat_model(model, **options, max_retries=0, timeout_sec=5)

    run = DirectLLM(factory).run(task, MethodSetup(model="openai:stub", base_url=f"http://127.0.0.1:{port}/v1"))
    assert run.decision.status == "human_confirm"
    assert f"the server at http://127.0.0.1:{port}/v1 cannot be reached" in run.decision.reason


# --- the rules chat model -------------------------------------------------------------------------------------
def test_react_with_the_rules_model_runs_the_action_tools_and_flies_the_route(task):
    run = get_method("react").run(task, method_setup("rules"))
    plan = RulesChatModel(world=task.world, instruction=INSTRUCTION).answer.low_altitude_ir.tool_plan
    planned_tools = [step.tool for step in plan if step.tool in ACTION_TOOLS]
    assert [c.tool for c in run.tool_calls] == planned_tools and all(c.ok for c in run.tool_calls)
    route = default_registry().call("plan_route", task.world, run.tool_calls[-1].args).result
    assert run.decision.status == "execute" and run.decision.waypoints == route["waypoints"]
    assert run.decision.uav_id == route["uav_id"] == run.tool_calls[-1].args["uav_id"]  # assign_uav's, fed on
    assert run.usage.llm_calls == len(planned_tools) + 1 and run.first_failing_stage is None


def test_direct_llm_with_the_rules_model_flies_straight_at_cruise_speed(task):
    world = task.world
    run = get_method("direct_llm").run(task, method_setup("rules"))
    ir = RulesChatModel(world=world, instruction=INSTRUCTION).answer.low_altitude_ir
    decision, uav = run.decision, world.uav_index[run.decision.uav_id]
    assert decision.status == "execute" and uav.status is UAVStatus.idle
    assert uav.payload_capacity_kg >= (ir.constraints.payload_kg or 0)
    points = decision.waypoints
    assert points[0][:2] == list(world.position_of(ir.entities.origin))
    assert points[-1][:2] == list(world.position_of(ir.entities.destination))
    cruise = max(p[2] for p in points)
    assert ir.constraints.altitude_min_m <= cruise <= ir.constraints.altitude_max_m
    for a, b in zip(points, points[1:]):
        assert math.dist(a[:3], b[:3]) <= uav.cruise_speed_mps * (b[3] - a[3]) + 1e-6


def test_the_rules_model_answers_one_decision_in_every_format(task):
    rules = RulesChatModel(world=task.world, instruction=INSTRUCTION)
    messages = [HumanMessage("decide")]
    as_text = plain_decision(rules.invoke(messages).text, task.world)
    as_json = json.loads(rules.invoke(messages, response_format=decision_response_format(task.world)).text)
    assert as_json == decision_answer(as_text) and as_text == rules.direct_decision()


def test_the_rules_model_answers_an_underspecified_task_at_once(downtown):
    rules = RulesChatModel(world=downtown, instruction="Fly the parcel to the hospital.")  # two hospitals
    tools = tool_definitions(downtown, action_registry())
    reply = rules.bind_tools(tools).invoke([HumanMessage("go")])
    decision = json.loads(reply.text)
    assert not reply.tool_calls and decision["status"] == "human_confirm" and decision["reason"]


def test_the_rules_model_ends_in_its_fallback_when_a_tool_fails(task):
    rules = RulesChatModel(world=task.world, instruction=INSTRUCTION)
    bound = rules.bind_tools(tool_definitions(task.world, action_registry()))
    first = bound.invoke([HumanMessage("go")])
    failure = default_registry().call("plan_route", task.world, {"start": "hospital_Z", "goal": "depot_1"})
    message = ToolMessage(content=tool_message_content(failure), tool_call_id=first.tool_calls[0]["id"])
    reply = bound.invoke([HumanMessage("go"), first, message])
    assert not reply.tool_calls and json.loads(reply.text)["status"] in ("human_confirm", "safe_refusal")
    assert failure.error.type in json.loads(reply.text)["reason"]


def test_chat_models_by_model_string(downtown):
    def make(model: str) -> BaseChatModel:
        return make_chat_model(model, world=downtown, instruction=INSTRUCTION)

    assert isinstance(make("rules"), RulesChatModel)
    assert all(isinstance(make(m), LocalChatModel) for m in ("local", "local:full", "local:slots"))
    assert type(make("openai:qwen3-14b")).__name__ == "ChatOpenAI"
    with pytest.raises(ValueError, match="only writes IRs"):
        make("oracle")
    with pytest.raises(ValueError, match="openai:<model>"):
        make("gpt")


# --- the local model's tool calling ---------------------------------------------------------------------------
def test_tool_turns_render_into_the_chat_template_and_schema():
    tools = [convert_to_openai_tool(PLAN_ROUTE_TOOL)]
    history = [
        SystemMessage("You plan."),
        HumanMessage("Go."),
        calls("plan_route", {"start": "a"}, "call_1"),
        ToolMessage(content='{"ok":false}', tool_call_id="call_1"),
    ]
    rendered = chat_messages(history, tools)
    assert [m["role"] for m in rendered] == ["system", "user", "assistant", "user"]
    assert rendered[0]["content"].startswith("You plan.") and "plan_route(start, goal?)" in rendered[0]["content"]
    assert json.loads(rendered[2]["content"]) == {"tool": "plan_route", "args": {"start": "a"}}
    assert rendered[3]["content"] == 'Result of plan_route: {"ok":false}'
    free = turn_schema(tools, None, {"type": "string"})["anyOf"]
    assert [o["properties"].get("tool", {}).get("const") for o in free] == ["plan_route", None]
    assert free[1]["properties"]["final"] == {"type": "string"}
    assert len(turn_schema(tools, "required", None)["anyOf"]) == 1
    assert "tool" not in turn_schema(tools, "none", None)["anyOf"][0]["properties"]


def test_the_local_model_calls_a_bound_tool_with_valid_arguments(downtown):
    registry = action_registry()
    chat = LocalChatModel(max_tokens=128).bind_tools(tool_definitions(downtown, registry), tool_choice="required")
    reply = chat.invoke([SystemMessage("You dispatch drones."), HumanMessage(f"Plan this: {INSTRUCTION}")])
    assert len(reply.tool_calls) == 1, reply.content
    call = reply.tool_calls[0]
    assert call["name"] in ACTION_TOOLS and call["id"] == "call_1"
    registry.spec(call["name"]).args_model.model_validate(call["args"])  # raises if the arguments are invalid
    assert reply.usage_metadata["output_tokens"] > 0
