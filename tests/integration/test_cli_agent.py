"""`cloudbrain run / trace / checkpoints / graph`: an agent run from the command line and what it leaves."""

from __future__ import annotations

import io
import json
import socket
import time

import pytest

from cli.main import main
from tests.support.cli import DOWNTOWN, run_cli, run_json
from tests.support.graph_fixtures import answer
from tests.support.ir_fixtures import GOOD_IR, NFZ_FORGOTTEN_IR, SEED_INSTRUCTION
from tests.support.openai_stub_server import OpenAIStubServer, StubReply


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
    assert run["db"] == db and run["thread_id"]
    code, report = run_json(capsys, "trace", "--db", db, "--thread", run["thread_id"])
    assert code == 0 and report["final"]["status"] == "execute"
    assert len(report["rounds"]) == run["rounds"] + 1 and report["rounds"][-1]["stage"] is None
    assert set(report["rounds"][0]) >= {"round", "stage", "error_type", "counterexample", "changes", "ir_diff"}
    code, listing = run_json(capsys, "checkpoints", "--db", db, "--thread", run["thread_id"])
    assert [c["ran"][0] for c in listing["checkpoints"] if c["ran"]][-1] == "finalize"


def test_trace_of_unknown_thread_is_a_clear_error(capsys, tmp_path):
    db = str(tmp_path / "runs.sqlite")
    assert run_json(capsys, *_rules_run(db, "known"))[0] == 0
    code, _, err = run_cli(capsys, "trace", "--db", db, "--thread", "nope")
    assert code == 2 and "nope" in err


def test_reading_a_store_that_is_not_there_is_one_line_and_makes_no_file(capsys, tmp_path):
    missing = tmp_path / "typo.sqlite"
    for argv in (("trace",), ("checkpoints",), ("show", "ir"), ("certify", "--world", DOWNTOWN)):
        code, out, err = run_cli(capsys, argv[0], "--db", str(missing), "--thread", "t", *argv[1:])
        assert code == 2 and out == "" and f"no checkpoint database at {missing}" in err
    assert not missing.exists()


def test_graph_prints_mermaid_without_the_dropped_node(capsys):
    code, out, _ = run_cli(capsys, "graph", "--without", "simulator")
    assert code == 0 and "graph TD" in out
    assert "simulate(" not in out and "verify(" in out


def test_the_text_output_leads_with_the_outcome_and_the_trace_is_a_line_per_round(capsys, tmp_path):
    """What a person reads first: what will fly and how it was checked; then one line per round naming what the IR
    said or changed and where it failed; the printed re-check command re-checks the certificate. The model (a
    scripted server) forgets the temporary no-fly zone, then chooses the repair the counterexample offers."""
    db = str(tmp_path / "runs.sqlite")
    with OpenAIStubServer(answer(NFZ_FORGOTTEN_IR), StubReply(content='{"repair": "avoid:nfz_temp_1"}')) as server:
        code, out, _ = run_cli(
            capsys, "run", "--world", DOWNTOWN, "--instruction", SEED_INSTRUCTION, "--model", "openai:scripted",
            "--base-url", server.url, "--api-key", "EMPTY", "--without", "memory,rag", "--db", db, "--thread", "t1",
        )  # fmt: skip
        choice = server.bodies()[1]
    assert choice["response_format"]["json_schema"]["schema"]["properties"]["repair"]["enum"] == ["avoid:nfz_temp_1"]
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].startswith("EXECUTE: uav_03 flies hospital_A -> accident_site_3, ETA ")
    assert lines[1].startswith("  checks: verified and simulated (3 stress scenario(s), seeds 0, 1, 2); 1 repair")
    recheck = f"cloudbrain certify --db {db} --thread t1 --world {DOWNTOWN}"
    assert lines[2].startswith("  certificate: trajectory sha256 ") and lines[2].endswith(f"re-check it: {recheck}")
    code, out, _ = run_cli(capsys, *recheck.split()[1:])
    assert code == 0 and out.strip() == "valid: the certificate re-checks"

    code, out, _ = run_cli(capsys, "trace", "--db", db, "--thread", "t1")
    rounds = [line for line in out.splitlines() if line.startswith("round ")]
    assert not any(line.startswith("  ir ") for line in out.splitlines())
    assert rounds[0].startswith('round 0: wrote entities.origin "hospital_A"; entities.destination "accident_site_3"')
    assert rounds[0].endswith("=> failed at verify: spec_violation (R1, t=48.8 s, robustness -40.0, nfz_temp_1)")
    assert rounds[1] == (
        'round 1: changed entities.avoid_zones +"nfz_temp_1"; verification_specs.ltl +"G !in_nfz_temp_1" => passed'
    )
    code, verbose, _ = run_cli(capsys, "trace", "--db", db, "--thread", "t1", "--verbose")
    assert '"repairs": [{"id": "avoid:nfz_temp_1"' in verbose and "  ir add /entities/avoid_zones/1: " in verbose


