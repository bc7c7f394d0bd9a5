"""The world-grounded answer schema, checked with the engine the local model decodes under (llguidance).

A byte-level tokenizer lets llguidance judge whole answers without any model: an answer the schema accepts
could have been decoded under it, one it rejects could not.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import llguidance
import pytest
from llama_cpp.llama_grammar import json_schema_to_gbnf

from ir.validation import validate_ir
from language.stated import stated_constraints
from language.team import read_request
from models.base import GenerationRequest, GenerationResult, IRGenerator, RepairFeedback
from models.grounded_schema import WorldIds, grounded_answer_schema, ltl_pattern
from models.rules_parser import RuleBasedGenerator
from models.slots import compile_slots, deadline_seconds, slots_of_ir, slots_request, slots_schema, zones_to_keep
from nodes import generate_ir as generate_ir_node
from nodes.context import Context
from tests.support.paths import EXAMPLES
from tools.catalog import default_registry
from tools.ltl import default_engine
from tools.world import World, load_world

INSTRUCTION = (
    "Send a drone with the defibrillator from hospital_A to accident_site_3 within 10 minutes, keep away from "
    "the school and the temporary no-fly zone."
)


class _ByteTokenizer:
    """One token per byte plus an end token: llguidance then accepts exactly the texts the schema allows."""

    def __init__(self) -> None:
        self.tokens = [bytes([b]) for b in range(256)] + [b"\xff<eos>"]
        self.eos_token_id = 256
        self.bos_token_id = None
        self.special_token_ids = [256]

    def __call__(self, text: bytes) -> list[int]:
        return list(text)


BYTE_TOKENIZER = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteTokenizer()))


def accepts(schema: dict[str, Any], text: str) -> bool:
    grammar = llguidance.LLMatcher.grammar_from_json_schema(schema, defaults={"whitespace_flexible": False})
    matcher = llguidance.LLMatcher(BYTE_TOKENIZER, grammar, log_level=0)
    assert not matcher.is_error(), matcher.get_error()
    return matcher.consume_tokens(list(text.encode())) and matcher.is_accepting()


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@pytest.fixture(scope="module")
def world():
    return load_world(EXAMPLES / "downtown.json")


@pytest.fixture(scope="module")
def schema(world):
    return grounded_answer_schema(world, default_registry(), "t1")


@pytest.fixture(scope="module")
def rules_answer(world, schema) -> dict[str, Any]:
    """The rule-based parser's answer with the grounded plan's step ids (s1, s2, ...) and tool arguments in the
    schema's order (llguidance writes properties in their declared order)."""
    return _grounded_rules_answer(world, schema, INSTRUCTION, "t1")


def test_ids_are_enums_of_what_exists_now(schema, world):
    refs = schema["$defs"]["EntityRefs"]["properties"]
    assert refs["origin"]["anyOf"][0]["enum"] == list(world.entity_index)
    assert set(refs["avoid_zones"]["items"]["enum"]) == set(world.zone_index)
    idle = [u.id for u in world.fleet if u.status.value == "idle"]
    assert refs["candidate_uavs"]["items"]["enum"] == idle
    assert "uav_05" in world.uav_index and "uav_05" not in idle  # busy UAVs cannot be named
    route_args = schema["$defs"]["Args_plan_route"]["properties"]
    assert set(route_args["start"]["enum"]) == set(world.entity_index) | set(world.uav_index)
    assert schema["$defs"]["LowAltitudeIR"]["properties"]["task_id"] == {"const": "t1"}


def test_run_time_data_is_not_offered_to_the_model(schema):
    args = {name[len("Args_") :]: d["properties"] for name, d in schema["$defs"].items() if name.startswith("Args_")}
    assert "waypoints" not in args["verify_ltl_stl"]  # a trajectory comes from plan_route, never from the model
    assert "sim_events" not in args["risk_assess"]
    assert set(args["explain_decision"]) == {"rules"}
    assert args["plan_route"]["waypoints"]["items"]["enum"]  # entity ids to pass: the model's to choose


