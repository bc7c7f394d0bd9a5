"""The openai:<model> path against a real OpenAI-compatible server (llama-cpp-python's, on the packaged GGUF),
not the stub: it refuses json_schema with a 500 naming response_format, and both the IR writer and the baselines'
chat path must settle on json_object with the schema. The whole graph and `bench run` go through it with
`--ir-format slots` (the compact answer a small model can fill): a full-IR prompt on this 135M model and 2 cores
takes minutes a call, and the server finishes a generation its client gave up on (the full format was checked by
hand with `cloudbrain run --model openai:smollm2`, see docs/servers.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from langchain_core.messages import HumanMessage

from benchmark.generator import generate_splits
from evaluation.methods.chat import invoke_chat, make_chat_model
from models.openai_backend import SERVER_CAPABILITIES, OpenAIGenerator
from tests.support.bench_db import stored_rows
from tests.support.cli import run_cli
from tests.support.llama_server import MODEL_ALIAS, llama_server
from tests.support.paths import DOWNTOWN
from tools.catalog import default_registry

MODEL = f"openai:{MODEL_ALIAS}"
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
ASK = "Answer with a JSON object whose field ok is true."
DEMO_INSTRUCTION = (
    "Send a drone with the defibrillator (1 kg) from hospital_A to accident_site_3 within 10 minutes, keep away from "
    "the school and the temporary no-fly zone."
)


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with llama_server() as url:
        yield url


def test_the_ir_writer_settles_on_json_object_and_decodes_under_the_schema(server_url):
    generator = OpenAIGenerator(MODEL_ALIAS, registry=default_registry(), base_url=server_url, max_tokens=32)
    text, usage, structured = generator._complete_json([{"role": "user", "content": ASK}], SCHEMA, 0.0)
    assert structured and isinstance(json.loads(text)["ok"], bool)
    assert usage.prompt_tokens > 0 and not usage.estimated  # the server's own usage
    assert SERVER_CAPABILITIES.mode(server_url, MODEL_ALIAS) == generator.structured_mode == "json_object"


def test_the_baselines_chat_path_gets_its_json_schema_format_through(world, server_url):
    chat = make_chat_model(MODEL, world=world, instruction="", base_url=server_url, max_tokens=32, max_retries=0)
    response_format = {"type": "json_schema", "json_schema": {"name": "Ok", "schema": SCHEMA}}
    reply = invoke_chat(chat, [HumanMessage(ASK)], model_name=MODEL, response_format=response_format)
    assert isinstance(json.loads(reply.text)["ok"], bool)


def test_an_unknown_model_is_one_line_naming_what_the_server_serves(capsys, server_url, tmp_path):
    _, out, err = run_cli(
        capsys, "run", "--world", str(DOWNTOWN), "--model", "openai:gpt-x", "--base-url", server_url,
        "--without", "memory", "--db", str(tmp_path / "runs.sqlite"),
        "--instruction", "Deliver a toxicology report (1 kg) from hospital_A to police_2.",
    )  # fmt: skip
    assert "does not serve gpt-x; it serves smollm2" in out + err


def test_the_graph_runs_through_the_server_writing_slots(capsys, server_url, tmp_path):
    code, out, err = run_cli(
        capsys, "run", "--world", str(DOWNTOWN), "--model", MODEL, "--base-url", server_url, "--ir-format", "slots",
        "--without", "memory", "--db", str(tmp_path / "runs.sqlite"), "--json", "--instruction", DEMO_INSTRUCTION,
    )  # fmt: skip
    output = json.loads(out)
    assert output["backend"] == {
        "model": MODEL, "base_url": server_url, "ir_format": "slots", "structured_output": "json_object"
    }  # fmt: skip
    # the model's own slots reached the tools: a decision of the graph, not a transport or parse failure
    assert output["usage"]["llm_calls"] >= 1 and output["decision"]["status"] in ("execute", "human_confirm")
    assert "llm_transport_error" not in json.dumps(output) and "invalid_json" not in json.dumps(output)


def test_bench_run_records_and_reports_the_mode_the_server_settled_on(capsys, server_url, tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    generate_splits(["dev_mini"], data, master_seed=83, workers=1, limit=1)
    code, _, err = run_cli(
        capsys, "bench", "run", "--split", "dev_mini", "--data", str(data), "--method", "cloudbrain_full,llm_p",
        "--model", MODEL, "--base-url", server_url, "--ir-format", "slots", "--workers", "1", "--out", str(out),
        "--quiet",
    )  # fmt: skip
    assert code == 0, err
    runs = stored_rows(out, "runs")
    assert sorted(run["method"] for run in runs) == ["cloudbrain_full", "llm_p"]
    for run in runs:
        assert run["structured_output"] == "json_object" and run["error"] is None and run["llm_calls"] >= 1
    assert run_cli(capsys, "bench", "report", str(out))[0] == 0
    assert "smollm2: json_object (2)" in (out / "report.md").read_text(encoding="utf-8")
