"""assign_team (tools/team.py): the MILP's optimum against brute-force enumeration on random small fleets, and the
behaviours a team request relies on: split loads, sensor roles, exclusions, relays, and failures that name the
binding constraint."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools import team
from tools.assignment import AssignUavArgs, evaluate
from tools.items import is_whole_items
from tools.registry import ToolRegistry
from tools.world import UAV, UAVStatus, World

# The example world's places south of its gusty north (wind + gusts 15 m/s there, 7 m/s elsewhere).
PLACES = (
    "hospital_A",
    "accident_site_3",
    "metro_station_4",
    "charging_pad_1",
    "police_2",
    "fire_station_1",
    "school_2",
)
SENSORS = ("camera", "thermal")


def _uav(uav_id: str, x: float, y: float, **overrides) -> UAV:
    fields = {
        "battery_ratio": 0.9,
        "battery_capacity_wh": 200.0,
        "payload_capacity_kg": 3.0,
        "cruise_speed_mps": 12.0,
        "max_wind_mps": 12.0,
    }
    return UAV(id=uav_id, position=(x, y), **{**fields, **overrides})


@pytest.fixture(scope="module")
def call():
    registry = ToolRegistry([team.SPEC])
    return lambda world, **args: registry.call("assign_team", world, args)


def _members(result) -> dict[str, dict[str, float]]:
    """sub-task id -> {uav id: share kg}"""
    members: dict[str, dict[str, float]] = {}
    for member in result.result["team"]:
        members.setdefault(member["subtask_id"], {})[member["uav_id"]] = member["share_kg"]
    return members


def _not_chosen(result) -> dict[str, str]:
    return {entry["uav_id"]: " | ".join(entry["reasons"]) for entry in result.result["not_chosen"]}


# --- the exact solver against enumeration ---------------------------------------------------------------------------


@st.composite
def team_requests(draw) -> tuple[list[UAV], dict]:
    fleet = [
        UAV(
            id=f"u{i}",
            position=(draw(st.integers(0, 79)) * 10.0, draw(st.integers(0, 79)) * 10.0),
            status=draw(st.sampled_from([UAVStatus.idle] * 7 + [UAVStatus.busy])),
            battery_ratio=draw(st.floats(0.5, 1.0)),
            battery_capacity_wh=draw(st.sampled_from([200.0, 300.0, 400.0])),
            payload_capacity_kg=draw(st.sampled_from([0.0, 2.0, 3.0, 3.0, 5.0])),
            cruise_speed_mps=draw(st.sampled_from([8.0, 12.0, 16.0])),
            max_wind_mps=draw(st.sampled_from([10.0, 16.0])),
            sensors=draw(st.sampled_from([[], ["camera"], ["camera"], ["thermal"], list(SENSORS)])),
        )
        for i in range(draw(st.sampled_from([2, 3, 4, 5, 5])))
    ]
    subtasks = []
    for j in range(draw(st.sampled_from([1, 2, 2, 3, 3]))):
        earlier = [f"s{k}" for k in range(j)]
        split = draw(st.booleans())
        payload = draw(st.sampled_from([1.0, 2.5, 4.0, 5.5] if split else [0.0, 0.5, 1.0, 2.0]))
        subtasks.append(
            {
                "id": f"s{j}",
                "origin": draw(st.sampled_from(PLACES)),
                "destination": draw(st.sampled_from(PLACES)),
                "waypoints": draw(st.lists(st.sampled_from(PLACES), max_size=1)),
                "payload_kg": payload,
                # a load of whole items on some split loads: shares are whole items ("bags of 1.25 kg")
                "item_kg": draw(st.sampled_from([None, None, payload / 2, payload / 4])) if split and payload else None,
                "split": split,
                "deadline_sec": draw(st.none() | st.floats(60.0, 300.0)),
                "required_sensors": draw(st.sampled_from([[], [], [], [], [], ["camera"], ["thermal"]])),
                "after": draw(st.sampled_from([[], earlier[-1:], earlier])),
                # a stated team size on some split loads (a count of 1 on a single UAV's sub-task is allowed too)
                "uav_count": draw(st.sampled_from([None, 1, 2, 2, 3] if split else [None, None, None, 1])),
            }
        )
    args = {
        "subtasks": subtasks,
        "objective": draw(st.sampled_from(["min_makespan", "min_energy"])),
        "max_uavs_per_split": draw(st.sampled_from([1, 2, 3, 4])),
        "excluded": draw(st.lists(st.sampled_from([u.id for u in fleet]), unique=True, max_size=1)),
        "battery_reserve_ratio": draw(st.sampled_from([0.1, 0.2, 0.3])),
    }
    return fleet, args


def _assert_valid_team(world: World, args: team.AssignTeamArgs, solution: team.TeamSolution) -> None:
    """What any answer must be, checked without the solver's own bookkeeping: every UAV once, never an excluded one,
    each member feasible by assign_uav's own evaluate at its share, split shares covering the payload."""
    flown = [u for shares in solution.shares_kg.values() for u in shares]
    assert len(flown) == len(set(flown)) and not set(flown) & set(args.excluded)
    for subtask in args.subtasks:
        shares = solution.shares_kg[subtask.id]
        if subtask.uav_count is not None:  # exactly as many as stated, each with at least half an even share
            assert len(shares) == subtask.uav_count
            assert all(share >= subtask.payload_kg / subtask.uav_count / 2 - 1e-6 for share in shares.values())
        else:
            assert len(shares) == 1 or (subtask.split and len(shares) <= args.max_uavs_per_split)
        if subtask.split:
            assert math.isclose(sum(shares.values()), subtask.payload_kg, abs_tol=1e-6)
            assert all(is_whole_items(share, subtask.item_kg) for share in shares.values()), shares
        for uav_id, share in shares.items():
            uav = world.uav_index[uav_id]
            assert set(subtask.required_sensors) <= set(uav.sensors)
            task = AssignUavArgs(
                origin=subtask.origin,
                destination=subtask.destination,
                payload_kg=share,
                battery_reserve_ratio=args.battery_reserve_ratio,
            )
            via = [world.position_of(w) for w in subtask.waypoints]
            origin, destination = world.position_of(subtask.origin), world.position_of(subtask.destination)
            assert evaluate(world, uav, origin, destination, task, via).reasons == []
        if subtask.deadline_sec is not None:
            assert solution.finish_sec[subtask.id] <= subtask.deadline_sec + 1e-6