def _free_nodes(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, list):
        return [n for item in node for n in _free_nodes(item)]
    if not isinstance(node, dict):
        return []
    found = [n for value in node.values() for n in _free_nodes(value)]
    unbounded_text = node.get("type") == "string" and not {"enum", "const", "pattern", "maxLength"} & node.keys()
    unbounded_list = node.get("type") == "array" and not {"maxItems", "prefixItems"} & node.keys()
    unbounded_number = node.get("type") in ("number", "integer") and not {"maximum", "exclusiveMaximum"} & node.keys()
    return found + ([node] if unbounded_text or unbounded_list or unbounded_number else [])


def test_every_list_string_and_number_is_bounded_so_answers_end(schema, world):
    assert _free_nodes(schema) == []
    assert _free_nodes(slots_schema(world)) == []


def test_a_valid_answer_passes_and_unknown_ids_tools_or_atoms_cannot(schema, rules_answer):
    assert accepts(schema, compact(rules_answer))
    ir = rules_answer["low_altitude_ir"]
    for path, bad in (
        (("entities", "destination"), "hospital_Z"),
        (("entities", "candidate_uavs"), ["uav_05"]),
        (("tool_plan", 1, "tool"), "assign_drone"),
        (("tool_plan", 1, "id"), "s1"),  # step ids are unique by construction
        (("tool_plan", 1, "depends_on"), ["s3"]),  # and a step depends on earlier steps only
        (("constraints", "altitude_min_m"), 120.0),  # an inverted band cannot be written
        (("tool_plan", 2, "args", "avoid_zones"), ["nfz_temp_9"]),
        (("verification_specs", "ltl"), ["G !in_nfz_temp_9"]),
        (("verification_specs", "program_rules"), ["R9"]),
        (("task_id",), "other_task"),
    ):
        broken = json.loads(json.dumps(rules_answer))
        target = broken["low_altitude_ir"]
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = bad
        assert not accepts(schema, compact(broken)), (path, bad)
    assert ir["entities"]["destination"] == "accident_site_3"


def test_the_grounded_ltl_pattern_only_matches_formulas_that_parse(world):
    atoms = WorldIds.of(world).ltl_atoms()
    schema = {"type": "string", "pattern": ltl_pattern(atoms)}
    engine = default_engine()
    good = ["G !in_nfz_temp_1", "F at_goal", "G (airborne -> !in_school_zone_2)", "!in_nfz_gov_1 U at_hospital_A"]
    for formula in good:
        assert accepts(schema, json.dumps(formula))
        assert engine.atoms(engine.parse(formula)) <= set(atoms)
    for formula in ("G !in_nfz_unknown", "G (", "F at_goal &", "G !in_nfz_temp_1)"):
        assert not accepts(schema, json.dumps(formula))


def _slots(**overrides: Any) -> dict[str, Any]:
    slots = {
        "intent": "emergency",
        "priority": "high",
        "origin": "hospital_A",
        "destination": "accident_site_3",
        "stops": [],
        "candidate_uavs": [],
        "avoid_zones": ["school_zone_2", "nfz_temp_1"],
        "deadline": "10 min",
        "payload_kg": 0,
        "altitude_min_m": 30,
        "altitude_max_m": 120,
        "battery_reserve": 0.2,
        "return_leg": False,
        "team": False,
        "fallback_policy": "ground_transfer_or_human_confirm",
    }
    return {**slots, **overrides}


def test_slots_compile_to_an_ir_that_passes_every_validation_stage(world):
    slots = _slots()
    assert accepts(slots_schema(world), compact(slots))
    request = GenerationRequest(instruction=INSTRUCTION, world=world, task_id="t1")
    answer = compile_slots(slots, request)
    report = validate_ir(compact(answer), world, default_registry())
    assert report.valid, report
    ir = report.ir
    assert ir.constraints.deadline_sec == 600.0
    assert ir.entities.sensitive_zones == ["school_zone_2"]
    assert "G !in_nfz_temp_1" in ir.verification_specs.ltl
    assert [s.tool for s in ir.tool_plan][:4] == ["query_city_state", "query_airspace", "assign_uav", "plan_route"]
    assert slots_of_ir(answer) == slots  # a repair prompt shows the model exactly what it wrote


