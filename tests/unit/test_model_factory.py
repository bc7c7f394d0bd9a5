"""The one model factory (models/factory.py): one model string and one ModelSettings give both the IR writer the graph
runs and the chat model the baselines run; a provider is one module plus one line in models.options.PROVIDERS."""

from __future__ import annotations

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import ValidationError

from evaluation.methods.chat import make_chat_model
from graph.runner import run_task
from models.base import GenerationRequest, GenerationResult, IRGenerator
from models.factory import ModelProvider, ModelSettings, init_chat_model, init_ir_writer
from models.local_backend import LocalChatModel, LocalGenerator
from models.openai_backend import OpenAIGenerator, ServerCapabilities
from models.options import PROVIDERS, ModelSpec, ProviderEntry, UnknownModel, model_choices, unknown_model
from models.oracle import OracleGenerator
from models.rules_chat import RulesChatModel
from models.rules_parser import RuleBasedGenerator
from nodes.context import Context
from tools.registry import ToolRegistry
from tools.world import World

INSTRUCTION = "Fly a parcel from hospital_A to accident_site_3, keep out of the school zone."
TOY_REPLY = "DECISION: refuse\nREASON: a toy model refuses everything"


# --- a toy provider: this class is the whole module a new provider needs -------------------------------------
class ToyWriter(IRGenerator):
    """Writes what the rules parser writes, under its own model name."""

    def __init__(self, model: str):
        self.model = model

    def generate(self, request: GenerationRequest) -> GenerationResult:
        return RuleBasedGenerator().generate(request).model_copy(update={"model": self.model})


class ToyProvider(ModelProvider):
    def ir_writer(self, spec, settings, *, registry, sample_gold) -> IRGenerator:
        return ToyWriter(spec.model)

    def chat_model(self, spec, settings, *, world, instruction) -> BaseChatModel:
        return FakeListChatModel(responses=[TOY_REPLY])


@pytest.fixture
def toy_registered(monkeypatch):
    """The one registry line."""
    monkeypatch.setitem(PROVIDERS, "toy", ProviderEntry(f"{__name__}:ToyProvider", ("toy:<model>",)))


def test_a_provider_is_one_module_and_one_registry_line(toy_registered, world: World):
    assert unknown_model("toy:echo") is None and "toy:<model>" in model_choices()
    writer = init_ir_writer("toy:echo")
    assert isinstance(writer, ToyWriter) and writer.model == "toy:echo"
    chat = init_chat_model("toy:echo", world=world, instruction=INSTRUCTION)
    assert chat.invoke([HumanMessage("plan")]).text == TOY_REPLY
    # the baselines' factory and the graph's node take it with no change of theirs
    assert isinstance(make_chat_model("toy:echo", world=world, instruction=INSTRUCTION), FakeListChatModel)
    assert isinstance(init_ir_writer("toy:echo", ModelSettings(max_new_tokens=64)), ToyWriter)


def test_the_graph_runs_on_a_registered_provider(toy_registered, world: World):
    """The toy writes the rules parser's IR: the graph's run with it ends as the `rules` run does."""
    outputs = {
        model: run_task(
            world,
            INSTRUCTION,
            context=Context(model=model, without=frozenset({"memory"})),
            checkpointer=InMemorySaver(),
            thread_id=f"factory-{model}",
            task_id="factory",
        )
        for model in ("toy:echo", "rules")
    }
    toy, rules = outputs["toy:echo"], outputs["rules"]
    assert toy.status == rules.status and toy.decision["uav_id"] == rules.decision["uav_id"]
    assert toy.ir == rules.ir and toy.rounds == rules.rounds


def test_an_unregistered_prefix_or_a_name_its_provider_does_not_take_is_refused():
    for bad in ("toy:echo", "gpt-4", "openai:", "local:smol", "rules:x", ""):
        assert unknown_model(bad) is not None
        with pytest.raises(UnknownModel, match="unknown model"):
            init_ir_writer(bad)


