"""`local` and `local:slots`: the embedded offline model as a LangChain chat model and as an IR writer.

`LocalChatModel` is a LangChain `BaseChatModel` over the packaged GGUF (models/local_model.py, in a process of its
own: models/model_host.py): it takes role messages and an OpenAI-style `response_format` ({"type": "json_schema",
"json_schema": {"schema": ...}}) exactly as `ChatOpenAI` does, and enforces the schema token by token.
`LocalGenerator` writes the IR with it:

- `full`: the standard prompt (models/prompts.py) and the world-grounded LLMAnswer schema
  (models/grounded_schema.py), the same request a server-side model gets;
- `slots`: a compact prompt and the grounded slots schema (models/slots.py); deterministic code
  compiles the slots into the full IR.

With tools bound (`bind_tools`, as with ChatOpenAI) each answer is decoded under the schema of one turn: a call of
one bound tool, `{"tool": <name>, "args": <its argument schema>}`, or `{"final": <answer>}`, the answer under the
bound response_format. The chat template has no tool roles, so the tool list goes into the system message, a tool
call is shown as the assistant's JSON and a tool result as a user message.

No network, no API key, no download: a missing runtime or model file is a non-retryable transport error.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.messages.tool import ToolCall, tool_call
from langchain_core.messages.utils import convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool

from models.base import (
    SHARED_CACHE,
    ChatIRGenerator,
    GenerationRequest,
    ModelReply,
    PreparedCall,
    ResponseCache,
    TokenUsage,
)
from models.factory import Gold, ModelProvider, ModelSettings, default_registry
from models.grounded_schema import SCHEMA_NAME, grounded_answer_schema
from models.local_model import (
    DEFAULT_CONTEXT_TOKENS,
    MODEL_NAME,
    Completion,
    LocalModelError,
    packaged_model_path,
)
from models.model_host import shared_model, transport_error
from models.options import LOCAL_MODES, IRFormat, ModelSpec
from models.prompts import PROMPT_VERSION, build_prompt
from models.slots import SLOTS_VERSION, read_answer, slots_request
from tools.registry import ToolRegistry
from tools.world import World

# The slots answer is bounded (every list by its ids); a full IR may use the rest of the context (its schema bounds
# it). 384 holds a repair answer that avoids every zone of a real city (18 in Helsinki): at 192, 10 of 40 held-out
# real-context runs were cut mid-list in their repair rounds. Most of those tokens are forced by the schema.
MAX_TOKENS: dict[str, int | None] = {"full": None, "slots": 384}
TOOL_KEY, ARGS_KEY, FINAL_KEY = "tool", "args", "final"
ANSWER_CHOICES = (None, "auto", "none")  # the tool_choice values that let the model answer instead of calling


def json_schema_of(response_format: dict[str, Any] | None) -> dict[str, Any] | None:
    """The schema of an OpenAI-style response_format; {"type": "json_object"} means any JSON object."""
    if not response_format:
        return None
    if response_format.get("type") == "json_object":
        return {"type": "object"}
    if response_format.get("type") == "json_schema":
        return response_format["json_schema"]["schema"]
    raise ValueError(f"unsupported response_format type {response_format.get('type')!r}")


class LocalChatModel(BaseChatModel):
    """The embedded GGUF model as a LangChain chat model (schema-constrained when given a response_format)."""

    model_path: str | None = None  # None = the packaged SmolLM2-135M-Instruct
    n_ctx: int = DEFAULT_CONTEXT_TOKENS
    max_tokens: int | None = None  # None = the rest of the context
    temperature: float = 0.0
    seed: int = 0

    @property
    def _llm_type(self) -> str:
        return "cloudbrain-local-gguf"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": MODEL_NAME, "model_path": self.model_path, "n_ctx": self.n_ctx}

    def bind_tools(
        self,
        tools: Sequence[Any],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        response_format: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Tools in any form LangChain converts (OpenAI tool dicts, pydantic models, functions, BaseTools).

        tool_choice: None / "auto" = a tool or the final answer, "none" = the final answer, "any" / "required" /
        True = some tool, a tool name (or {"function": {"name": ...}}) = that tool. response_format: the schema of
        the final answer, as in ChatOpenAI.bind_tools (default: any JSON object).
        """
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, response_format=response_format, **kwargs)

    def complete(self, messages: list[BaseMessage], **kwargs: Any) -> Completion:
        runtime = shared_model(Path(self.model_path) if self.model_path else packaged_model_path(), self.n_ctx)
        tools = kwargs.get("tools")
        answer_schema = json_schema_of(kwargs.get("response_format"))
        prompt = runtime.chat_prompt(chat_messages(messages, tools))
        return runtime.complete(
            prompt,
            schema=turn_schema(tools, kwargs.get("tool_choice"), answer_schema) if tools else answer_schema,
            max_tokens=kwargs.get("max_tokens", self.max_tokens),
            temperature=kwargs.get("temperature", self.temperature),
            seed=kwargs.get("seed", self.seed),
        )

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if stop:
            raise ValueError("stop sequences are not supported by the local model; constrain with a schema")
        completion = self.complete(messages, **kwargs)
        content, tool_calls = completion.text, []
        if kwargs.get("tools"):
            content, tool_calls = read_turn(completion.text, call_id=f"call_{len(tool_calls_in(messages)) + 1}")
        message = AIMessage(
            content=content,
            tool_calls=tool_calls,
            usage_metadata=UsageMetadata(
                input_tokens=completion.prompt_tokens,
                output_tokens=completion.completion_tokens,
                total_tokens=completion.prompt_tokens + completion.completion_tokens,
            ),
            response_metadata={
                "model_name": MODEL_NAME,
                "finish_reason": completion.finish_reason,
                "forced_tokens": completion.forced_tokens,
                "reused_prompt_tokens": completion.reused_prompt_tokens,
                "seconds": completion.seconds,
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


# --- tool calling --------------------------------------------------------------------------------------------
def tool_calls_in(messages: Sequence[BaseMessage]) -> list[ToolCall]:
    return [call for message in messages if isinstance(message, AIMessage) for call in message.tool_calls]


def _chosen_tools(tools: list[dict[str, Any]], tool_choice: str | dict[str, Any] | bool | None) -> list[dict]:
    if tool_choice == "none":
        return []
    if tool_choice in (None, "auto", "any", "required", True):
        return tools
    name = tool_choice["function"]["name"] if isinstance(tool_choice, dict) else tool_choice
    chosen = [tool for tool in tools if tool["function"]["name"] == name]
    if not chosen:
        raise ValueError(f"tool_choice {name!r} names no bound tool")
    return chosen


def _object_with(key: str, value: dict[str, Any], defs: dict[str, Any], extra: dict[str, Any] | None = None) -> dict:
    """{key: value, **extra} as a closed object; value's $defs move to the root, where its $refs point."""
    value = dict(value)
    for name, definition in value.pop("$defs", {}).items():
        if defs.setdefault(name, definition) != definition:
            raise ValueError(f"two schemas define ${name} differently")
    properties = {**(extra or {}), key: value}
    return {"type": "object", "additionalProperties": False, "properties": properties, "required": list(properties)}


def turn_schema(
    tools: list[dict[str, Any]], tool_choice: str | dict[str, Any] | bool | None, answer_schema: dict[str, Any] | None
) -> dict[str, Any]:
    """One turn with tools: a call of one chosen tool, or (unless a tool is required) the final answer."""
    defs: dict[str, Any] = {}
    options = [
        _object_with(
            ARGS_KEY,
            tool["function"].get("parameters") or {"type": "object"},
            defs,
            extra={TOOL_KEY: {"const": tool["function"]["name"]}},
        )
        for tool in _chosen_tools(tools, tool_choice)
    ]
    if tool_choice in ANSWER_CHOICES:
        options.append(_object_with(FINAL_KEY, answer_schema or {"type": "object"}, defs))
    return {"anyOf": options, **({"$defs": defs} if defs else {})}


def render_tools(tools: list[dict[str, Any]]) -> str:
    """The tool list for the system message: names, arguments (? = optional) and descriptions."""
    lines = [
        f'TOOLS: call one with {{"{TOOL_KEY}": <name>, "{ARGS_KEY}": {{...}}}} and read its result; when done, '
        f'answer with {{"{FINAL_KEY}": <answer>}}.'
    ]
    for tool in tools:
        function = tool["function"]
        parameters = function.get("parameters") or {}
        required = set(parameters.get("required", []))
        args = ", ".join(a if a in required else f"{a}?" for a in parameters.get("properties", {}))
        lines.append(f"- {function['name']}({args}): {' '.join(function.get('description', '').split())}")
    return "\n".join(lines)


def chat_messages(messages: Sequence[BaseMessage], tools: list[dict[str, Any]] | None = None) -> list[dict[str, str]]:
    """Role/content messages for the chat template: a tool call as the assistant's JSON (what the model decodes),
    a tool result as a user message naming the tool, the tool list at the end of the system message."""
    names = {call["id"]: call["name"] for call in tool_calls_in(messages)}
    rendered: list[dict[str, str]] = []
    for message in messages:
        if isinstance(message, AIMessage) and message.tool_calls:
            calls = [
                json.dumps({TOOL_KEY: c["name"], ARGS_KEY: c["args"]}, ensure_ascii=False) for c in message.tool_calls
            ]
            rendered.append({"role": "assistant", "content": "\n".join(calls)})
        elif isinstance(message, ToolMessage):
            tool = message.name or names.get(message.tool_call_id, "the tool")
            rendered.append({"role": "user", "content": f"Result of {tool}: {message.text}"})
        else:
            rendered.append(convert_to_openai_messages(message))
    if tools:
        tool_list = render_tools(tools)
        if rendered and rendered[0]["role"] == "system":
            rendered[0] = {"role": "system", "content": f"{rendered[0]['content']}\n\n{tool_list}"}
        else:
            rendered.insert(0, {"role": "system", "content": tool_list})
    return rendered


def read_turn(text: str, *, call_id: str) -> tuple[str, list[ToolCall]]:
    """(content, tool calls) of a turn decoded under turn_schema; an answer cut off by max_tokens stays text."""
    try:
        turn = json.loads(text)
    except json.JSONDecodeError:
        return text, []
    if TOOL_KEY in turn:
        return "", [tool_call(name=turn[TOOL_KEY], args=turn[ARGS_KEY], id=call_id)]
    return json.dumps(turn[FINAL_KEY], ensure_ascii=False), []


class LocalGenerator(ChatIRGenerator):
    """Writes the IR with the embedded model; `mode` picks the full grounded IR or the compiled slots."""

    def __init__(
        self,
        *,
        registry: ToolRegistry,
        mode: IRFormat = "full",
        chat: LocalChatModel | None = None,
        temperature: float = 0.0,
        repair_temperature: float = 0.2,
        cache: ResponseCache = SHARED_CACHE,
        max_new_tokens: int | None = None,
    ):
        self.model = f"local:{mode}"
        self.mode = mode
        self.accepts_json_schema = mode == "full"  # slots have their own schema
        self._registry = registry
        caps = [cap for cap in (MAX_TOKENS[mode], max_new_tokens) if cap is not None]
        self._chat = chat or LocalChatModel(max_tokens=min(caps, default=None))
        self._temperatures = (temperature, repair_temperature)
        self._cache = cache

    def _messages_and_schema(self, request: GenerationRequest) -> tuple[list[dict[str, str]], dict[str, Any]]:
        if self.mode == "slots":
            return slots_request(request)
        schema = request.json_schema or grounded_answer_schema(request.world, self._registry, request.task_id)
        return build_prompt(request, self._registry).messages(), schema

    def _prepare(self, request: GenerationRequest, temperature: float) -> PreparedCall:
        messages, schema = self._messages_and_schema(request)
        response_format = {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "schema": schema}}
        key = ResponseCache.key(*self._identity(), temperature, request.round, schema, messages)

        def run() -> ModelReply:
            try:
                message = self._chat.invoke(
                    messages, response_format=response_format, temperature=temperature, seed=request.round
                )
            except LocalModelError as exc:
                raise transport_error(exc, self.model) from exc
            raw_text, answer = read_answer(self.mode, message.text, schema, request)
            used = message.usage_metadata or {}
            usage = TokenUsage(
                prompt_tokens=used.get("input_tokens", 0), completion_tokens=used.get("output_tokens", 0)
            )
            version = SLOTS_VERSION if self.mode == "slots" else PROMPT_VERSION
            return ModelReply(raw_text, answer, usage, version, structured_output=True)

        return PreparedCall(key, run)

    def _identity(self) -> tuple[Any, ...]:
        return (self.model, self._chat.model_path, self._chat.max_tokens)

    def _complete_json(
        self, messages: list[dict[str, str]], schema: dict[str, Any], temperature: float
    ) -> tuple[str, TokenUsage, bool]:
        response_format = {"type": "json_schema", "json_schema": {"name": "choice", "schema": schema}}
        try:
            message = self._chat.invoke(messages, response_format=response_format, temperature=temperature)
        except LocalModelError as exc:
            raise transport_error(exc, self.model) from exc
        used = message.usage_metadata or {}
        usage = TokenUsage(prompt_tokens=used.get("input_tokens", 0), completion_tokens=used.get("output_tokens", 0))
        return message.text, usage, True


class LocalProvider(ModelProvider):
    """`local`, `local:slots`, `local:full`: the embedded model. The IR-writing mode comes from the model string
    (LOCAL_MODES); a chat model is the same model whatever the mode."""

    def ir_writer(
        self, spec: ModelSpec, settings: ModelSettings, *, registry: ToolRegistry | None, sample_gold: Gold | None
    ) -> LocalGenerator:
        return LocalGenerator(
            registry=registry if registry is not None else default_registry(),
            mode=LOCAL_MODES[spec.model],
            max_new_tokens=settings.max_new_tokens,
        )

    def chat_model(self, spec: ModelSpec, settings: ModelSettings, *, world: World, instruction: str) -> LocalChatModel:
        return LocalChatModel(max_tokens=settings.max_new_tokens, seed=settings.seed)
