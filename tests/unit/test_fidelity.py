"""Intent fidelity: what the request states, read apart from any model, and the gate's findings on a plan."""

from __future__ import annotations

import numpy as np
import pytest

from ir.fidelity import StatedConstraints, fidelity_findings, team_fidelity_findings
from language.grounding import ground_mentions
from language.stated import stated_constraints
from language.team import read_request
from tests.support.paths import EXAMPLES
from tools.trajectory import ground_to_ground
from tools.world import World, load_world


def _with_names(world: World, names: dict[str, str]) -> World:
    entities = [e.model_copy(update={"name": names.get(e.id, e.name)}) for e in world.entities]
    return world.model_copy(update={"entities": entities})


def _route(world: World, *refs: str, altitude: float = 60.0, speed: float = 10.0) -> list[list[float]]:
    """Straight legs between places at one altitude, timed at `speed`."""
    points, t = [], 0.0
    for i, ref in enumerate(refs):
        x, y = world.position_of(ref)
        if i:
            px, py = points[-1][:2]
            t += ((x - px) ** 2 + (y - py) ** 2) ** 0.5 / speed
        points.append([x, y, altitude, round(t, 3)])
    return points


def _types(findings) -> list[str]:
    return [f.error_type for f in findings]


# --- grounding ---------------------------------------------------------------------------------------------------
def test_ids_full_names_and_unique_short_names_ground_in_order_of_mention(world):
    world = _with_names(world, {"hospital_B": "the children's hospital on the north side"})
    mentions = ground_mentions(world, "Fly from the Children's Hospital to accident_site_3, not via uav_09's pad.")
    assert mentions.places == ["hospital_B", "accident_site_3"]
    assert mentions.uavs == ["uav_09"]
    full = ground_mentions(world, "Deliver to the children's hospital on the north side from hospital_A.")
    assert full.places == ["hospital_B", "hospital_A"]


@pytest.mark.parametrize(
    ("text", "origins", "destinations"),
    [
        (
            "Round trip: hospital_A to accident_site_3, returning to hospital_A.",
            ["hospital_A"],
            ["hospital_A", "accident_site_3"],
        ),
        ("往返任务:hospital_A至accident_site_3。", ["hospital_A"], []),
        (
            "Bring the kit from hospital_A to police_2 to accident_site_3.",
            ["hospital_A"],
            ["police_2", "accident_site_3"],
        ),
        ("Deliver the kit to accident_site_3 to help the crew.", [], ["accident_site_3"]),  # no place after "to"
        ("Fly it from hospital_A through police_2 to accident_site_3.", ["hospital_A"], ["accident_site_3"]),
        ("Fly it via police_2 to accident_site_3.", [], ["accident_site_3"]),
        ("Deliver hospital_A's kit to accident_site_3.", [], ["accident_site_3"]),
    ],
)
def test_a_place_followed_by_to_and_another_place_is_the_origin(world, text, origins, destinations):
    mentions = ground_mentions(world, text)
    assert (mentions.origins, mentions.destinations) == (origins, destinations)


def test_a_place_named_to_hand_over_at_is_a_hand_off_point_not_the_destination(world):
    for text in (
        "We need it at accident_site_3, collect from hospital_A; fly to metro_station_4 and hand it over there.",
        "从hospital_A取货送到accident_site_3,请飞到metro_station_4,在那里交给地面配送员。",
    ):
        mentions = ground_mentions(world, text)
        assert mentions.handoff_points == ["metro_station_4"], text
        assert "metro_station_4" not in mentions.destinations and mentions.origins == ["hospital_A"]


