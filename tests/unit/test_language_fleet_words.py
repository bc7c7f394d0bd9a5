"""Words of fleet requests written by hand (2026-11-28): a team listed by its UAVs pins them, a Chinese name said
without its street grounds, and filming "the drop-off" or filming with no object films the one site the cargo goes
to. Each case failed before (unaccounted UAVs asked about; no destination; a film sub-task lost)."""

from __future__ import annotations

import pytest

from language.grounding import name_variants
from language.mentions import find_mentions
from language.stated import stated_constraints, uav_roles_in
from language.team import read_team
from tests.support.paths import ROOT
from tools.world import World, load_world


@pytest.fixture(scope="module")
def fleet_city() -> World:
    return load_world(ROOT / "examples" / "fleet_city.json")


@pytest.mark.parametrize(
    "text",
    [
        "Split 8 kg of sandbags between uav_01 and uav_02 and take them from the sandbag depot to the flood site.",
        "Share the 9 kg among uav_01, uav_02 and uav_03 from the sandbag depot to the flood site.",
        "由uav_01和uav_02分装8公斤沙袋，从沙袋仓库运到滨河路内涝点。",
    ],
)
def test_a_team_listed_by_its_uavs_pins_every_one(fleet_city, text):
    roles = uav_roles_in(text.lower(), find_mentions(text.lower(), fleet_city))
    assert roles and set(roles.values()) == {"pinned"}, roles


def test_uavs_offered_as_alternatives_are_not_pinned_by_the_list_rule(fleet_city):
    text = "take the sandbags from the sandbag depot to the flood site, maybe uav_01 or uav_02"
    assert "pinned" not in uav_roles_in(text, find_mentions(text, fleet_city)).values()


def test_a_chinese_name_said_without_its_street_grounds(fleet_city):
    assert name_variants("滨河路内涝点")[-1] == "内涝点"
    assert "市场街地铁站" in name_variants("城区的市场街地铁站")  # the street kept in a variant before the bare one
    assert name_variants("中山路医院")[-1] == "中山路医院"  # a bare kind word is left to the kind words
    stated = stated_constraints("把10公斤沙袋从沙袋仓库运到内涝点，用三架无人机。", fleet_city)
    assert "flood_site_1" in stated.destinations and "flood_site_1" in stated.places


@pytest.mark.parametrize(
    "text",
    [
        "Deliver 2 kg of tools from the hardware warehouse to the construction site, and have a second drone with a "
        "camera film the drop-off.",
        "The construction site needs 2 kg of tools from the hardware warehouse; while one drone delivers it, another "
        "one with a camera should film the site.",
        "港口街工地需要五金仓库的2公斤工具,一架无人机送货,另一架带摄像头的无人机同时拍摄。",
    ],
)
def test_filming_the_drop_off_films_the_one_site(fleet_city, text):
    sketch = read_team(text, fleet_city)
    assert sketch is not None and sketch.kinds == ["roles"], sketch
    assert {(s.role, s.destination) for s in sketch.subtasks} == {
        ("film", "construction_site_1"),
        ("deliver", "construction_site_1"),
    }


@pytest.mark.parametrize(
    "text",
    [
        "split 8 kg of sandbags from the sandbag depot to the flood site across two drones. do not use uav_01 or uav_02.",
        "take the sandbags from the sandbag depot to the flood site without uav_01, uav_02 or uav_03",
        "除了uav_01和uav_02，其他无人机把8公斤沙袋从沙袋仓库运到内涝点",
    ],
)
def test_every_uav_of_a_list_left_out_is_excluded(fleet_city, text):
    """Before, only the first UAV after 'do not use' was left out; the second was asked about (unaccounted)."""
    roles = uav_roles_in(text, find_mentions(text, fleet_city))
    assert roles and set(roles.values()) == {"excluded"}, roles
