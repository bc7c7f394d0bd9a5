"""Runs stored by an earlier version still replay and fork, with the settings they ran with.

tests/fixtures/stored_runs_f2152f7.sqlite.gz holds two threads written by commit f2152f7 (before graph/settings.py):
`stored-run`, a `cloudbrain run --model rules --without memory` on examples/downtown.json, and `legacy-run`, the same
request stored in the shape of runs from before the stress_scenarios setting (no such key in its run_config: it flew
one scenario). tests/fixtures/README.md says how they were made.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from graph.checkpoint import open_checkpointer
from graph.history import checkpoints, stored_state
from graph.session import Session
from tests.support.cli import run_cli
from tests.support.paths import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "stored_runs_f2152f7.sqlite.gz"


@pytest.fixture
def stored_runs(tmp_path: Path) -> str:
    """A copy of the fixture's store (replay and fork write to it)."""
    db = tmp_path / "runs.sqlite"
    with gzip.open(FIXTURE) as packed, db.open("wb") as unpacked:
        shutil.copyfileobj(packed, unpacked)
    return str(db)


def _checkpoint_before(db: str, thread: str, node: str) -> str:
    return next(c.checkpoint_id for c in checkpoints(open_checkpointer(db), thread) if c.next == [node])


@pytest.mark.parametrize(("thread", "scenarios"), [("stored-run", 3), ("legacy-run", 1)])
def test_a_stored_run_replays_with_the_settings_it_ran_with(capsys, stored_runs, thread, scenarios):
    session = Session.of_thread(open_checkpointer(stored_runs), thread)
    assert (session.context.model, session.context.without) == ("rules", frozenset({"memory"}))
    assert session.context.stress_scenarios == scenarios
    checkpoint = _checkpoint_before(stored_runs, thread, "simulate")
    code, out, _ = run_cli(
        capsys, "replay", "--db", stored_runs, "--thread", thread, "--checkpoint", checkpoint, "--json"
    )
    replayed = json.loads(out)
    assert code == 0 and replayed["status"] == "execute"
    assert len(replayed["decision"]["certificate"]["simulations"]) == scenarios


@pytest.mark.parametrize("thread", ["stored-run", "legacy-run"])
def test_fork_set_replaces_a_list_the_graph_appends_to(capsys, stored_runs, thread):
    """`--set tool_results=[]` empties the list: through the list's reducer it would have been appended to, and
    appending nothing leaves it as it was."""
    checkpoint = _checkpoint_before(stored_runs, thread, "verify")
    saver = open_checkpointer(stored_runs)
    assert stored_state(saver, thread, checkpoint).values["tool_results"]
    code, out, err = run_cli(
        capsys, "fork", "--db", stored_runs, "--thread", thread, "--checkpoint", checkpoint,
        "--set", "tool_results=[]", "--json",
    )  # fmt: skip
    assert code in (0, 4), err
    edited = next(c for c in checkpoints(saver, thread) if c.ran == ["edit"])
    assert stored_state(saver, thread, edited.checkpoint_id).values["tool_results"] == []
    assert json.loads(out)["thread_id"] == thread


def test_fork_refuses_an_edit_of_the_rounds_record_and_writes_nothing(capsys, stored_runs):
    checkpoint = _checkpoint_before(stored_runs, "stored-run", "verify")
    before = len(checkpoints(open_checkpointer(stored_runs), "stored-run"))
    code, _, err = run_cli(
        capsys, "fork", "--db", stored_runs, "--thread", "stored-run", "--checkpoint", checkpoint,
        "--set", "attempts=[]",
    )  # fmt: skip
    assert code == 2 and "cannot fork: attempts: the rounds' record is appended by the nodes" in err
    assert len(checkpoints(open_checkpointer(stored_runs), "stored-run")) == before