@pytest.mark.parametrize(
    "text",
    [
        "Fly from hospital_A to police_2 and film the No. 2 primary school grounds from inside it on the way, "
        "but the drone must never enter the No. 2 primary school grounds.",
        "On the way from hospital_A to police_2, pass through school_zone_2 for photos; never enter school_zone_2.",
        "从hospital_A飞往police_2,途中穿过No. 2 primary school grounds拍照,同时确保全程不进入No. 2 primary school grounds。",
    ],
)
def test_a_zone_named_to_enter_and_to_keep_out_of_is_a_contradiction(world, text):
    stated = stated_constraints(text, world)
    assert stated.enter_and_keep_out == ["school_zone_2"]
    # Entering a sensitive zone is also a demand against R2; the contradiction is named first.
    assert [kind for kind, _ in stated.blockers(120.0)][0] == "stated_constraints_contradictory"


@pytest.mark.parametrize(
    "text",
    [
        "Fly from hospital_A to police_2 and never enter the No. 2 primary school grounds.",
        "Fly from hospital_A to police_2 through school_zone_2.",
        "Pass through school_zone_2 from hospital_A to police_2 and keep clear of the hospital charging pad.",
    ],
)
def test_entering_or_keeping_out_alone_is_no_contradiction(world, text):
    assert stated_constraints(text, world).enter_and_keep_out == []


def test_a_short_name_two_entities_share_grounds_nothing(world):
    world = _with_names(
        world,
        {"hospital_A": "the eye hospital on the south side", "hospital_B": "the eye hospital on the north side"},
    )
    assert ground_mentions(world, "Bring it to the eye hospital.").places == []
    assert ground_mentions(world, "Bring it to the eye hospital on the north side.").places == ["hospital_B"]


def _with_chinese_names(world: World, names: dict[str, str]) -> World:
    entities = [e.model_copy(update={"names": {"zh": names[e.id]}}) if e.id in names else e for e in world.entities]
    return world.model_copy(update={"entities": entities})


def test_a_chinese_request_grounds_by_the_chinese_names_the_world_gives(world):
    world = _with_chinese_names(world, {"hospital_B": "北侧的儿童医院", "accident_site_3": "东侧的交通事故现场"})
    full = ground_mentions(world, "请从北侧的儿童医院把药送到东侧的交通事故现场。")
    assert full.places == ["hospital_B", "accident_site_3"]
    assert full.origins == ["hospital_B"]  # "从" right before the name fixes its role
    short = ground_mentions(world, "把药从儿童医院送到交通事故现场")  # the names without their locative phrase
    assert short.places == ["hospital_B", "accident_site_3"]


@pytest.mark.parametrize(
    "request_text",
    [
        "accident_site_3需要一台AED(1.8公斤),请到hospital_A取货。",  # the need, then where to pick it up
        "巡逻任务:hospital_A起飞,终点accident_site_3。",
        "accident_site_3发生紧急情况,请从hospital_A派无人机运送AED(1.8公斤)。",
    ],
)
def test_chinese_cues_after_a_place_fix_its_role(world, request_text):
    mentions = ground_mentions(world, request_text)
    assert (mentions.origins, mentions.destinations) == (["hospital_A"], ["accident_site_3"])


def test_a_chinese_short_name_two_entities_share_grounds_nothing(world):
    world = _with_chinese_names(world, {"hospital_A": "南侧的眼科医院", "hospital_B": "北侧的眼科医院"})
    assert ground_mentions(world, "送到眼科医院").places == []
    assert ground_mentions(world, "送到北侧的眼科医院").places == ["hospital_B"]


def test_an_id_inside_a_longer_word_is_not_a_mention(world):
    assert ground_mentions(world, "see hospital_A2 and xhospital_A").places == []


# --- what the request states ---------------------------------------------------------------------------------------
def test_stated_deadline_band_pin_and_return_leg(world):
    stated = stated_constraints(
        "Use uav_09 to take the AED from hospital_A to accident_site_3 and back within 4 minutes. "
        "Stay below 90 m and above 40 m; uav_03 is busy anyway.",
        world,
    )
    assert stated.places == ["hospital_A", "accident_site_3"]
    assert stated.uavs == ["uav_09"]  # uav_03 is only mentioned, not asked for
    assert stated.deadline_sec == 240.0
    assert (stated.altitude_min_m, stated.altitude_max_m) == (40.0, 90.0)
    assert stated.return_leg