@settings(max_examples=100, deadline=None, derandomize=True)
@given(team_requests())
def test_the_milp_finds_the_optimum_brute_force_finds(downtown, request_):
    fleet, raw = request_
    world, args = downtown.updated(fleet=fleet), team.AssignTeamArgs.model_validate(raw)
    solved, reference = team.optimal_team(world, args), team.brute_force_team(world, args)
    assert (solved is None) == (reference is None)
    tool = ToolRegistry([team.SPEC]).call("assign_team", world, raw)
    assert tool.ok == (reference is not None), tool.error
    if reference is None:
        assert tool.result["binding_constraint"] in {"sensors", "payload", "battery", "wind", "fleet_size", "deadline"}
        return
    _assert_valid_team(world, args, solved)
    for got, best in zip(solved.key(args.objective), reference.key(args.objective)):
        assert math.isclose(got, best, rel_tol=1e-6, abs_tol=1e-6)
    assert tool.result["makespan_sec"] == round(solved.makespan_sec, 1)


@st.composite
def counted_split_requests(draw) -> tuple[list[UAV], dict]:
    """A split load with a stated team size on a fleet that can often fly it (idle UAVs with charge and lift, south of
    the gusts), beside a sub-task competing for the same UAVs or not: random fleets above rarely have a team of
    exactly the stated size, so most counted draws there end in a failure."""
    fleet = [
        _uav(
            f"u{i}",
            draw(st.integers(5, 75)) * 10.0,
            draw(st.integers(5, 40)) * 10.0,
            battery_ratio=draw(st.floats(0.7, 1.0)),
            battery_capacity_wh=draw(st.sampled_from([300.0, 400.0])),
            payload_capacity_kg=draw(st.sampled_from([1.0, 2.0, 3.0, 5.0])),
            cruise_speed_mps=draw(st.sampled_from([8.0, 12.0, 16.0])),
        )
        for i in range(draw(st.integers(3, 6)))
    ]
    load = {
        "id": "load",
        "origin": draw(st.sampled_from(PLACES)),
        "destination": draw(st.sampled_from(PLACES)),
        "payload_kg": draw(st.sampled_from([2.0, 4.0, 6.0, 8.0])),
        "split": True,
        "uav_count": draw(st.integers(1, 4)),
        "deadline_sec": draw(st.none() | st.floats(120.0, 400.0)),
    }
    other = {"id": "other", "origin": draw(st.sampled_from(PLACES)), "destination": draw(st.sampled_from(PLACES))}
    subtasks = [load, *draw(st.sampled_from([[], [other], [{**other, "after": ["load"]}]]))]
    args = {
        "subtasks": subtasks,
        "objective": draw(st.sampled_from(["min_makespan", "min_energy"])),
        "max_uavs_per_split": draw(st.sampled_from([1, 2, 4])),  # a stated count does not heed it
    }
    return fleet, args


