"""Every execute carries a safety certificate that re-checks offline from the certificate and the world alone, and
fails, naming the difference, when a waypoint, the world or the rule set changed."""

from __future__ import annotations

import contextlib
import copy
import io
import json

import pytest

from cli.main import main
from tests.support.cli import run_cli, run_json
from tests.support.paths import DOWNTOWN, EXAMPLES
from tools.certificate import SafetyCertificate, check_certificate
from tools.world import load_world

INSTRUCTION = "Send a drone from hospital_A to accident_site_3 within 10 minutes"


@pytest.fixture(scope="module")
def run_output(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One `cloudbrain run --json` with the rules model (module-scoped: capsys is per test, so stdout is caught
    here directly)."""
    folder = tmp_path_factory.mktemp("certified")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(
            [
                "run", "--world", str(DOWNTOWN), "--instruction", INSTRUCTION, "--model", "rules", "--json",
                "--db", str(folder / "runs.sqlite"), "--memory-path", str(folder / "memory"),
            ]
        )  # fmt: skip
    assert code == 0
    return json.loads(printed.getvalue())


@pytest.fixture
def certificate(run_output: dict) -> SafetyCertificate:
    assert run_output["status"] == "execute"
    return SafetyCertificate.model_validate(run_output["decision"]["certificate"])


def test_a_fresh_certificate_re_checks(certificate, downtown):
    assert certificate.trajectory.waypoints and certificate.trajectory.uav_id
    assert set(certificate.verdicts) == {"R1", "R2", "R3", "R4", "R5", "R6"}
    assert all(v["status"] == "pass" and v["robustness"] >= 0 for v in certificate.verdicts.values())
    assert certificate.engines["stl"] == "rtamt"
    assert [(s.seed, s.success) for s in certificate.simulations] == [(0, True), (1, True), (2, True)]
    assert check_certificate(certificate, downtown).valid


def test_a_moved_waypoint_fails_and_says_so(certificate, downtown):
    moved = certificate.model_copy(deep=True)
    moved.trajectory.waypoints[len(moved.trajectory.waypoints) // 2][0] += 40.0
    check = check_certificate(moved, downtown)
    assert not check.valid
    assert any(d.startswith("trajectory:") for d in check.differences), check.differences


def test_every_certified_stress_scenario_is_flown_again(certificate, downtown):
    """The check re-flies each seed: a record the simulator does not reproduce, even the last one, fails."""
    claimed = certificate.model_copy(deep=True)
    claimed.simulations[-1].events = [*claimed.simulations[-1].events, "near_miss"]
    check = check_certificate(claimed, downtown)
    assert not check.valid
    assert [d.split(" (")[0] for d in check.differences] == ["simulator: seed 2"], check.differences


def test_another_world_or_rule_set_fails_and_says_so(certificate, downtown):
    other_world = load_world(EXAMPLES / "suburban.json")
    assert any(d.startswith("world:") for d in check_certificate(certificate, other_world).differences)
    loosened = certificate.model_copy(deep=True)
    loosened.rule_set = {**copy.deepcopy(certificate.rule_set), "altitude_max_m": 400.0}
    check = check_certificate(loosened, downtown)
    assert not check.valid and any(d.startswith("rule set:") for d in check.differences), check.differences


def test_certify_check_exit_codes(run_output, tmp_path, capsys):
    run_file, moved_file = tmp_path / "run.json", tmp_path / "moved.json"
    run_file.write_text(json.dumps(run_output))
    code, report = run_json(capsys, "certify", "--check", str(run_file), "--world", str(DOWNTOWN))
    assert code == 0 and report == {"valid": True, "differences": []}
    moved = copy.deepcopy(run_output["decision"]["certificate"])
    moved["trajectory"]["waypoints"][1][1] += 25.0
    moved_file.write_text(json.dumps(moved))
    code, out, _ = run_cli(capsys, "certify", "--check", str(moved_file), "--world", str(DOWNTOWN))
    assert code == 3 and "INVALID" in out and "trajectory:" in out
    refusal = tmp_path / "refusal.json"
    refusal.write_text(json.dumps({"status": "safe_refusal", "decision": {"status": "safe_refusal"}}))
    code, _, err = run_cli(capsys, "certify", "--check", str(refusal), "--world", str(DOWNTOWN))
    assert code == 2 and "holds no certificate" in err and "Traceback" not in err


def test_an_execute_without_the_verifier_carries_no_certificate(tmp_path, capsys):
    code, out = run_json(
        capsys, "run", "--world", str(DOWNTOWN), "--instruction", INSTRUCTION, "--model", "rules",
        "--without", "verifier", "--db", str(tmp_path / "runs.sqlite"), "--memory-path", str(tmp_path / "memory"),
    )  # fmt: skip
    assert code == 0 and out["status"] == "execute"
    assert out["decision"]["certificate"] is None and not out["decision"]["verified"]
