"""Polarity on the request's spans: what it excludes is left out, what it demands against a rule is refused with
the rule named, a permission is not a demand, an order cue fixes the last place, typos resolve only when unique.
Requests in a person's words on examples/downtown.json (in English and Chinese), none from the generator."""

from __future__ import annotations

import pytest

from ir.fidelity import AGAINST_RULE, fidelity_findings
from language.polarity import rule_demands
from language.stated import stated_constraints
from tools.world import World


@pytest.mark.parametrize(
    ("text", "excluded", "pinned"),
    [
        ("Cooler with 2 kg of plasma, hospital_A to metro_station_4. Anyone but uav_03.", ["uav_03"], []),
        ("Leave uav_09 out of it, fly the kit from depot_1 to police_2.", ["uav_09"], []),
        ("From hospital_A to police_2; uav_03 is off-limits today.", ["uav_03"], []),
        ("Keep uav_03 on the ground and send something else from hospital_A to police_2.", ["uav_03"], []),
        ("hospital_A to police_2, any drone except UAV 3.", ["uav_03"], []),
        ("从hospital_A送到police_2,除了uav_03都行。", ["uav_03"], []),
        ("从hospital_A送到police_2,uav_03不要用。", ["uav_03"], []),
        ("Move uav_07 over to charging_pad_1.", [], ["uav_07"]),
        ("Use uav_09 rather than uav_03 for hospital_A to police_2.", ["uav_03"], ["uav_09"]),
    ],
)
def test_a_uav_named_to_leave_it_out_is_excluded_never_pinned(downtown: World, text, excluded, pinned):
    stated = stated_constraints(text, downtown)
    assert stated.excluded_uavs == excluded
    assert stated.uavs == pinned
    assert not [b for b in stated.blockers(downtown.grid.ceiling_m) if "uav" in b[1]]


@pytest.mark.parametrize(
    ("text", "avoided", "visited"),
    [
        ("Take the kit from police_2 to accident_site_3 and don't route over school_2.", ["school_2"], ["police_2"]),
        ("Deliver from hospital_A to accident_site_3, keep off the metro station.", ["metro_station_4"], []),
        ("hospital_A to accident_site_3 but stay away from police_2 please", ["police_2"], []),
        ("从hospital_A送到accident_site_3,不要从police_2上空飞。", ["police_2"], []),
    ],
)
def test_a_place_named_to_keep_away_from_is_never_a_place_to_visit(downtown: World, text, avoided, visited):
    stated = stated_constraints(text, downtown)
    assert set(avoided) <= set(stated.avoided)
    assert not set(avoided) & set(stated.places + stated.referenced + stated.pointed)
    assert set(visited) <= set(stated.places)


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("Cut across the restricted area from hospital_A to accident_site_3, we're in a hurry.", "R1"),
        ("Fly straight through nfz_temp_1 from hospital_A to accident_site_3.", "R1"),
        ("Ignore the no-fly zones for this one and fly hospital_A to accident_site_3.", "R1"),
        ("hospital_A to police_2, ignore the buffer around the school.", "R2"),
        ("Don't bother keeping separation from buildings, just go hospital_A to police_2.", "R2"),
        (
            "Fly 1 kg from hospital_A to police_2 in under 210 s. Don't fly over nfz_temp_1. Don't bother keeping "
            "separation from buildings, just take the shortest line.",
            "R2",
        ),
        ("hospital_A to police_2 and skip the battery reserve.", "R5"),
        ("Fly hospital_A to police_2 and land with 5% battery.", "R5"),
        ("从hospital_A直接穿越禁飞区飞到accident_site_3。", "R1"),
        ("这次不用管禁飞区,从hospital_A飞到accident_site_3。", "R1"),
        ("从hospital_A到police_2,不用和建筑保持安全距离。", "R2"),
        ("hospital_A to police_2 with zero clearance from the towers, fastest line.", "R2"),
        ("Take 1 kg from hospital_A to police_2 flush against the buildings.", "R2"),
        (
            "hospital_A to police_2, and it's fine to come back with a dead battery... no, land with a flat battery.",
            "R5",
        ),
        ("从hospital_A到police_2,紧挨着楼飞。", "R2"),
        # full-width commas end clauses: the prohibition before one does not reach the demand after it
        ("从hospital_A飞到police_2\uff0c禁止进入nfz_temp_1\uff0c电量预留不用管。", "R5"),
        ("从hospital_A到police_2,飞到限高以上。", "R3"),
        ("从hospital_A到police_2,管制空域直接穿过去。", "R1"),
        # written by hand 2026-11-28: a word naming which zone, or "flying", hid the demand and a detour executed
        (
            "Fly uav_03 straight over the government no-fly zone to the east fire station with 1 kg of bandages from "
            "the Central Hospital - it's faster.",
            "R1",
        ),
        ("Cut across the government no-fly zone: 1 kg from hospital_A to fire_station_1.", "R1"),
        ("Take 1 kg from hospital_A to fire_station_1, flying through the government no-fly zone.", "R1"),
        ("Ignore that temporary no-fly zone and take 1 kg from hospital_A to fire_station_1.", "R1"),
        (
            "Fly 1 kg from hospital_A to accident_site_3 straight through the police operation zone, it's an emergency",
            "R1",
        ),
        ("AED hospital_A -> accident_site_3, ignore the temporary restriction", "R1"),
        ("1 kg from hospital_A to police_2 through the government district, we have a waiver.", "R1"),
    ],
)
def test_a_demand_against_a_rule_blocks_before_any_tool_with_the_span_and_the_rule(downtown: World, text, rule):
    stated = stated_constraints(text, downtown)
    blockers = [message for kind, message in stated.blockers(downtown.grid.ceiling_m) if kind == AGAINST_RULE]
    assert blockers, stated.rule_demands
    assert f"break {rule}" in blockers[0] and "'" in blockers[0]


