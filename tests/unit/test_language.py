"""The language layer: quantities in digits or words, every salient span accounted for (or quoted back), UAV
roles, and role cues that do not rest on the generator's templates."""

from __future__ import annotations

import pytest

from ir.fidelity import CONTRADICTORY, UNACCOUNTED, StatedConstraints, fidelity_findings
from language.quantities import find_quantities, with_digits
from language.stated import stated_constraints
from tests.unit.test_fidelity import _route, _types


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("get it there within fifteen minutes", [("15 minutes", "duration", 900.0)]),
        ("half a kilo of plasma", [("0.5 kilo", "mass", 0.5)]),
        ("at four hundred metres, 2 km out", [("400 metres", "length", 400.0), ("2 km", "length", 2000.0)]),
        ("keep thirty percent battery; wind 5 m/s", [("30 percent", "share", 0.3), ("5 m/s", "speed", 5.0)]),
        ("二十分钟内送达两公斤", [("20分钟", "duration", 1200.0), ("2公斤", "mass", 2.0)]),
        ("保留百分之三十电量,一刻钟", [("30%", "share", 0.3), ("1刻钟", "duration", 900.0)]),
        ("uav_03 and 3 hospitals, hospital_A", []),
    ],
)
def test_quantities_in_digits_or_words(text, found):
    assert [(q.text, q.dimension, q.value) for q in find_quantities(with_digits(text))] == found


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("Fly from hospital_A to accident_site_3 at 400 metres altitude.", "'400 metres'"),
        ("Send the defibrillator from Central Hospital to the ring road accident, flying at 350 m.", "'350 m'"),
        ("从hospital_A飞到accident_site_3,飞行高度三百米。", "'300米'"),
    ],
)
def test_a_stated_altitude_above_the_ceiling_is_a_contradiction_quoted(world, text, said):
    blockers = stated_constraints(text, world).blockers(world.grid.ceiling_m)
    assert [t for t, _ in blockers] == [CONTRADICTORY]
    assert said in blockers[0][1]


def test_a_stated_altitude_the_route_does_not_fly_is_quoted(world):
    stated = stated_constraints("Fly from hospital_A to accident_site_3 at 100 m.", world)
    assert stated.cruise_altitude_m == 100.0 and stated.blockers(world.grid.ceiling_m) == []
    low = {"uav_id": "uav_03", "waypoints": _route(world, "hospital_A", "accident_site_3", altitude=40.0)}
    findings = fidelity_findings(world, stated, low)
    assert _types(findings) == ["altitude_not_as_stated"] and "'100 m' is not reflected" in findings[0].message
    at = {"uav_id": "uav_03", "waypoints": _route(world, "hospital_A", "accident_site_3", altitude=100.0)}
    assert fidelity_findings(world, stated, at) == []


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("Fly from hospital_A to accident_site_3 within 10 minutes and hover 2 minutes there.", "'2 minutes'"),
        ("Carry the kit from hospital_A to police_2, staying 2 km from the river.", "'2 km'"),
        ("Deliver from hospital_A to police_2 at 12 m/s.", "'12 m/s'"),
    ],
)
def test_a_quantity_no_field_holds_is_quoted_and_asked_about(world, text, span):
    blockers = stated_constraints(text, world).blockers(world.grid.ceiling_m)
    assert [t for t, _ in blockers] == [UNACCOUNTED]
    assert span in blockers[0][1]


def test_every_stated_quantity_held_is_accounted_for(world):
    text = (
        "Within twenty minutes take 2 kg from hospital_A to police_2, stay below 90 m, keep at least 30% battery "
        "and 15 m of separation."
    )
    stated = stated_constraints(text, world)
    assert stated.unaccounted == [] and stated.blockers(world.grid.ceiling_m) == []
    assert (stated.deadline_sec, stated.payload_kg, stated.altitude_max_m) == (1200.0, 2.0, 90.0)
    assert (stated.battery_reserve_ratio, stated.min_separation_m) == (0.3, 15.0)