def test_a_request_without_demands_states_nothing_but_its_places(world):
    stated = stated_constraints("Send a drone from hospital_A to accident_site_3.", world)
    assert [(s.text, s.role, s.polarity) for s in stated.salient] == [
        ("hospital_a", "origin", "wanted"),
        ("accident_site_3", "destination", "wanted"),
    ]
    assert stated.model_copy(update={"salient": []}) == StatedConstraints(
        places=["hospital_A", "accident_site_3"],
        origins=["hospital_A"],
        destinations=["accident_site_3"],
        referenced=["hospital_A", "accident_site_3"],
        intent="delivery",
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Fly from hospital_A to police_2 above 100 m and below 60 m.", "above 100 m and below 60 m"),
        ("Fly from hospital_A to police_2 above 150 m, it is safer.", "ceiling"),
    ],
)
def test_contradictory_or_impossible_demands_are_known_before_any_tool(world, text, expected):
    found = stated_constraints(text, world).blockers(world.grid.ceiling_m)
    assert len(found) == 1 and found[0][0] == "stated_constraints_contradictory" and expected in found[0][1]


def test_a_consistent_band_is_no_contradiction(world):
    assert (
        stated_constraints("Fly from hospital_A to police_2 between 40 and 80 m.", world).blockers(world.grid.ceiling_m)
        == []
    )


def test_a_bare_kind_that_fits_several_places_is_unresolved(world):
    # downtown has hospital_A and hospital_B; "the hospital charging pad" is one entity's own name.
    vague = stated_constraints("Bring the kit from police_2 to the hospital.", world)
    assert vague.unresolved == ["the hospital (2 in this world)"]
    assert vague.blockers(world.grid.ceiling_m)[0][0] == "unresolved_reference"
    named = stated_constraints("Bring the kit from the hospital charging pad to police_2.", world)
    assert named.unresolved == [] and named.places == ["charging_pad_1", "police_2"]


def test_a_place_to_keep_clear_of_is_not_a_place_to_visit(world):
    stated = stated_constraints("Fly from hospital_A to accident_site_3 and keep clear of police_2.", world)
    assert stated.places == ["hospital_A", "accident_site_3"] and stated.avoided == ["police_2"]


# --- the gate's findings ----------------------------------------------------------------------------------------
def test_a_faithful_plan_has_no_finding(world):
    stated = StatedConstraints(places=["hospital_A", "accident_site_3"], uavs=["uav_03"], deadline_sec=600.0)
    plan = {"uav_id": "uav_03", "waypoints": _route(world, "hospital_A", "accident_site_3")}
    assert fidelity_findings(world, stated, plan) == []


def test_the_stated_cargo_is_what_the_plan_was_checked_for_and_what_the_uav_lifts(world):
    stated = stated_constraints("Fly a crate of parts (4 kg) from hospital_A to accident_site_3.", world)
    assert stated.payload_kg == 4.0
    plan = {"uav_id": "uav_03", "waypoints": _route(world, "hospital_A", "accident_site_3")}  # uav_03 lifts 3 kg
    findings = fidelity_findings(world, stated, plan, {"constraints": {"payload_kg": 0.0}})
    assert _types(findings) == ["payload_understated", "payload_over_capacity"]
    assert findings[0].allowed == [4.0]
    assert findings[1].allowed == ["uav_09"]  # idle and lifts 5 kg (uav_05 lifts 5 kg but is busy)
    faithful = {**plan, "uav_id": "uav_09"}
    assert fidelity_findings(world, stated, faithful, {"constraints": {"payload_kg": 4.0}}) == []
    assert stated_constraints("送一箱零件(4公斤)", world).payload_kg == 4.0


