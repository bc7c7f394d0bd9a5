"""language/team.py: a team cue must say that several UAVs fly this task (a count or "both"/"each" bound to drones
flying, "split the load", a second drone that takes part), not merely mention drones, splits of other things,
alternatives, standby or contingency drones; avoided places are never sites; one UAV per site is a team."""

from __future__ import annotations

import pytest

from language.team import read_team
from tests.support.paths import EXAMPLES
from tools.world import World, load_world

CITY = "fleet_city"
DOWNTOWN = "downtown"
_WORLDS: dict[str, World] = {}


def _world(name: str) -> World:
    if name not in _WORLDS:
        _WORLDS[name] = load_world(EXAMPLES / f"{name}.json")
    return _WORLDS[name]


ONE_UAV = [
    # splits of other things
    (
        DOWNTOWN,
        "Deliver 1 kg of medicine from Central Hospital to the east fire station; split the route to avoid the "
        "restricted zone.",
    ),
    (
        CITY,
        "Fly 2 kg of rope from the west drone depot to the rescue camp on the east ridge, dividing the trip into "
        "two legs at the midtown vertiport if needed.",
    ),
    (CITY, "Get an AED from City General Hospital to West Gate metro station with split second timing."),
    (
        DOWNTOWN,
        "Bring 1 kg of medicine from Central Hospital to the east fire station; divide its altitude band so it "
        "stays below 120 m.",
    ),
    # counts of drones that do not fly this task
    (
        CITY,
        "Two other drones are already flying near there, keep clear of them: bring 2 kg of tools from the hardware "
        "warehouse to the construction site on Harbour Street.",
    ),
    (
        CITY,
        "Pick the best of the three drones and take 2 kg of tools from the hardware warehouse to the construction "
        "site on Harbour Street.",
    ),
    (CITY, "三架无人机中挑一架，把2公斤工具从五金仓库送到港口街工地。"),
    (CITY, "Any of the two drones at the west drone depot can take 1 kg of rope to the rescue camp on the east ridge."),
    (DOWNTOWN, "两架无人机都在充电的话就用uav_03，把除颤仪从中心医院送到南广场地铁站。"),
    # a second drone that takes no part
    (
        CITY,
        "Deliver the AED to West Gate metro station and then the crash on the eastern ring road, one after the "
        "other, from City General Hospital.",
    ),
    (
        CITY,
        "Take 2 kg of tools from the hardware warehouse to the construction site on Harbour Street and keep a "
        "second drone on standby.",
    ),
    (
        CITY,
        "Take 2 kg of tools from the hardware warehouse to the construction site on Harbour Street; if it fails, "
        "send a second drone.",
    ),
    # "both" / "each" not bound to drones
    (CITY, "Inspect both the sluice gate and the pumping station with a camera drone."),
    (CITY, "Photograph the sluice gate and the pumping station; each needs a photo."),
    (
        CITY,
        "Bring 1 kg of medicine from City General Hospital to West Gate metro station and the crash on the eastern "
        "ring road, one drone for both stops.",
    ),
    # avoided places and place names
    (
        DOWNTOWN,
        "Deliver 2 kg of medicine from the depot to Central Hospital; both the school and the park must be avoided.",
    ),
    (CITY, "Relay station check: fly to the midtown vertiport and photograph it."),
    # more of the same, in our own words
    (
        CITY,
        "Take 2 kg of tools from the hardware warehouse to the construction site on Harbour Street; three drones are "
        "charging at the south charging pad.",
    ),
    (CITY, "Use one of the two camera drones to photograph the old bridge pier."),
    (
        CITY,
        "Bring 1 kg of rope from the west drone depot to the rescue camp on the east ridge and divide the climb "
        "into two stages.",
    ),
    (CITY, "Photograph the sluice gate and the east levee one by one with a camera drone."),
    (CITY, "Inspect the sluice gate and the pumping station, one after another, with a camera drone."),
    (
        CITY,
        "Bring 2 kg of tools from the hardware warehouse to the construction site on Harbour Street; keep two "
        "drones in reserve.",
    ),
    (
        CITY,
        "Deliver 1 kg of medicine from City General Hospital to West Gate metro station; in case the drone is "
        "delayed, send a second drone.",
    ),
    (CITY, "把1公斤药品从市第一医院送到西门地铁站，万一失败再派第二架。"),
    (CITY, "两架无人机正在维修，用uav_03把2公斤工具从五金仓库送到港口街工地。"),
    (DOWNTOWN, "Fly the AED from Central Hospital to South Square metro station; the school must be avoided."),
    (CITY, "Relay tower inspection: photograph the east levee at the river bend."),
    (
        CITY,
        "Share the route with the other drones: bring 2 kg of tools from the hardware warehouse to the "
        "construction site on Harbour Street.",
    ),
    (
        DOWNTOWN,
        "Deliver both the AED and the medicine kit (2 kg in all) from Central Hospital to the east fire station.",
    ),
    (CITY, "Which of the three drones is closest? Send it with 1 kg of rope to the rescue camp on the east ridge."),
    (CITY, "从水闸飞到泵站拍照，拆分航线以避开滨河小学。"),
]


