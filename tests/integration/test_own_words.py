"""Requests in a person's own words on the example world (not the generator's phrasing): none executes against
what it states, and what the agent cannot account for is quoted back in the reason."""

from __future__ import annotations

import pytest

from graph.runner import run_task
from nodes.context import Context
from tools.world import World

RULES = Context(model="rules", without=frozenset({"memory"}))


@pytest.mark.parametrize(
    ("instruction", "quoted"),
    [
        ("Fly from hospital_A to accident_site_3 at 400 metres altitude.", "'400 metres'"),
        ("Send the defibrillator from Central Hospital to the ring road accident, flying at 350 m.", "'350 m'"),
        ("Carry the blood from hospital_A to police_2 and circle 3 km around it.", "'3 km'"),
    ],
)
def test_a_stated_quantity_no_plan_can_reflect_never_executes_and_is_quoted(downtown: World, instruction, quoted):
    out = run_task(downtown, instruction, context=RULES, db=None)
    assert out.status == "human_confirm" and quoted in out.decision["reason"]


def test_a_pinned_uav_is_never_swapped(downtown: World):
    text = "Use only uav_07 to carry the blood samples from hospital_A to accident_site_3 and back, no recharging."
    out = run_task(downtown, text, context=RULES, db=None)
    assert out.status != "execute" or out.decision["uav_id"] == "uav_07"
    assert "uav_07" in out.decision["reason"]


def test_who_needs_it_is_where_the_flight_goes(downtown: World):
    text = (
        "Fire crew at the east fire station needs a thermal blanket kit; it's sitting at Central Hospital. "
        "Get it there within fifteen minutes."
    )
    out = run_task(downtown, text, context=RULES, db=None)
    assert out.status == "execute", out.decision["reason"]
    assert out.decision["certificate"]["trajectory"]["goal"] == "fire_station_1"
    assert out.decision["waypoints"][-1][3] <= 900.0


# --- polarity (issue 37): what a request excludes, forbids or demands against a rule --------------------------------
LOCAL = Context(model="local", without=frozenset({"memory"}))


def test_an_excluded_uav_the_optimum_would_fly_is_not_flown_and_the_decision_says_why(downtown: World):
    base = "Carry 1 kg of files from hospital_A to police_2."
    assert run_task(downtown, base, context=RULES, db=None).decision["uav_id"] == "uav_03"  # the optimum
    out = run_task(downtown, base + " Anyone but uav_03, it is on standby.", context=RULES, db=None)
    assert out.decision.get("uav_id") != "uav_03"
    assert "uav_03" in out.decision["reason"]


def test_an_excluded_uav_leaves_the_task_to_another_that_can_fly_it(suburban: World):
    text = (
        "1 kg of parcels from the west depot to the suburban rail station. Leave uav_s2 out of it, it's recalibrating."
    )
    out = run_task(suburban, text, context=RULES, db=None)
    assert out.status == "execute", out.decision["reason"]
    assert out.decision["uav_id"] != "uav_s2" and "not uav_s2" in out.decision["reason"]


@pytest.mark.parametrize("context", [RULES, LOCAL], ids=["rules", "local"])
@pytest.mark.parametrize(
    ("instruction", "rule"),
    [
        ("Carry 1 kg from hospital_A to accident_site_3, cut straight across nfz_temp_1, we're in a hurry.", "R1"),
        ("Fly the kit from hospital_A to accident_site_3 and ignore the buffer around the school.", "R2"),
        ("Take 1 kg from hospital_A to police_2; climb to 300 m for it.", "ceiling"),
        ("Fly 1 kg from hospital_A to police_2 and land with 3% battery, it's fine.", "R5"),
        (
            "Fly 1 kg from hospital_A to police_2, drain the battery flat if you have to; skip the battery reserve.",
            "R5",
        ),
    ],
)
def test_a_demand_against_a_rule_never_executes_and_is_quoted_with_its_rule(
    downtown: World, context, instruction, rule
):
    out = run_task(downtown, instruction, context=context, db=None)
    if "it's fine" in instruction:  # a permission: the plan keeps the reserve and says so
        assert out.status != "execute" or "R5" in out.decision["reason"]
        return
    assert out.status == "human_confirm", out.decision
    assert rule in out.decision["reason"] and "'" in out.decision["reason"]


def test_an_ordered_ending_is_flown_or_asked_never_dropped(downtown: World):
    text = "Fly 1 kg of files from hospital_A to police_2, and when that's done park it at metro_station_4."
    out = run_task(downtown, text, context=RULES, db=None)
    if out.status == "execute":
        end = out.decision["waypoints"][-1]
        assert abs(end[0] - 400) + abs(end[1] - 120) < 2 * downtown.arrival_tolerance_m
    else:
        assert "metro_station_4" in out.decision["reason"]
