"""Rule R9: another operator's approved volume is judged by the verifier (exactly, in its altitude band and time
window, with a counterexample naming the intent and the time) and kept out of by the planner, whatever the IR
lists; a world without reservations has no R9 at all."""

from __future__ import annotations

import pytest
from shapely.geometry import LineString

from tools.catalog import default_registry
from tools.world import Reservation, TimeWindow, World

STRAIGHT = [[100.0, 300.0, 60.0, 0.0], [700.0, 300.0, 60.0, 60.0]]  # west to east at 60 m, 10 m/s


def _open(world: World) -> World:
    """The example city without its zones and buildings: nothing but the reservation to break or keep clear of."""
    return world.model_copy(update={"no_fly_zones": [], "sensitive_zones": [], "buildings": []})


def _with(world: World, **band) -> World:
    reservation = Reservation(
        id="oi_test_leg3",
        polygon=[(380.0, 260.0), (420.0, 260.0), (420.0, 340.0), (380.0, 340.0)],
        alt_min_m=band.get("low", 40.0),
        alt_max_m=band.get("high", 80.0),
        active_window=TimeWindow(start_sec=band.get("start", 0.0), end_sec=band.get("end", 600.0)),
        reason="approved operational intent oi_test (cityparcel)",
        temporary=True,
        intent_id="oi_test",
        owner="cityparcel",
    )
    return _open(world).model_copy(update={"reservations": [reservation]})


def _verify(world: World, waypoints: list[list[float]]):
    return default_registry().call("verify_ltl_stl", world, {"waypoints": waypoints, "rules": ["R1", "R3"]})


def test_a_route_through_an_approved_volume_breaks_r9_naming_it_and_when(downtown):
    result = _verify(_with(downtown), STRAIGHT)
    assert not result.ok
    verdict = result.result
    assert verdict["rules"]["R9"]["status"] == "fail"  # though the IR's rule list did not name it
    counterexample = verdict["counterexample"]
    assert counterexample["violated_rule"] == "R9" and counterexample["offending_entity"] == "oi_test_leg3"
    assert 28.0 <= counterexample["time_sec"] <= 29.0  # it enters the volume at x = 380 m, t = 28 s
    assert "approved operational intent" in counterexample["suggested_repair"]


@pytest.mark.parametrize(
    "band",
    [{"start": 120.0, "end": 600.0}, {"low": 80.0, "high": 120.0}, {"start": 0.0, "end": 20.0}],
    ids=["reserved after we pass", "reserved above us", "released before we get there"],
)
def test_a_volume_not_held_where_and_when_we_fly_passes_r9(downtown, band):
    result = _verify(_with(downtown, **band), STRAIGHT)
    assert result.ok and result.result["rules"]["R9"]["status"] == "pass"


def test_without_reservations_there_is_no_r9(downtown):
    result = _verify(_open(downtown), STRAIGHT)
    assert result.ok and "R9" not in result.result["rules"]


def test_the_planner_keeps_out_of_an_approved_volume_it_was_not_told_about(downtown):
    world = _with(downtown, low=0.0, high=200.0)
    route = default_registry().call("plan_route", world, {"start": "police_2", "goal": "fire_station_1"})
    assert route.ok, route.error
    path = LineString([p[:2] for p in route.result["waypoints"]])
    assert not path.intersects(world.reservations[0].shape)