def test_a_run_that_is_not_executed_says_what_blocked_it_and_what_to_do(capsys, tmp_path):
    code, out, _ = run_cli(
        capsys, "run", "--world", DOWNTOWN, "--instruction", "Send a drone with a first-aid kit to the hospital.",
        "--model", "rules", "--without", "memory", "--db", str(tmp_path / "runs.sqlite"), "--thread", "t2",
    )  # fmt: skip
    assert code == 4
    headline, *rest = out.splitlines()
    assert headline.startswith(("REFUSED: ", "NEEDS AN OPERATOR: "))
    assert any(line.startswith("  what you can do: ") for line in rest)
    assert "certify" not in out


def test_show_prints_the_runs_ir_as_validate_reads_it_back(capsys, tmp_path):
    """`run`, then `show ... ir > ir.json`, then `validate --ir ir.json`: the README's way to a run's IR; `run --json`
    carries the same IR."""
    db = str(tmp_path / "runs.sqlite")
    code, run = run_json(capsys, *_rules_run(db, "ir-out"))
    assert code == 0
    code, out, _ = run_cli(capsys, "show", "--db", db, "--thread", "ir-out", "ir")
    assert code == 0
    (tmp_path / "ir.json").write_text(out, encoding="utf-8")
    code, report = run_json(capsys, "validate", "--world", DOWNTOWN, "--ir", str(tmp_path / "ir.json"))
    assert code == 0 and report["valid"]
    assert run["ir"] == json.loads(out)
    code, first, _ = run_cli(capsys, "show", "--db", db, "--thread", "ir-out", "attempts.0.ir", "--json")
    assert code == 0 and json.loads(first) == json.loads(out)  # the round's IR, on one line
    code, _, err = run_cli(capsys, "show", "--db", db, "--thread", "ir-out", "route")
    assert code == 2 and "no state value at 'route': the state has " in err and "candidate" in err


def _rules_run(db: str, thread: str, *extra: str) -> list[str]:
    return [
        "run", "--world", DOWNTOWN, "--instruction", SEED_INSTRUCTION, "--model", "rules", "--db", db,
        "--thread", thread, "--without", "memory", *extra,
    ]  # fmt: skip


def _repair_rounds_three_ways(capsys, monkeypatch, db: str, script) -> tuple[int, int, int]:
    """(run --json, trace --json, step --json) on the same scripted model: each reports the repair rounds."""
    common = ["--world", DOWNTOWN, "--instruction", SEED_INSTRUCTION, "--model", "openai:scripted", "--api-key",
              "EMPTY", "--without", "memory,rag", "--seed", "2", "--db", db]  # fmt: skip
    with OpenAIStubServer(*script()) as server:
        code, run = run_json(capsys, "run", *common, "--base-url", server.url, "--thread", "by-run")
    assert code == 0, run
    code, report = run_json(capsys, "trace", "--db", db, "--thread", "by-run")
    code, text, _ = run_cli(capsys, "trace", "--db", db, "--thread", "by-run")
    assert text.startswith(f"thread by-run: {report['repair_rounds']} repair round(s)")
    monkeypatch.setattr("sys.stdin", io.StringIO("continue\n"))
    with OpenAIStubServer(*script()) as server:
        code, out, _ = run_cli(capsys, "step", *common, "--base-url", server.url, "--thread", "by-step", "--json")
    stepped = json.loads(out)  # --json: stdout is the one JSON object, the dialogue went to stderr
    assert code == 0 and stepped["status"] == "execute"
    return run["rounds"], report["repair_rounds"], stepped["rounds"]