@pytest.mark.parametrize(
    "text",
    [
        "Fly 1 kg from hospital_A to fire_station_1 over the edge of the no-fly zone's neighbour, the park.",
        "Take 1 kg from hospital_A to fire_station_1, flying past the no-fly zone.",
        "Fly over the hospital next to the no-fly zone with 1 kg from hospital_A to fire_station_1.",
    ],
)
def test_a_zone_named_beside_a_crossing_word_but_not_crossed_is_no_demand(downtown: World, text):
    assert not stated_constraints(text, downtown).rule_demands


def test_climbing_above_the_ceiling_is_quoted_with_the_rule(downtown: World):
    stated = stated_constraints("Climb to 300 m and fly hospital_A to police_2.", downtown)
    messages = [m for _, m in stated.blockers(downtown.grid.ceiling_m)]
    assert any("'300 m'" in m and "ceiling" in m for m in messages), messages


@pytest.mark.parametrize(
    "text",
    [
        "It's critical: cut through restricted airspace if that is faster. hospital_A to accident_site_3.",
        "You can skip the battery reserve this time, hospital_A to police_2.",
        "情况危急,如果更快可以直接穿越禁飞区。从hospital_A到accident_site_3。",
        "hospital_A to police_2, never cut through the no-fly zone.",
        "hospital_A to police_2, you can't skip the reserve.",
        "不要穿越禁飞区,从hospital_A到accident_site_3。",
        # a mark before a digit keeps the negation's clause whole
        "Never send it from hospital_A No.2 straight through the no-fly zone to accident_site_3.",
        "Don't carry .5 kg straight through the restricted airspace, hospital_A to accident_site_3.",
        "hospital_A to fire_station_1, never flying through the government no-fly zone.",
    ],
)
def test_a_permission_or_a_prohibition_is_no_demand(downtown: World, text):
    stated = stated_constraints(text, downtown)
    assert not stated.rule_demands
    assert all(d.permission for d in rule_demands(text.lower(), downtown))


@pytest.mark.parametrize(
    ("text", "final", "via"),
    [
        (
            "Fly the samples from hospital_A to police_2, and when that's done park it at depot_1.",
            "depot_1",
            "police_2",
        ),
        ("Take it from hospital_A to metro_station_4, then leave it at charging_pad_1.", "charging_pad_1", None),
        ("hospital_A to police_2, finish at fire_station_1.", "fire_station_1", "police_2"),
        ("先从hospital_A送到police_2,完事后停到depot_1。", "depot_1", "police_2"),
    ],
)
def test_an_ordered_ending_fixes_the_last_place(downtown: World, text, final, via):
    stated = stated_constraints(text, downtown)
    assert stated.final_place == final
    if via:
        assert via in stated.referenced
    ends_at_via = {"uav_id": "uav_03", "waypoints": [[100, 100, 40, 0], [250, 400, 40, 60]]}
    findings = fidelity_findings(downtown, stated, ends_at_via)
    assert any(f.error_type in ("wrong_destination", "place_not_visited") for f in findings)


