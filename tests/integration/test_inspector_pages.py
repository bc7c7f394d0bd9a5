"""The inspector's pages without a browser (FastAPI's TestClient): untrusted text is escaped, a bad id or input is a
page that says what is wrong (404 / 400, never a traceback), `cloudbrain ui` binds to this machine by default, and
`cloudbrain render` draws a run as SVG or PNG."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from langgraph.checkpoint.memory import InMemorySaver

from cli.main import ALL, build_parser
from graph.runner import run_task
from graph.settings import RunSettings
from inspector.app import create_app
from nodes.context import Context
from tests.support.cli import DOWNTOWN, run_cli
from tests.support.ir_fixtures import SEED_INSTRUCTION
from tools.world import World

RULES = Context(model="rules", without=frozenset({"memory"}))
RULES_SETTINGS = RunSettings(model="rules", without={"memory"})
MARKUP = 'Deliver from hospital_A to hospital_B <img src=x onerror="alert(1)"> <script>alert(2)</script>'


@pytest.fixture(scope="module")
def client(downtown: World) -> TestClient:
    saver = InMemorySaver()
    run_task(downtown, MARKUP, context=RULES, thread_id="markup", checkpointer=saver)
    app = create_app(saver, settings=RULES_SETTINGS, world=downtown)
    return TestClient(app, base_url="http://127.0.0.1")


def test_markup_in_a_request_is_shown_as_text(client):
    for page in (client.get("/"), client.get("/thread/markup")):
        assert page.status_code == 200
        assert "<script>alert(2)" not in page.text and "<img src=x" not in page.text
        assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page.text


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/thread/nope", "no thread &#39;nope&#39;"),
        ("/thread/markup/checkpoint/0000", "no checkpoint 0000"),
        ("/bench", "without --results"),
        ("/bench/run/react%7Clocal%7Cx%7C0", "without --results"),
    ],
)
def test_a_bad_id_is_a_404_that_says_which(client, path, message):
    page = client.get(path)
    assert page.status_code == 404 and message in page.text and "Traceback" not in page.text


def test_a_bad_edit_is_refused_with_the_reason_and_no_thread_is_made(client):
    [first, *_] = [c for c in client.get("/thread/markup/checkpoints").text.split("checkpoint/")[1:]]
    checkpoint_id = first.split('"')[0]
    threads_before = client.get("/").text.count("thread-row")
    page = client.post(f"/thread/markup/checkpoint/{checkpoint_id}/fork", data={"edits": "no equals sign"})
    assert page.status_code == 400 and "cannot fork: &#39;no equals sign&#39; is not PATH=VALUE" in page.text
    assert client.get("/").text.count("thread-row") == threads_before
    assert client.post("/step/markup/jump").status_code == 404


def test_ui_binds_to_this_machine_unless_told_otherwise():
    args = build_parser(ALL).parse_args(["ui"])
    assert args.host == "127.0.0.1" and args.port == 8765


def test_render_draws_a_run_as_svg_or_png(capsys, tmp_path: Path):
    run_json = tmp_path / "run.json"
    code, out, _ = run_cli(
        capsys, "run", "--world", DOWNTOWN, "--model", "rules", "--without", "memory", "--db", str(tmp_path / "r.db"),
        "--instruction", SEED_INSTRUCTION, "--json",
    )  # fmt: skip
    run_json.write_text(out, encoding="utf-8")
    assert code == 0 and json.loads(out)["decision"]["waypoints"]
    code, _, _ = run_cli(
        capsys, "render", "--run", str(run_json), "--world", DOWNTOWN, "--out", str(tmp_path / "m.svg")
    )
    svg = (tmp_path / "m.svg").read_text(encoding="utf-8")
    assert code == 0 and svg.count('class="route"') == 1 and 'class="world-map"' in svg
    code, _, _ = run_cli(
        capsys, "render", "--run", str(run_json), "--world", DOWNTOWN, "--out", str(tmp_path / "m.png")
    )
    assert code == 0 and (tmp_path / "m.png").read_bytes().startswith(b"\x89PNG")
    code, _, err = run_cli(
        capsys, "render", "--run", str(run_json), "--world", DOWNTOWN, "--out", str(tmp_path / "m.gif")
    )
    assert code == 2 and "--out must end in .svg or .png" in err


def test_a_stepped_run_takes_an_edit_before_the_node_that_reads_it(client):
    page = client.post("/step", data={"instruction": "Deliver from hospital_A to hospital_Z", "model": "rules"})
    assert page.status_code == 200 and "paused before <code>retrieve</code>" in page.text
    thread = str(page.url).rsplit("/", 1)[1]
    page = client.post(f"/step/{thread}/edit", data={"edit": 'instruction="Deliver from hospital_A to hospital_B"'})
    assert "paused before <code>retrieve</code>" in page.text and "hospital_B" in page.text
    page = client.post(f"/step/{thread}/edit", data={"edit": "no path"})
    assert "cannot edit: &#39;no path&#39; is not PATH=VALUE" in page.text
    assert "cannot edit: an edit is PATH=VALUE" in client.post(f"/step/{thread}/edit", data={"edit": " "}).text
    page = client.post(f"/step/{thread}/continue")
    assert 'id="finished"' in page.text
    assert client.get(f"/thread/{thread}").text.count("Deliver from hospital_A to hospital_B") >= 1


def test_only_this_machine_and_its_own_pages_reach_the_inspector(client):
    assert client.get("/", headers={"host": "attacker.example:8765"}).status_code == 400  # DNS rebinding
    page = client.post("/step", data={"instruction": "x"}, headers={"origin": "http://attacker.example"})
    assert page.status_code == 403
    assert client.post("/step", data={"instruction": "x"}, headers={"origin": "http://127.0.0.1"}).status_code == 200


def _checkpoints(client, thread: str) -> list[tuple[str, str]]:
    """(written by, checkpoint id) of every checkpoint of the thread, oldest first."""
    text = client.get(f"/thread/{thread}/checkpoints").text
    rows = text.split('class="checkpoint-row"')[1:]
    return [(row.split("<td>")[3].split("</td>")[0], row.split("/checkpoint/")[1].split('"')[0]) for row in rows]


@pytest.mark.parametrize(
    ("written_by", "edit", "reason"),
    [
        ("validate", "attempts=5", "attempts: the rounds&#39; record is appended by the nodes"),
        ("validate", "run_config.base_url=http://attacker.example/v1", "run_config: the run&#39;s settings"),
        ("validate", "ir.constraints.altitude_max_m=Infinity", "Infinity is not a number a state may hold"),
        ("validate", "nonsense=1", "&#39;nonsense&#39; is not a field of the state"),
        ("", "ir.entities.origin=&quot;hospital_B&quot;", "comes before the run&#39;s input"),
    ],
)
def test_a_fork_refuses_what_a_state_cannot_take_and_makes_no_thread(client, written_by, edit, reason):
    checkpoint = next(cid for node, cid in _checkpoints(client, "markup") if node == written_by)
    threads_before = client.get("/").text.count("thread-row")
    page = client.post(f"/thread/markup/checkpoint/{checkpoint}/fork", data={"edits": edit.replace("&quot;", '"')})
    assert page.status_code == 400 and reason in page.text
    assert client.get("/").text.count("thread-row") == threads_before


def test_the_first_checkpoint_is_a_page_that_says_there_is_no_run_yet(client):
    [(_, first), *_] = _checkpoints(client, "markup")
    page = client.get(f"/thread/markup?checkpoint={first}")
    assert page.status_code == 404 and "comes before the input" in page.text


def test_two_edits_in_a_row_keep_the_pending_node_pending(client):
    page = client.post("/step", data={"instruction": "Deliver from hospital_A to hospital_B", "model": "rules"})
    thread = str(page.url).rsplit("/", 1)[1]
    client.post(f"/step/{thread}/next")  # retrieve ran; generate_ir is next
    for edit in ('instruction="Deliver from hospital_A to depot_1"', "gold_ir=null"):
        page = client.post(f"/step/{thread}/edit", data={"edit": edit})
        assert "paused before <code>generate_ir</code>" in page.text


def test_a_run_waiting_for_the_operator_says_so_and_shows_the_question(downtown):
    saver = InMemorySaver()
    interactive = Context(model="rules", without=frozenset({"memory"}), interactive=True)
    out = run_task(downtown, "Fly the usual route.", context=interactive, thread_id="waiting", checkpointer=saver)
    assert out.interrupted is not None
    client = TestClient(create_app(saver, settings=RULES_SETTINGS), base_url="http://127.0.0.1")
    listed = client.get("/?status=waiting for operator").text
    assert listed.count("thread-row") == 1 and "status-waiting_for_operator" in listed
    page = client.get("/thread/waiting").text
    assert 'id="pending"' in page and "approve / refuse / edit?" in page
