"""Operations mode names the approved intents that blocked a request from the decision's structured `blocked_by`
(reservation ids, mapped to their intents through the run's world), never from the reason's prose."""

from __future__ import annotations

from ops.ledger import OperationalIntent
from ops.stream import PLANNING, _named_by_decision, _Run, with_reservations
from standards.volumes import LegVolume
from tools.world import World


def _intent(request_id: str) -> OperationalIntent:
    volume = LegVolume(leg=0, ring=[(0, 0), (100, 0), (100, 20), (0, 20)], lower_m=50, upper_m=70,
                       t_start=100.0, t_end=160.0)  # fmt: skip
    return OperationalIntent(request_id=request_id, owner="cityparcel", volumes=[volume])


def _refused(world: World, blocked_by: list[str], reason: str) -> _Run:
    decision = {"status": "safe_refusal", "reason": reason, "blocked_by": blocked_by}
    return _Run(world=world, status="safe_refusal", reason=reason, values={"decision": decision}, thread_id="t")


def test_the_intents_named_are_those_whose_reservations_the_decision_lists(downtown):
    blocking, other = _intent("a"), _intent("b")
    world = with_reservations(downtown, [blocking, other], 0.0, PLANNING)
    # the reason names the other intent in passing: prose is not read
    run = _refused(world, [f"{blocking.intent_id}_leg0", "nfz_temp_1"], f"no path (not {other.intent_id})")
    assert _named_by_decision(run, [blocking, other]) == [blocking]


def test_a_decision_that_lists_no_reservation_names_no_intent(downtown):
    intent = _intent("a")
    world = with_reservations(downtown, [intent], 0.0, PLANNING)
    run = _refused(world, ["nfz_temp_1"], f"verify: R9 near {intent.intent_id}_leg0")
    assert _named_by_decision(run, [intent]) == []
