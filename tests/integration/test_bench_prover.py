"""The UNSAT prover (benchmark/prover.py): a sample whose gold plan fails for a reason not built in is SAT when
another plan of the tool space passes, UNSAT (`proven:<family>`) when every plan fails, and UNKNOWN
(`undecided:<family>`) when the search hits its bound. The worlds are built here, each around one fact."""

from __future__ import annotations

import pytest

from benchmark import prover
from benchmark.check_splits import CHECKS
from benchmark.gold import PINNED_UAV_INFEASIBLE, PROVEN, UNDECIDED, gold_registry, label_task
from benchmark.prover import (
    PlanChoice,
    band_choices,
    choice_ir,
    every_combination,
    proof_space,
    settled_combinations,
    start_choices,
)
from benchmark.sample import Sample
from benchmark.tasks import CARGO, Task
from tools.grid_masks import layer_altitudes
from tools.rules import DEFAULT_HORIZON_SEC
from tools.world import UAV, Building, Entity, Grid, NoFlyZone, TimeWindow, TrafficTrack, World

DEPOT, HOSPITAL = (100.0, 300.0), (500.0, 300.0)
TOWER = Building(id="tower", polygon=[(125, 280), (165, 280), (165, 320), (125, 320)], height_m=70.0)
# a tower beside the hospital's pad: any landing there descends within the 10 m separation of it (rule R2)
TOWER_BY_THE_PAD = Building(id="tower_by_pad", polygon=[(505, 290), (520, 290), (520, 310), (505, 310)], height_m=60.0)


def _uav(uav_id: str, position: tuple[float, float], speed: float) -> UAV:
    return UAV(
        id=uav_id,
        position=position,
        battery_ratio=1.0,
        battery_capacity_wh=500.0,
        payload_capacity_kg=5.0,
        cruise_speed_mps=speed,
        max_wind_mps=15.0,
    )


# uav_fast is the quickest to the depot, so assign_uav ranks it first (the gold's UAV), but it stands 5 m from the
# tower: its take-off climbs within separation of it (R2 at t=0), whatever band or start. uav_slow stands clear.
FAST_BESIDE_THE_TOWER = _uav("uav_fast", (120.0, 300.0), 20.0)
SLOW_IN_THE_CLEAR = _uav("uav_slow", (100.0, 340.0), 10.0)


def _world(buildings: list[Building], fleet: list[UAV], zones: list[NoFlyZone] = ()) -> World:
    return World(
        world_id="prover_test",
        grid=Grid(nx=60, ny=60, nz=6),
        buildings=buildings,
        entities=[
            Entity(id="depot_1", kind="depot", name="the depot", position=DEPOT),
            Entity(id="hosp_1", kind="hospital", name="the hospital", position=HOSPITAL),
        ],
        no_fly_zones=list(zones),
        fleet=fleet,
    )


def _task(**changes) -> Task:
    task = Task(
        scenario_type="normal_delivery",
        difficulty="easy",
        intent="delivery",
        priority="normal",
        origin="depot_1",
        destination="hosp_1",
        cargo=CARGO["parcel"],
    )
    for key, value in changes.items():
        setattr(task, key, value)
    return task


def _sample_view(gold, world: World) -> dict:
    """What check_splits reads of a sample, built from a GoldResult."""
    return Sample.model_validate(
        {
            "sample_id": "prover_test-00000",
            "split": "dev_mini",
            "data_tier": "synthetic",
            "city_id": "custom:prover_test",
            "generation_seed": 0,
            "scenario_type": "normal_delivery",
            "difficulty": "easy",
            "instruction": {
                "zh": "",
                "en": "",
                "reference_style": "id",
                "mentions": [],
                "injected_rule_break": None,
            },
            "world": world.model_dump(mode="json"),
            "gold_ir": gold.ir.model_dump(mode="json"),
            "gold_uncertainty": {},
            "gold_tool_trace": gold.trace,
            "gold_decision": gold.decision.model_dump(mode="json"),
            "label": gold.label,
            "failure_modes": gold.failure_modes,
            "source_provenance": {
                "generator_version": "test",
                "map_sources": [],
                "airspace_sources": [],
                "weather_sources": [],
                "fleet_source": "test",
                "label_sources": {},
                "engines": {},
                "intended_label": "SAT",
                "built_in_reason": None,
                "reference_repairs": gold.repairs,
                "generation_attempts": 1,
                "proof": gold.proof,
            },
        }
    )