@pytest.mark.parametrize(
    ("text", "pinned", "excluded"),
    [
        ("Use only uav_07 to carry the blood from hospital_A to accident_site_3.", ["uav_07"], []),
        ("uav_09 should carry it from hospital_A to police_2.", ["uav_09"], []),
        ("Not uav_03: send another drone from hospital_A to police_2.", [], ["uav_03"]),
        ("uav_12 is in maintenance; deliver from hospital_A to police_2.", [], []),
        ("用uav_07把血液从hospital_A送到accident_site_3。", ["uav_07"], []),
        ("Deliver 1 kg from hospital_A to accident_site_3 without using uav_07.", [], ["uav_07"]),
        ("uav_07 takes the blood from hospital_A to accident_site_3.", ["uav_07"], []),
    ],
)
def test_uav_roles(world, text, pinned, excluded):
    stated = stated_constraints(text, world)
    assert (stated.uavs, stated.excluded_uavs, stated.unaccounted) == (pinned, excluded, [])


def test_a_uav_named_in_no_role_is_asked_about(world):
    stated = stated_constraints("Deliver from hospital_A to police_2, uav_07 maybe.", world)
    assert stated.uavs == [] and [t for t, _ in stated.blockers(world.grid.ceiling_m)] == [UNACCOUNTED]
    assert "'uav_07'" in stated.unaccounted[0]


def test_an_excluded_uav_that_flies_is_caught(world):
    stated = StatedConstraints(excluded_uavs=["uav_03"])
    plan = {"uav_id": "uav_03", "waypoints": _route(world, "hospital_A", "accident_site_3")}
    assert _types(fidelity_findings(world, stated, plan)) == ["excluded_uav_flown"]


def test_a_relaxed_separation_is_caught(world):
    stated = StatedConstraints(min_separation_m=20.0)
    plan = {"uav_id": "uav_03", "waypoints": _route(world, "hospital_A", "accident_site_3")}
    ir = {"constraints": {"min_separation_m": 10.0}}
    assert _types(fidelity_findings(world, stated, plan, ir)) == ["separation_relaxed"]


@pytest.mark.parametrize(
    ("text", "origins", "destinations"),
    [
        (
            "Fire crew at the east fire station needs a thermal blanket kit; it's sitting at Central Hospital. "
            "Get it there within fifteen minutes.",
            ["hospital_A"],
            ["fire_station_1"],
        ),
        ("police_2 urgently needs the kit, which is stored at depot_1.", ["depot_1"], ["police_2"]),
        (
            "The kit is waiting at Central Hospital; the children's hospital on the north side requires it.",
            ["hospital_A"],
            ["hospital_B"],
        ),
    ],
)
def test_who_needs_it_is_the_destination_and_where_it_waits_the_origin(world, text, origins, destinations):
    stated = stated_constraints(text, world)
    assert (stated.origins, stated.destinations) == (origins, destinations)


@pytest.mark.parametrize(
    ("text", "band"),
    [
        ("Don't climb above 90 m.", (None, 90.0)),
        ("Never go below 40 m.", (40.0, None)),
        ("Keep the altitude at 50 m or higher.", (50.0, None)),
        ("Stay below 90 m and above 40 m.", (40.0, 90.0)),
        ("别低于50米飞,限高90米。", (50.0, 90.0)),
        ("高度控制在60米以上、100米以下。", (60.0, 100.0)),
    ],
)
def test_a_negation_or_a_trailing_limit_turns_the_comparison(world, text, band):
    stated = stated_constraints("Fly from hospital_A to police_2. " + text, world)
    assert (stated.altitude_min_m, stated.altitude_max_m) == band and stated.cruise_altitude_m is None


@pytest.mark.parametrize(
    "text",
    [
        "Take the kit from hospital_A to police_2, then return to hospital_A.",
        "From Central Hospital to police_2 and afterwards fly to Central Hospital again.",
    ],
)
def test_naming_the_start_as_the_end_asks_for_a_return(world, text):
    assert stated_constraints(text, world).return_leg


@pytest.mark.parametrize(
    "text",
    [
        "Corridors only, the whole way.",
        "Stick to the drone corridors.",
        "Don't leave the corridors.",
        "仅限无人机走廊飞行。",
        "不要离开无人机航路走廊。",
        "全程走无人机航路走廊。",
    ],
)
def test_corridor_only_in_other_words(world, text):
    assert stated_constraints("Fly from hospital_A to police_2. " + text, world).corridors_only


