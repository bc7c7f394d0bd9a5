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