def test_a_gold_uav_that_fails_gives_way_to_another_that_flies_and_the_sample_is_sat():
    world = _world([TOWER], [FAST_BESIDE_THE_TOWER, SLOW_IN_THE_CLEAR])
    gold = label_task(_task(), world, gold_registry(), "t-sat", 3)
    first = gold.proof["rows"][0]
    assert gold.proof["uavs"][first[0]] == "uav_fast"  # the gold's own UAV was tried first, and failed R2
    assert gold.proof["failures"][first[3]] == "verify_ltl_stl spec_violation R2"
    assert (gold.label, gold.decision.status, gold.decision.uav_id) == ("SAT", "execute", "uav_slow")
    assert gold.ir.entities.candidate_uavs == ["uav_slow"]  # the gold IR is the plan that passed
    assert gold.proof["outcome"] == "sat" and gold.proof["found"] is not None
    assert gold.repairs == gold.proof["plans_run"] >= 2
    assert [step["ok"] for step in gold.trace] == [True] * len(gold.trace)
    assert CHECKS["SAT"](_sample_view(gold, world), gold_registry(), world) == []


def test_a_task_every_plan_fails_is_proven_unsat_with_the_proof_recorded():
    world = _world([TOWER_BY_THE_PAD], [SLOW_IN_THE_CLEAR, _uav("uav_other", (300.0, 100.0), 12.0)])
    gold = label_task(_task(), world, gold_registry(), "t-unsat", 3)
    assert (gold.label, gold.failure_modes) == ("UNSAT", [f"{PROVEN}verification"])
    assert gold.decision.status == "safe_refusal" and gold.decision.reason.startswith("verify_ltl_stl spec_violation:")
    proof = gold.proof
    assert proof["outcome"] == "unsat" and not proof["bound_hit"]
    bands, uavs, starts = proof["bands"], proof["uavs"], proof["starts_sec"]
    assert sorted(uavs) == ["uav_other", "uav_slow"] and starts == [0.0]
    assert bands[0] == [30.0, 120.0] and len(bands) == 15  # the stated band first, then every run of its 5 layers
    # every combination is covered by a row that ran it (no pruning rule applies in this world) and failed
    ran = {(u, b, s) for u, b, s, _, how in proof["rows"] if how == "run"}
    assert ran == {(u, b, 0) for u in range(len(uavs)) for b in range(len(bands))}
    assert proof["plans_run"] == len(ran) == proof["combinations"]
    assert settled_combinations(proof) == every_combination(proof)
    assert all(proof["failures"][f].startswith(("verify_ltl_stl", "plan_route")) for *_, f, _ in proof["rows"])
    assert CHECKS["UNSAT"](_sample_view(gold, world), gold_registry(), world) == []
    gold.proof = {**proof, "rows": proof["rows"][:-1]}  # one plan neither run nor settled: no proof
    assert CHECKS["UNSAT"](_sample_view(gold, world), gold_registry(), world) == [
        "UNSAT sample carries a proof that does not settle every combination"
    ]


def test_a_search_cut_off_by_the_bound_is_unknown_and_asks_the_operator(monkeypatch):
    monkeypatch.setattr(prover, "MAX_PROOF_PLANS", 1)  # the plan that passes (uav_slow's) would be the second
    world = _world([TOWER], [FAST_BESIDE_THE_TOWER, SLOW_IN_THE_CLEAR])
    gold = label_task(_task(), world, gold_registry(), "t-unknown", 3)
    assert (gold.label, gold.failure_modes) == ("UNKNOWN", [f"{UNDECIDED}verification"])
    assert gold.decision.status == "human_confirm"  # neither flown nor refused as impossible
    assert gold.proof["bound_hit"] and gold.proof["bound"] == 1 and gold.proof["plans_run"] == 1
    assert settled_combinations(gold.proof) < every_combination(gold.proof)  # combinations were left
    assert CHECKS["UNKNOWN"](_sample_view(gold, world), gold_registry(), world) == []