def test_a_round_trip_flown_after_a_positioning_leg_ends_where_the_task_began(world):
    stated = stated_constraints("Fly the AED from hospital_A to accident_site_3 and back.", world)
    via_pickup = _route(world, "uav_03", "hospital_A", "accident_site_3", "hospital_A")  # uav_03 is not at hospital_A
    assert fidelity_findings(world, stated, {"uav_id": "uav_03", "waypoints": via_pickup}) == []
    stays = _route(world, "uav_03", "hospital_A", "accident_site_3")
    assert _types(fidelity_findings(world, stated, {"uav_id": "uav_03", "waypoints": stays})) == ["return_leg_dropped"]


def test_stops_are_passed_in_the_order_named(world):
    stated = stated_constraints(
        "Inspect metro_station_4 and then hospital_B, taking off from hospital_A and finishing at depot_1.", world
    )
    in_order = {
        "uav_id": "uav_03",
        "waypoints": _route(world, "hospital_A", "metro_station_4", "hospital_B", "depot_1"),
    }
    assert fidelity_findings(world, stated, in_order) == []
    swapped = {"uav_id": "uav_03", "waypoints": _route(world, "hospital_A", "hospital_B", "metro_station_4", "depot_1")}
    findings = fidelity_findings(world, stated, swapped)
    assert _types(findings) == ["stops_out_of_order"]
    assert findings[0].allowed == ["metro_station_4", "hospital_B"]


def test_a_replaced_pinned_uav_is_named(world):
    stated = StatedConstraints(uavs=["uav_07"])
    findings = fidelity_findings(world, stated, {"uav_id": "uav_03", "waypoints": _route(world, "hospital_A")})
    assert _types(findings) == ["pinned_uav_replaced"]
    assert findings[0].allowed == ["uav_07"] and "uav_07" in findings[0].message


def test_a_route_to_another_place_is_a_wrong_destination(world):
    stated = StatedConstraints(places=["hospital_A", "accident_site_3"])
    plan = {"uav_id": "uav_03", "waypoints": _route(world, "hospital_A", "metro_station_4")}
    findings = fidelity_findings(world, stated, plan)
    assert _types(findings) == ["wrong_destination"]
    assert findings[0].allowed == ["hospital_A", "accident_site_3"] and "metro_station_4" in findings[0].message


def test_a_route_from_another_place_misses_the_origin(world):
    stated = StatedConstraints(places=["hospital_A", "accident_site_3"])
    plan = {"uav_id": "uav_03", "waypoints": _route(world, "depot_1", "accident_site_3")}
    findings = fidelity_findings(world, stated, plan)
    assert _types(findings) == ["place_not_visited"] and "never reaches hospital_A" in findings[0].message


def test_a_patrol_that_ends_at_a_named_place_but_skips_another_is_caught(world):
    stated = StatedConstraints(places=["depot_1", "police_2", "metro_station_4", "fire_station_1"])
    skipped = {"uav_id": "uav_03", "waypoints": _route(world, "depot_1", "police_2", "fire_station_1")}
    findings = fidelity_findings(world, stated, skipped)
    assert _types(findings) == ["place_not_visited"] and "metro_station_4" in findings[0].message
    full = {"uav_id": "uav_03", "waypoints": _route(world, "depot_1", "police_2", "metro_station_4", "fire_station_1")}
    assert fidelity_findings(world, stated, full) == []


def test_a_pickup_leg_that_passes_the_origin_is_faithful(world):
    stated = StatedConstraints(places=["hospital_A", "accident_site_3"])
    plan = {"uav_id": "uav_09", "waypoints": _route(world, "uav_09", "hospital_A", "accident_site_3")}
    assert fidelity_findings(world, stated, plan) == []


def test_a_declared_hand_off_of_a_named_destination_is_faithful_where_the_request_allows_one(world):
    stated = StatedConstraints(places=["hospital_A", "accident_site_3"], handoff=True)
    plan = {"uav_id": "uav_03", "waypoints": _route(world, "hospital_A", "metro_station_4")}
    ir = {"entities": {"destination": "accident_site_3", "handoff_points": ["metro_station_4"]}}
    assert fidelity_findings(world, stated, plan, ir) == []
    elsewhere = {"entities": {"destination": "police_2", "handoff_points": ["metro_station_4"]}}
    assert _types(fidelity_findings(world, stated, plan, elsewhere)) == ["wrong_destination"]
    # the model declared a hand-off the operator never allowed: the cargo would be left where nobody asked
    not_allowed = stated.model_copy(update={"handoff": False})
    assert _types(fidelity_findings(world, not_allowed, plan, ir)) == ["wrong_destination"]