def test_slots_schema_rejects_unknown_ids_and_free_form_deadlines(world):
    schema = slots_schema(world)
    assert not accepts(schema, compact(_slots(origin="hospital_Z")))
    assert not accepts(schema, compact(_slots(candidate_uavs=["uav_12"])))  # in maintenance
    assert not accepts(schema, compact(_slots(deadline="ten minutes")))
    assert deadline_seconds("2 h") == 7200.0 and deadline_seconds(None) is None


def _grounded_schema(world: World, instruction: str) -> dict[str, Any]:
    return slots_schema(world, stated=stated_constraints(instruction, world))


def test_roles_the_request_fixes_are_the_only_choices_for_their_slots(world):
    schema = _grounded_schema(world, INSTRUCTION)  # "from hospital_A to accident_site_3"
    assert accepts(schema, compact(_slots()))
    assert accepts(schema, compact(_slots(origin=None)))  # unresolved stays open: it ends in confirmation
    for swapped in ({"destination": "hospital_A"}, {"origin": "accident_site_3"}, {"origin": "hospital_B"}):
        assert not accepts(schema, compact(_slots(**swapped)))


def test_without_role_cues_the_named_places_fill_either_slot(world):
    schema = _grounded_schema(world, "The AED: accident_site_3 and hospital_A, quickly.")
    assert accepts(schema, compact(_slots(deadline=None)))
    assert accepts(schema, compact(_slots(deadline=None, origin="accident_site_3", destination="hospital_A")))


def test_where_the_cargo_waits_is_the_origin(world):
    schema = _grounded_schema(world, "The AED must reach accident_site_3; pick it up at hospital_A.")
    assert accepts(schema, compact(_slots(deadline=None)))
    assert not accepts(schema, compact(_slots(deadline=None, origin="accident_site_3", destination="hospital_A")))
    assert not accepts(schema, compact(_slots(deadline=None, destination="hospital_B")))  # not named


def test_with_an_origin_cue_alone_the_destination_is_another_named_place(world):
    schema = _grounded_schema(world, "We need the AED at accident_site_3, collect from hospital_A.")
    assert accepts(schema, compact(_slots(deadline=None)))
    assert not accepts(schema, compact(_slots(deadline=None, destination="hospital_A")))


@pytest.mark.parametrize(
    "instruction",
    [
        "We need the AED at accident_site_3; collect from hospital_A. accident_site_3 lies in restricted airspace: "
        "fly to metro_station_4 and hand over to a ground courier there.",
        "Load the AED at hospital_A and drop it at accident_site_3. The destination lies in restricted airspace: "
        "fly to metro_station_4 and hand over to a ground courier there.",
    ],
)
def test_a_place_named_as_the_hand_over_point_is_neither_origin_nor_destination(world, instruction):
    schema = _grounded_schema(world, instruction)
    assert accepts(schema, compact(_slots(deadline=None)))
    assert not accepts(schema, compact(_slots(deadline=None, destination="metro_station_4")))
    assert not accepts(schema, compact(_slots(deadline=None, origin="metro_station_4")))


def test_with_no_uav_pinned_the_model_leaves_the_choice_to_assignment(world):
    schema = _grounded_schema(world, INSTRUCTION)
    assert accepts(schema, compact(_slots()))
    assert not accepts(schema, compact(_slots(candidate_uavs=["uav_03"])))  # idle, but nobody named it
    pinned = _grounded_schema(world, INSTRUCTION + " Use uav_03.")
    assert accepts(pinned, compact(_slots(candidate_uavs=["uav_03"])))
    assert not accepts(pinned, compact(_slots(candidate_uavs=[])))


@pytest.mark.parametrize(
    "instruction", [INSTRUCTION, INSTRUCTION + " Use uav_03.", "Fly from hospital_A via police_2 to accident_site_3."]
)
def test_every_slots_schema_compiles_with_llama_cpps_converter(world, instruction):
    """A server's json_object mode decodes under llama.cpp's own schema converter, which refuses some forms."""
    for name, schema in _grounded_schema(world, instruction)["properties"].items():
        assert "::=" in json_schema_to_gbnf(json.dumps(schema)), name