def test_a_pinned_uav_is_never_swapped_and_its_failure_is_proven_over_every_band_and_start():
    world = _world([TOWER], [FAST_BESIDE_THE_TOWER, SLOW_IN_THE_CLEAR])
    gold = label_task(_task(named_uavs=["uav_fast"]), world, gold_registry(), "t-pinned", 3)
    assert gold.proof["uavs"] == ["uav_fast"] and gold.proof["pinned"]
    assert (gold.label, gold.failure_modes) == ("UNSAT", [PINNED_UAV_INFEASIBLE, f"{PROVEN}verification"])
    assert gold.decision.status == "human_confirm" and "uav_fast" in gold.decision.reason
    # its take-off climbs beside the tower from the ground, as in every band: one run settles them all
    assert gold.proof["plans_run"] == 1 and gold.proof["rows"][-1] == [0, None, None, 0, "takeoff"]
    assert settled_combinations(gold.proof) == every_combination(gold.proof)


def test_a_building_beside_the_landing_pad_fails_every_plan_after_one_run():
    """Every route ends with the descent onto the landing point from a layer of its band: a building within
    separation of that descent below the band's lowest layer is met by every UAV, band and start."""
    low_by_the_pad = TOWER_BY_THE_PAD.model_copy(update={"height_m": 20.0})
    world = _world([low_by_the_pad], [SLOW_IN_THE_CLEAR, _uav("uav_other", (300.0, 100.0), 12.0)])
    gold = label_task(_task(), world, gold_registry(), "t-landing", 3)
    assert (gold.label, gold.failure_modes) == ("UNSAT", [f"{PROVEN}verification"])
    assert gold.proof["plans_run"] == 1 and gold.proof["rows"][-1][:3] == [None, None, None]
    assert gold.proof["rows"][-1][4] == "landing"
    assert settled_combinations(gold.proof) == every_combination(gold.proof)


def test_a_destination_closed_until_a_window_ends_is_sat_with_a_later_start():
    closed = NoFlyZone(
        id="nfz_closed",
        polygon=[(460, 260), (540, 260), (540, 340), (460, 340)],
        active_window=TimeWindow(start_sec=0.0, end_sec=60.0),
        temporary=True,
    )
    world = _world([], [SLOW_IN_THE_CLEAR], [closed])
    gold = label_task(_task(), world, gold_registry(), "t-later", 3)
    assert gold.proof["starts_sec"] == [0.0, 60.0 + prover.LATER_START_MARGIN_SEC]
    assert gold.label == "SAT" and gold.proof["found"][2] == 1  # found at the later start
    route = next(s for s in gold.ir.tool_plan if s.tool == "plan_route")
    assert route.args["depart_time_sec"] == 61.0
    assert gold.decision.waypoints[0][3] == pytest.approx(61.0)  # the flight takes off after the zone closes
    # the gold plan (now) fails at the airspace query: that settled every band at start 0 with one run
    airspace = [row for row in gold.proof["rows"] if row[4] == "airspace"]
    assert airspace and all(row[0] is None and row[2] == 0 for row in airspace)


def test_a_plan_that_fails_only_on_its_timing_against_known_traffic_proves_nothing_and_the_sample_is_unknown():
    """Traffic hovers on the route at every layer until 100 s, then leaves slowly; its tracks end after the deadline,
    so the only start tried is now, and every plan fails on separation from it. A start at 200 s passes every tool
    (found by an independent review): the failure rests on timing the choices do not cover, so no proof."""
    base = _world([], [_uav("uav_a", (200.0, 300.0), 10.0)])
    tracks = [
        TrafficTrack(
            id=f"track_{int(z)}",
            waypoints=[(300.0, 300.0, z, 0.0), (300.0, 300.0, z, 100.0), (300.0, 590.0, z, 1000.0)],
        )
        for z in layer_altitudes(base.grid)
    ]
    world = World.model_validate(base.model_copy(update={"traffic": tracks}).model_dump())
    gold = label_task(_task(deadline_factor=6.0), world, gold_registry(), "t-traffic", 3)
    assert gold.proof["starts_sec"] == [0.0]  # the tracks end after the deadline
    assert gold.proof["undecided_by"] == ["separation from known traffic"] and not gold.proof["bound_hit"]
    assert (gold.label, gold.failure_modes) == ("UNKNOWN", [f"{UNDECIDED}verification"])
    assert gold.decision.status == "human_confirm" and "known traffic" in gold.decision.reason
    assert CHECKS["UNKNOWN"](_sample_view(gold, world), gold_registry(), world) == []