@settings(max_examples=60, deadline=None, derandomize=True)
@given(counted_split_requests())
def test_the_milp_keeps_a_stated_team_size_as_brute_force_does(downtown, request_):
    fleet, raw = request_
    world, args = downtown.updated(fleet=fleet), team.AssignTeamArgs.model_validate(raw)
    solved, reference = team.optimal_team(world, args), team.brute_force_team(world, args)
    assert (solved is None) == (reference is None)
    tool = ToolRegistry([team.SPEC]).call("assign_team", world, raw)
    assert tool.ok == (reference is not None), tool.error
    if reference is None:
        assert tool.result["binding_constraint"] in {"payload", "battery", "fleet_size", "deadline"}
        return
    _assert_valid_team(world, args, solved)
    assert len(reference.shares_kg["load"]) == raw["subtasks"][0]["uav_count"]
    for got, best in zip(solved.key(args.objective), reference.key(args.objective)):
        assert math.isclose(got, best, rel_tol=1e-6, abs_tol=1e-6)


# --- behaviours -------------------------------------------------------------------------------------------------------

SPLIT_LOAD = {"id": "load", "origin": "hospital_A", "destination": "metro_station_4", "payload_kg": 8.0, "split": True}


@pytest.mark.parametrize(
    ("big_at", "max_per_split", "expected"),
    [
        ((700.0, 150.0), 4, {"a", "b", "c"}),  # the 5 kg UAV far away: the three nearby 3 kg ones land first
        ((100.0, 100.0), 4, {"big", "a"}),  # the 5 kg UAV at the pick-up: it and the nearest 3 kg one
        ((700.0, 150.0), 2, {"big", "a"}),  # two at most: 5 + 3 kg, whatever the wait for the far one
    ],
)
def test_a_split_load_gets_the_minimal_makespan_team_that_covers_it(call, downtown, big_at, max_per_split, expected):
    fleet = [
        _uav("a", 130.0, 100.0),
        _uav("b", 200.0, 200.0),
        _uav("c", 300.0, 300.0),
        _uav("big", *big_at, payload_capacity_kg=5.0, battery_capacity_wh=300.0),
    ]
    world = downtown.updated(fleet=fleet)
    result = call(world, subtasks=[SPLIT_LOAD], max_uavs_per_split=max_per_split)
    assert result.ok, result.error
    shares = _members(result)["load"]
    assert set(shares) == expected
    assert math.isclose(sum(shares.values()), 8.0, abs_tol=1e-3)
    assert all(share <= world.uav_index[u].payload_capacity_kg + 1e-9 for u, share in shares.items())
    assert result.result["makespan_sec"] == max(m["finish_sec"] for m in result.result["team"])
    args = team.AssignTeamArgs(subtasks=[SPLIT_LOAD], max_uavs_per_split=max_per_split)
    assert math.isclose(
        team.brute_force_team(world, args).makespan_sec, team.optimal_team(world, args).makespan_sec, rel_tol=1e-9
    )


def test_a_stated_team_size_is_flown_exactly_even_where_fewer_would_do(call, downtown):
    """4 kg that the 5 kg UAV lifts alone, asked of two and of three UAVs: exactly that many fly, each with at least
    half an even share (a member with grams aboard would keep the count in name only), whatever max_uavs_per_split."""
    fleet = [
        _uav("big", 100.0, 100.0, payload_capacity_kg=5.0, battery_capacity_wh=300.0),
        _uav("a", 130.0, 100.0),
        _uav("b", 200.0, 200.0),
    ]
    world = downtown.updated(fleet=fleet)
    load = {**SPLIT_LOAD, "payload_kg": 4.0}
    assert _members(call(world, subtasks=[load]))["load"] == {"big": 4.0}  # no count: the one UAV that lands first
    for count in (1, 2, 3):
        result = call(world, subtasks=[{**load, "uav_count": count}], max_uavs_per_split=1)
        assert result.ok, result.error
        shares = _members(result)["load"]
        assert len(shares) == count and math.isclose(sum(shares.values()), 4.0, abs_tol=1e-3)
        assert all(share >= 4.0 / count / 2 - 1e-3 for share in shares.values()), shares
        args = team.AssignTeamArgs(subtasks=[{**load, "uav_count": count}], max_uavs_per_split=1)
        solved, reference = team.optimal_team(world, args), team.brute_force_team(world, args)
        assert reference is not None and len(reference.shares_kg["load"]) == count
        assert solved.key("min_makespan") == pytest.approx(reference.key("min_makespan"), rel=1e-9)