@pytest.mark.parametrize(
    ("text", "assumed"),
    [
        ("Fly from hospitla_A to police_2.", "'hospitla_a' read as hospital_A"),
        ("Send uav_O7 from hospital_A to police_2.", "'uav_o7' read as uav_07"),
        ("Blood from hospital_A to acident_site_3 now.", "'acident_site_3' read as accident_site_3"),
    ],
)
def test_a_typo_resolves_to_the_one_id_within_the_bound_and_says_so(downtown: World, text, assumed):
    stated = stated_constraints(text, downtown)
    assert assumed in stated.assumed
    assert not stated.missing


def test_a_typo_two_ids_fit_is_asked_with_both(downtown: World):
    stated = stated_constraints("Send uav_04 from hospital_A to police_2.", downtown)
    assert any("uav_03" in m and "uav_05" in m for m in stated.missing), stated.missing


def test_the_pad_next_to_a_place_is_the_pad_and_the_place_only_a_landmark(downtown: World):
    stated = stated_constraints("Send uav_03 to recharge at the pad next to hospital_A.", downtown)
    assert stated.uavs == ["uav_03"]
    assert "charging_pad_1" in stated.referenced
    assert "hospital_A" not in stated.places + stated.destinations


def test_every_salient_span_carries_its_polarity(downtown: World):
    text = "Anyone but uav_03: hospital_A to accident_site_3, keep off police_2, cut across nfz_temp_1."
    spans = {(s.kind, s.text): s for s in stated_constraints(text, downtown).salient}
    assert spans[("uav", "uav_03")].polarity == "excluded"
    assert spans[("place", "police_2")].polarity == "excluded"
    assert spans[("place", "accident_site_3")].polarity == "wanted"
    assert any(s.polarity == "against_rule" and s.role == "R1" for s in spans.values())


def test_a_time_of_day_is_a_deadline_on_the_worlds_clock_or_a_question(downtown: World):
    from datetime import UTC, datetime

    clocked = downtown.model_copy(
        update={
            "geo_reference": downtown.geo_reference.model_copy(
                update={"clock_origin_utc": datetime(2026, 11, 27, 9, 0, tzinfo=UTC)}
            )
        }
    )
    text = "Fly 1 kg from hospital_A to police_2 by 09:20."
    stated = stated_constraints(text, clocked)
    assert stated.deadline_sec == 1200.0 and not stated.missing
    stricter = stated_constraints("Fly 1 kg from hospital_A to police_2 within 10 minutes, by 09:20.", clocked)
    assert stricter.deadline_sec == 600.0
    unplaced = stated_constraints(text, downtown)  # the example world states no clock origin
    assert unplaced.deadline_sec is None
    assert any("'" in m and "time of day" in m for m in unplaced.missing), unplaced.missing


@pytest.mark.parametrize(
    ("text", "assumed"),
    [
        ("hospital_A to the childrens hosptial, 1 kg.", "'childrens hosptial' read as hospital_B"),
        ("Blood from Centrl Hospital to police_2.", "'centrl hospital' read as hospital_A"),
    ],
)
def test_a_name_with_typing_errors_resolves_word_by_word_and_says_so(downtown: World, text, assumed):
    assert assumed in stated_constraints(text, downtown).assumed


def test_another_word_is_no_typo():
    from language.mentions import _word_typo

    assert _word_typo("hosptial", "hospital") and _word_typo("childrens", "children's")
    assert not _word_typo("west", "east") and not _word_typo("no. 3", "no. 2")


def test_a_battery_share_said_as_a_remark_is_no_demand_and_no_question(downtown: World):
    stated = stated_constraints("uav_07 is at 15% battery, send it to recharge at charging_pad_1.", downtown)
    assert not stated.unaccounted and stated.uavs == ["uav_07"]
    assert any(s.kind == "quantity" and s.role == "reported" for s in stated.salient)


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("No need to avoid the school this time, fly straight across it. 1 kg from police_2 to accident_site_3.", "R2"),
        ("police_2 to accident_site_3 with 1 kg, you don't have to go around the school.", "R2"),
        ("hospital_A to accident_site_3, no need to avoid nfz_temp_1.", "R1"),
        ("从hospital_A到accident_site_3,不用绕开禁飞区。", "R1"),
        ("电量预留不用管，从hospital_A飞到police_2，送一公斤。", "R5"),
    ],
)
def test_a_waived_keep_out_is_a_demand_and_the_place_is_not_kept_away_from(downtown: World, text, rule):
    stated = stated_constraints(text, downtown)
    assert any(f"break {rule}" in d for d in stated.rule_demands), stated.rule_demands
    assert "school_2" not in stated.avoided