@pytest.mark.parametrize(("world", "instruction"), ONE_UAV, ids=[f"one-{i}" for i in range(len(ONE_UAV))])
def test_a_one_uav_request_reads_no_team(world, instruction):
    assert read_team(instruction, _world(world)) is None


TEAMS = [
    # a refusal of one drone that asks for a team
    (
        CITY,
        "We have 8 kg of sandbags at the sandbag depot for the flood site; that's too heavy for a single drone, so "
        "send a couple of drones.",
        "split_load",
        ["flood_site_1"],
    ),
    (CITY, "把9公斤沙袋从沙袋仓库运到滨河路内涝点，单架无人机运不动。", "split_load", ["flood_site_1"]),
    (
        CITY,
        "Don't send just one drone: move 8 kg of sandbags from the sandbag depot to the flood site.",
        "split_load",
        ["flood_site_1"],
    ),
    (
        CITY,
        "Get an AED from City General Hospital to the crash on the eastern ring road and West Gate metro station at "
        "the same time, just one drone per site.",
        "parallel_sites",
        ["accident_site_1", "metro_station_1"],
    ),
    (
        CITY,
        "从市第一医院同时把除颤仪分别送到东环路车祸现场和西门地铁站，每个地点只用一架无人机。",
        "parallel_sites",
        ["accident_site_1", "metro_station_1"],
    ),
    # more, in our own words
    (
        CITY,
        "Split the 8 kg of sandbags between two drones from the sandbag depot to the flood site.",
        "split_load",
        ["flood_site_1"],
    ),
    (
        CITY,
        "Send two drones from City General Hospital: one to the crash on the eastern ring road and one to West Gate "
        "metro station.",
        "parallel_sites",
        ["accident_site_1", "metro_station_1"],
    ),
    (
        CITY,
        "Use one drone per site: get an AED from City General Hospital to the crash on the eastern ring road and "
        "West Gate metro station.",
        "parallel_sites",
        ["accident_site_1", "metro_station_1"],
    ),
    (CITY, "把4公斤沙袋从沙袋仓库运到滨河路内涝点，分成两份运。", "split_load", ["flood_site_1"]),
    (
        CITY,
        "One drone isn't enough: move 8 kg of sandbags from the sandbag depot to the flood site.",
        "split_load",
        ["flood_site_1"],
    ),
    (
        CITY,
        "Share the load among three drones: 12 kg of sandbags from the sandbag depot to the flood site.",
        "split_load",
        ["flood_site_1"],
    ),
    (
        CITY,
        "A single drone can't carry 9 kg of sandbags, so split it: from the sandbag depot to the flood site.",
        "split_load",
        ["flood_site_1"],
    ),
    (
        CITY,
        "Split the load: 4 kg of sandbags from the sandbag depot to the flood site.",
        "split_load",
        ["flood_site_1"],
    ),
    # avoided places are never sites
    (
        DOWNTOWN,
        "Send two drones to deliver 1 kg of medicine from the north-west drone depot to Central Hospital and "
        "the east fire station at the same time; the school must be avoided.",
        "parallel_sites",
        ["hospital_A", "fire_station_1"],
    ),
    (
        DOWNTOWN,
        "Two drones at the same time: 1 kg of medicine from the depot to Central Hospital and the east fire "
        "station, the school and the police station are off limits.",
        "parallel_sites",
        ["hospital_A", "fire_station_1"],
    ),
    (CITY, "派两架无人机分头巡检水闸和泵站，滨河小学要避开。", "coverage", ["inspection_site_1", "inspection_site_2"]),
    (
        CITY,
        "Have one drone film the construction site on Harbour Street while a second drone brings 2 kg of tools over "
        "from the hardware warehouse.",
        "roles",
        ["construction_site_1"],
    ),
]


@pytest.mark.parametrize(("world", "instruction", "kind", "sites"), TEAMS, ids=[f"team-{i}" for i in range(len(TEAMS))])
def test_a_team_request_reads_its_team(world, instruction, kind, sites):
    sketch = read_team(instruction, _world(world))
    assert sketch is not None
    assert sketch.kinds == [kind]
    assert sketch.sites == sites
    assert sketch.min_uavs >= 2