def test_a_uav_that_can_carry_only_a_sliver_is_no_member_of_a_counted_team(call, downtown):
    """With three UAVs asked for 6 kg each carries at least 1 kg: the 0.5 kg UAV is left out, and says why."""
    fleet = [_uav("a", 130.0, 100.0), _uav("b", 150.0, 100.0), _uav("c", 170.0, 100.0)]
    fleet.append(_uav("tiny", 110.0, 100.0, payload_capacity_kg=0.5))
    load = {**SPLIT_LOAD, "payload_kg": 6.0, "uav_count": 3}
    result = call(downtown.updated(fleet=fleet), subtasks=[load])
    assert result.ok, result.error
    assert set(_members(result)["load"]) == {"a", "b", "c"}
    assert "carries at most 0.50 kg (its payload capacity), less than the 1.00 kg" in _not_chosen(result)["tiny"]


def test_a_stated_team_size_beyond_the_uavs_able_to_fly_it_names_the_fleet_size(call, downtown):
    fleet = [_uav("a", 130.0, 100.0), _uav("b", 150.0, 100.0), _uav("busy", 170.0, 100.0, status="busy")]
    fleet.append(_uav("windy", 110.0, 100.0, max_wind_mps=5.0))  # the 7 m/s south of the gusts grounds it
    world = downtown.updated(fleet=fleet)
    load = {**SPLIT_LOAD, "payload_kg": 4.0}
    result = call(world, subtasks=[{**load, "uav_count": 3}])
    assert not result.ok and result.error.type == "fleet_too_small"
    assert result.result == {
        "binding_constraint": "fleet_size",
        "subtask_id": "load",
        "uavs_needed": 3,
        "uavs_able": ["a", "b"],
    }
    assert result.error.message.startswith("sub-task load asks for exactly 3 UAVs; idle UAVs able to carry a share: 2")
    assert "windy: wind" in result.error.message
    assert result.error.suggested_actions[0] == "share it among 2 UAVs"
    assert call(world, subtasks=[{**load, "uav_count": 2}]).ok  # the two that can fly it
    more = call(world, subtasks=[{**load, "uav_count": 4}])  # more than the idle UAVs there are
    assert more.result["binding_constraint"] == "fleet_size" and "idle UAVs: 3 (a, b, windy)" in more.error.message


def test_a_stated_team_size_too_small_for_the_load_names_the_payload(call, downtown):
    world = downtown.updated(fleet=[_uav(u, 100.0 + 20 * i, 100.0) for i, u in enumerate("abc")])
    result = call(world, subtasks=[{**SPLIT_LOAD, "payload_kg": 7.0, "uav_count": 2}])
    assert not result.ok and result.result["binding_constraint"] == "payload"
    assert result.error.message.endswith("the idle UAVs it may share (a, b) lift 6 kg together")
    assert result.error.suggested_actions[0] == "share it among more than 2 UAVs"


def test_a_count_of_several_on_a_subtask_that_is_not_split_is_refused(call, downtown):
    task = {"id": "go", "origin": "hospital_A", "destination": "school_2", "payload_kg": 1.0, "uav_count": 2}
    result = call(downtown.updated(fleet=[_uav("a", 110.0, 100.0)]), subtasks=[task])
    assert not result.ok and result.error.type == "invalid_team_request"
    assert "asks for 2 UAVs but is not split" in result.error.message


