"""The stated-constraint families of normal deliveries : a return leg, a via point and an altitude floor
that the gold keeps, and altitude demands no flight can meet (UNSAT before any tool runs). Each is stated in both
languages, read back by the request parser the fidelity gate uses, and labelled by the tools."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmark.citygen import generate_city
from benchmark.gold import gold_registry, label_task
from benchmark.instructions import write_instruction
from benchmark.layouts import LAYOUTS
from benchmark.tasks import STATED_UNSAT_KINDS, ScenarioError, Task, build_task
from ir.fidelity import CONTRADICTORY
from language.stated import stated_constraints
from models.rules_parser import parse_instruction
from tools.trajectory import flight_phases
from tools.world import World

SEEDS = range(400)


def _made(seed: int, difficulty: str) -> tuple[Task, World, dict, np.random.Generator]:
    rng = np.random.default_rng(seed)
    draft = generate_city(LAYOUTS["downtown_city"], rng, f"w{seed}")
    task = build_task(draft, rng, "normal_delivery", difficulty)
    world = draft.build()
    text = write_instruction(task, draft.labels, None, rng, inject=False)
    return task, world, text, rng


def _first(wanted, difficulty: str = "medium") -> tuple[Task, World, dict]:
    for seed in SEEDS:
        try:
            task, world, text, _ = _made(seed, difficulty)
        except ScenarioError:  # this world cannot host the task; the generator draws another
            continue
        if wanted(task):
            return task, world, text
    raise AssertionError("no seed produced the family")


def _labelled_sat(wanted) -> tuple[Task, World, dict, object]:
    for seed in SEEDS:
        try:
            task, world, text, _ = _made(seed, "medium")
        except ScenarioError:
            continue
        if wanted(task):
            gold = label_task(task, world, gold_registry(), f"t{seed}", seed)
            if gold.label == "SAT":
                return task, world, text, gold
    raise AssertionError("no seed produced a SAT sample of the family")


def test_a_return_leg_is_stated_and_the_gold_flies_back():
    task, world, text, gold = _labelled_sat(lambda t: t.return_leg)
    far_end = task.waypoints[0]
    assert task.destination == task.origin
    assert ("back" in text["en"] or "returning" in text["en"]) and "返回" in text["zh"]
    route = gold.decision.waypoints
    # ends at the place it started from (it took off where the UAV stood, within the arrival tolerance of it)
    home = world.position_of(task.origin)
    assert math.dist(route[-1][:2], home) < 1.0 and math.dist(route[0][:2], home) <= world.arrival_tolerance_m
    far = world.position_of(far_end)
    assert min(math.dist(p[:2], far) for p in route) < 1.0  # and reached the far end
    for language in ("en", "zh"):
        assert stated_constraints(text[language], world).return_leg
    parsed = parse_instruction(text["en"], world).entities
    assert (parsed.origin, parsed.waypoints, parsed.destination) == (task.origin, [far_end], task.origin)


def test_a_via_point_is_named_in_both_languages_and_kept_by_the_gold():
    task, world, text, gold = _labelled_sat(lambda t: t.stated_demand == "via_point")
    via = task.waypoints[0]
    assert gold.ir.entities.waypoints == [via]
    assert "F at_" + via in gold.ir.verification_specs.ltl
    mention = next(m for m in text["mentions"] if m["id"] == via)
    assert mention["en"] in text["en"] and mention["zh"] in text["zh"]


def test_an_altitude_floor_is_stated_read_back_and_flown():
    task, world, text, gold = _labelled_sat(lambda t: t.stated_demand == "altitude_floor")
    floor = task.altitude_min_m
    assert floor > 30 and gold.ir.constraints.altitude_min_m == floor
    assert f"no lower than {floor:g} m" in text["en"] and f"不低于{floor:g}米" in text["zh"]
    for language in ("en", "zh"):
        stated = stated_constraints(text[language], world)
        assert stated.altitude_min_m == floor and not stated.blockers(world.grid.ceiling_m)
    phases = flight_phases(gold.decision.waypoints)  # the floor binds en route: between the climb and the descent
    assert min(p[2] for p in gold.decision.waypoints[phases.takeoff_end : phases.landing_start + 1]) >= floor


@pytest.mark.parametrize("kind", STATED_UNSAT_KINDS)
def test_impossible_altitude_demands_are_unsat_from_the_request_alone(kind):
    task, world, text = _first(lambda t: t.unsat_kind == kind, difficulty="unsat")
    gold = label_task(task, world, gold_registry(), "t", 0)
    assert (gold.label, gold.failure_modes, gold.decision.status) == ("UNSAT", [kind], "safe_refusal")
    assert [r.tool for r in gold.execution.results] == ["query_city_state"]  # nothing was planned
    low, high = gold.ir.constraints.altitude_min_m, gold.ir.constraints.altitude_max_m
    assert low < high <= world.grid.ceiling_m  # the IR holds a valid band; the demands are the label's reason
    for language in ("en", "zh"):
        blockers = stated_constraints(text[language], world).blockers(world.grid.ceiling_m)
        assert [error for error, _ in blockers] == [CONTRADICTORY], text[language]
