"""R8 before any tool: what a request leaves out that no plan can do without is asked for, not guessed; and the
converse accounting of the fidelity gate (ir/provenance.py): what the IR asserts about the request came from it."""

from __future__ import annotations

import pytest

from ir.fidelity import MISSING, StatedConstraints
from ir.model import Intent
from ir.provenance import unsourced_findings
from language.defaults import documented_defaults
from language.stated import stated_constraints
from tests.support.underspecified import underspecified_requests
from tools.world import World

REQUESTS = underspecified_requests()


def test_the_hand_written_set_covers_every_kind_in_both_languages():
    kinds = {kind for kind, _ in REQUESTS}
    assert len(REQUESTS) == 100 and kinds == {"no_place", "one_place", "pronoun", "time"}
    assert any("\u4e00" <= ch <= "\u9fff" for _, text in REQUESTS for ch in text)


@pytest.mark.parametrize(("kind", "text"), REQUESTS)
def test_every_under_specified_request_is_blocked_before_any_tool(world, kind, text):
    stated = stated_constraints(text, world)
    blockers = stated.blockers(world.grid.ceiling_m)
    assert blockers, (kind, text, stated.referenced)
    # each question names the fact it asks for
    for error_type, message in blockers:
        if error_type == MISSING:
            assert message.split(":")[0] in {
                "destination",
                "origin",
                "origin and destination",
                "uav",
                "deadline",
                "place",
            }
    if kind == "time":
        assert any(m.startswith("deadline:") for m in stated.missing), text


@pytest.mark.parametrize(
    "text",
    [
        "Deliver a toxicology report from hospital_A to police_2.",
        "Fly the blood bag from Central Hospital, south-west to the traffic accident on the east ring road within 10 minutes.",
        "uav_03, return to base.",
        "Inspect police_2.",
        "Send uav_07 to charge.",
        "把血样从hospital_A送到police_2,十分钟内送到。",
        "Get 1.2 kg of reagents over to fire_station_1 from metro_station_4 by 600 s, keeping 30% battery.",
    ],
)
def test_a_request_that_says_what_it_needs_is_not_asked_about(world, text):
    assert stated_constraints(text, world).missing == []


def test_a_delivery_that_names_one_end_asks_for_the_other_end(world):
    assert stated_constraints("Bring the kit to police_2.", world).missing == [
        "origin: the request names police_2 to take the cargo to, and no place to pick it up at"
    ]
    assert stated_constraints("Take the kit from police_2.", world).missing[0].startswith("destination:")


def test_a_return_needs_its_uav_not_a_place(world):
    assert stated_constraints("Return to base.", world).missing == ["uav: the request names no UAV to bring in"]
    assert stated_constraints("uav_05 return to base.", world).missing == []


# --- converse accounting -----------------------------------------------------------------------------------------
def _ir(**entities: object) -> dict:
    constraints = entities.pop("constraints", {})
    return {"entities": {"origin": None, "destination": None, "waypoints": [], **entities}, "constraints": constraints}


def _found(world: World, text: str, ir: dict, uav: str | None = None) -> list[tuple[str, object]]:
    stated = stated_constraints(text, world)
    defaults = documented_defaults(world, stated, ir, uav, text)
    return [(f.error_type, f.value) for f in unsourced_findings(stated, ir, defaults)]


def test_places_the_request_names_are_sourced_and_an_invented_one_is_named(world):
    text = "Deliver a toxicology report from hospital_A to police_2."
    assert _found(world, text, _ir(origin="hospital_A", destination="police_2")) == []
    invented = _ir(origin="hospital_A", destination="accident_site_3", waypoints=["metro_station_4"])
    assert _found(world, text, invented) == [
        ("unsourced_destination", "accident_site_3"),
        ("unsourced_waypoints", "metro_station_4"),
    ]


def test_the_message_names_the_field_and_the_place(world):
    stated = stated_constraints("Deliver from hospital_A to police_2.", world)
    (finding,) = unsourced_findings(stated, _ir(origin="depot_1", destination="police_2"), {})
    assert finding.message == "origin depot_1 is not in the request" and "hospital_A" in finding.allowed


def test_documented_defaults_source_a_return_base_and_a_site_visits_depot(world):
    text = "uav_03, return to base."
    stated = stated_constraints(text, world)
    assert stated.intent is Intent.return_
    defaults = documented_defaults(world, stated, _ir(candidate_uavs=["uav_03"]), "uav_03", text)
    ir = _ir(origin=next(iter(defaults["origin"])), destination=next(iter(defaults["destination"])))
    assert _found(world, text, ir, "uav_03") == []
    elsewhere = next(e.id for e in world.entities if e.id not in defaults["origin"])
    assert _found(world, text, _ir(origin=elsewhere, destination="police_2"), "uav_03") == [
        ("unsourced_origin", elsewhere),
        ("unsourced_destination", "police_2"),
    ]
    inspect = "Inspect police_2."
    depot = documented_defaults(world, stated_constraints(inspect, world), _ir(destination="police_2"), None, inspect)
    assert _found(world, inspect, _ir(origin=next(iter(depot["origin"])), destination="police_2")) == []


def test_a_round_trip_ends_where_it_began(world):
    text = "Carry the kit from hospital_A to police_2 and back."
    ir = _ir(origin="hospital_A", destination="hospital_A", waypoints=["police_2"])
    assert _found(world, text, ir) == []


def test_a_deadline_or_cargo_mass_the_request_does_not_state_is_not_the_plans_to_invent(world):
    text = "Deliver a toxicology report from hospital_A to police_2."
    ir = _ir(origin="hospital_A", destination="police_2", constraints={"deadline_sec": 300, "payload_kg": 2.0})
    assert _found(world, text, ir) == [("unsourced_deadline", 300), ("unsourced_payload", 2.0)]
    stated_text = "Deliver 2 kg from hospital_A to police_2 within 5 minutes."
    assert _found(world, stated_text, ir) == []


def test_nothing_to_account_for_without_an_ir():
    assert unsourced_findings(StatedConstraints(), None, {}) == []