def test_a_stated_hand_off_lets_the_route_end_at_the_named_hub(world):
    text = "Fly the kit from hospital_A to accident_site_3; fly to metro_station_4 and hand over to a ground courier."
    stated = stated_constraints(text, world)
    assert stated.handoff and stated.places == ["hospital_A", "accident_site_3", "metro_station_4"]
    # "fly to metro_station_4 and hand over": the hub is where the cargo changes hands, not where it goes
    assert stated.destinations == ["accident_site_3"] and stated.handoff_points == ["metro_station_4"]
    to_the_hub = {"uav_id": "uav_03", "waypoints": _route(world, "hospital_A", "metro_station_4")}
    assert fidelity_findings(world, stated, to_the_hub) == []  # the IR wrote the hub as its destination
    no_handoff = stated.model_copy(update={"handoff": False})
    assert _types(fidelity_findings(world, no_handoff, to_the_hub)) == ["wrong_destination"]


def test_a_one_way_flight_drops_a_stated_return_leg(world):
    stated = StatedConstraints(places=["hospital_A", "accident_site_3"], return_leg=True)
    one_way = {"uav_id": "uav_03", "waypoints": _route(world, "hospital_A", "accident_site_3")}
    assert _types(fidelity_findings(world, stated, one_way)) == ["return_leg_dropped"]
    round_trip = {"uav_id": "uav_03", "waypoints": _route(world, "hospital_A", "accident_site_3", "hospital_A")}
    assert fidelity_findings(world, stated, round_trip) == []


def test_a_relaxed_deadline_or_altitude_is_caught(world):
    plan = {"uav_id": "uav_03", "waypoints": _route(world, "hospital_A", "accident_site_3", altitude=100.0)}
    arrival = plan["waypoints"][-1][3]
    stated = StatedConstraints(deadline_sec=arrival - 1.0, altitude_max_m=90.0, altitude_min_m=30.0)
    assert _types(fidelity_findings(world, stated, plan)) == ["altitude_above_stated", "deadline_relaxed"]
    low = StatedConstraints(altitude_min_m=110.0)
    assert _types(fidelity_findings(world, low, plan)) == ["altitude_below_stated"]


def test_stated_heights_bind_en_route_not_on_the_take_off_and_landing(world):
    """A route runs ground to ground: the climb from 0 m and the descent to 0 m pass under any stated floor or
    cruise height, which bind between the two (as the verifier's R3 floor and the judge's stated band do)."""
    cruise = np.asarray(_route(world, "hospital_A", "accident_site_3", altitude=60.0))
    flown = ground_to_ground(cruise, depart_time_sec=0.0)
    assert flown[0, 2] == flown[-1, 2] == 0.0
    plan = {"uav_id": "uav_03", "waypoints": flown.tolist()}
    assert fidelity_findings(world, StatedConstraints(altitude_min_m=50.0, cruise_altitude_m=60.0), plan) == []
    assert _types(fidelity_findings(world, StatedConstraints(altitude_min_m=70.0), plan)) == ["altitude_below_stated"]
    assert _types(fidelity_findings(world, StatedConstraints(altitude_max_m=50.0), plan)) == ["altitude_above_stated"]


def test_a_corridor_only_request_holds_the_route_to_the_corridors(world):
    stated = stated_constraints("Fly from hospital_A to accident_site_3; fly only inside the drone corridors.", world)
    assert stated.corridors_only
    corridor = world.corridors[0]
    (x0, y0), (x1, y1) = corridor.polyline[0], corridor.polyline[-1]
    altitude = max(corridor.alt_min_m, 30.0)
    along = {"uav_id": "uav_03", "waypoints": [[x0, y0, altitude, 0.0], [x1, y1, altitude, 60.0]]}
    assert fidelity_findings(world, StatedConstraints(corridors_only=True), along) == []
    across = {"uav_id": "uav_03", "waypoints": _route(world, "hospital_A", "accident_site_3")}
    assert _types(fidelity_findings(world, StatedConstraints(corridors_only=True), across)) == ["corridor_left"]


