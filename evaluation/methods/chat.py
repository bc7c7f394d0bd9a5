"""Chat models for the chat baselines (direct_llm, json_only, react, the peers), and calling them.

`make_chat_model` gives the LangChain chat model of a model string through the model factory
(models.factory.init_chat_model): `openai:<name>` is ChatOpenAI, `local`, `local:full` and `local:slots` are all
the embedded SmolLM2 (the IR-writing modes mean nothing to a chat model), and `rules` is `RulesChatModel`
(models/rules_chat.py), the deterministic non-LLM reference of the chat methods. `oracle` only writes IRs (the gold
one), so it is no chat model.

The answer formats the methods ask for are the ones the rules model writes (models/rules_chat.py: the decision as
JSON, the decision as plain text); a tool result as the content of a tool message is here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable

from models.factory import ModelSettings, init_chat_model
from models.local_backend import LocalChatModel
from models.local_model import LocalModelError
from models.model_host import transport_error
from models.rules_chat import RulesChatModel, compact_json
from tools.contract import ToolResult
from tools.world import World

ChatModelFactory = Callable[..., BaseChatModel]


def as_tables(value: Any) -> Any:
    """Every list of records as {"columns": [...], "rows": [[...], ...]}: keys written once, not once per record
    (it halves the tokens of a 30-UAV fleet, and a small model's context is short)."""
    if isinstance(value, dict):
        return {key: as_tables(item) for key, item in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(item, dict) for item in value):
            columns = list(dict.fromkeys(key for item in value for key in item))
            return {"columns": columns, "rows": [[as_tables(item.get(c)) for c in columns] for item in value]}
        return [as_tables(item) for item in value]
    return value


def tool_message_content(result: ToolResult) -> str:
    """What a model reads back from a tool call: ok, the result (records as tables), warnings and the error with
    its suggested actions; the provenance is left out (hashes mean nothing to a model)."""
    body: dict[str, Any] = {"ok": result.ok}
    if result.result is not None:
        body["result"] = as_tables(result.result)
    if result.warnings:
        body["warnings"] = result.warnings
    if result.error is not None:
        body["error"] = result.error.model_dump(exclude={"blockers"})  # the message names them; ids are for ops
    return compact_json(body)


# --- making and calling chat models ---------------------------------------------------------------------------
def make_chat_model(
    model: str,
    *,
    world: World,
    instruction: str,
    base_url: str | None = None,
    api_key: str | None = None,
    max_tokens: int = 1024,
    seed: int = 0,
    timeout_sec: float = 120.0,
    max_retries: int = 2,
) -> BaseChatModel:
    """The chat model for a model string (a ChatBaseline's default ChatModelFactory); `world` and `instruction` are
    read by `rules` only. `base_url` / `api_key` default to OPENAI_BASE_URL / OPENAI_API_KEY."""
    settings = ModelSettings(
        base_url=base_url,
        api_key=api_key,
        max_new_tokens=max_tokens,
        seed=seed,
        timeout_sec=timeout_sec,
        max_retries=max_retries,
    )
    return init_chat_model(model, settings, world=world, instruction=instruction)


def bind_tools_and_answer_format(
    model: BaseChatModel, tools: Sequence[dict[str, Any]], response_format: dict[str, Any]
) -> Runnable[LanguageModelInput, AIMessage]:
    """The model with tools bound and, where the backend can hold both, the format of the answer it gives when it
    calls no tool (the local and rules models). An OpenAI-compatible server gets the tools alone, the format being
    in the prompt: the OpenAI client sends tools with a response_format through its structured-output path, which
    requires strict tools (every argument required), and servers such as vLLM then constrain the whole reply to
    the format, tool calls included."""
    if isinstance(model, LocalChatModel | RulesChatModel):
        return model.bind_tools(tools, response_format=response_format)
    return model.bind_tools(tools)


@contextmanager
def _transport_errors(model_name: str, base_url: str | None = None) -> Iterator[None]:
    """A backend that cannot answer (server unreachable or refusing, the local runtime missing or its context
    exceeded) raises LLMTransportError, as the IR writers do; anything else is a defect and escapes."""
    try:
        yield
    except LocalModelError as exc:
        raise transport_error(exc, model_name) from exc
    except Exception as exc:
        import openai  # already loaded whenever the model is a ChatOpenAI, the only source of its errors

        if not isinstance(exc, openai.OpenAIError):
            raise
        from models.openai_backend import openai_transport_error

        raise openai_transport_error(exc, model_name, base_url) from exc


def _openai_server(model: Runnable[LanguageModelInput, AIMessage]) -> tuple[str | None, str] | None:
    """(base URL, model name) of an OpenAI-compatible chat model, bound to tools or not; None for any other."""
    chat = getattr(model, "bound", model)
    if getattr(chat, "_llm_type", "") != "openai-chat":
        return None
    return (getattr(chat, "openai_api_base", None), str(getattr(chat, "model_name", "")))


def _accepted_format(server: tuple[str | None, str] | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    """A json_schema response_format as a json_object one carrying the schema where the server refused json_schema
    (models.openai_backend settles the mode; llama.cpp's server decodes under the schema either way)."""
    response_format = kwargs.get("response_format") or {}
    if server is None or response_format.get("type") != "json_schema":
        return kwargs
    from models.openai_backend import SERVER_CAPABILITIES  # loaded already: the model is a ChatOpenAI

    if SERVER_CAPABILITIES.mode(*server) in (None, "json_schema"):
        return kwargs
    schema = response_format["json_schema"]["schema"]
    return {**kwargs, "response_format": {"type": "json_object", "schema": schema}}


def invoke_chat(
    model: Runnable[LanguageModelInput, AIMessage], messages: list[BaseMessage], *, model_name: str, **kwargs: Any
) -> AIMessage:
    """One model call; LLMTransportError when the backend cannot answer. An OpenAI-compatible server that refuses
    a json_schema answer format is asked again with the schema in a json_object one, and from then on."""
    server = _openai_server(model)
    with _transport_errors(model_name, server[0] if server else None):
        try:
            return model.invoke(messages, **_accepted_format(server, kwargs))
        except Exception as exc:
            if server is None or not _refused_json_schema(server, kwargs, exc):
                raise
            return model.invoke(messages, **_accepted_format(server, kwargs))


def _refused_json_schema(server: tuple[str | None, str], kwargs: dict[str, Any], exc: Exception) -> bool:
    """Whether `exc` is the server refusing the json_schema format just sent; if so, the refusal is remembered."""
    import openai

    from models.openai_backend import SERVER_CAPABILITIES, refuses_mode

    sent = (kwargs.get("response_format") or {}).get("type") == "json_schema"
    if not (sent and isinstance(exc, openai.APIStatusError) and refuses_mode(exc, "json_schema")):
        return False
    SERVER_CAPABILITIES.refused(*server, "json_schema")
    return True


def sample_chat(
    model: BaseChatModel, messages: list[BaseMessage], n: int, *, model_name: str, **kwargs: Any
) -> tuple[list[AIMessage], int, int]:
    """`n` answers to one prompt as one call, and its (prompt, completion) tokens: an OpenAI-compatible server
    draws them in one request (`n`) and bills the prompt once; the local model draws one per seed and keeps the
    prompt in its KV cache between draws, so its prompt is counted once too."""
    server = _openai_server(model)
    with _transport_errors(model_name, server[0] if server else None):
        if getattr(model, "_llm_type", "") == "openai-chat":
            generations = model.generate([messages], n=n, **kwargs).generations[0]
            replies = [g.message for g in generations if isinstance(g.message, AIMessage)]
            usage = replies[0].usage_metadata if replies else None  # the request's total, on every choice
            return replies, (usage or {}).get("input_tokens", 0), (usage or {}).get("output_tokens", 0)
        replies = [model.invoke(messages, seed=seed, **kwargs) for seed in range(n)]
    usages = [r.usage_metadata or {} for r in replies]
    return replies, usages[0].get("input_tokens", 0), sum(u.get("output_tokens", 0) for u in usages)
