"""The standard tool plan (ir/templates.py): its steps leave to the IR every argument the IR holds, so the plan
follows the IR wherever it lands the UAV, and says only what the IR cannot (the area, a UAV as start, corridors)."""

from __future__ import annotations

from ir.model import EntityRefs, LowAltitudeIR, VerificationSpecs
from ir.plan_execution import analyse_plan
from ir.templates import STANDARD_STEPS, look_only_plan, mission_area, standard_tool_plan
from models.base import GenerationRequest
from models.rules_parser import RuleBasedGenerator
from tools.catalog import default_registry
from tools.world import World


def _steps(world: World, entities: EntityRefs, **options) -> dict[str, dict]:
    """tool -> {'given': ..., 'from_ir': ...} of the template's plan for these entities, as execution will run it."""
    ir = LowAltitudeIR(
        task_id="t1",
        intent="delivery",
        priority="normal",
        entities=entities,
        tool_plan=standard_tool_plan(world, entities, **options),
        verification_specs=VerificationSpecs(ltl=["F at_goal"], program_rules=["R1"]),
    )
    analysis = analyse_plan(ir, default_registry())
    assert analysis.problem is None
    return {s.tool: {"given": s.given, "from_ir": s.from_ir} for s in analysis.steps}


def test_every_argument_the_ir_holds_is_left_to_the_ir(downtown):
    steps = _steps(downtown, EntityRefs(origin="hospital_A", destination="accident_site_3"))
    assert [tool for _, tool in STANDARD_STEPS] == list(steps)
    assert steps["assign_uav"]["given"] == {} and steps["plan_route"]["given"] == {}
    assert steps["assign_uav"]["from_ir"]["origin"] == "hospital_A"
    assert steps["plan_route"]["from_ir"]["goal"] == "accident_site_3"
    x0, y0, x1, y1 = steps["query_city_state"]["given"]["bbox"]
    for place in ("hospital_A", "accident_site_3"):
        x, y = downtown.position_of(place)
        assert x0 < x < x1 and y0 < y < y1


def test_with_a_ground_hand_off_every_step_flies_to_the_hand_off_point(downtown):
    entities = EntityRefs(origin="hospital_A", destination="accident_site_3", handoff_points=["metro_station_4"])
    steps = _steps(downtown, entities)
    assert steps["query_airspace"]["from_ir"]["destination"] == "metro_station_4"
    assert steps["assign_uav"]["from_ir"]["destination"] == "metro_station_4"
    assert steps["plan_route"]["from_ir"]["goal"] == "metro_station_4"
    assert steps["verify_ltl_stl"]["given"] == {"goal": "metro_station_4"}


def test_a_uav_as_start_and_corridors_only_are_what_the_steps_say(downtown):
    steps = _steps(downtown, EntityRefs(destination="charging_pad_1"), start="uav_07", require_corridor=True)
    assert steps["plan_route"]["given"] == {"start": "uav_07"}
    assert steps["query_airspace"]["given"]["require_corridor"] is True


def test_without_a_known_place_the_whole_map_is_looked_at(downtown):
    assert mission_area(downtown, ["nowhere_9"]) is None
    steps = _steps(downtown, EntityRefs())
    assert steps["query_city_state"]["given"] == {"region": downtown.world_id}
    [look] = look_only_plan(downtown)
    assert look.tool == "query_city_state" and look.args == {"region": downtown.world_id}


def test_the_rules_model_writes_the_standard_plan(downtown):
    instruction = "Send a drone with the defibrillator (1 kg) from hospital_A to accident_site_3 within 10 minutes."
    request = GenerationRequest(instruction=instruction, world=downtown, task_id="t1")
    answer = RuleBasedGenerator().generate(request).answer
    plan = answer["low_altitude_ir"]["tool_plan"]
    assert [step["tool"] for step in plan] == [tool for _, tool in STANDARD_STEPS]
    assert all(step["args"] == {} for step in plan if step["tool"] in ("assign_uav", "plan_route", "verify_ltl_stl"))