def test_run_trace_and_step_report_the_same_repair_rounds(capsys, monkeypatch, tmp_path):
    """One count (nodes.attempts.repair_rounds): 1 for a thread that needed a repair, 0 for one that did not."""
    repaired = lambda: [answer(NFZ_FORGOTTEN_IR), StubReply(content='{"repair": "avoid:nfz_temp_1"}')]  # noqa: E731
    assert _repair_rounds_three_ways(capsys, monkeypatch, str(tmp_path / "a.sqlite"), repaired) == (1, 1, 1)
    first_time = lambda: [answer(GOOD_IR)]  # noqa: E731
    assert _repair_rounds_three_ways(capsys, monkeypatch, str(tmp_path / "b.sqlite"), first_time) == (0, 0, 0)


def test_an_unreachable_model_server_is_exit_2_in_one_line_and_no_decision(capsys, monkeypatch, tmp_path):
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    db = str(tmp_path / "runs.sqlite")
    started = time.perf_counter()
    code, out, err = run_cli(
        capsys, "run", "--world", DOWNTOWN, "--instruction", SEED_INSTRUCTION, "--model", "openai:foo",
        "--base-url", url, "--without", "memory,rag", "--db", db, "--thread", "down",
    )  # fmt: skip
    assert time.perf_counter() - started < 5  # no retries of a refused connection
    assert code == 2 and out == ""
    [line] = err.strip().splitlines()
    assert line.startswith(f"cloudbrain run: model backend openai:foo: the server at {url} cannot be reached")
    assert "start the server, or fix --base-url" in line and "no decision" in line
    code, report = run_json(capsys, "trace", "--db", db, "--thread", "down")
    assert code == 0 and report["final"]["status"] is None and report["final"]["decision"] is None
    monkeypatch.setattr("sys.stdin", io.StringIO("continue\n"))
    code, out, err = run_cli(
        capsys, "step", "--world", DOWNTOWN, "--instruction", SEED_INSTRUCTION, "--model", "openai:foo",
        "--base-url", url, "--without", "memory,rag", "--db", db, "--thread", "down-step",
    )  # fmt: skip
    assert code == 2 and f"cloudbrain step: model backend openai:foo: the server at {url} cannot" in err


def test_replay_prints_the_world_it_used_and_its_help_says_the_thread_is_required(capsys, tmp_path):
    db = str(tmp_path / "runs.sqlite")
    code, _ = run_json(capsys, *_rules_run(db, "again"))
    code, listing = run_json(capsys, "checkpoints", "--db", db, "--thread", "again")
    first = listing["checkpoints"][1]["checkpoint_id"]
    code, out, _ = run_cli(capsys, "replay", "--db", db, "--thread", "again", "--checkpoint", first)
    assert code == 0 and f"cloudbrain certify --db {db} --thread again --world {DOWNTOWN}" in out
    assert "WORLD.json" not in out
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    assert "a new one" not in capsys.readouterr().out


def test_an_embedding_model_not_built_is_exit_2_in_one_line_and_no_decision(tmp_path):
    """An install problem is no decision of the agent's: `run` (and `memory search`) say what to build, exit 2."""
    import os
    import subprocess
    import sys

    from tests.support.paths import ROOT

    env = {**os.environ, "CLOUDBRAIN_EMBEDDINGS_DIR": str(tmp_path / "empty")}
    db = str(tmp_path / "runs.sqlite")
    run = [sys.executable, "-m", "cli.main", "run", "--world", DOWNTOWN, "--instruction", SEED_INSTRUCTION]
    for argv in (
        [*run, "--model", "rules", "--db", db, "--thread", "no-model", "--without", "memory"],
        [sys.executable, "-m", "cli.main", "memory", "search", "a crossed zone", "--memory-path", str(tmp_path / "m")],
    ):
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 2 and done.stdout == ""
        assert len(done.stderr.strip().splitlines()) == 1 and "memory.onnx_export" in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "trace", "--db", db, "--thread", "no-model", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert json.loads(done.stdout)["final"]["status"] is None  # nothing recorded as the agent's decision


def test_an_unknown_model_is_bad_input_before_anything_runs(capsys, tmp_path):
    db = tmp_path / "runs.sqlite"
    code, out, err = run_cli(capsys, *_rules_run(str(db), "nosuch")[:-2], "--model", "nosuch")
    assert code == 2 and out == "" and "unknown model 'nosuch'; choose one of:" in err
    assert not db.exists()  # refused before the store opened: no thread, no refusal recorded