def test_a_weak_battery_still_carries_the_share_it_can(call, downtown):
    """Evaluated at its full 3 kg the first UAV breaks the reserve; at a smaller share it does not, and the 4.5 kg
    load needs it: the shares are decisions, not capacities."""
    world = downtown.updated(fleet=[_uav("weak", 130.0, 100.0), _uav("full", 150.0, 120.0)])
    origin, destination = world.position_of("hospital_A"), world.position_of("metro_station_4")
    weak = world.uav_index["weak"]
    energy = [evaluate(world, weak, origin, destination, AssignUavArgs(origin="o", destination="d", payload_kg=kg))
              .energy_wh for kg in (0.0, 3.0)]  # fmt: skip
    # battery that keeps the 0.2 reserve with 2.2 kg aboard, not with 3 kg
    ratio = 0.2 + (energy[0] + (energy[1] - energy[0]) * 2.2 / 3) / weak.battery_capacity_wh
    world = world.updated(fleet=[weak.model_copy(update={"battery_ratio": ratio}), world.uav_index["full"]])
    full_load = AssignUavArgs(origin="hospital_A", destination="metro_station_4", payload_kg=3.0)
    assert evaluate(world, world.uav_index["weak"], origin, destination, full_load).reasons  # rejected at 3 kg
    result = call(world, subtasks=[{**SPLIT_LOAD, "payload_kg": 4.5}])
    assert result.ok, result.error
    shares = _members(result)["load"]
    assert 1.5 - 1e-3 <= shares["weak"] <= 2.2 and shares["full"] <= 3.0
    assert all(m["battery_after_ratio"] >= 0.2 for m in result.result["team"])


def test_a_sensor_role_goes_to_a_uav_that_carries_it_and_says_why_the_others_do_not(call, downtown):
    fleet = [
        _uav("near_no_camera", 110.0, 100.0),
        _uav("far_camera", 400.0, 300.0, sensors=["camera"], payload_capacity_kg=0.0),
        _uav("cargo", 120.0, 110.0),
    ]
    film = {"id": "film", "origin": "accident_site_3", "destination": "accident_site_3", "required_sensors": ["camera"]}
    deliver = {"id": "deliver", "origin": "hospital_A", "destination": "accident_site_3", "payload_kg": 2.0}
    result = call(downtown.updated(fleet=fleet), subtasks=[film, deliver])
    assert result.ok, result.error
    assert _members(result) == {"film": {"far_camera": 0.0}, "deliver": {"near_no_camera": 2.0}}
    reasons = _not_chosen(result)
    assert "film: lacks the sensor camera that film requires" in reasons["cargo"]
    assert "feasible for deliver but not needed" in reasons["cargo"]


def test_an_excluded_uav_is_never_chosen_and_the_result_says_so(call, downtown):
    world = downtown.updated(fleet=[_uav("best", 100.0, 100.0), _uav("other", 400.0, 400.0)])
    task = {"id": "go", "origin": "hospital_A", "destination": "school_2", "payload_kg": 1.0}
    assert _members(call(world, subtasks=[task]))["go"] == {"best": 1.0}
    result = call(world, subtasks=[task], excluded=["best"])
    assert result.ok and _members(result)["go"] == {"other": 1.0}
    assert _not_chosen(result)["best"] == "excluded by the request"
    assert not call(world, subtasks=[task], excluded=["best", "other"]).ok


def test_a_relay_second_leg_starts_when_the_first_has_landed(call, downtown):
    fleet = [_uav("first", 110.0, 100.0), _uav("second", 250.0, 390.0)]
    world = downtown.updated(fleet=fleet)
    leg1 = {"id": "leg1", "origin": "hospital_A", "destination": "police_2", "payload_kg": 1.0}
    leg2 = {"id": "leg2", "origin": "police_2", "destination": "school_2", "payload_kg": 1.0, "after": ["leg1"]}
    result = call(world, subtasks=[leg1, leg2])
    assert result.ok, result.error
    assert _members(result) == {"leg1": {"first": 1.0}, "leg2": {"second": 1.0}}
    finish = {s["id"]: s["finish_sec"] for s in result.result["subtasks"]}
    second = next(m for m in result.result["team"] if m["uav_id"] == "second")
    waiting = world.uav_index["second"].model_copy(update={"position": world.position_of("police_2")})
    task = AssignUavArgs(origin="police_2", destination="school_2", payload_kg=0.0)
    leg_sec = evaluate(world, waiting, world.position_of("police_2"), world.position_of("school_2"), task).eta_sec
    assert second["eta_sec"] < finish["leg1"]  # it would be there early, but waits for the hand-off
    assert finish["leg2"] == pytest.approx(finish["leg1"] + leg_sec, abs=0.11)
    assert result.result["makespan_sec"] == finish["leg2"]


