"""The airspace ledger: exact 4D conflicts between volumes, atomic admission, pre-emption in one transaction, the
intent life cycle, and a ledger that never holds two conflicting active intents whatever the order of requests
(judged by a brute-force check written here, not by the ledger's own query)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ops.ledger import IntentState, Ledger, LedgerError, OperationalIntent, conflicts
from standards.volumes import LegVolume
from tests.support.airspace import share_airspace


def _box(x: float, y: float, size: float, lower: float, upper: float, t0: float, t1: float, leg: int = 0) -> LegVolume:
    ring = [(x, y), (x + size, y), (x + size, y + size), (x, y + size)]
    return LegVolume(leg=leg, ring=ring, lower_m=lower, upper_m=upper, t_start=t0, t_end=t1)


def _intent(*volumes: LegVolume, request: str = "r", priority: int = 0) -> OperationalIntent:
    return OperationalIntent(request_id=request, owner=request, priority=priority, volumes=list(volumes))


def _share_airspace(a: LegVolume, b: LegVolume) -> bool:
    return share_airspace(a.model_dump(), b.model_dump())


@pytest.mark.parametrize(
    ("other", "conflict"),
    [
        (_box(50, 50, 100, 30, 60, 0, 100), True),  # overlaps in space, altitude and time
        (_box(100, 0, 100, 30, 60, 0, 100), True),  # touches along an edge: kept apart only by a gap
        (_box(50, 50, 100, 60, 90, 0, 100), False),  # stacked: its floor is the other's ceiling
        (_box(50, 50, 100, 30, 60, 100, 200), False),  # after it: one ends as the other starts
        (_box(300, 300, 100, 30, 60, 0, 100), False),  # elsewhere
    ],
)
def test_volumes_conflict_exactly_when_they_share_airspace(other, conflict):
    mine = _box(0, 0, 100, 30, 60, 0, 100)
    found = conflicts([mine], [_intent(other, request="approved")])
    assert bool(found) is conflict
    if conflict:
        assert found[0].intent_id and found[0].from_sec == 0


volume = st.builds(
    _box,
    st.floats(0, 900),
    st.floats(0, 900),
    st.floats(5, 200),
    st.sampled_from([20.0, 40.0, 60.0]),
    st.sampled_from([50.0, 70.0, 120.0]),
    st.floats(0, 500),
    st.floats(510, 900),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(volume, min_size=1, max_size=4), st.lists(st.lists(volume, min_size=1, max_size=3), max_size=8))
def test_the_indexed_query_finds_what_brute_force_finds(mine, others):
    approved = [_intent(*vols, request=f"a{i}") for i, vols in enumerate(others)]
    expected = {i.intent_id for i in approved for a in mine for b in i.volumes if _share_airspace(a, b)}
    assert {c.intent_id for c in conflicts(mine, approved)} == expected


def test_admission_refuses_a_conflict_and_writes_nothing(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    first = _intent(_box(0, 0, 100, 30, 60, 0, 100), request="first")
    assert ledger.admit(first).conflicts == []
    second = _intent(_box(50, 50, 100, 30, 60, 50, 150), request="second")
    refused = ledger.admit(second).conflicts
    assert [c.intent_id for c in refused] == [first.intent_id]
    assert [i.intent_id for i in ledger.all()] == [first.intent_id]


def test_pre_empting_ends_the_other_in_the_same_transaction(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    planned = _intent(_box(0, 0, 100, 30, 60, 100, 200), request="planned")
    ledger.admit(planned)
    emergency = _intent(_box(0, 0, 100, 30, 60, 50, 150), request="emergency", priority=100)
    assert ledger.admit(emergency, pre_empting=[planned.intent_id]).pre_empted == [planned.intent_id]
    states = {i.request_id: (i.state, i.note) for i in ledger.all()}
    assert states["planned"][0] is IntentState.ended and emergency.intent_id in states["planned"][1]
    assert states["emergency"][0] is IntentState.accepted
    assert [i.request_id for i in ledger.active()] == ["emergency"]


def test_the_life_cycle_follows_the_clock(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    intent = _intent(_box(0, 0, 100, 30, 60, 10, 50))
    ledger.admit(intent)
    ledger.advance_clock(5.0)
    assert ledger.all()[0].state is IntentState.accepted
    ledger.advance_clock(20.0)
    assert ledger.all()[0].state is IntentState.activated
    ledger.advance_clock(50.0)
    assert ledger.all()[0].state is IntentState.ended and ledger.active(50.0) == []
    assert [i.intent_id for i in ledger.ended_before(60.0)] == [intent.intent_id]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(volume, min_size=1, max_size=3), min_size=2, max_size=12), st.randoms())
def test_no_order_of_requests_leaves_two_conflicting_active_intents(tmp_path_factory, requests, rng):
    ledger = Ledger(tmp_path_factory.mktemp("ledger") / "ledger.sqlite")
    for index, volumes in enumerate(requests):
        pre_empt = []
        active = ledger.active()
        if active and rng.random() < 0.3:  # now and then an emergency pre-empts whatever it meets
            pre_empt = [i.intent_id for i in active if any(_share_airspace(a, b) for a in volumes for b in i.volumes)]
        ledger.admit(_intent(*volumes, request=f"r{index}", priority=100 if pre_empt else 0), pre_empting=pre_empt)
    held = ledger.active()
    for a, b in itertools.combinations(held, 2):
        assert not any(_share_airspace(x, y) for x in a.volumes for y in b.volumes), (a.request_id, b.request_id)


def test_one_uav_is_never_booked_on_two_flights_at_once(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    first = _intent(_box(0, 0, 100, 30, 60, 0, 300), request="first").model_copy(update={"uav_id": "uav_01"})
    elsewhere = _intent(_box(900, 900, 50, 30, 60, 100, 400), request="second").model_copy(update={"uav_id": "uav_01"})
    assert ledger.admit(first).conflicts == []
    refused = ledger.admit(elsewhere).conflicts
    assert [(c.kind, c.intent_id) for c in refused] == [("uav", first.intent_id)]
    later = elsewhere.model_copy(update={"volumes": [_box(900, 900, 50, 30, 60, 300, 500)]})
    assert ledger.admit(later).conflicts == []  # once it has landed, it flies again


@pytest.mark.parametrize(
    ("victim", "why"),
    [
        (dict(t0=0, t1=200, priority=0), "already started when the emergency starts"),
        (dict(t0=100, t1=200, priority=100), "not of lower priority"),
        (dict(t0=100, t1=200, priority=0, x=500), "not in the emergency's way"),
    ],
)
def test_the_ledger_itself_refuses_a_pre_emption_it_should_not_make(tmp_path, victim, why):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    planned = _intent(
        _box(victim.get("x", 0), 0, 100, 30, 60, victim["t0"], victim["t1"]), request="planned",
        priority=victim["priority"],
    )  # fmt: skip
    ledger.admit(planned)
    emergency = _intent(_box(0, 0, 100, 30, 60, 50, 150), request="emergency", priority=100)
    admission = ledger.admit(emergency, pre_empting=[planned.intent_id, "oi_made_up"])
    assert admission.pre_empted == [], why
    states = {i.request_id: i.state for i in ledger.all()}
    assert states["planned"] is not IntentState.ended
    if "way" in why:  # nothing to withdraw, and nothing in the way either: admitted beside it
        assert admission.conflicts == [] and "emergency" in states
    else:
        assert admission.conflicts and "emergency" not in states


def test_a_malformed_row_is_a_ledger_error_not_a_traceback(tmp_path):
    import sqlite3

    db = tmp_path / "ledger.sqlite"
    ledger = Ledger(db)
    ledger.admit(_intent(_box(0, 0, 100, 30, 60, 0, 100)))
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE operational_intents SET body = '{not json'")
    with pytest.raises(LedgerError, match="malformed intent"):
        ledger.active()
    not_a_database = tmp_path / "words.txt"
    not_a_database.write_text("these are not the tables you are looking for " * 100)
    with pytest.raises(LedgerError, match="words.txt"):
        Ledger(not_a_database)