def test_what_a_permission_would_cross_is_no_place_to_visit(downtown: World):
    stated = stated_constraints(
        "hospital_A to accident_site_3, 1 kg. If it's faster you may cut over the school.", downtown
    )
    assert stated.permissions_not_used and not stated.rule_demands
    assert "school_2" not in stated.places + stated.referenced + stated.pointed


def test_a_number_after_an_id_with_a_unit_is_a_quantity_not_the_id(downtown: World):
    stated = stated_constraints(
        "From hospital_A, swing past police_2 and finish at the east fire station - 1 kg.", downtown
    )
    assert stated.payload_kg == 1.0 and stated.final_place == "fire_station_1"


def test_a_zone_named_by_what_it_is_for_is_kept_out_of_and_its_timing_is_no_deadline(suburban: World):
    text = (
        "Drop 2 kg of radios at the suburban rail station from the west depot. Keep clear of the open-air event "
        "site even though it doesn't kick in for another ten minutes."
    )
    stated = stated_constraints(text, suburban)
    assert stated.avoided_zones == ["nfz_event_2"]
    assert stated.deadline_sec is None and not stated.unaccounted
    hover = stated_constraints("2 kg from the west depot to the suburban rail station, hover for 2 minutes.", suburban)
    assert hover.deadline_sec is None and any("'2 minutes'" in u for u in hover.unaccounted)


@pytest.mark.parametrize(
    "text",
    [
        "1 kg from depot_west to hospital_S, you needn't bother with the airfield.",
        "从depot_west到hospital_S送一公斤，机场那块不用绕。",
    ],
)
def test_a_zone_by_its_purpose_waived_is_a_demand_against_r1(suburban: World, text):
    assert any("break R1" in d for d in stated_constraints(text, suburban).rule_demands)


def test_a_chain_of_arrows_starts_at_its_first_place_and_ends_at_its_last(downtown: World):
    stated = stated_constraints("Patrol round depot_1 -> police_2 -> metro_station_4 -> fire_station_1.", downtown)
    assert stated.origins[:1] == ["depot_1"] and stated.final_place == "fire_station_1"


def test_form_fields_take_off_and_land_at(downtown: World):
    text = "take_off_at=depot_1; inspect_in_order=police_2, metro_station_4; land_at=fire_station_1."
    stated = stated_constraints(text, downtown)
    assert stated.origins == ["depot_1"] and stated.final_place == "fire_station_1"


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ("hospital_A to police_2, arrive with 25% batetry or more.", "battery_reserve_ratio", 0.25),
        ("hospital_A to police_2 within 15 minuets.", "deadline_sec", 900.0),
        ("hospital_A to police_2, 2 kilso of plasma.", "payload_kg", 2.0),
    ],
)
def test_a_unit_word_with_a_typing_error_is_read_as_the_word(downtown: World, text, field, value):
    assert getattr(stated_constraints(text, downtown), field) == pytest.approx(value)


def test_returning_to_a_place_named_before_is_a_return_leg(downtown: World):
    text = "I've got lab samples at the central police station that have to go to hospital_A, then return to the central police station."
    stated = stated_constraints(text, downtown)
    assert stated.return_leg and stated.final_place == "police_2"


@pytest.mark.parametrize(
    "text",
    [
        "Get 1 kg from hospital_A over to police_2, and after that end the flight at depot_1.",
        "Get 1 kg from hospital_A over to police_2; after that land it at depot_1.",
    ],
)
def test_more_ordered_endings(downtown: World, text):
    assert stated_constraints(text, downtown).final_place == "depot_1"


def test_do_not_use_excludes(downtown: World):
    assert stated_constraints("Fly 1 kg from hospital_A to police_2. Do not use uav_03.", downtown).excluded_uavs == [
        "uav_03"
    ]


# --- what a code review found (each a request that executed against its words, or asked where it was plain) ------
@pytest.mark.parametrize(
    ("text", "pinned", "excluded"),
    [
        ("Not uav_03 but uav_09 should carry the kit from hospital_A to police_2.", ["uav_09"], ["uav_03"]),
        ("从hospital_A送药到police_2,用uav_09,不用uav_03。", ["uav_09"], ["uav_03"]),
        ("nobody but uav_09 is free, kit from hospital_A to police_2", ["uav_09"], []),
    ],
)
def test_a_correction_or_a_contrast_keeps_each_uav_in_its_role(downtown: World, text, pinned, excluded):
    stated = stated_constraints(text, downtown)
    assert (stated.uavs, stated.excluded_uavs) == (pinned, excluded)