def test_waypoints_are_part_of_the_leg_flown(call, downtown):
    world = downtown.updated(fleet=[_uav("a", 110.0, 100.0)])
    task = {"id": "go", "origin": "hospital_A", "destination": "metro_station_4"}
    direct = call(world, subtasks=[task]).result["team"][0]
    detour = call(world, subtasks=[{**task, "waypoints": ["police_2"]}]).result["team"][0]
    assert detour["eta_sec"] > direct["eta_sec"] and detour["energy_wh"] > direct["energy_wh"]


def test_min_energy_trades_time_for_energy(call, downtown):
    """A fast UAV far away against a slow one at the pick-up: the first lands sooner, the second spends less."""
    fleet = [_uav("fast_far", 600.0, 100.0, cruise_speed_mps=30.0), _uav("slow_near", 100.0, 100.0, cruise_speed_mps=5)]
    world = downtown.updated(fleet=fleet)
    task = {"id": "go", "origin": "hospital_A", "destination": "metro_station_4"}
    assert _members(call(world, subtasks=[task], objective="min_makespan"))["go"] == {"fast_far": 0.0}
    assert _members(call(world, subtasks=[task], objective="min_energy"))["go"] == {"slow_near": 0.0}


# --- no team: the binding constraint --------------------------------------------------------------------------------


def test_too_heavy_a_payload_names_the_payload(call, downtown):
    world = downtown.updated(fleet=[_uav("a", 110.0, 100.0), _uav("b", 130.0, 100.0, payload_capacity_kg=5.0)])
    heavy = {"id": "heavy", "origin": "hospital_A", "destination": "school_2", "payload_kg": 7.0}
    result = call(world, subtasks=[heavy])
    assert not result.ok and result.error.type == "payload_exceeds_capacity"
    assert result.result["binding_constraint"] == "payload" and result.result["subtask_id"] == "heavy"
    assert result.error.message == "sub-task heavy's payload 7 kg is more than the largest idle UAV (b) lifts 5 kg"
    assert result.error.suggested_actions[0] == "mark it split to share the load"  # 3 + 5 kg would lift it

    split = call(world, subtasks=[{**heavy, "payload_kg": 9.0, "split": True}])
    assert not split.ok and split.error.type == "payload_exceeds_capacity"
    assert split.error.message.endswith("the idle UAVs it may share (b, a) lift 8 kg together")


def test_an_unmet_deadline_names_the_subtask_and_by_how_much(call, downtown):
    world = downtown.updated(fleet=[_uav("a", 110.0, 100.0), _uav("b", 400.0, 120.0)])
    first = {"id": "first", "origin": "hospital_A", "destination": "metro_station_4"}
    late = {
        "id": "then",
        "origin": "metro_station_4",
        "destination": "school_2",
        "after": ["first"],
        "deadline_sec": 90,
    }
    result = call(world, subtasks=[first, late])
    assert not result.ok and result.error.type == "deadline_unreachable"
    assert result.result["binding_constraint"] == "deadline" and result.result["subtask_id"] == "then"
    by = result.result["late_by_sec"]
    assert by > 0 and f"{by:.0f} s after its deadline 90 s" in result.error.message
    assert "sub-task then" in result.error.message
    relaxed = call(world, subtasks=[first, {**late, "deadline_sec": 90 + by + 1}])
    assert relaxed.ok, relaxed.error


def test_a_sensor_nobody_idle_carries_is_named(call, downtown):
    fleet = [_uav("a", 110.0, 100.0, sensors=["camera"]), _uav("b", 130.0, 100.0, sensors=["thermal"], status="busy")]
    look = {"id": "look", "origin": "police_2", "destination": "police_2", "required_sensors": ["thermal"]}
    result = call(downtown.updated(fleet=fleet), subtasks=[look])
    assert not result.ok and result.error.type == "missing_sensor"
    assert result.error.message == "no idle UAV carries thermal, which sub-task look requires"


