"""The peer systems as baselines (Tree-Planner, AutoPlan, EMOS): tree_planner's action tree and backtracking, autoplan's
progressive lists and reflexion, emos's resumes, refusals and reassignment. Each runs on a scripted chat model."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from evaluation.methods import get_method
from evaluation.methods.autoplan import REFLEXION, SUMMARISE, AutoPlan, meta_tasks_of, step_cap
from evaluation.methods.base import Budget, MethodSetup, MethodTask
from evaluation.methods.emos import BATTERY_RESERVE, Emos, EmosNoResume, range_m, resume
from evaluation.methods.prompts import state_char_budget
from evaluation.methods.tree_planner import TreePlanner, backtrack, build_action_tree
from tests.support.scripted_chat import answer, calls, last_tool_output, scripted
from tools.catalog import default_registry
from tools.world import World

INSTRUCTION = (
    "Send a drone with the defibrillator (1 kg) from hospital_A to accident_site_3, keep away from nfz_temp_1."
)
ROUTE = {"start": "hospital_A", "goal": "accident_site_3", "avoid_zones": ["nfz_temp_1"]}
TOO_HEAVY = {"origin": "hospital_A", "destination": "accident_site_3", "payload_kg": 100.0}  # no UAV lifts it
LIGHT = {"origin": "hospital_A", "destination": "accident_site_3", "payload_kg": 1.0}


@pytest.fixture
def task(downtown: World) -> MethodTask:
    return MethodTask(sample_id="t1", instruction=INSTRUCTION, world=downtown)


def setup(**budget: int) -> MethodSetup:
    return MethodSetup(model="scripted", budget=Budget(**budget))


def text(value: Any) -> AIMessage:
    return AIMessage(content=json.dumps(value))


def prompt_of(conversation: list[BaseMessage]) -> str:
    return "\n".join(m.text for m in conversation if isinstance(m, HumanMessage))


def test_peers_are_registered_for_llms_only():
    for name in ("tree_planner", "autoplan", "emos", "emos_no_resume"):
        assert get_method(name).model_kinds == frozenset({"llm"})


# --- tree_planner ---------------------------------------------------------------------------------------------
def action(name: str) -> dict[str, Any]:
    return {"tool": name, "args": {}}


def test_action_tree_merges_shared_prefixes_and_counts_plans():
    a, b, c, d = action("a"), action("b"), action("c"), action("d")
    root = build_action_tree(
        [[a, b, {"final": "execute"}], [a, c, {"final": "execute"}], [a, b, {"final": "execute"}], [d]]
    )
    assert [n.action for n in root.children] == [a, d]
    first = root.children[0]
    assert first.plans == 3 and [n.action for n in first.children] == [b, c]
    assert first.children[0].plans == 2 and len(first.children[0].children) == 1  # the same final, merged


def test_backtracking_climbs_to_the_nearest_branch_with_a_valid_child():
    a, b, c, d = action("a"), action("b"), action("c"), action("d")
    root = build_action_tree([[a, b], [a, c], [d]])
    node_a, node_d = root.children
    node_b, node_c = node_a.children
    assert backtrack(node_b) is node_a and node_b.invalid and not node_a.invalid
    assert backtrack(node_c) is root and node_a.invalid  # a's children are all invalid now: a is too
    assert root.valid_children() == [node_d]
    assert backtrack(node_d) is None  # the whole tree is spent


def test_tree_planner_backtracks_after_a_failed_action_and_flies_the_path_route(task):
    heavy_plan = {"steps": [{"tool": "assign_uav", "args": TOO_HEAVY}, {"tool": "plan_route", "args": ROUTE}]}
    light_plan = {"steps": [{"tool": "assign_uav", "args": LIGHT}, {"tool": "plan_route", "args": ROUTE}]}
    chat, factory = scripted(
        text({**heavy_plan, "final": "execute"}),  # the sampling call draws N = 2 plans ...
        text({**light_plan, "final": "execute"}),
        text({"choice": 1}),  # ... and 2 votes pick the first branch: the heavy one
        text({"choice": 1}),
    )
    run = TreePlanner(factory).run(task, setup(plan_samples=2))

    assert [(c.tool, c.ok) for c in run.tool_calls] == [
        ("assign_uav", False),
        ("assign_uav", True),
        ("plan_route", True),
    ]
    assert run.corrections == 1 and run.answered
    assigned = default_registry().call("assign_uav", task.world, LIGHT).result["uav_id"]
    assert run.tool_calls[2].args["uav_id"] == assigned  # plan_route's UAV came from the executed path (FLOWS)
    route = default_registry().call("plan_route", task.world, run.tool_calls[2].args).result
    assert run.decision.status == "execute" and run.decision.waypoints == route["waypoints"]
    # One sampling call and one decision (after the backtrack the root has one valid child: no call needed).
    assert run.usage.llm_calls == 2 and len(chat.seen) == 4
    assert chat.options[0]["temperature"] == 0.8 and chat.options[2]["temperature"] == 0.7
    assert [o["seed"] for o in chat.options] == [0, 1, 0, 1]


def test_tree_planner_asks_a_human_when_every_plan_fails(task):
    heavy_plan = {"steps": [{"tool": "assign_uav", "args": TOO_HEAVY}], "final": "execute"}
    _, factory = scripted(text(heavy_plan))
    run = TreePlanner(factory).run(task, setup(plan_samples=3))
    assert run.decision.status == "human_confirm" and "every sampled plan failed" in run.decision.reason
    assert not run.answered and run.corrections == 1 and run.first_failing_stage == "planning"


def test_tree_planner_execute_without_a_route_is_a_failed_action(task):
    plans = [
        {"steps": [], "final": "execute"},  # nothing planned: cannot execute
        {"steps": [], "final": "safe_refusal"},
    ]
    _, factory = scripted(text(plans[0]), text(plans[1]), text({"choice": 1}))
    run = TreePlanner(factory).run(task, setup(plan_samples=2))
    assert run.decision.status == "safe_refusal" and run.corrections == 1


# --- autoplan -------------------------------------------------------------------------------------------------
def test_meta_tasks_end_in_one_summarise():
    assert meta_tasks_of({"meta_tasks": ["choose a UAV", " ", "summarise", "plan the route"]}) == [
        "choose a UAV",
        "plan the route",
        SUMMARISE,
    ]
    assert meta_tasks_of(None) == [SUMMARISE]
    assert step_cap(["a", "b", SUMMARISE]) == 9


def test_autoplan_prompts_carry_the_progressive_lists(task):
    def plan_route_with_the_assigned_uav(messages: list[BaseMessage]) -> AIMessage:
        assert "1. choose a UAV -> uav chosen" in prompt_of(messages)
        return calls("plan_route", {**ROUTE, "uav_id": "uav_03"}, "c2")

    chat, factory = scripted(
        text({"meta_tasks": ["choose a UAV", "plan the route"]}),
        calls("assign_uav", LIGHT, "c1"),
        lambda messages: text({"result": f"uav chosen: {last_tool_output(messages)['result']['uav_id']}"}),
        plan_route_with_the_assigned_uav,
        text({"result": "route planned"}),
        answer(reason="summary"),
    )
    run = AutoPlan(factory).run(task, setup())

    executor_prompts = [prompt_of(conversation) for conversation in chat.seen[1:5]]
    assert "DONE:\n(none yet)\nIN PROGRESS: choose a UAV\nTO DO: plan the route; " + SUMMARISE in executor_prompts[0]
    assert "IN PROGRESS: plan the route\nTO DO: " + SUMMARISE in executor_prompts[2]
    summary_prompt = prompt_of(chat.seen[5])
    assert "2. plan the route -> route planned" in summary_prompt and f"IN PROGRESS: {SUMMARISE}" in summary_prompt
    route = default_registry().call("plan_route", task.world, {**ROUTE, "uav_id": "uav_03"}).result
    assert run.decision.status == "execute" and run.decision.waypoints == route["waypoints"]
    assert run.corrections == 0 and run.answered and run.usage.llm_calls == 6


def test_autoplan_reflects_once_then_closes_the_meta_task_as_failed(task):
    chat, factory = scripted(
        text({"meta_tasks": ["launch the drone"]}),
        calls("launch_drone", {}, "c1"),  # no such tool
        calls("launch_drone", {}, "c2"),  # the retry fails too
        answer(status="safe_refusal", reason="cannot launch"),
    )
    run = AutoPlan(factory).run(task, setup())

    retry_conversation = chat.seen[2]
    assert isinstance(retry_conversation[-1], HumanMessage)
    assert retry_conversation[-1].text.startswith(REFLEXION.split("{error}")[0])
    assert "unknown_tool" in retry_conversation[-1].text
    assert "1. launch the drone -> failed: unknown_tool" in prompt_of(chat.seen[3])
    assert run.corrections == 1 and run.decision.status == "safe_refusal" and run.answered


def test_autoplan_stops_at_its_step_cap(task):
    _, factory = scripted(text({"meta_tasks": ["check the airspace"]}), calls("query_airspace", {}, "c"))
    run = AutoPlan(factory).run(task, setup(max_llm_calls=30, max_tool_calls=30))
    cap = step_cap(["check the airspace", SUMMARISE])
    assert "step cap" in run.decision.reason and not run.answered
    assert run.usage.llm_calls == 1 + cap - 1  # the plan, then the executor's steps, the summary's call unused


# --- emos -----------------------------------------------------------------------------------------------------
def test_resume_range_follows_the_energy_model(downtown):
    uav = downtown.uav_index["uav_03"]
    energy = downtown.energy
    per_m = (energy.base_wh_per_m + energy.payload_wh_per_m_per_kg * 2.0) * energy.conservative_factor
    expected = (uav.battery_ratio - BATTERY_RESERVE) * uav.battery_capacity_wh / per_m
    assert range_m(downtown, uav, 2.0) == pytest.approx(expected)
    card = resume(downtown, uav)
    assert card["numbers"]["range_empty_m"] > card["numbers"]["range_full_payload_m"]
    assert f"{uav.max_wind_mps:g} m/s" in card["text"] and "defibrillator_bay" in card["text"]


def assignment(uav: str) -> AIMessage:
    return text(
        {
            "decision": "assign",
            "uav_id": uav,
            "origin": "hospital_A",
            "destination": "accident_site_3",
            "avoid_zones": ["nfz_temp_1"],
            "payload_kg": 1.0,
            "reason": "closest",
        }
    )


def fly(args: dict[str, Any], call_id: str = "f1") -> AIMessage:
    return calls("plan_route", args, call_id)


def test_emos_reassigns_after_a_uav_refuses(task):
    chat, factory = scripted(
        assignment("uav_07"),
        text({"feasible": False, "reason": "battery too low"}),
        assignment("uav_03"),
        text({"feasible": True, "reason": "in range"}),
        fly({**ROUTE, "uav_id": "uav_09"}),  # the agent flies itself, whatever UAV it names
    )
    run = Emos(factory).run(task, setup())

    second_planning = chat.seen[2]
    assert "REFUSED BY THEIR AGENTS:\n- uav_07: battery too low" in prompt_of(second_planning)
    offered = chat.options[2]["response_format"]["json_schema"]["schema"]["properties"]["uav_id"]["anyOf"][0]["enum"]
    assert "uav_07" not in offered and "uav_03" in offered
    assert "YOU: uav_07 (" in prompt_of(chat.seen[1]) and "km empty" in prompt_of(chat.seen[1])
    assert run.corrections == 1 and run.decision.status == "execute" and run.decision.uav_id == "uav_03"
    assert [c.tool for c in run.tool_calls] == ["plan_route"] and run.tool_calls[0].args["uav_id"] == "uav_03"
    route = default_registry().call("plan_route", task.world, run.tool_calls[0].args).result
    assert run.decision.waypoints == route["waypoints"]
    assert "keeping out of nfz_temp_1" in prompt_of(chat.seen[4]) and chat.options[4]["tool_choice"] == "plan_route"


def test_emos_agent_retries_its_route_once_then_asks_a_human(task):
    _, factory = scripted(
        assignment("uav_03"),
        text({"feasible": True, "reason": "ok"}),
        fly({**ROUTE, "goal": "nowhere"}, "f1"),
        fly({**ROUTE, "goal": "nowhere"}, "f2"),
    )
    run = Emos(factory).run(task, setup())
    assert [c.ok for c in run.tool_calls] == [False, False]
    assert run.decision.status == "human_confirm" and "could not plan its route" in run.decision.reason
    assert run.first_failing_stage == "planning" and not run.answered


def test_emos_refuses_when_every_uav_declines(task):
    idle = [u.id for u in task.world.fleet if u.status.value == "idle"]
    replies = [m for uav in idle for m in (assignment(uav), text({"feasible": False, "reason": "no"}))]
    _, factory = scripted(*replies)
    run = Emos(factory).run(task, setup(max_llm_calls=2 * len(idle) + 3))
    assert run.decision.status == "safe_refusal" and run.corrections == len(idle)


def test_emos_without_resumes_shows_roles_only(task):
    chat, factory = scripted(assignment("uav_03"), text({"feasible": True, "reason": "ok"}), fly(ROUTE))
    run = EmosNoResume(factory).run(task, setup())
    assert run.decision.status == "execute"
    planner_prompt = prompt_of(chat.seen[0])
    model = task.world.uav_index["uav_03"].model
    assert f"uav_03: a {model} drone of the team" in planner_prompt
    assert "km" not in planner_prompt and "m/s" not in planner_prompt


def test_emos_planner_sees_places_and_resumes_within_the_prompt_budget(task):
    views = {}
    for cap in (None, 1024):
        chat, factory = scripted(text({"decision": "safe_refusal", "reason": "test"}))
        Emos(factory).run(task, setup(max_prompt_tokens=cap))
        views[cap] = prompt_of(chat.seen[0]).split("</request>\n", 1)[1]
    idle = [u for u in task.world.fleet if u.status.value == "idle"]
    assert all(resume(task.world, uav)["text"] in views[None] for uav in idle)
    assert len(views[1024]) <= state_char_budget(Budget(max_prompt_tokens=1024)) < len(views[None])
    assert "more left out)" in views[1024] and "more left out)" not in views[None]
