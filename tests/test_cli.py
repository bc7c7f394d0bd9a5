"""The `cloudbrain` commands as users call them (in-process, real files, real tools)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from graph_fixtures import EXAMPLES, GOOD_IR, NFZ_FORGOTTEN_IR, SEED_INSTRUCTION, answer
from openai_stub_server import OpenAIStubServer

from cli.main import main

DOWNTOWN = str(EXAMPLES / "downtown.json")


def run_cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, dict]:
    code, out, _ = run_cli(capsys, *argv, "--json")
    return code, json.loads(out)


@pytest.fixture()
def bad_world(tmp_path: Path) -> str:
    data = json.loads(Path(DOWNTOWN).read_text())
    data["fleet"][0]["battery_ratio"] = 1.7
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    return str(path)


@pytest.fixture()
def straight_trajectory(tmp_path: Path) -> str:
    """hospital_A -> accident_site_3 in a straight line at 60 m: through nfz_temp_1."""
    path = tmp_path / "straight.json"
    path.write_text(json.dumps({"waypoints": [[100, 100, 60, 0], [650, 420, 60, 60]], "goal": "accident_site_3"}))
    return str(path)


def test_validate_reports_valid_and_invalid_ir(capsys, tmp_path):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(GOOD_IR))
    bad.write_text(json.dumps({**GOOD_IR, "entities": {**GOOD_IR["entities"], "origin": "hospital_C"}}))
    assert run_json(capsys, "validate", "--world", DOWNTOWN, "--ir", str(good))[0] == 0
    code, report = run_json(capsys, "validate", "--world", DOWNTOWN, "--ir", str(bad))
    assert code == 3
    assert (report["stage"], report["error_type"], report["field"]) == (
        "entity_grounding",
        "unknown_entity",
        "entities.origin",
    )
    assert "hospital_A" in report["allowed"]


def test_plan_then_verify_and_simulate_the_planned_route(capsys, tmp_path):
    code, route = run_json(
        capsys, "plan", "--world", DOWNTOWN, "--from", "hospital_A", "--to", "accident_site_3",
        "--avoid", "nfz_temp_1,school_zone_2", "--uav", "uav_03",
    )  # fmt: skip
    assert code == 0
    assert all(len(wp) == 4 for wp in route["waypoints"])
    assert route["length_m"] > 0 and route["eta_sec"] > 0 and route["energy_wh"] > 0
    path = tmp_path / "route.json"
    path.write_text(json.dumps(route))  # a plan output is accepted as a trajectory as is
    code, verdict = run_json(
        capsys, "verify", "--world", DOWNTOWN, "--trajectory", str(path), "--deadline", "600", "--uav", "uav_03"
    )
    assert code == 0 and verdict["pass"] is True
    assert verdict["engine"]["stl"] == "rtamt" and verdict["engine"]["ltl"]
    first = run_cli(
        capsys, "simulate", "--world", DOWNTOWN, "--trajectory", str(path), "--seed", "7", "--stress", "high", "--json"
    )
    second = run_cli(
        capsys, "simulate", "--world", DOWNTOWN, "--trajectory", str(path), "--seed", "7", "--stress", "high", "--json"
    )
    events = json.loads(first[1])["events"]
    assert isinstance(events, list)
    strip = lambda text: {k: v for k, v in json.loads(text).items() if k != "provenance"}  # noqa: E731
    assert strip(first[1]) == strip(second[1])


def test_verify_flags_r1_and_marks_context_rules_not_applicable(capsys, straight_trajectory):
    code, verdict = run_json(capsys, "verify", "--world", DOWNTOWN, "--trajectory", straight_trajectory)
    assert code == 3 and verdict["pass"] is False
    r1 = next(v for v in verdict["violations"] if v["rule"] == "R1")
    assert r1["robustness"] < 0 and r1["time_sec"] > 0
    assert verdict["rules"]["R4"]["status"] == "not_applicable"  # no --deadline
    assert verdict["rules"]["R5"]["status"] == "not_applicable"  # no --uav


@pytest.mark.parametrize(
    "command",
    [
        ["validate", "--ir", DOWNTOWN],
        ["plan", "--from", "hospital_A", "--to", "accident_site_3"],
        ["verify", "--trajectory", DOWNTOWN],
        ["simulate", "--trajectory", DOWNTOWN],
        ["run", "--instruction", "fly", "--without", "memory,rag"],
    ],
)
def test_every_command_rejects_a_malformed_world_with_a_clear_message(capsys, bad_world, command):
    code, out, err = run_cli(capsys, command[0], "--world", bad_world, *command[1:])
    assert code == 2
    assert "fleet.0.battery_ratio" in err and "Traceback" not in err + out


def test_unknown_entity_in_plan_is_a_usage_error(capsys):
    code, _, err = run_cli(capsys, "plan", "--world", DOWNTOWN, "--from", "hospital_Z", "--to", "accident_site_3")
    assert code == 2 and "hospital_Z" in err


def test_run_json_then_trace_and_checkpoints(capsys, tmp_path):
    db = str(tmp_path / "runs.sqlite")
    code, run = run_json(
        capsys,
        "run",
        "--world",
        DOWNTOWN,
        "--instruction",
        SEED_INSTRUCTION,
        "--model",
        "rules",
        "--db",
        db,
        "--without",
        "memory",
    )
    assert code == 0 and run["status"] == "execute"
    assert run["decision"]["uav_id"] == "uav_03"
    assert all(len(wp) == 4 for wp in run["decision"]["waypoints"])
    assert run["db"] == db and run["thread_id"] and run["rounds"] == 0
    code, report = run_json(capsys, "trace", "--db", db, "--thread", run["thread_id"])
    assert code == 0 and report["final"]["status"] == "execute"
    assert set(report["rounds"][0]) >= {"round", "stage", "error_type", "counterexample", "ir_diff"}
    code, listing = run_json(capsys, "checkpoints", "--db", db, "--thread", run["thread_id"])
    assert [c["ran"][0] for c in listing["checkpoints"] if c["ran"]][-1] == "finalize"


def test_trace_of_unknown_thread_is_a_clear_error(capsys, tmp_path):
    code, _, err = run_cli(capsys, "trace", "--db", str(tmp_path / "none.sqlite"), "--thread", "nope")
    assert code == 2 and "nope" in err


def test_graph_prints_mermaid_without_the_dropped_node(capsys):
    code, out, _ = run_cli(capsys, "graph", "--without", "simulator")
    assert code == 0 and "graph TD" in out
    assert "simulate(" not in out and "verify(" in out


def _step(capsys, monkeypatch, server, keys: str, *extra: str) -> tuple[int, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(keys))
    code, out, _ = run_cli(
        capsys, "step", "--world", DOWNTOWN, "--instruction", SEED_INSTRUCTION, "--model", "openai:scripted",
        "--base-url", server.url, "--api-key", "EMPTY", "--without", "memory,rag", *extra,
    )  # fmt: skip
    return code, out


def test_step_through_a_full_run_with_scripted_keystrokes(capsys, monkeypatch, tmp_path):
    keys = "show instruction\nnext\nnext\nshow ir.entities.destination\nnext\nnext\nnext\ncontinue\n"
    with OpenAIStubServer(answer(GOOD_IR)) as server:
        code, out = _step(capsys, monkeypatch, server, keys, "--db", str(tmp_path / "s.sqlite"))
    assert code == 0
    assert "[before generate_ir] reads:" in out and "[after generate_ir] changed:" in out
    assert "raw_output" in out  # what generate_ir changed
    assert '"accident_site_3"' in out  # show ir.entities.destination after validate
    assert "run finished" in out and "status: execute" in out


def test_step_edit_changes_the_state_the_next_node_reads(capsys, monkeypatch, tmp_path):
    keys = 'next\nnext\nedit ir.entities.avoid_zones=["school_zone_2", "nfz_temp_1"]\ncontinue\n'
    with OpenAIStubServer(answer(NFZ_FORGOTTEN_IR)) as server:
        code, out = _step(capsys, monkeypatch, server, keys, "--db", str(tmp_path / "s.sqlite"))
    assert "set ir.entities.avoid_zones" in out
    assert code == 0 and "status: execute" in out


def test_step_fallback_asks_the_operator_and_records_approval(capsys, monkeypatch, tmp_path):
    keys = "continue\napprove\n"
    with OpenAIStubServer(answer(NFZ_FORGOTTEN_IR)) as server:
        code, out = _step(
            capsys, monkeypatch, server, keys, "--db", str(tmp_path / "s.sqlite"), "--max-repairs", "0", "--json"
        )
    assert "OPERATOR DECISION NEEDED" in out
    result = json.loads(out.strip().splitlines()[-1])
    assert result["status"] == "execute" and result["decision"]["approved_by_operator"] is True
    assert result["decision"]["verified"] is False  # approval is recorded as such, not as a pass


def test_step_quit_leaves_the_run_checkpointed(capsys, monkeypatch, tmp_path):
    with OpenAIStubServer(answer(GOOD_IR)) as server:
        code, out = _step(capsys, monkeypatch, server, "next\nquit\n", "--db", str(tmp_path / "s.sqlite"))
    assert code == 0 and "left thread" in out
