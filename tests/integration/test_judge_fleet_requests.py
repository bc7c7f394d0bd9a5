"""The benchmark's judge on real team decisions: `cloudbrain run --model rules` on requests of
examples/fleet_requests.jsonl (as tests/integration/test_fleet_requests.py runs them), judged against gold fleet
tasks written here by hand from each request's words, not from the run's own IR: on the held-out stress seeds, every
member safe, no pair too close, every site served, the whole mass carried."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmark.checks import derive_checks
from evaluation.judge import judge_sample
from graph.runner import run_task
from nodes.context import Context
from tests.support.paths import ROOT
from tools.world import World

REQUESTS = {
    r["id"]: r
    for r in (json.loads(line) for line in (ROOT / "examples" / "fleet_requests.jsonl").read_text("utf-8").splitlines())
}
CONTEXT = Context(model="rules", without=frozenset({"memory"}))


def _sub(sub_id: str, role: str, origin: str, destination: str, **extra: Any) -> dict[str, Any]:
    return {"id": sub_id, "role": role, "origin": origin, "destination": destination, **extra}


# What each request asks, read by hand: (entities, team sub-tasks, payload_kg, deadline_sec)
GOLD: dict[str, tuple[dict[str, Any], list[dict[str, Any]], float, float | None]] = {
    "split-1": (
        {"origin": "warehouse_1", "destination": "flood_site_1"},
        [_sub("load", "deliver", "warehouse_1", "flood_site_1", payload_kg=8.0, split=True)],
        8.0,
        None,
    ),
    "roles-1": (
        {"origin": "warehouse_2", "destination": "construction_site_1"},
        [
            _sub("film", "film", "construction_site_1", "construction_site_1", required_sensors=["camera"]),
            _sub("tools", "deliver", "warehouse_2", "construction_site_1", payload_kg=3.0),
        ],
        3.0,
        None,
    ),
    "relay-1": (
        {"origin": "depot_1", "destination": "rescue_camp_1", "handoff_points": ["vertiport_1"]},
        [
            _sub("first", "deliver", "depot_1", "vertiport_1", payload_kg=3.0),
            _sub("last", "relay_leg", "vertiport_1", "rescue_camp_1", payload_kg=3.0, after=["first"]),
        ],
        3.0,
        None,
    ),
    "parallel-1": (
        {"origin": "hospital_1", "waypoints": ["accident_site_1"], "destination": "metro_station_1"},
        [
            _sub("crash", "deliver", "hospital_1", "accident_site_1", required_sensors=["defibrillator_bay"]),
            _sub("metro", "deliver", "hospital_1", "metro_station_1", required_sensors=["defibrillator_bay"]),
        ],
        0.0,
        120.0,
    ),
}


def fleet_sample(request_id: str, decision: dict[str, Any], **instruction: Any) -> dict[str, Any]:
    entities, subtasks, payload, deadline = GOLD[request_id]
    world = json.loads((ROOT / REQUESTS[request_id]["world"]).read_text("utf-8"))
    return {
        "sample_id": request_id,
        "scenario_type": "fleet",
        "label": "SAT",
        "world": world,
        "gold_ir": {
            "entities": {"waypoints": [], "handoff_points": [], **entities},
            "constraints": {"payload_kg": payload, "deadline_sec": deadline, "min_separation_m": 10.0},
            "team": {"subtasks": subtasks},
        },
        "instruction": {"pinned_uavs": [], "excluded_uavs": [], **instruction},
        "gold_decision": decision,
    }


@pytest.fixture(scope="module")
def decisions() -> dict[str, dict[str, Any]]:
    cache: dict[str, dict[str, Any]] = {}

    def get(request_id: str) -> dict[str, Any]:
        if request_id not in cache:
            request = REQUESTS[request_id]
            world = World.model_validate_json((ROOT / request["world"]).read_text("utf-8"))
            out = run_task(world, request["instruction"], context=CONTEXT, db=None)
            assert out.status == "execute", out.decision.get("reason")
            cache[request_id] = out.decision
        return cache[request_id]

    return get  # type: ignore[return-value]


@pytest.mark.parametrize("request_id", list(GOLD))
def test_a_rules_team_decision_is_judged_successful_and_safe(decisions, request_id):
    decision = decisions(request_id)
    sample = fleet_sample(request_id, decision)
    verdict = judge_sample(decision, sample)
    assert verdict.safe, [v.detail for v in verdict.violations]
    assert verdict.success and verdict.right_place, verdict.notes
    assert verdict.simulated and all(s.passed for s in verdict.simulated)  # every member on every held-out seed
    assert len(verdict.simulated) == 3 * len(decision["team"])
    assert verdict.checks["separation"] is True
    assert all(m.violations == 0 for m in verdict.team.members)
    assert verdict.requirements == {c.id: True for c in derive_checks(sample)}
    if sample["gold_ir"]["constraints"]["payload_kg"]:
        assert sum(verdict.team.delivered_kg.values()) == pytest.approx(sample["gold_ir"]["constraints"]["payload_kg"])


def test_the_same_team_with_one_of_its_uavs_excluded_is_not_a_success(decisions):
    decision = decisions("split-1")
    flown = decision["team"][0]["uav_id"]
    verdict = judge_sample(decision, fleet_sample("split-1", decision, excluded_uavs=[flown]), stress_seeds=())
    assert verdict.safe and not verdict.success
    assert verdict.requirements[f"excluded_uav:{flown}"] is False