@pytest.mark.parametrize(
    ("text", "reserve", "band"),
    [
        ("min 60 m, max 90 m, 25% battery reserve.", 0.25, (60.0, 90.0)),
        ("Arrive with 25% battery or more.", 0.25, (None, None)),
        ("落地时电量不少于30%。", 0.3, (None, None)),
    ],
)
def test_telegraphic_limits_and_reserves(world, text, reserve, band):
    stated = stated_constraints("Fly from hospital_A to police_2. " + text, world)
    assert stated.battery_reserve_ratio == reserve and (stated.altitude_min_m, stated.altitude_max_m) == band
    assert stated.unaccounted == []


@pytest.mark.parametrize(
    ("text", "origins", "destinations"),
    [
        ("Sender: hospital_A. Recipient: police_2. Item: blood (1 kg).", ["hospital_A"], ["police_2"]),
        ("EMERGENCY: hospital_A > accident_site_3: a blood bag", ["hospital_A"], ["accident_site_3"]),
        ("发件:hospital_A;收件:police_2;物品:血袋。", ["hospital_A"], ["police_2"]),
        ("police_2那边需要血袋,东西在hospital_A。", ["hospital_A"], ["police_2"]),
        ("accident_site_3在等hospital_A发出的血袋。", ["hospital_A"], ["accident_site_3"]),
    ],
)
def test_forms_arrows_and_chinese_topic_cues_fix_roles(world, text, origins, destinations):
    stated = stated_constraints(text, world)
    assert (stated.origins, stated.destinations) == (origins, destinations) and stated.missing == []


def test_two_places_with_no_cue_for_the_direction_ask_which_way(world):
    stated = stated_constraints("Blood bag: hospital_A, police_2, now.", world)
    assert stated.missing and "hospital_A -> police_2 or police_2 -> hospital_A" in stated.missing[0]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("in a quarter of an hour, tops", [("15 minutes", "duration", 900.0)]),  # not "1 hour"
        ("lands with at least a quarter of its battery left", [("25%", "share", 0.25)]),
        ("altitude six zero metres, over", [("60 metres", "length", 60.0)]),
        ("保留两成电量", [("20%", "share", 0.2)]),
    ],
)
def test_spoken_fractions_and_radio_digits(text, found):
    assert [(q.text, q.dimension, q.value) for q in find_quantities(with_digits(text))] == found


@pytest.mark.parametrize(
    ("text", "origins", "destinations", "uavs"),
    [
        (
            "We'd like a drone to pick up a package at hospital_A and deliver it to police_2.",
            ["hospital_A"],
            ["police_2"],
            [],
        ),
        ("uav_09 only. hospital_A -> police_2.", ["hospital_A"], ["police_2"], ["uav_09"]),
        ("急救包由hospital_A送往police_2。", ["hospital_A"], ["police_2"], []),
    ],
)
def test_pickups_with_an_object_formal_origins_and_a_trailing_only(world, text, origins, destinations, uavs):
    stated = stated_constraints(text, world)
    assert (stated.origins, stated.destinations, stated.uavs) == (origins, destinations, uavs)


def test_a_place_pointed_to_by_its_kind_must_be_reached(world):
    text = "Launch from the east fire station, overfly the accident on the east ring road for photos, then come back."
    stated = stated_constraints(text, world)
    assert stated.pointed == ["accident_site_3"] and "accident_site_3" not in stated.places
    there_and_back = {"uav_id": "uav_03", "waypoints": _route(world, "fire_station_1", "police_2", "fire_station_1")}
    assert _types(fidelity_findings(world, stated, there_and_back)) == ["place_not_visited"]
    via_site = {"uav_id": "uav_03", "waypoints": _route(world, "fire_station_1", "accident_site_3", "fire_station_1")}
    assert fidelity_findings(world, stated, via_site) == []


@pytest.mark.parametrize(
    "remark",
    [
        "Note: most charging pads are busy right now.",
        "注意:目前大部分充电坪都在使用中。",
        "Keep clear of the temporary no-fly zone (police operation).",
    ],
)
def test_a_remark_or_a_zone_qualifier_points_to_no_place_to_reach(world, remark):
    stated = stated_constraints("Deliver the kit from hospital_A to accident_site_3. " + remark, world)
    assert stated.pointed == []
