"""Repair candidates (ir/repairs.py) and the grounded choice among them (models/repair_choice.py): what each failure
offers, what is never offered (a relaxation of what the request states, a repair an earlier round already made), and
that a chosen candidate lands in the IR and in the tool steps that would otherwise override it."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from ir.failure import failure_record
from ir.fidelity import StatedConstraints
from ir.model import LowAltitudeIR
from ir.repairs import RepairCandidate, addressable, apply_candidate, carried_by, derive_candidates, tried_repairs
from language.defaults import handoff_hub
from models.base import GenerationRequest, RepairFeedback
from models.repair_choice import choice_schema, read_choice, repaired_answer
from models.rules_parser import RuleBasedGenerator
from tests.support.ir_fixtures import GOOD_IR, NFZ_FORGOTTEN_IR

NOTHING_STATED = StatedConstraints()


def _failure(error_type: str, **counterexample: Any) -> dict[str, Any]:
    return failure_record("verify", error_type, recoverable=True, **counterexample)


def _derive(world, ir, failure, *, risk=(), stated=NOTHING_STATED, tried=(), route=None, flying="uav_03", hub=None):
    return derive_candidates(
        world,
        LowAltitudeIR.model_validate(ir),
        failure,
        route=route,
        flying_uav=flying,
        risk_factors=list(risk),
        stated=stated,
        tried=set(tried),
        handoff_hub=hub,
    )


def test_a_zone_the_route_broke_is_offered_as_a_zone_to_avoid_once(downtown):
    failure = _failure("spec_violation", violated_rule="R1", offending_entity="nfz_temp_1", time_sec=26.4)
    [candidate] = _derive(downtown, NFZ_FORGOTTEN_IR, failure)
    assert candidate.id == "avoid:nfz_temp_1" and candidate.kind == "avoid_zone"
    repaired = apply_candidate(NFZ_FORGOTTEN_IR, candidate)
    assert "nfz_temp_1" in repaired["entities"]["avoid_zones"]
    assert "G !in_nfz_temp_1" in repaired["verification_specs"]["ltl"]
    assert carried_by(repaired, candidate) and not carried_by(NFZ_FORGOTTEN_IR, candidate)
    assert _derive(downtown, repaired, failure) == []  # the repaired IR carries it: nothing left to offer
    # offered in round 0 and carried by round 1's IR, which the model then undid: tried, not offered again
    offered = failure_record("verify", "spec_violation", recoverable=True, repairs=[candidate.model_dump()])
    attempts = [{"ir": NFZ_FORGOTTEN_IR, "failure": offered}, {"ir": repaired, "failure": failure}]
    assert tried_repairs(attempts, NFZ_FORGOTTEN_IR) == {"avoid:nfz_temp_1"}
    assert _derive(downtown, NFZ_FORGOTTEN_IR, failure, tried={"avoid:nfz_temp_1"}) == []
    # carried by an IR that failed for another reason before anyone offered it: never tried
    assert tried_repairs([{"ir": GOOD_IR, "failure": _failure("unknown_entity")}], NFZ_FORGOTTEN_IR) == set()


def test_every_zone_the_route_broke_is_one_candidate_not_one_round_each(downtown):
    failure = _failure("spec_violation", violated_rule="R1", offending_entity="nfz_temp_1", time_sec=26.4)
    violated = [
        {"rule": "R1", "entity": "nfz_temp_1"},
        {"rule": "R2", "entity": "school_zone_2"},
        {"rule": "R2", "entity": "bldg_tower_1"},
    ]
    ir = copy.deepcopy(NFZ_FORGOTTEN_IR)
    ir["entities"]["avoid_zones"] = []
    [candidate] = derive_candidates(
        downtown, LowAltitudeIR.model_validate(ir), failure, route=None, flying_uav="uav_03", risk_factors=[],
        stated=NOTHING_STATED, tried=set(), violated=violated,
    )  # fmt: skip
    assert candidate.id == "avoid:nfz_temp_1,school_zone_2"
    assert candidate.changes["entities.avoid_zones"] == ["nfz_temp_1", "school_zone_2"]
    assert candidate.changes["entities.sensitive_zones"] == ["school_zone_2"]


def test_a_uavs_wind_limit_offers_the_idle_uavs_that_cover_the_route_unless_one_is_pinned(downtown):
    ir = copy.deepcopy(GOOD_IR)
    ir["entities"]["candidate_uavs"] = ["uav_07"]
    risk = [
        {
            "factor": "wind_limit",
            "contribution": 0.8,
            "detail": "wind + gusts 7 m/s vs uav_07's limit",
            "entity": "uav_07",
        }
    ]
    failure = _failure("high_risk_no_override", failure_stage="simulate.risk_assess", offending_entity="uav_07")
    offered = _derive(downtown, ir, failure, risk=risk, flying="uav_07")
    assert [c.id for c in offered] == ["uav:uav_03"]  # uav_09 waits in the gusty north; the rest are not idle
    assert offered[0].changes == {"entities.candidate_uavs": ["uav_03"]}
    assert "within its 12 m/s limit" in offered[0].summary
    pinned = StatedConstraints(uavs=["uav_07"])
    assert _derive(downtown, ir, failure, risk=risk, flying="uav_07", stated=pinned) == []


def test_traffic_too_close_offers_the_first_layer_above_it_within_the_band(downtown):
    # track_t2 flies at 80 m: min separation 10 m over it is 90 m, the first flight layer at or above is 100 m
    failure = _failure("near_miss", violated_rule="R2", offending_entity="track_t2", time_sec=35.0)
    [candidate] = _derive(downtown, GOOD_IR, failure)
    assert candidate.id == "floor:100" and candidate.changes == {"constraints.altitude_min_m": 100.0}
    stated_low = StatedConstraints(altitude_max_m=90.0)  # "fly below 90 m": going over the traffic would relax it
    assert _derive(downtown, GOOD_IR, failure, stated=stated_low) == []


def test_the_ir_at_odds_with_itself_stays_the_models_to_repair():
    assert addressable(_failure("near_miss", violated_rule="R2"))
    assert addressable(_failure("spec_violation", violated_rule="R1"))
    assert not addressable(_failure("spec_violation", violated_rule="R3"))  # the route left the IR's own band
    assert not addressable(_failure("unknown_entity", field="entities.destination"))
    assert not addressable(_failure("no_path"))


def test_a_chosen_candidate_reaches_the_tool_steps_that_give_its_arguments(downtown):
    ir = copy.deepcopy(GOOD_IR)
    ir["tool_plan"][2]["args"] = {"altitude_min_m": 30, "avoid_zones": ["school_zone_2"]}  # plan_route's own args
    candidate = RepairCandidate(
        id="floor:100", kind="raise_floor", summary="over track_t2", changes={"constraints.altitude_min_m": 100.0}
    )
    repaired = apply_candidate(ir, candidate)
    assert repaired["constraints"]["altitude_min_m"] == 100.0
    assert repaired["tool_plan"][2]["args"] == {"altitude_min_m": 100.0, "avoid_zones": ["school_zone_2"]}
    assert ir["tool_plan"][2]["args"]["altitude_min_m"] == 30  # the failed round's IR is left as it was


CANDIDATES = [
    RepairCandidate(
        id="uav:uav_03", kind="other_uav", summary="fly uav_03", changes={"entities.candidate_uavs": ["uav_03"]}
    ),
    RepairCandidate(
        id="floor:100", kind="raise_floor", summary="over it", changes={"constraints.altitude_min_m": 100.0}
    ),
]


@pytest.mark.parametrize(
    ("reply", "chosen", "named"),
    [
        ('{"repair": "floor:100"}', "floor:100", True),
        ("I would go with floor:100, since the traffic is low.", "floor:100", True),
        ("no idea", "uav:uav_03", False),  # the repair node's first, said so in the rationale
    ],
)
def test_a_reply_is_read_as_one_of_the_offered_ids(reply, chosen, named):
    assert choice_schema(CANDIDATES)["properties"]["repair"]["enum"] == ["uav:uav_03", "floor:100"]
    candidate, was_named = read_choice(reply, CANDIDATES)
    assert candidate.id == chosen and was_named is named


def _repair_request(world, candidates: list[RepairCandidate]) -> GenerationRequest:
    counterexample = {
        "failure_stage": "simulate",
        "failure_type": "near_miss",
        "repairs": [c.model_dump() for c in candidates],
    }
    return GenerationRequest(
        instruction="Send a drone from hospital_A to accident_site_3.",
        world=world,
        task_id="t",
        round=1,
        feedback=RepairFeedback(counterexample=counterexample, previous_ir=GOOD_IR),
    )


def test_the_rules_model_takes_the_first_offered_candidate(downtown):
    result = RuleBasedGenerator().generate(_repair_request(downtown, CANDIDATES))
    ir = result.answer["low_altitude_ir"]
    assert ir["entities"]["candidate_uavs"] == ["uav_03"] and ir["constraints"] == GOOD_IR["constraints"]
    assert result.answer["rationale_summary"].startswith("repair uav:uav_03 chosen")


def test_the_answer_is_the_failed_rounds_ir_with_the_choice_applied(downtown):
    answer = repaired_answer(_repair_request(downtown, CANDIDATES), CANDIDATES[1], named=False)
    assert answer["low_altitude_ir"]["constraints"]["altitude_min_m"] == 100.0
    assert "reply named no candidate" in answer["rationale_summary"]
    assert json.loads(json.dumps(answer)) == answer  # plain JSON for the checkpoint


def _site_closed(downtown):
    """Downtown with a permanent no-fly zone over accident_site_3: the flight cannot end there."""
    from tools.world import World

    data = downtown.model_dump(mode="json")
    square = [[630, 400], [670, 400], [670, 440], [630, 440]]
    data["no_fly_zones"].append({"id": "nfz_site", "polygon": square, "alt_min_m": 0, "alt_max_m": 500})
    return World.model_validate(data)


def test_the_nearest_hub_is_one_outside_every_zone_though_it_may_lie_near_another(downtown):
    """Clear of the zone over the destination; near another zone is fine (the planner keeps out of it), inside not."""
    world = _site_closed(downtown)
    ir = LowAltitudeIR.model_validate(GOOD_IR)
    text = "send the kit to accident_site_3; if the drone cannot get in, hand the parcel to a ground courier."
    nearest = handoff_hub(world, "accident_site_3", ir.constraints, text)
    x, y = world.position_of(nearest)

    def with_zone(polygon: list[list[float]]):
        data = world.model_dump(mode="json")
        data["no_fly_zones"].append({"id": "nfz_near_hub", "polygon": polygon, "alt_min_m": 0, "alt_max_m": 500})
        return type(world).model_validate(data)

    beside = [[x + 15, y - 10], [x + 55, y - 10], [x + 55, y + 10], [x + 15, y + 10]]  # 15 m off the hub
    assert handoff_hub(with_zone(beside), "accident_site_3", ir.constraints, text) == nearest
    over = [[x - 10, y - 10], [x + 10, y - 10], [x + 10, y + 10], [x - 10, y + 10]]
    assert handoff_hub(with_zone(over), "accident_site_3", ir.constraints, text) not in (nearest, None)


def test_a_zone_over_the_destination_is_kept_clear_of_only_with_the_hand_off_the_request_allows(downtown):
    world = _site_closed(downtown)
    failure = _failure("spec_violation", violated_rule="R1", offending_entity="nfz_site", time_sec=50.0)
    ir = LowAltitudeIR.model_validate(GOOD_IR)
    allowed = "Send the kit from hospital_A to accident_site_3; a ground courier takes it the last stretch."
    hub = handoff_hub(world, "accident_site_3", ir.constraints, allowed.lower())
    assert hub in world.entity_index and world.entity_index[hub].kind.value in (
        "metro_station",
        "police",
        "fire_station",
        "park",
    )
    [candidate] = _derive(world, GOOD_IR, failure, hub=hub)
    assert candidate.id == f"avoid:nfz_site+handoff:{hub}"
    repaired = apply_candidate(GOOD_IR, candidate)
    assert repaired["entities"]["handoff_points"] == [hub] and repaired["entities"]["destination"] == "accident_site_3"
    # without the hand-off the zone cannot be kept clear of: no candidate, the run asks the operator at once
    assert handoff_hub(world, "accident_site_3", ir.constraints, "send the kit to accident_site_3.") is None
    assert _derive(world, GOOD_IR, failure) == []
