"""Operations mode on a dev_mini world: a 50-request stream through `cloudbrain ops`, judged by checks written here
(the ledger's rows read with sqlite3 and compared pairwise, each flight held by its own volumes), refusals that
name what blocks them, and an emergency that pre-empts a planned flight only when the operator approves."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from shapely.geometry import LineString, Point, Polygon

from benchmark.generator import generate_one, jobs_for
from benchmark.ops_streams import ops_world, request_stream
from benchmark.splits import SPLITS
from cli.main import main
from nodes.context import Context
from ops.ledger import IntentState, Ledger, OperationalIntent
from ops.stream import OpsRequest, OpsRunner
from standards.volumes import LegVolume
from tests.support.airspace import share_airspace
from tests.support.cli import run_cli
from tests.support.paths import EXAMPLES
from tools.world import World

WORLD_SEED, STREAM_SEED = 4711, 9  # any: the checks hold for every stream


def dev_mini_world() -> World:
    job = jobs_for(SPLITS["dev_mini"], WORLD_SEED, 1)[0]
    return ops_world(World.model_validate(json.loads(generate_one(job)[0])["world"]))


@pytest.fixture(scope="module")
def stream(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("ops")
    world = dev_mini_world()
    world_path, requests_path, db = folder / "world.json", folder / "requests.jsonl", folder / "ops.sqlite"
    world_path.write_text(world.model_dump_json(), encoding="utf-8")
    requests = request_stream(world, np.random.default_rng(STREAM_SEED), 50, stream_id="s")
    requests_path.write_text("".join(json.dumps(r) + "\n" for r in requests), encoding="utf-8")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["ops", "--world", str(world_path), "--requests", str(requests_path), "--db", str(db),
                     "--model", "rules", "--without", "memory", "--json"])  # fmt: skip
    decisions = json.loads(printed.getvalue())["decisions"]
    refused = any(d["status"] in ("safe_refusal", "human_confirm") for d in decisions)
    assert code == (4 if refused else 0)  # as `run`: 4 when a request was not served
    return {"decisions": decisions, "db": db, "requests": requests}


def _ledger_rows(db: Path) -> list[dict]:
    """The ledger's table read directly, not through ops.ledger."""
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT state, body FROM operational_intents").fetchall()
    return [{**json.loads(body), "state": state} for state, body in rows]


def test_a_fifty_request_stream_approves_no_two_conflicting_intents(stream):
    decisions = stream["decisions"]
    assert len({d["request_id"] for d in decisions}) == 50
    executed = [d for d in decisions if d["status"] == "execute"]
    assert len(executed) >= 15  # the stream is served, not refused wholesale
    approved = {r["intent_id"]: r for r in _ledger_rows(stream["db"])}  # ended ones too: none was pre-empted
    assert {d["intent_id"] for d in executed} == set(approved)
    for a, b in itertools.combinations(approved.values(), 2):
        clash = [(x["leg"], y["leg"]) for x in a["volumes"] for y in b["volumes"] if share_airspace(x, y)]
        assert not clash, f"{a['request_id']} and {b['request_id']} share airspace on legs {clash[:3]}"


def test_every_flight_lies_in_its_own_intents_volumes_on_the_streams_clock(stream):
    rows = {r["intent_id"]: r for r in _ledger_rows(stream["db"])}
    arrivals = {r["request_id"]: r["at_sec"] for r in stream["requests"]}
    for decision in (d for d in stream["decisions"] if d["status"] == "execute"):
        waypoints = np.asarray(decision["waypoints"])
        assert waypoints[0, 3] >= arrivals[decision["request_id"]]  # never departs before it was asked
        volumes = rows[decision["intent_id"]]["volumes"]
        for leg, (a, b) in enumerate(zip(waypoints[:-1], waypoints[1:])):
            volume = volumes[leg]
            path = LineString([a[:2], b[:2]]) if np.any(a[:2] != b[:2]) else Point(a[:2])
            assert Polygon(volume["ring"]).covers(path)
            assert volume["t_start"] <= a[3] and b[3] <= volume["t_end"]
            assert volume["lower_m"] <= min(a[2], b[2]) and max(a[2], b[2]) <= volume["upper_m"]


def test_every_refusal_names_what_blocks_it(stream):
    refused = [d for d in stream["decisions"] if d["status"] != "execute"]
    assert refused
    for decision in refused:
        assert decision["reason"] and not decision["waypoints"] and decision["intent_id"] is None
        for intent_id in decision["blocked_by"]:
            assert intent_id in decision["reason"]
    assert any(d["blocked_by"] for d in refused)  # on a busy stream, approved intents are what blocks most


# --- priority ---------------------------------------------------------------------------------------------------
def _box_over(world: World, entity_id: str, t0: float, t1: float) -> LegVolume:
    x, y = world.entity_index[entity_id].position
    ring = [(x - 60, y - 60), (x + 60, y - 60), (x + 60, y + 60), (x - 60, y + 60)]
    return LegVolume(leg=0, ring=ring, lower_m=0.0, upper_m=200.0, t_start=t0, t_end=t1)