def test_the_payload_is_the_mass_the_request_states(world):
    schema = _grounded_schema(world, "Fly the AED (1.8 kg) from hospital_A to accident_site_3.")
    assert accepts(schema, compact(_slots(deadline=None, payload_kg=1.8)))
    assert not accepts(schema, compact(_slots(deadline=None, payload_kg=0)))  # dropped
    assert not accepts(schema, compact(_slots(deadline=None, payload_kg=0.5)))  # invented
    unstated = _grounded_schema(world, INSTRUCTION)
    assert accepts(unstated, compact(_slots())) and not accepts(unstated, compact(_slots(payload_kg=2)))
    request = GenerationRequest(instruction=INSTRUCTION, world=world, task_id="t1")
    assert (
        compile_slots(_slots(deadline=None, payload_kg=1.8), request)["low_altitude_ir"]["constraints"]["payload_kg"]
        == 1.8
    )


def test_a_stated_band_and_reserve_are_their_slots_only_values(world):
    instruction = "Fly the AED from hospital_A to accident_site_3. Fly no lower than 50 m, stay below 90 m. "
    schema = _grounded_schema(world, instruction + "Keep at least 30% battery on arrival.")
    stated = {"altitude_min_m": 50, "altitude_max_m": 90, "battery_reserve": 0.3}
    assert accepts(schema, compact(_slots(deadline=None, **stated)))
    for relaxed in ({"altitude_min_m": 30}, {"altitude_max_m": 120}, {"battery_reserve": 0.2}):
        assert not accepts(schema, compact(_slots(deadline=None, **{**stated, **relaxed})))
    request = GenerationRequest(instruction=instruction, world=world, task_id="t1")
    constraints = compile_slots(_slots(deadline=None, **stated), request)["low_altitude_ir"]["constraints"]
    assert (constraints["altitude_min_m"], constraints["altitude_max_m"], constraints["battery_reserve_ratio"]) == (
        50.0,
        90.0,
        0.3,
    )
    assert accepts(_grounded_schema(world, INSTRUCTION), compact(_slots()))  # nothing stated: the defaults


def test_a_role_one_cue_fixes_leaves_the_other_slot_to_the_other_places(world):
    schema = _grounded_schema(world, "Load the AED at hospital_A and drop it at accident_site_3.")  # "at": no cue
    assert accepts(schema, compact(_slots(deadline=None)))
    assert not accepts(schema, compact(_slots(deadline=None, origin="accident_site_3")))


def test_stops_are_named_places_other_than_the_ends(world):
    instruction = "Inspect metro_station_4 and hospital_B, taking off from hospital_A and finishing at depot_1."
    schema = _grounded_schema(world, instruction)
    patrol = _slots(deadline=None, destination="depot_1", stops=["metro_station_4", "hospital_B"])
    assert accepts(schema, compact(patrol))
    assert not accepts(schema, compact({**patrol, "stops": ["accident_site_3"]}))  # not named
    assert not accepts(schema, compact({**patrol, "stops": ["metro_station_4"]}))  # a named place dropped
    assert not accepts(schema, compact({**patrol, "stops": ["hospital_B", "metro_station_4"]}))  # not as named
    assert not accepts(_grounded_schema(world, INSTRUCTION), compact(_slots(deadline=None, stops=["hospital_B"])))
    request = GenerationRequest(instruction=instruction, world=world, task_id="t1")
    answer = compile_slots(patrol, request)
    assert answer["low_altitude_ir"]["entities"]["waypoints"] == ["metro_station_4", "hospital_B"]
    assert slots_of_ir(answer) == patrol


def test_without_both_ends_fixed_the_model_picks_the_stops_among_the_named_places(world):
    schema = _grounded_schema(world, "Inspect metro_station_4 and hospital_B, then land at depot_1.")  # no start
    for stops in ([], ["hospital_B"], ["hospital_B", "metro_station_4"]):
        assert accepts(
            schema, compact(_slots(deadline=None, origin="metro_station_4", destination="depot_1", stops=stops))
        )
    assert not accepts(
        schema, compact(_slots(deadline=None, origin=None, destination="depot_1", stops=["accident_site_3"]))
    )