# --- each provider, both sides ----------------------------------------------------------------------------------
def test_each_model_string_gives_its_writer_and_its_chat_model(monkeypatch, world: World):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = ModelSettings(max_new_tokens=256, seed=7, timeout_sec=5, max_retries=1)
    writers = {model: init_ir_writer(model, settings, sample_gold=None) for model in ("local", "local:full", "rules")}
    assert isinstance(writers["local"], LocalGenerator) and writers["local"].mode == "slots"
    assert writers["local:full"].mode == "full" and isinstance(writers["rules"], RuleBasedGenerator)

    local = init_chat_model("local:slots", settings, world=world, instruction=INSTRUCTION)
    assert isinstance(local, LocalChatModel) and (local.max_tokens, local.seed) == (256, 7)
    assert isinstance(init_chat_model("rules", settings, world=world, instruction=INSTRUCTION), RulesChatModel)
    with pytest.raises(ValueError, match="not a chat model"):
        init_chat_model("oracle", settings, world=world, instruction=INSTRUCTION)
    with pytest.raises(ValueError, match="sample_gold"):
        init_ir_writer("oracle", settings)


def test_both_openai_models_are_chat_completions_clients_of_the_same_server(monkeypatch, world: World):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = ModelSettings(max_new_tokens=300, seed=3, timeout_sec=7, max_retries=1)
    writer = init_ir_writer("openai:qwen3-14b", settings, registry=ToolRegistry([]))
    chat = init_chat_model("openai:qwen3-14b", settings, world=world, instruction=INSTRUCTION)
    assert isinstance(writer, OpenAIGenerator) and isinstance(chat, ChatOpenAI)
    inner = writer._chat
    for client in (inner, chat):
        assert client.model_name == "qwen3-14b" and client.openai_api_base == "http://127.0.0.1:9/v1"
        assert client.use_responses_api is False and client.max_tokens == 300 and client.request_timeout == 7
    # the writer retries itself (a refused mode is told apart from a server in trouble); the chat model's client does
    assert (inner.max_retries, chat.max_retries) == (0, 1)
    assert chat.temperature == 0 and chat.seed == 3


def test_settings_refuse_an_unknown_field():
    with pytest.raises(ValidationError):
        ModelSettings(max_tokens=10)  # the field is max_new_tokens


def test_a_parsed_model_string_keeps_its_parts():
    from models.options import parse_model

    assert parse_model("openai:org/model:q4") == ModelSpec("openai:org/model:q4", "openai", "org/model:q4")
    assert parse_model("local") == ModelSpec("local", "local", "")


# --- the servers' structured-output modes -------------------------------------------------------------------
def test_server_capabilities_move_down_the_modes_and_never_back_up():
    capabilities = ServerCapabilities()
    server = ("http://a/v1", "m")
    assert capabilities.mode(*server) is None
    assert capabilities.refused(*server, "json_schema") == "json_object"
    assert capabilities.mode(*server) == "json_object"
    assert capabilities.refused(*server, "json_object") == "tools" and capabilities.mode(*server) == "tools"
    # a late refusal of a mode already passed (another client still asking json_schema) does not move it back up
    assert capabilities.refused(*server, "json_schema") == "json_object" and capabilities.mode(*server) == "tools"
    assert capabilities.mode("http://a/v1", "other") is None and capabilities.mode("http://b/v1", "m") is None
    capabilities.accepted("http://b/v1", "m", "text")
    assert capabilities.mode("http://b/v1", "m") == "text"


def test_a_servers_model_list_is_kept_per_server():
    capabilities = ServerCapabilities()
    assert capabilities.served_models("http://a/v1") is None
    capabilities.note_served_models("http://a/v1", [])
    assert capabilities.served_models("http://a/v1") == [] and capabilities.served_models("http://b/v1") is None


def test_the_oracle_writer_is_the_gold(world: World):
    gold = RuleBasedGenerator().generate(GenerationRequest(instruction=INSTRUCTION, world=world, task_id="t")).answer
    assert isinstance(init_ir_writer("oracle", sample_gold=gold), OracleGenerator)
