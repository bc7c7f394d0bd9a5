"""`cloudbrain step`: the interactive stepper driven by scripted keystrokes, against a scripted model."""

from __future__ import annotations

import io
import json

from tests.support.cli import DOWNTOWN, run_cli
from tests.support.graph_fixtures import answer
from tests.support.ir_fixtures import GOOD_IR, NFZ_FORGOTTEN_IR, SEED_INSTRUCTION
from tests.support.openai_stub_server import OpenAIStubServer


def _step(capsys, monkeypatch, server, keys: str, *extra: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr): with --json the dialogue goes to stderr and stdout is the one JSON object."""
    monkeypatch.setattr("sys.stdin", io.StringIO(keys))
    code, out, err = run_cli(
        capsys, "step", "--world", DOWNTOWN, "--instruction", SEED_INSTRUCTION, "--model", "openai:scripted",
        "--base-url", server.url, "--api-key", "EMPTY", "--without", "memory,rag",
        "--seed", "2",  # stress scenarios in which the scripted route flies clear (tests.support.graph_fixtures)
        *extra,
    )  # fmt: skip
    return code, out, err


def test_step_through_a_full_run_with_scripted_keystrokes(capsys, monkeypatch, tmp_path):
    keys = "show instruction\nnext\nnext\nshow ir.entities.destination\nnext\nnext\nnext\ncontinue\n"
    with OpenAIStubServer(answer(GOOD_IR)) as server:
        code, out, _ = _step(capsys, monkeypatch, server, keys, "--db", str(tmp_path / "s.sqlite"))
    assert code == 0
    assert "[before generate_ir] reads:" in out and "[after generate_ir] changed:" in out
    assert "raw_output" in out  # what generate_ir changed
    assert '"accident_site_3"' in out  # show ir.entities.destination after validate
    assert "run finished" in out and "\nEXECUTE: " in out


def test_step_edit_changes_the_state_the_next_node_reads(capsys, monkeypatch, tmp_path):
    keys = 'next\nnext\nedit ir.entities.avoid_zones=["school_zone_2", "nfz_temp_1"]\ncontinue\n'
    with OpenAIStubServer(answer(NFZ_FORGOTTEN_IR)) as server:
        code, out, _ = _step(capsys, monkeypatch, server, keys, "--db", str(tmp_path / "s.sqlite"))
    assert "set ir.entities.avoid_zones" in out
    assert code == 0 and "\nEXECUTE: " in out


def test_step_fallback_asks_the_operator_and_records_approval(capsys, monkeypatch, tmp_path):
    keys = "continue\napprove\n"
    with OpenAIStubServer(answer(NFZ_FORGOTTEN_IR)) as server:
        code, out, dialogue = _step(
            capsys, monkeypatch, server, keys, "--db", str(tmp_path / "s.sqlite"), "--max-repairs", "0", "--json"
        )
    assert "OPERATOR DECISION NEEDED" in dialogue
    result = json.loads(out)
    assert result["status"] == "execute" and result["decision"]["approved_by_operator"] is True
    assert result["decision"]["verified"] is False  # approval is recorded as such, not as a pass


def test_step_quit_leaves_the_run_checkpointed(capsys, monkeypatch, tmp_path):
    with OpenAIStubServer(answer(GOOD_IR)) as server:
        code, out, _ = _step(capsys, monkeypatch, server, "next\nquit\n", "--db", str(tmp_path / "s.sqlite"))
    assert code == 0 and "left thread" in out


def test_step_quit_prints_the_replay_command_that_resumes_it(capsys, monkeypatch, tmp_path):
    db = str(tmp_path / "s.sqlite")
    with OpenAIStubServer(answer(GOOD_IR)) as server:
        code, out, _ = _step(capsys, monkeypatch, server, "next\nshow route\nquit\n", "--db", db, "--thread", "q1")
    assert code == 0
    assert "no state value at 'route': the state has " in out and "instruction" in out
    [resume] = [line for line in out.splitlines() if "left thread q1 at " in line]
    command = resume.split("resume with: ", 1)[1]
    assert command.startswith(f"cloudbrain replay --db {db} --thread q1 --checkpoint ")
    with OpenAIStubServer(answer(GOOD_IR)) as server:
        code, out, _ = run_cli(capsys, *command.split()[1:], "--json")  # the replay meets the same scripted model
    assert code == 0 and json.loads(out)["status"] == "execute"


def test_step_edit_replaces_a_list_the_graph_appends_to(capsys, monkeypatch, tmp_path):
    """`edit tool_results=[]` empties the round's tool results: through the list's reducer the edit would have been
    appended to them (and appending nothing leaves them as they were)."""
    keys = "next\nnext\nnext\nedit tool_results=[]\nshow tool_results\nedit attempts=[]\nquit\n"
    with OpenAIStubServer(answer(GOOD_IR)) as server:
        code, out, _ = _step(capsys, monkeypatch, server, keys, "--db", str(tmp_path / "s.sqlite"))
    assert code == 0
    assert "[after execute_tools] changed:\n  tool_results = [{" in out  # there was a list to replace
    assert "set tool_results\n" in out and "tool_results = []\n" in out
    assert "cannot edit: attempts: the rounds' record is appended by the nodes" in out
