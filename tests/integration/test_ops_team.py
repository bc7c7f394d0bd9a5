"""Operations mode admits a fleet mission (a team execute) as one atomic set of operational intents: one intent per
member, all admitted in one ledger transaction or none. Judged on a real team run (examples/fleet_city.json, the
hand-written request parallel-1: two AEDs from the hospital, one UAV per site) with a real SQLite ledger, the rows
read with sqlite3, each member's flight held by its own volumes by standards' own coverage rule; and on split-1,
whose members fly one corridor in trail, admitted whole because a member's legs are held in time slices."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cli.ops import _line
from nodes.context import Context
from ops.bench import _extra_flight, stream_metrics
from ops.ledger import Ledger, MembersConflict, OperationalIntent, conflicts
from ops.stream import OpsRequest, OpsRunner, _misses_deadline
from standards.volumes import MEMBER_SLICE_SEC, LegVolume, uncovered_legs
from tests.support.airspace import share_airspace
from tests.support.paths import ROOT
from tools.world import World

REQUESTS = {
    r["id"]: r for r in map(json.loads, (ROOT / "examples" / "fleet_requests.jsonl").read_text("utf-8").splitlines())
}
PARALLEL = REQUESTS["parallel-1"]  # both within 2 minutes
SPLIT = REQUESTS["split-1"]  # 8 kg of sandbags, two UAVs from one depot to one site
CONTEXT = Context(model="rules", without=frozenset({"memory"}))


def _world() -> World:
    return World.model_validate_json((ROOT / "examples" / "fleet_city.json").read_text("utf-8"))


def _rows(db: Path) -> list[tuple]:
    """The ledger's table read directly, not through ops.ledger."""
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT intent_id, state, t_start, t_end, note, body FROM operational_intents "
                                  "ORDER BY intent_id").fetchall()  # fmt: skip


def _runner(folder: Path) -> OpsRunner:
    return OpsRunner(
        world=_world(), ledger=Ledger(folder / "ops.sqlite"), context=CONTEXT, db=str(folder / "runs.sqlite")
    )


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("ops-team")
    runner = _runner(folder)
    runs = []
    planned = runner._run
    runner._run = lambda *args, **kwargs: runs.append(planned(*args, **kwargs)) or runs[-1]  # keep the run's values
    request = OpsRequest(at_sec=0, instruction=PARALLEL["instruction"], request_id="aeds", owner="ems")
    (decision,) = runner.decide(request)
    assert decision.status == "execute", decision.reason
    rows = _rows(folder / "ops.sqlite")
    intents = sorted(
        (OperationalIntent.model_validate({**json.loads(body), "state": state, "note": note})
         for _, state, _, _, note, body in rows),
        key=lambda i: i.t_start,
    )  # fmt: skip
    return {"decision": decision, "rows": rows, "intents": intents, "db": folder / "ops.sqlite", "run": runs[-1]}


def _blocker(volumes: list[LegVolume]) -> OperationalIntent:
    """Another owner's flight through the given volumes, on a UAV of its own."""
    return OperationalIntent(request_id="other", owner="police", uav_id="uav_police", volumes=volumes)


def test_a_team_is_admitted_as_one_intent_per_member(team):
    decision, rows = team["decision"], team["rows"]
    assert decision.uav_id is None and decision.waypoints == []  # no one member stands for the mission
    assert len(decision.team) == 2 and len({m.uav_id for m in decision.team}) == 2
    assert {m.intent_id for m in decision.team} == {r[0] for r in rows} and len(rows) == 2
    by_id = {r[0]: json.loads(r[5]) for r in rows}
    for member in decision.team:
        body = by_id[member.intent_id]
        # the intent names its team (the decision's id), its run's request and its member
        assert member.intent_id == f"{decision.intent_id}.{member.subtask_id}:{member.uav_id}"
        assert body["team_id"] == decision.intent_id and body["subtask_id"] == member.subtask_id
        assert body["request_id"] == "aeds" and body["uav_id"] == member.uav_id
        volumes = [LegVolume.model_validate(v) for v in body["volumes"]]
        assert uncovered_legs(volumes, member.waypoints) == []  # its flight, on the stream's clock, in its volumes
    first, second = (json.loads(r[5]) for r in rows)
    assert not any(share_airspace(a, b) for a in first["volumes"] for b in second["volumes"])
    # what reads the ledger afterwards sees each member: where each UAV waits once its intent has ended
    ended = Ledger(team["db"]).ended_before(1e6)
    assert {i.intent_id: i.landing_xy for i in ended} == {
        m.intent_id: tuple(m.waypoints[-1][:2]) for m in decision.team
    }
    lines = _line(decision).splitlines()
    assert len(lines) == 3 and f"a team of 2 UAVs as {decision.intent_id}" in lines[0]
    assert all(any(m.intent_id in line and m.uav_id in line for line in lines[1:]) for m in decision.team)


