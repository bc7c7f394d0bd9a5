"""The openai:<model> path against a real OpenAI-compatible server (llama-cpp-python's, on the packaged GGUF),
not the stub: it refuses json_schema with a 500, and the agent must still reach a decision made by the model."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from benchmark.generator import generate_splits
from evaluation.store import load_records
from graph.context import Context
from graph.runner import run_task
from models.openai_backend import server_mode
from tests.support.cli import run_cli
from tests.support.llama_server import MODEL_ALIAS, llama_server
from tests.support.paths import DOWNTOWN

MODEL = f"openai:{MODEL_ALIAS}"


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with llama_server() as url:
        yield url


def test_the_graph_reaches_a_decision_of_the_model_through_the_server(world, server_url):
    context = Context(
        model=MODEL, base_url=server_url, max_repairs=0, max_new_tokens=768, without=frozenset({"memory"})
    )
    out = run_task(world, "Deliver a toxicology report (1 kg) from hospital_A to police_2.", context=context, db=None)
    assert (out.failure or {}).get("error_type") != "llm_transport_error", out.decision.get("reason")
    assert out.usage.get("llm_calls", 0) >= 1
    assert server_mode(server_url, MODEL_ALIAS) == "json_object"  # json_schema refused with a 500, found once


def test_run_prints_the_mode_the_server_settled_on(capsys, server_url, tmp_path):
    code, out, _ = run_cli(
        capsys, "run", "--world", str(DOWNTOWN), "--model", MODEL, "--base-url", server_url, "--max-repairs", "0",
        "--without", "memory", "--db", str(tmp_path / "runs.sqlite"), "--json",
        "--instruction", "Deliver a toxicology report (1 kg) from hospital_A to police_2.",
    )  # fmt: skip
    payload = json.loads(out)
    assert payload["backend"] == {"model": MODEL, "base_url": server_url, "structured_output": "json_object"}
    assert payload["failure"] is None or payload["failure"]["error_type"] != "llm_transport_error"
    assert code in (0, 4)


def test_an_unknown_model_is_one_line_naming_what_the_server_serves(capsys, server_url, tmp_path):
    code, out, err = run_cli(
        capsys, "run", "--world", str(DOWNTOWN), "--model", "openai:gpt-x", "--base-url", server_url,
        "--without", "memory", "--db", str(tmp_path / "runs.sqlite"),
        "--instruction", "Deliver a toxicology report (1 kg) from hospital_A to police_2.",
    )  # fmt: skip
    assert "does not serve gpt-x; it serves smollm2" in out + err


def test_bench_run_through_the_server_records_decisions_and_the_setting(capsys, server_url, tmp_path):
    data = tmp_path / "data"
    generate_splits(["dev_mini"], data, master_seed=93, workers=1, limit=2)
    out = tmp_path / "out"
    code, _, err = run_cli(
        capsys, "bench", "run", "--split", "dev_mini", "--data", str(data), "--method", "cloudbrain_full",
        "--model", MODEL, "--base-url", server_url, "--max-repairs", "0", "--max-new-tokens", "768",
        "--workers", "1", "--out", str(out), "--quiet",
    )  # fmt: skip
    assert code == 0, err
    records = load_records(out)
    assert len(records) == 2 and all(r.llm_calls >= 1 and r.prompt_tokens > 0 for r in records)
    assert json.loads((out / "config.json").read_text())["structured_output"] == "auto"