def test_a_request_without_a_deadline_is_not_flown_after_its_mission_window():
    """A destination closed for two hours: a start after it reopens is outside the request's mission window (a
    request made now does not allow a flight hours later), so it is not a choice and the task is proven UNSAT."""
    closed = NoFlyZone(
        id="nfz_closed",
        polygon=[(460, 260), (540, 260), (540, 340), (460, 340)],
        active_window=TimeWindow(start_sec=0.0, end_sec=2 * DEFAULT_HORIZON_SEC),
        temporary=True,
    )
    world = _world([], [SLOW_IN_THE_CLEAR], [closed])
    assert start_choices(world, None) == [0.0]
    gold = label_task(_task(), world, gold_registry(), "t-closed", 3)
    assert gold.label == "UNSAT" and gold.proof["outcome"] == "unsat"
    assert settled_combinations(gold.proof) == every_combination(gold.proof)


def test_a_via_point_inside_a_zone_closed_at_every_start_and_layer_is_proven_unsat_without_a_run():
    zone = NoFlyZone(id="nfz_park", polygon=[(260, 360), (340, 360), (340, 440), (260, 440)])
    world = _world([], [SLOW_IN_THE_CLEAR, _uav("uav_other", (300.0, 100.0), 12.0)], [zone])
    park = Entity(id="park_1", kind="park", name="the park", position=(300.0, 400.0))
    world = World.model_validate(world.model_copy(update={"entities": [*world.entities, park]}).model_dump())
    gold = label_task(_task(waypoints=["park_1"]), world, gold_registry(), "t-endpoint", 3)
    assert (gold.label, gold.failure_modes) == ("UNSAT", [f"{PROVEN}no_path"])
    assert gold.proof["plans_run"] == 0 and gold.proof["rows"] == [[None, None, None, 0, "endpoint"]]
    assert gold.proof["failures"] == ["plan_route no_path (park_1 in nfz_park)"]
    assert settled_combinations(gold.proof) == every_combination(gold.proof)


def test_bands_are_the_runs_of_layers_inside_the_stated_band_and_each_flies_a_different_set():
    world = _world([], [SLOW_IN_THE_CLEAR])
    altitudes = layer_altitudes(world.grid)  # 20, 40, ..., 120 m
    bands = band_choices(world, (50.0, 120.0))  # a stated floor of 50 m: layers 60, 80, 100, 120
    layer_sets = [tuple(a for a in altitudes if low <= a <= high) for low, high in bands]
    assert bands[0] == (50.0, 120.0) and len(bands) == 10 == len(set(layer_sets))
    assert all(50.0 <= low < high <= 120.0 for low, high in bands)


def test_starts_end_at_windows_and_tracks_and_stay_before_the_deadline():
    zone = NoFlyZone(
        id="nfz_t", polygon=[(0, 0), (10, 0), (10, 10)], active_window=TimeWindow(start_sec=0, end_sec=500)
    )
    world = _world([], [SLOW_IN_THE_CLEAR], [zone])
    assert start_choices(world, None) == [0.0, 501.0]
    assert start_choices(world, 300.0) == [0.0]  # a start after the deadline arrives late: not a choice
    gold_ir = label_task(_task(), world, gold_registry(), "t-s", 3).ir
    space, _ = proof_space(world, gold_ir, gold_registry())
    plan = choice_ir(gold_ir, world, space, PlanChoice(0, 0, 1))
    airspace = next(s for s in plan.tool_plan if s.tool == "query_airspace")
    assert airspace.args["time_sec"] == 501.0 and "horizon_sec" not in airspace.args


def test_a_band_choice_reaches_the_airspace_query_and_the_planner_while_the_ir_keeps_the_stated_band():
    world = _world([], [SLOW_IN_THE_CLEAR])
    gold_ir = label_task(_task(), world, gold_registry(), "t-b", 3).ir
    space, _ = proof_space(world, gold_ir, gold_registry())
    low, high = space.bands[3]
    plan = choice_ir(gold_ir, world, space, PlanChoice(0, 3, 0))
    steps = {s.tool: s.args for s in plan.tool_plan}
    assert (steps["plan_route"]["altitude_min_m"], steps["plan_route"]["altitude_max_m"]) == (low, high)
    assert (steps["query_airspace"]["alt_min_m"], steps["query_airspace"]["alt_max_m"]) == (low, high)
    # the verifier and the simulator judge against the band the request states, as the judge does
    assert (plan.constraints.altitude_min_m, plan.constraints.altitude_max_m) == (30.0, 120.0) != (low, high)
    assert plan.entities.candidate_uavs == ["uav_slow"]
