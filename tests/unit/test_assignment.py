"""assign_uav through the registry: filters with reasons, objectives, typed errors."""

from __future__ import annotations

import pytest

from tools import assignment
from tools.registry import ToolRegistry
from tools.world import World

TASK = {"origin": "hospital_A", "destination": "accident_site_3"}


@pytest.fixture(scope="module")
def call():
    registry = ToolRegistry([assignment.SPEC])
    return lambda world, **args: registry.call("assign_uav", world, args)


def _reasons(result) -> dict[str, str]:
    return {r["uav_id"]: " ".join(r["reasons"]) for r in result.result["rejected"]}


@pytest.fixture(scope="module")
def calm(downtown: World) -> World:
    """Downtown with the north's gusts at 4 m/s (13 m/s with the wind): uav_09, idle at the depot there, can fly."""
    data = downtown.model_dump(mode="json")
    next(r for r in data["weather"] if r["id"] == "north_gusts")["gust_mps"] = 4.0
    return World.model_validate(data)


def test_wind_plus_gusts_on_the_repositioning_leg_rule_a_uav_out(call, downtown):
    """uav_09 waits in the gusty north (wind 9 + gusts 6 m/s against its 14 m/s limit): the risk gate would refuse
    any route it flies, so assignment does not choose it, and says why."""
    result = call(downtown, **TASK)
    assert result.ok and result.result["uav_id"] == "uav_03"
    assert _reasons(result)["uav_09"] == (
        "wind + gusts 15 m/s in north_gusts on its way (repositioning leg included) exceed its limit 14 m/s"
    )


def test_picks_the_nearby_charged_idle_uav_and_says_why_others_fail(call, calm):
    result = call(calm, **TASK, payload_kg=1.0)
    assert result.ok and result.result["uav_id"] == "uav_03"
    reasons = _reasons(result)
    assert "reserve" in reasons["uav_07"]  # 15 % battery
    assert "status busy" in reasons["uav_05"]
    assert "status charging" in reasons["uav_11"]
    assert "status maintenance" in reasons["uav_12"]
    assert "uav_09" not in reasons  # idle at the depot, far but feasible
    ranking = result.result["ranking"]
    assert [r["uav_id"] for r in ranking] == ["uav_03", "uav_09"]
    assert ranking[0]["score"] == 1.0 and 0 < ranking[1]["score"] < 1
    assert result.result["estimated_energy_wh"] == ranking[0]["energy_wh"] > 0


def test_reserve_ratio_is_part_of_the_battery_check(call, downtown):
    relaxed = call(downtown, **TASK, candidates=["uav_03"], battery_reserve_ratio=0.2)
    after = relaxed.result["ranking"][0]["battery_after_ratio"]
    strict = call(downtown, **TASK, candidates=["uav_03"], battery_reserve_ratio=round(after + 0.05, 2))
    assert relaxed.ok and not strict.ok
    assert "reserve" in _reasons(strict)["uav_03"]


def test_payload_over_capacity_is_rejected(call, calm):
    result = call(calm, **TASK, payload_kg=4.0)
    assert result.result["uav_id"] == "uav_09"  # 5 kg capacity
    assert "payload 4 kg exceeds" in _reasons(result)["uav_03"]


def test_wind_over_the_uav_limit_is_rejected(call, calm):
    data = calm.model_dump(mode="json")
    data["weather"].insert(0, {"id": "storm", "bbox": [600, 380, 700, 460], "wind_speed_mps": 11, "gust_mps": 2})
    stormy = World.model_validate(data)
    result = call(stormy, **TASK)
    assert result.result["uav_id"] == "uav_09"  # 14 m/s limit
    assert "wind + gusts 13 m/s in storm" in _reasons(result)["uav_03"]


def test_objectives_rank_by_their_own_metric(call, calm):
    for objective, key, best in (("min_delay_safe", "eta_sec", min), ("min_energy", "energy_wh", min)):
        ranking = call(calm, **TASK, objective=objective).result["ranking"]
        assert len(ranking) == 2 and ranking[0][key] == best(r[key] for r in ranking)
    ranking = call(calm, **TASK, objective="max_reserve").result["ranking"]
    assert ranking[0]["battery_after_ratio"] == max(r["battery_after_ratio"] for r in ranking)


def test_named_candidates_that_all_fail_suggest_fleet_uavs(call, calm):
    result = call(calm, **TASK, candidates=["uav_07", "uav_05"])
    assert not result.ok and result.error.type == "low_battery_candidates" and result.error.recoverable
    assert "uav_03" in result.error.suggested_actions[0] and "uav_09" in result.error.suggested_actions[0]
    assert set(_reasons(result)) == {"uav_07", "uav_05"}


def test_nobody_can_fly_it_is_unrecoverable(call, downtown):
    result = call(downtown, **TASK, payload_kg=20.0)
    assert not result.ok and result.error.type == "no_available_uav" and not result.error.recoverable
    assert set(_reasons(result)) == {u.id for u in downtown.fleet}


@pytest.mark.parametrize(
    "args, error_type",
    [
        ({"origin": "hospital_Q", "destination": "accident_site_3"}, "unknown_entity"),
        ({**TASK, "candidates": ["uav_3"]}, "unknown_uav"),
        ({**TASK, "objective": "fastest"}, "bad_arguments"),
        ({**TASK, "battery_reserve_ratio": 1.5}, "bad_arguments"),
        ({"origin": "hospital_A"}, "bad_arguments"),
    ],
)
def test_bad_arguments_and_unknown_ids(call, downtown, args, error_type):
    result = call(downtown, **args)
    assert not result.ok and result.error.type == error_type and result.error.recoverable
