"""The openai:<model> path against a real OpenAI-compatible server (llama-cpp-python's, on the packaged GGUF),
not the stub: it refuses json_schema with a 500 naming response_format, and both the IR writer and the baselines'
chat path must settle on json_object with the schema. The prompts are short: a full-IR prompt on this 135M model
and 2 cores takes minutes a call, and the server finishes a generation its client gave up on (checked by hand with
`cloudbrain run --model openai:smollm2`, see the README's server table)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from langchain_core.messages import HumanMessage

from models.chat import invoke_chat, make_chat_model
from models.openai_backend import OpenAIGenerator, server_mode
from tests.support.cli import run_cli
from tests.support.llama_server import MODEL_ALIAS, llama_server
from tests.support.paths import DOWNTOWN
from tools.catalog import default_registry

MODEL = f"openai:{MODEL_ALIAS}"
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
ASK = "Answer with a JSON object whose field ok is true."


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with llama_server() as url:
        yield url


def test_the_ir_writer_settles_on_json_object_and_decodes_under_the_schema(server_url):
    generator = OpenAIGenerator(MODEL_ALIAS, registry=default_registry(), base_url=server_url, max_tokens=32)
    text, usage, structured = generator._complete_json([{"role": "user", "content": ASK}], SCHEMA, 0.0)
    assert structured and isinstance(json.loads(text)["ok"], bool)
    assert usage.prompt_tokens > 0 and not usage.estimated  # the server's own usage
    assert server_mode(server_url, MODEL_ALIAS) == generator.structured_mode == "json_object"


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
