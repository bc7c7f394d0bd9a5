"""`cloudbrain validate / plan / verify / simulate` as users call them (in-process, real files, real tools),
and the clear error every command gives on a malformed world."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import DOWNTOWN, run_cli, run_json
from tests.support.ir_fixtures import GOOD_IR


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