def test_fewer_uavs_than_subtasks_names_the_fleet_size(call, downtown):
    world = downtown.updated(fleet=[_uav("a", 110.0, 100.0), _uav("b", 130.0, 100.0)])
    sites = [{"id": f"site{i}", "origin": "hospital_A", "destination": place} for i, place in enumerate(PLACES[1:4])]
    result = call(world, subtasks=sites)
    assert not result.ok and result.error.type == "fleet_too_small"
    assert "at least 3 distinct UAVs but only 2" in result.error.message


def test_wind_beyond_every_limit_names_the_wind(call, downtown):
    world = downtown.updated(fleet=[_uav("a", 110.0, 100.0)])
    north = {"id": "north", "origin": "hospital_A", "destination": "hospital_B"}
    result = call(world, subtasks=[north])
    assert not result.ok and result.error.type == "wind_above_limit" and "north_gusts" in result.error.message


def test_a_team_the_candidates_lack_but_the_fleet_holds_is_recoverable(call, downtown):
    world = downtown.updated(fleet=[_uav("small", 110.0, 100.0), _uav("big", 400.0, 120.0, payload_capacity_kg=5.0)])
    task = {"id": "go", "origin": "hospital_A", "destination": "school_2", "payload_kg": 4.0}
    result = call(world, subtasks=[task], candidates=["small"])
    assert not result.ok and result.error.type == "no_team_among_candidates" and result.error.recoverable
    assert result.error.suggested_actions == ["add to the candidates: big"]


@pytest.mark.parametrize(
    ("subtasks", "message"),
    [
        ([{"id": "x", "origin": "hospital_A", "destination": "school_2", "after": ["y"]},
          {"id": "y", "origin": "school_2", "destination": "police_2", "after": ["x"]}], "cycle: x -> y -> x"),
        ([{"id": "x", "origin": "hospital_A", "destination": "school_2"}] * 2, "x repeated"),
        ([{"id": "x", "origin": "hospital_A", "destination": "school_2", "after": ["z"]}], "no sub-task of this request"),
    ],
)  # fmt: skip
def test_a_malformed_request_is_refused_with_what_is_wrong(call, downtown, subtasks, message):
    result = call(downtown, subtasks=subtasks)
    assert not result.ok and result.error.type == "invalid_team_request" and message in result.error.message


def test_an_oversized_request_is_refused_before_solving(call, downtown):
    fleet = [_uav(f"u{i}", 10.0 * i, 100.0) for i in range(60)]
    sites = [{"id": f"s{i}", "origin": "hospital_A", "destination": "school_2"} for i in range(11)]
    result = call(downtown.updated(fleet=fleet), subtasks=sites)
    assert not result.ok and result.error.type == "team_request_too_large"


def test_a_battery_that_cannot_keep_the_reserve_names_the_battery(call, downtown):
    world = downtown.updated(fleet=[_uav("low", 110.0, 100.0, battery_ratio=0.3)])
    task = {"id": "far", "origin": "hospital_A", "destination": "accident_site_3", "payload_kg": 1.0}
    result = call(world, subtasks=[task])
    assert not result.ok and result.error.type == "battery_reserve"
    assert result.result == {"binding_constraint": "battery", "subtask_id": "far"}
    assert "low: battery 0.30 minus" in result.error.message


def test_a_load_of_items_is_shared_in_whole_items_at_the_optimum(call, downtown):
    """8 kg as four 2 kg bags over a 5 kg and two 3 kg UAVs: the 5 kg one takes two bags (4 kg, not 5), each 3 kg
    one a bag (2 kg, not 3), so all three fly where 5 + 3 would do for loose cargo; brute force agrees."""
    fleet = [
        _uav("a", 130.0, 100.0),
        _uav("b", 200.0, 200.0),
        _uav("big", 110.0, 110.0, payload_capacity_kg=5.0, battery_capacity_wh=300.0),
    ]
    world = downtown.updated(fleet=fleet)
    bags = {**SPLIT_LOAD, "item_kg": 2.0}
    result = call(world, subtasks=[bags])
    assert result.ok, result.error
    shares = _members(result)["load"]
    assert sorted(shares.values()) == [2.0, 2.0, 4.0]
    args = team.AssignTeamArgs(subtasks=[bags])
    assert team.brute_force_team(world, args).shares_kg == team.optimal_team(world, args).shares_kg


def test_a_load_that_is_no_whole_number_of_items_is_refused(call, downtown):
    result = call(downtown, subtasks=[{**SPLIT_LOAD, "item_kg": 3.0}])
    assert not result.ok and "no whole number of 3 kg items" in result.error.message