def test_a_stated_deadline_is_the_only_deadline(world):
    schema = _grounded_schema(world, INSTRUCTION)  # "within 10 minutes"
    assert accepts(schema, compact(_slots(deadline="10 min")))
    assert not accepts(schema, compact(_slots(deadline="20 s")))
    assert not accepts(schema, compact(_slots(deadline=None)))
    unstated = _grounded_schema(world, "Fly the AED from hospital_A to accident_site_3.")
    assert accepts(unstated, compact(_slots(deadline=None)))
    assert not accepts(unstated, compact(_slots(deadline="5 min")))  # invented: the gate would send it back
    worded = _grounded_schema(world, "Fly the AED from hospital_A to accident_site_3 within fifteen minutes.")
    assert accepts(worded, compact(_slots(deadline="15 min")))  # a duration the reader could not read


def test_a_round_trip_is_stated_and_flies_back_to_the_origin(world):
    instruction = "Fly the AED from hospital_A to accident_site_3 and back."
    schema = _grounded_schema(world, instruction)
    assert accepts(schema, compact(_slots(deadline=None, return_leg=True)))
    assert not accepts(schema, compact(_slots(deadline=None, return_leg=False)))  # dropped
    assert not accepts(
        schema, compact(_slots(deadline=None, destination="hospital_A", return_leg=True))
    )  # "to" fixes the far end
    assert not accepts(
        _grounded_schema(world, INSTRUCTION), compact(_slots(deadline=None, return_leg=True))
    )  # invented
    request = GenerationRequest(instruction=instruction, world=world, task_id="t1")
    answer = compile_slots(_slots(deadline=None, return_leg=True), request)
    entities = answer["low_altitude_ir"]["entities"]
    assert (entities["destination"], entities["waypoints"]) == ("hospital_A", ["accident_site_3"])
    assert slots_of_ir(answer) == _slots(deadline=None, return_leg=True)  # the repair prompt shows what the model wrote


def test_a_repair_keeps_avoided_zones_and_adds_the_offending_one(world):
    previous = compile_slots(
        _slots(avoid_zones=["school_zone_2"]), GenerationRequest(instruction=INSTRUCTION, world=world, task_id="t1")
    )
    counterexample = {"failure_type": "spec_violation", "violated_rule": "R1", "offending_entity": "nfz_temp_1"}
    request = GenerationRequest(
        instruction=INSTRUCTION,
        world=world,
        task_id="t1",
        round=1,
        feedback=RepairFeedback(counterexample=counterexample, previous_ir=previous),
    )
    keep = zones_to_keep(request)
    assert keep == ["school_zone_2", "nfz_temp_1"]
    schema = slots_schema(world, keep)
    assert accepts(schema, compact(_slots(avoid_zones=["school_zone_2", "nfz_temp_1"])))
    assert accepts(schema, compact(_slots(avoid_zones=["school_zone_2", "nfz_temp_1", "nfz_gov_1"])))
    assert not accepts(schema, compact(_slots(avoid_zones=["school_zone_2"])))  # the offending zone is required
    assert not accepts(schema, compact(_slots(avoid_zones=["nfz_temp_1"])))  # nor may a zone be dropped
    assert zones_to_keep(request.model_copy(update={"feedback": None})) == []
    # a server's json_object mode compiles the schema with llama.cpp's converter: the required zones reach it
    grammar = json_schema_to_gbnf(json.dumps(schema["properties"]["avoid_zones"]))
    assert all(f'"\\"{zone}\\""' in grammar for zone in keep)  # a GBNF literal of the JSON string


def test_a_refusal_needs_no_confirmation_but_other_policies_keep_the_open_question(world):
    request = GenerationRequest(instruction="fly somewhere", world=world, task_id="t1")
    refused = compile_slots(_slots(destination=None, fallback_policy="safe_refusal"), request)
    assert refused["uncertainty"] == {"needs_human_confirmation": False, "missing_information": []}
    confirm = compile_slots(_slots(destination=None, fallback_policy="human_confirm"), request)
    assert confirm["uncertainty"]["needs_human_confirmation"]
    assert confirm["low_altitude_ir"]["fallback_policy"] == "human_confirm"


class _RecordingGenerator(IRGenerator):
    model = "recording"

    def __init__(self, accepts_json_schema: bool):
        self.accepts_json_schema = accepts_json_schema
        self.requests: list[GenerationRequest] = []

    def generate(self, request: GenerationRequest) -> GenerationResult:
        self.requests.append(request)
        return GenerationResult(raw_text="{}", answer=None, model=self.model, prompt_version="test")