def test_a_route_flown_backwards_ends_at_the_origin_and_is_caught(world):
    stated = stated_constraints("Take the kit from hospital_A to accident_site_3.", world)
    assert stated.origins == ["hospital_A"] and stated.destinations == ["accident_site_3"]
    backwards = {"uav_id": "uav_03", "waypoints": _route(world, "accident_site_3", "hospital_A")}
    findings = fidelity_findings(world, stated, backwards)
    assert _types(findings) == ["wrong_destination"] and findings[0].allowed == ["accident_site_3"]


def test_ids_beside_chinese_characters_ground_and_pin(world):
    stated = stated_constraints("用uav_09从hospital_A送除颤仪到accident_site_3,10分钟内", world)
    assert stated.places == ["hospital_A", "accident_site_3"] and stated.uavs == ["uav_09"]
    assert stated.origins == ["hospital_A"] and stated.deadline_sec == 600.0


# --- a team: which UAV serves which site (review of issue 42) ----------------------------------------------------
def _member(subtask_id: str, uav: str, goal: str) -> dict:
    origin = "hospital_1"
    return {"subtask_id": subtask_id, "uav_id": uav, "role": "deliver", "share_kg": 0.0, "origin": origin,
            "goal": goal, "stops": [origin, goal], "waypoints": []}  # fmt: skip


@pytest.fixture(scope="module")
def city() -> World:
    return load_world(EXAMPLES / "fleet_city.json")


def test_a_team_that_swaps_the_uavs_the_request_names_for_its_sites_is_a_finding(city):
    text = (
        "Two drones: uav_05 takes an AED from City General Hospital to West Gate metro station and uav_06 takes one "
        "to the crash on the eastern ring road, within 2 minutes."
    )
    stated = read_request(text, city)
    assert stated.uav_sites == {"uav_05": "metro_station_1", "uav_06": "accident_site_1"}
    swapped = [_member("t1", "uav_06", "metro_station_1"), _member("t2", "uav_05", "accident_site_1")]
    findings = [f for f in team_fidelity_findings(city, stated, swapped) if f.error_type == "pinned_uav_swapped"]
    assert [(f.field, f.value, f.allowed) for f in findings] == [
        ("team.subtasks", "uav_05", ["metro_station_1"]),
        ("team.subtasks", "uav_06", ["accident_site_1"]),
    ]
    assert "uav_05 for metro_station_1; uav_05 flies to accident_site_1" in findings[0].message
    as_named = [_member("t1", "uav_05", "metro_station_1"), _member("t2", "uav_06", "accident_site_1")]
    assert "pinned_uav_swapped" not in _types(team_fidelity_findings(city, stated, as_named))
    assert "uav_sites" not in read_request("Fly uav_05 from City General Hospital to the crash.", city).model_dump()