def _places(world: World) -> tuple[str, str, str, str]:
    ids = [e.id for e in world.entities if e.kind.value in ("hospital", "depot", "accident_site", "warehouse")]
    return ids[0], ids[1], ids[2], ids[3]


@pytest.mark.parametrize("approve", [True, False])
def test_an_emergency_pre_empts_a_planned_flight_only_with_the_operators_approval(tmp_path, approve):
    world = dev_mini_world()
    origin, destination, other_a, other_b = _places(world)
    ledger = Ledger(tmp_path / "ops.sqlite")
    planned = OperationalIntent(
        request_id="cargo-1", owner="cityparcel", volumes=[_box_over(world, destination, 120.0, 600.0)],
        instruction=f"Send a drone from {other_a} to {other_b}",
    )  # fmt: skip
    assert ledger.admit(planned).conflicts == []
    asked = []

    def operator(request, intents):
        asked.append([i.intent_id for i in intents])
        return approve

    runner = OpsRunner(world=world, ledger=ledger, context=Context(model="rules", without=frozenset({"memory"})),
                       db=str(tmp_path / "ops.sqlite"), approve_pre_emption=operator)  # fmt: skip
    emergency = OpsRequest(at_sec=100.0, instruction=f"Emergency: send a drone from {origin} to {destination}",
                           priority="emergency", request_id="sos", owner="firstresponse")  # fmt: skip
    decisions = runner.decide(emergency)
    assert asked == [[planned.intent_id]]
    states = {i.intent_id: i.state for i in ledger.all()}
    first = decisions[0]
    if approve:
        assert first.status == "execute"
        assert first.pre_empted == [planned.intent_id] and first.waypoints[0][3] == 100.0
        assert states[planned.intent_id] is IntentState.ended
        told = next(d for d in decisions if d.status == "pre_empted")
        assert told.request_id == "cargo-1" and "sos" in told.reason and "operator approved" in told.reason
        replanned = next(d for d in decisions if d.replaces == planned.intent_id)
        assert replanned.request_id == "cargo-1_replan"
    else:
        assert states[planned.intent_id] is IntentState.accepted  # never pre-empted without approval
        assert first.pre_empted == []
        if first.status == "execute":  # it waits for the planned flight to release the airspace
            assert first.waypoints[0][3] >= 600.0
        else:
            assert planned.intent_id in first.reason
    held = [i for i in ledger.all() if i.state is not IntentState.ended]
    for a, b in itertools.combinations(held, 2):
        assert not any(share_airspace(x.model_dump(), y.model_dump()) for x in a.volumes for y in b.volumes), (
            a.request_id,
            b.request_id,
        )


# --- the command ------------------------------------------------------------------------------------------------
def test_a_bad_request_line_is_one_line_exit_2_before_anything_runs(tmp_path, capsys):
    requests = tmp_path / "requests.jsonl"
    requests.write_text('{"at_sec": 0, "instruction": "Send a drone from hospital_A to accident_site_3"}\n'
                        '{"at_sec": -5, "instruction": "x"}\n')  # fmt: skip
    db = tmp_path / "ops.sqlite"
    code, _, err = run_cli(capsys, "ops", "--world", "examples/downtown.json", "--requests", str(requests),
                           "--db", str(db), "--model", "rules")  # fmt: skip
    assert code == 2 and "line 2" in err and "at_sec" in err and len(err.strip().splitlines()) == 1
    assert not db.exists() or Ledger(db).all() == []


def test_the_readme_stream_run_twice_meets_its_first_run_unless_the_ledger_starts_fresh(tmp_path, monkeypatch, capsys):
    """The README's ops line without --db: the ledger is the default checkpoint file, named on stderr every run; a
    second run of the same file meets the first run's intents (refused: exit 4, naming them with the priority the
    request said), and --fresh-ledger serves it again (exit 0)."""
    monkeypatch.chdir(tmp_path)
    argv = ("ops", "--world", str(EXAMPLES / "downtown.json"), "--requests", str(EXAMPLES / "requests.jsonl"),
            "--model", "rules", "--without", "memory", "--json")  # fmt: skip
    runs = []
    for extra in ((), (), ("--fresh-ledger",)):
        code, out, err = run_cli(capsys, *argv, *extra)
        runs.append((code, json.loads(out)["decisions"], err))
    (first, served, said), (second, refused, said_again), (fresh, served_again, said_fresh) = runs

    assert first == 0 and all(d["status"] == "execute" for d in served) and len(served) >= 2
    assert "ledger: .cloudbrain/runs.sqlite, 0 intent(s) holding airspace" in said
    assert f"ledger: .cloudbrain/runs.sqlite, {len(served)} intent(s) holding airspace" in said_again
    assert "--fresh-ledger" in said_again  # the way to an empty one, where it is not empty
    assert second == 4 and all(d["status"] in ("human_confirm", "safe_refusal") for d in refused)
    blocked = next(d for d in refused if d["blocked_by"])
    assert "(medic, normal priority)" in blocked["reason"] and "priority 0" not in blocked["reason"]
    assert fresh == 0 and [d["status"] for d in served_again] == [d["status"] for d in served]
    assert f"{len(served)} deleted by --fresh-ledger" in said_fresh