@pytest.mark.parametrize("accepts_schema", [True, False])
def test_generate_ir_offers_the_grounded_schema_to_backends_that_take_one(monkeypatch, world, accepts_schema):
    generator = _RecordingGenerator(accepts_schema)
    monkeypatch.setattr(generate_ir_node, "init_ir_writer", lambda *args, **kwargs: generator)
    state = {"instruction": INSTRUCTION, "world": json.loads(world.model_dump_json()), "task_id": "t7"}
    generate_ir_node.generate_ir(state, SimpleNamespace(context=Context(model="openai:any")))
    sent = generator.requests[0].json_schema
    if accepts_schema:
        assert sent == grounded_answer_schema(world, default_registry(), "t7")
    else:
        assert sent is None


def test_the_slots_destination_in_a_no_fly_zone_is_handed_off_where_the_request_allows(world):
    data = world.model_dump(mode="json")
    office = {"id": "office_9", "kind": "office", "name": "ministry office", "position": [250, 600]}  # in nfz_gov_1
    closed = World.model_validate({**data, "entities": data["entities"] + [office]})
    allowed = "Deliver from hospital_A to office_9; if the drone cannot get in, hand it to a ground courier."
    request = GenerationRequest(instruction=allowed, world=closed, task_id="t1")
    entities = compile_slots(_slots(destination="office_9"), request)["low_altitude_ir"]["entities"]
    assert (entities["destination"], entities["handoff_points"]) == ("office_9", ["police_2"])  # the nearest hub
    request = GenerationRequest(instruction="Deliver from hospital_A to office_9.", world=closed, task_id="t1")
    assert compile_slots(_slots(destination="office_9"), request)["low_altitude_ir"]["entities"]["handoff_points"] == []


# --- fleet missions: the full schema's team, the slots' team -----------------------------------------------------
SPLIT_LOAD = (
    "We've got 8 kg of sandbags sitting at the sandbag depot and the flood site at the Riverside Road underpass "
    "needs them now. That's more than any one of our drones can lift, so split the load between two of them."
)


@pytest.fixture(scope="module")
def fleet_city() -> World:
    return load_world(EXAMPLES / "fleet_city.json")


def _grounded_rules_answer(world: World, schema: dict[str, Any], instruction: str, task_id: str) -> dict[str, Any]:
    """The rules answer in the grounded schema's shape (step ids s1.., arguments in declared order)."""
    answer = RuleBasedGenerator().generate(GenerationRequest(instruction=instruction, world=world, task_id=task_id))
    answer = answer.answer
    plan = answer["low_altitude_ir"]["tool_plan"]
    renamed = {step["id"]: f"s{k + 1}" for k, step in enumerate(plan)}
    for step in plan:
        order = schema["$defs"][f"Args_{step['tool']}"]["properties"]
        step["args"] = {name: step["args"][name] for name in order if name in step["args"]}
        step["id"], step["depends_on"] = renamed[step["id"]], [renamed[d] for d in step["depends_on"]]
    return answer


def test_a_team_answer_is_writable_and_names_only_what_the_world_has(fleet_city):
    schema = grounded_answer_schema(fleet_city, default_registry(), "t9")
    answer = _grounded_rules_answer(fleet_city, schema, SPLIT_LOAD, "t9")
    team = answer["low_altitude_ir"]["team"]
    assert team["subtasks"][0]["split"] and team["subtasks"][0]["uav_count"] == 2
    assert accepts(schema, compact(answer))

    def with_subtask(**changes: Any) -> str:
        changed = json.loads(json.dumps(answer))
        changed["low_altitude_ir"]["team"]["subtasks"][0].update(changes)
        return compact(changed)

    sensors = {s for u in fleet_city.fleet for s in u.sensors}
    busy = [u.id for u in fleet_city.fleet if u.status.value != "idle"]
    assert sensors and busy
    assert accepts(schema, with_subtask(required_sensors=[sorted(sensors)[0]]))
    assert not accepts(schema, with_subtask(required_sensors=["lidar_x"]))  # no UAV carries it
    assert not accepts(schema, with_subtask(origin="sandbag_depot"))  # a name, not an id
    assert not accepts(schema, with_subtask(uavs=[busy[0]]))  # only idle UAVs take a task
    assert not accepts(schema, with_subtask(uav_count=len(fleet_city.fleet) + 1))


