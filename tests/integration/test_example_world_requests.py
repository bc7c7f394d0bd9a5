"""Ordinary requests on the example world, as a person writes them with ids: "Deliver a small parcel from X to Y."
for every ordered pair of its named places. Where an available UAV can fly the task, at least 90 % execute with the
rules model; every other outcome names its reason in words (which UAV, which region or zone, which limit); and the
gate's verdict on a plan does not hang on the scenario seed."""

from __future__ import annotations

import re

import pytest

from graph.runner import run_task
from nodes.context import Context
from tools.catalog import default_registry
from tools.world import World

WITHOUT_MEMORY = frozenset({"memory"})
# a reason in words names something of the world or a number with its unit, not only a failure type
CONCRETE = re.compile(r"\b(uav_\d+|[a-z]+_[a-z0-9_]+ \d|\d+(\.\d+)? ?(m/s|m|s|kg|Wh)\b|north_gusts|zone)")


def _pairs(world: World) -> list[tuple[str, str, bool]]:
    """(origin, destination, whether some available UAV can fly it) for every ordered pair of places."""
    registry = default_registry()
    places = [e.id for e in world.entities]
    return [
        (a, b, registry.call("assign_uav", world, {"origin": a, "destination": b}).ok)
        for a in places
        for b in places
        if a != b
    ]


@pytest.fixture(scope="module")
def outcomes(downtown: World) -> list[tuple[str, str, bool, object]]:
    context = Context(model="rules", without=WITHOUT_MEMORY)
    return [
        (a, b, servable, run_task(downtown, f"Deliver a small parcel from {a} to {b}.", context=context, db=None))
        for a, b, servable in _pairs(downtown)
    ]


def test_plain_requests_that_a_uav_can_serve_execute(outcomes):
    served = [(a, b, out) for a, b, servable, out in outcomes if servable]
    executed = [out for _, _, out in served if out.status == "execute"]
    assert len(served) >= 30  # the world's south and centre: not a handful of easy pairs
    assert len(executed) >= 0.9 * len(served), [
        (a, b, o.decision.get("reason")) for a, b, o in served if o not in executed
    ]
    for out in executed:  # executed means checked: verified and simulated on the default three scenarios
        assert out.decision["verified"] and out.decision["simulated"]
        assert [s["seed"] for s in out.decision["certificate"]["simulations"]] == [0, 1, 2]


def test_every_request_not_executed_names_its_reason_in_words(outcomes):
    for a, b, _, out in outcomes:
        if out.status == "execute":
            continue
        reason = " ".join([out.decision.get("reason", ""), (out.failure or {}).get("message", "")])
        assert CONCRETE.search(reason), (a, b, out.status, reason)


def test_requests_no_uav_can_serve_say_which_limit_rules_each_uav_out(outcomes):
    refused = [(a, b, out) for a, b, servable, out in outcomes if not servable]
    assert refused  # the gusty north: the wind plus gusts exceed every idle UAV's limit
    for a, b, out in refused:
        assert out.status != "execute"
        assert "wind + gusts" in (out.failure or {}).get("message", "") + str(out.decision), (a, b)


@pytest.mark.parametrize("seed", range(10))
def test_a_plain_request_executes_whatever_the_scenario_seed(downtown, seed):
    out = run_task(
        downtown,
        "Deliver a toxicology report from hospital_A to police_2.",
        context=Context(model="rules", without=WITHOUT_MEMORY, sim_seed=seed),
        db=None,
    )
    assert out.status == "execute", (seed, out.decision.get("reason"))