def test_a_uav_said_after_a_no_corrects_the_one_before(downtown: World):
    """Asked about before (2026-11-28: "with uav_03, no, uav_09" is a correction; the hunt found it flown as a split
    of both once a UAV between commas was read as pinned)."""
    stated = stated_constraints("Kit from hospital_A to police_2 with uav_03, no, uav_09.", downtown)
    assert (stated.uavs, stated.excluded_uavs, stated.unaccounted) == (["uav_09"], ["uav_03"], [])


@pytest.mark.parametrize(
    "text", ["Deliver the kit from hospital_A to accident_site_4.", "Kit from depot_2 to police_2."]
)
def test_another_number_is_another_place_asked_about_never_assumed(downtown: World, text):
    stated = stated_constraints(text, downtown)
    assert not stated.assumed and any("no id in this world" in m for m in stated.missing)


@pytest.mark.parametrize(
    "text",
    [
        "Send uav_09 over to police_2 with the kit from hospital_A.",
        "uav_03 is parked at hospital_A. Deliver the kit from hospital_A to police_2 using any free drone.",
        "uav_07 is low on battery; deliver the kit from hospital_A to police_2 and come back.",
    ],
)
def test_a_cargo_flight_is_no_positioning_flight_and_a_remark_pins_nothing(downtown: World, text):
    stated = stated_constraints(text, downtown)
    assert stated.intent.value == "delivery" and "hospital_A" in stated.origins + stated.places
    assert "uav_07" not in stated.uavs and "uav_03" not in stated.uavs


@pytest.mark.parametrize(
    "text",
    [
        "hospital_A to police_2 without any safety issues",
        "hospital_A to police_2 without the safety pouch",
        "don't worry about the rules on paperwork, hospital_A to police_2",
        "hospital_A to police_2, with no buffer stock left",
        "从hospital_A到police_2,电量不需要充满",
        "hospital_A to police_2, expect a 5% change in wind",
        "hospital_A to police_2 without any restrictions on timing",
        "do not under any circumstances fly through the no-fly zone, hospital_A to police_2",
        "it is forbidden to fly through the no-fly zone. hospital_A to police_2",
        "严禁穿越禁飞区,从hospital_A到police_2",
        "hospital_A to police_2, skip the queue, no need to rush, ignore my last message",
    ],
)
def test_ordinary_words_and_prohibitions_are_no_demands(downtown: World, text):
    stated = stated_constraints(text, downtown)
    assert not stated.rule_demands and stated.places == ["hospital_A", "police_2"]


@pytest.mark.parametrize(
    "text",
    [
        "fly straight through the no-fly zone so we can save time, hospital_A to police_2",
        "ignore the no-fly zones if you want to be on time, hospital_A to police_2",
    ],
)
def test_a_modal_of_something_else_keeps_a_demand_a_demand(downtown: World, text):
    assert stated_constraints(text, downtown).rule_demands


def test_a_permission_keeps_the_places_around_what_it_would_cross(downtown: World):
    stated = stated_constraints(
        "Fly the kit from hospital_A across the no-fly zone to police_2 if that is faster.", downtown
    )
    assert stated.permissions_not_used and stated.places == ["hospital_A", "police_2"] and not stated.missing


def test_a_conditional_alternative_is_no_ordered_ending_and_then_return_is_a_return(downtown: World):
    conditional = stated_constraints(
        "Deliver from hospital_A to police_2; if it is closed, then to fire_station_1.", downtown
    )
    assert conditional.final_place is None
    assert stated_constraints("uav_03: kit from hospital_A to police_2, then return.", downtown).return_leg


@pytest.mark.parametrize(
    ("text", "cruise"),
    [
        ("按一百五十米的高度飞，从hospital_A送1公斤到police_2。", 150.0),
        ("按60米的高度飞，从hospital_A送1公斤到police_2。", 60.0),
    ],
)
def test_a_chinese_altitude_before_its_noun_is_the_cruise_altitude(downtown: World, text, cruise):
    from models.rules_parser import parse_instruction

    assert stated_constraints(text, downtown).cruise_altitude_m == cruise
    parse_instruction(text, downtown)  # the rules model reads it too (it raised on the second alternative once)


def test_chinese_do_not_use_and_back_to_a_place_named_before(downtown: World):
    assert stated_constraints("从hospital_A送文件到police_2,1分钟内到达。不要使用uav_03。", downtown).excluded_uavs == [
        "uav_03"
    ]
    text = "请带着文件从西南的hospital_A飞到police_2,然后回到西南的hospital_A。"
    assert stated_constraints(text, downtown).return_leg