def test_a_world_with_no_place_offers_no_team(fleet_city):
    empty = World.model_validate({**fleet_city.model_dump(mode="json"), "entities": []})
    schema = grounded_answer_schema(empty, default_registry(), "t9")
    assert schema["$defs"]["LowAltitudeIR"]["properties"]["team"]["type"] == "null"
    assert "SubTask" not in schema["$defs"] and "TeamPlan" not in schema["$defs"]


def test_the_team_slot_is_what_the_reading_says_and_compiles_into_the_words_team(fleet_city, world):
    stated = read_request(SPLIT_LOAD, fleet_city)  # the run's reading: what the words state and the team they need
    assert slots_schema(fleet_city, stated=stated)["properties"]["team"] == {"enum": [True]}
    assert slots_schema(world, stated=read_request(INSTRUCTION, world))["properties"]["team"] == {"enum": [False]}
    request = GenerationRequest(instruction=SPLIT_LOAD, world=fleet_city, task_id="t9", reading=stated)
    slots = _slots(
        intent="delivery",
        origin="warehouse_1",
        destination="flood_site_1",
        avoid_zones=[],
        deadline=None,
        payload_kg=8,
        team=True,
        fallback_policy="human_confirm",
    )
    answer = compile_slots(slots, request)
    report = validate_ir(compact(answer), fleet_city, default_registry())
    assert report.valid, report
    (share,) = report.ir.team.subtasks
    assert (share.origin, share.destination, share.payload_kg, share.split) == (
        "warehouse_1",
        "flood_site_1",
        8.0,
        True,
    )
    assert share.uav_count == 2  # "between two of them"
    assert slots_of_ir(answer)["team"] is True
    assert "team" not in compile_slots({**slots, "team": False}, request)["low_altitude_ir"]
    # with no reading handed in, the writer reads the request itself, team need included
    _, schema = slots_request(GenerationRequest(instruction=SPLIT_LOAD, world=fleet_city, task_id="t9"))
    assert schema["properties"]["team"] == {"enum": [True]}


def test_a_team_compiled_from_slots_keeps_every_zone_the_model_avoided(fleet_city):
    request = GenerationRequest(
        instruction=SPLIT_LOAD, world=fleet_city, task_id="t9", reading=read_request(SPLIT_LOAD, fleet_city)
    )
    slots = _slots(
        intent="delivery",
        origin="warehouse_1",
        destination="flood_site_1",
        avoid_zones=["school_zone_1", "nfz_gov_1"],  # the school is no safety prior of this route
        deadline=None,
        payload_kg=8,
        fallback_policy="human_confirm",
    )
    for team in (False, True):
        ir = compile_slots({**slots, "team": team}, request)["low_altitude_ir"]
        assert ("team" in ir) is team
        assert {"school_zone_1", "nfz_gov_1"} <= set(ir["entities"]["avoid_zones"]), ir["entities"]


def test_slots_with_a_team_and_no_origin_start_the_request_where_the_first_member_does(fleet_city):
    """A coverage request names no origin, and a model's intent may have no default one ("emergency"): the compiled
    IR's request-level origin is where the team's first member starts, so the one-UAV tool plan it still carries
    validates (test_fleet seed 41177: three coverage requests on `local` asked the operator, `assign_uav needs
    'origin'`)."""
    instruction = (
        "Inspect inspection_site_1, inspection_site_2, inspection_site_3 and inspection_site_4 with two camera "
        "drones, splitting the places between them, all done in under 5 min."
    )
    stated = read_request(instruction, fleet_city)
    assert stated.team_needs
    slots = _slots(
        intent="emergency",
        origin=None,
        destination="inspection_site_4",
        stops=["inspection_site_1", "inspection_site_2", "inspection_site_3"],
        avoid_zones=[],
        deadline="5 min",
        team=True,
        fallback_policy="human_confirm",
    )
    request = GenerationRequest(instruction=instruction, world=fleet_city, task_id="t1", reading=stated)
    answer = compile_slots(slots, request)
    report = validate_ir(compact(answer), fleet_city, default_registry())
    assert report.valid, report
    assert report.ir.team is not None
    assert report.ir.entities.origin == report.ir.team.subtasks[0].origin