def test_the_benchmarks_metrics_read_a_team_decision(team):
    decision = team["decision"].model_dump()
    arrival = max(m["waypoints"][-1][3] for m in decision["team"])
    assert _extra_flight([decision], {"aeds": arrival - 7.0}) == 7.0
    rows = [{**json.loads(r[5]), "note": r[4]} for r in team["rows"]]
    metrics = stream_metrics([decision], rows)
    assert metrics["served"] == 1 and metrics["conflicting_intent_pairs"] == 0 and metrics["later_starts"] == 0


def test_a_conflict_with_the_second_member_admits_none_of_the_team(team, tmp_path):
    first, second = team["intents"]  # in departure order
    blocker = _blocker([second.volumes[len(second.volumes) // 2]])
    assert conflicts(first.volumes, [blocker], first.uav_id) == []  # only the second member is in its way
    ledger = Ledger(tmp_path / "ledger.sqlite")
    assert not ledger.admit(blocker).conflicts
    before = _rows(tmp_path / "ledger.sqlite")
    admission = ledger.admit_all([first, second])
    assert admission.conflicts and {(c.of, c.intent_id) for c in admission.conflicts} == {
        (second.intent_id, blocker.intent_id)
    }
    assert _rows(tmp_path / "ledger.sqlite") == before  # the first member, free, was not admitted either


def test_a_failure_in_the_middle_of_admission_leaves_the_ledger_unchanged(team, tmp_path, monkeypatch):
    db = tmp_path / "ledger.sqlite"
    ledger = Ledger(db)
    elsewhere = team["intents"][0].volumes[0].model_copy(update={"t_start": 5000.0, "t_end": 5100.0})
    assert not ledger.admit(_blocker([elsewhere])).conflicts
    before = _rows(db)
    inserted = []
    insert = Ledger._insert

    def fails_on_the_second(self, cursor, intent):
        if inserted:
            raise RuntimeError("the disk went away")
        inserted.append(intent.intent_id)
        insert(self, cursor, intent)

    monkeypatch.setattr(Ledger, "_insert", fails_on_the_second)
    with pytest.raises(RuntimeError, match="disk went away"):
        ledger.admit_all(team["intents"])
    assert inserted == [team["intents"][0].intent_id]  # the first member was written inside the transaction
    assert _rows(db) == before  # and rolled back with it
    monkeypatch.setattr(Ledger, "_insert", insert)
    assert not ledger.admit_all(team["intents"]).conflicts  # the ledger is neither locked nor half-written
    assert len(_rows(db)) == len(before) + 2


def test_a_team_whose_own_members_conflict_is_never_admitted(team, tmp_path):
    first, second = team["intents"]
    overlapping = second.model_copy(update={"volumes": first.volumes})
    ledger = Ledger(tmp_path / "ledger.sqlite")
    with pytest.raises(MembersConflict, match=f"{first.intent_id} and {second.intent_id}"):
        ledger.admit_all([first, overlapping])
    assert _rows(tmp_path / "ledger.sqlite") == []


def test_an_intent_admitted_by_another_process_before_the_team_blocks_all_of_it(team, tmp_path):
    """Another process admits a flight through the second member's route after this request looked at the ledger
    and before its team is admitted: nothing of the team is admitted, and the decision names the member and the
    intent in its way."""
    second = team["intents"][1]
    member = second.intent_id.partition(".")[2]
    blocker = _blocker([second.volumes[len(second.volumes) // 2]])
    runner = _runner(tmp_path)
    other_process = Ledger(tmp_path / "ops.sqlite")
    admit_all = runner.ledger.admit_all

    def racing(intents, pre_empting=()):
        if not _rows(tmp_path / "ops.sqlite"):
            assert not other_process.admit(blocker).conflicts
        return admit_all(intents, pre_empting)

    runner.ledger.admit_all = racing
    (decision,) = runner.decide(OpsRequest(at_sec=0, instruction=PARALLEL["instruction"], request_id="aeds"))
    assert decision.status == "human_confirm" and decision.intent_id is None and decision.team == []
    assert f"member {member} (" in decision.reason and blocker.intent_id in decision.reason, decision.reason
    assert blocker.intent_id in decision.blocked_by
    assert [r[0] for r in _rows(tmp_path / "ops.sqlite")] == [blocker.intent_id]


def test_a_later_start_holds_every_member_to_its_deadline(team):
    run = team["run"]
    ends = {f"{m['subtask_id']}:{m['uav_id']}": m["waypoints"][-1][3] for m in run.values["decision"]["team"]}
    last, arrival = max(ends.items(), key=lambda item: item[1])
    deadline = PARALLEL["expect"]["deadline_sec"]
    assert _misses_deadline(run, deadline - arrival - 1.0) is None
    late = _misses_deadline(run, deadline - arrival + 1.0)
    assert late is not None and f"member {last} arrives" in late and f"deadline of {deadline:g} s" in late


def test_an_emergency_withdraws_a_team_whole_or_not_at_all(team, tmp_path):
    first, second = team["intents"]
    later = [i.model_copy(update={"volumes": [v.model_copy(update={"t_start": v.t_start + 600, "t_end": v.t_end + 600})
                                              for v in i.volumes]}) for i in (first, second)]  # fmt: skip
    ledger = Ledger(tmp_path / "ledger.sqlite")
    assert not ledger.admit_all(later).conflicts
    emergency = OperationalIntent(request_id="sos", priority=100, uav_id="uav_sos", volumes=[later[0].volumes[1]])
    emergency = emergency.model_copy(update={"volumes": [emergency.volumes[0].model_copy(update={"t_start": 0.0})]})
    assert conflicts(emergency.volumes, [later[1]]) == []  # in the first member's way only
    # the operator named only the member in the way: the team is not split, the emergency not admitted
    assert ledger.admit(emergency, pre_empting=[later[0].intent_id]).conflicts
    assert all(not r[4] for r in _rows(tmp_path / "ledger.sqlite"))
    admission = ledger.admit(emergency, pre_empting=[i.intent_id for i in later])
    assert not admission.conflicts and admission.pre_empted == sorted(i.intent_id for i in later)
    notes = {r[0]: r[4] for r in _rows(tmp_path / "ledger.sqlite")}
    assert all(notes[i.intent_id].startswith("pre-empted by") for i in later)


def test_a_split_load_flown_in_trail_is_admitted_one_intent_per_member(tmp_path):
    """split-1's two members fly the same corridor one behind the other, the team planner's 40 s or more apart; held in
    time slices, the ledger admits the team whole: one row per member, each flight in its own volumes, no two volumes of the two
    members sharing airspace at one time."""
    (decision,) = _runner(tmp_path).decide(
        OpsRequest(at_sec=0, instruction=SPLIT["instruction"], request_id="bags", owner="flood")
    )
    assert decision.status == "execute", decision.reason
    rows = _rows(tmp_path / "ops.sqlite")
    assert len(rows) == len(decision.team) == 2 and {r[0] for r in rows} == {m.intent_id for m in decision.team}
    bodies = {r[0]: json.loads(r[5]) for r in rows}
    assert {b["team_id"] for b in bodies.values()} == {decision.intent_id}
    ahead, behind = sorted(decision.team, key=lambda m: m.waypoints[0][3])
    assert behind.waypoints[0][3] - ahead.waypoints[0][3] >= 40.0  # in trail, separated in time
    for member in decision.team:
        volumes = [LegVolume.model_validate(v) for v in bodies[member.intent_id]["volumes"]]
        assert uncovered_legs(volumes, member.waypoints) == []  # its flight, on the stream's clock, in its volumes
        delay = volumes[-1].t_end - member.waypoints[-1][3]
        assert len(volumes) > len(member.waypoints) - 1  # its long legs cut in slices ...
        assert max(v.t_end - v.t_start for v in volumes) <= MEMBER_SLICE_SEC + delay + 1e-6  # ... of at most 10 s
    sliced = [bodies[m.intent_id]["volumes"] for m in (ahead, behind)]
    assert not any(share_airspace(a, b) for a in sliced[0] for b in sliced[1])