def test_a_team_member_without_the_sensor_the_words_ask_for_is_a_finding(city):
    """The review's case: a thermal camera asked for, the filming member flown on a camera-only UAV."""
    text = (
        "Film the construction site with a thermal camera while another drone brings 3 kg of tools there from the "
        "tool depot."
    )
    stated = read_request(text, city)
    assert stated.team_needs and stated.observing_sensors == ["thermal", "camera"] and not stated.cargo_sensors
    film = {**_member("film", "uav_08", "construction_site_1"), "role": "film"}  # camera only
    tools = _member("tools", "uav_03", "construction_site_1")
    [finding] = [f for f in team_fidelity_findings(city, stated, [film, tools]) if f.error_type == "sensor_not_carried"]
    assert (finding.value, finding.allowed) == (
        "uav_08",
        ["camera", "thermal"],
    ) and "without thermal" in finding.message
    thermal = {**film, "uav_id": "uav_07"}  # camera and thermal
    assert "sensor_not_carried" not in _types(team_fidelity_findings(city, stated, [thermal, tools]))
    # an AED to each site: every delivering member carries a defibrillator bay
    aeds = read_request(
        "Two drones: one AED from City General Hospital to West Gate metro station and one to the crash on the "
        "eastern ring road, within 2 minutes.",
        city,
    )
    assert aeds.cargo_sensors == ["defibrillator_bay"]
    members = [_member("t1", "uav_05", "metro_station_1"), _member("t2", "uav_08", "accident_site_1")]
    [finding] = [f for f in team_fidelity_findings(city, aeds, members) if f.error_type == "sensor_not_carried"]
    assert finding.value == "uav_08" and "carries the cargo without defibrillator_bay" in finding.message
    assert "observing_sensors" not in read_request("Fly from City General Hospital to the crash.", city).model_dump()
    # the sensors are the team sketch's, not every sensor word: no film or inspect share, no observing sensor
    split = read_request("8 kg of sandbags, no camera needed, from the sandbag depot to the flood site.", city)
    assert split.team_min_uavs == 2 and not split.observing_sensors and not split.cargo_sensors


def test_a_member_carrying_part_of_an_item_is_unfaithful(world):
    """'four bags of 3 kg': a 5 kg share is a bag and two thirds, which nobody can load."""
    stated = stated_constraints("Take four bags of 3 kg each from hospital_A to police_2.", world)
    assert stated.payload_kg == 12.0 and stated.payload_item_kg == 3.0
    members = [
        {"uav_id": "uav_01", "role": "deliver", "share_kg": 5.0},
        {"uav_id": "uav_02", "role": "deliver", "share_kg": 3.0},
        {"uav_id": "uav_03", "role": "deliver", "share_kg": 4.0},
    ]
    found = team_fidelity_findings(world, stated, members)
    assert [f.error_type for f in found].count("payload_items_split") == 2
    whole = [{**m, "share_kg": 3.0} for m in members] + [{"uav_id": "uav_04", "role": "deliver", "share_kg": 3.0}]
    assert "payload_items_split" not in _types(team_fidelity_findings(world, stated, whole))


def test_a_uav_given_its_own_share_carries_that_share(world):
    """'uav_09 carries 2 kg and uav_03 1 kg' (written by hand 2026-11-28; asked about before: the second mass was
    read as no demand)."""
    stated = stated_constraints("uav_09 carries 2 kg and uav_03 carries 1 kg from hospital_A to police_2.", world)
    assert stated.payload_kg == 3.0 and stated.uav_shares_kg == {"uav_09": 2.0, "uav_03": 1.0}
    assert not stated.unaccounted and set(stated.uavs) == {"uav_03", "uav_09"}
    swapped = [
        {"uav_id": "uav_09", "role": "deliver", "share_kg": 1.0},
        {"uav_id": "uav_03", "role": "deliver", "share_kg": 2.0},
    ]
    found = [f for f in team_fidelity_findings(world, stated, swapped) if f.error_type == "share_not_as_stated"]
    assert [f.value for f in found] == ["uav_09", "uav_03"] and found[0].allowed == [2.0]
    as_said = [{**swapped[0], "share_kg": 2.0}, {**swapped[1], "share_kg": 1.0}]
    assert "share_not_as_stated" not in _types(team_fidelity_findings(world, stated, as_said))


def test_a_plan_flies_one_of_the_uavs_offered(world):
    stated = stated_constraints("Take 1 kg from hospital_A to police_2 with uav_03 or uav_09.", world)
    assert stated.offered_uavs == ["uav_03", "uav_09"] and not stated.uavs
    assert "offered_uav_not_flown" in _types(fidelity_findings(world, stated, {"uav_id": "uav_07"}))
    assert "offered_uav_not_flown" not in _types(fidelity_findings(world, stated, {"uav_id": "uav_09"}))
