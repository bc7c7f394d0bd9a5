"""`local` and `local:slots`: the embedded offline model as a LangChain chat model and as an IR writer.

`LocalChatModel` is a LangChain `BaseChatModel` over the packaged GGUF (models/local_model.py): it takes role
messages and an OpenAI-style `response_format` ({"type": "json_schema", "json_schema": {"schema": ...}}) exactly
as `ChatOpenAI` does, and enforces the schema token by token. `LocalGenerator` writes the IR with it:

- `full`: the standard prompt (models/prompts.py) and the world-grounded LLMAnswer schema
  (models/grounded_schema.py), the same request a server-side model gets;
- `slots`: a compact prompt and the grounded slots schema (models/slots.py); deterministic code
  compiles the slots into the full IR.

No network, no API key, no download: a missing runtime or model file is a non-retryable transport error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.messages.utils import convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

from models.base import (
    SHARED_CACHE,
    ChatIRGenerator,
    GenerationRequest,
    LLMTransportError,
    ModelReply,
    PreparedCall,
    ResponseCache,
    TokenUsage,
    extract_answer,
)
from models.grounded_schema import SCHEMA_NAME, grounded_answer_schema
from models.local_model import (
    DEFAULT_CONTEXT_TOKENS,
    MODEL_NAME,
    Completion,
    LocalModelError,
    packaged_model_path,
    shared_model,
)
from models.prompts import PROMPT_VERSION, build_prompt
from models.slots import SLOTS_VERSION, compile_slots, slots_messages, slots_schema, zones_to_keep
from tools.registry import ToolRegistry

LocalMode = Literal["full", "slots"]
# The slots answer is short and bounded; a full IR may use the rest of the context (its schema bounds it).
MAX_TOKENS: dict[str, int | None] = {"full": None, "slots": 192}


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

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        """Tool calling by constrained decoding: each answer is one call of a bound tool (its name and arguments
        under that tool's schema) or `{"final": ...}` (under the `response_format` schema when given)."""
        return self.bind(tool_functions=[convert_to_openai_tool(t)["function"] for t in tools], **kwargs)

    def complete(self, messages: list[BaseMessage], **kwargs: Any) -> Completion:
        runtime = shared_model(Path(self.model_path) if self.model_path else packaged_model_path(), self.n_ctx)
        prompt = runtime.chat_prompt(convert_to_openai_messages(messages))
        return runtime.complete(
            prompt,
            schema=json_schema_of(kwargs.get("response_format")),
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
        functions = kwargs.pop("tool_functions", None)
        if functions:
            # With tools bound, a response_format is the format of the final answer, one branch of the schema.
            final_schema = json_schema_of(kwargs.pop("response_format", None))
            messages = plain_tool_messages(messages)
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "tool_call", "schema": tool_call_schema(functions, final_schema)},
            }
        completion = self.complete(messages, **kwargs)
        content, tool_calls = completion.text, []
        if functions:
            content, tool_calls = split_tool_call(completion.text)
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


def tool_call_schema(functions: list[dict[str, Any]], final_schema: dict[str, Any] | None) -> dict[str, Any]:
    calls = [
        {
            "type": "object",
            "properties": {"tool": {"const": f["name"]}, "args": f.get("parameters") or {"type": "object"}},
            "required": ["tool", "args"],
            "additionalProperties": False,
        }
        for f in functions
    ]
    final = {
        "type": "object",
        "properties": {"final": final_schema or {"type": "object"}},
        "required": ["final"],
        "additionalProperties": False,
    }
    return {"anyOf": [*calls, final]}


def split_tool_call(text: str) -> tuple[str, list[dict[str, Any]]]:
    """(content, tool_calls) of a constrained answer; a cut-off answer stays text with no call."""
    try:
        answer = json.loads(text)
    except json.JSONDecodeError:
        return text, []
    if isinstance(answer, dict) and "tool" in answer:
        call_id = f"call_{abs(hash(text)) % 10**10}"
        return "", [{"name": answer["tool"], "args": answer.get("args") or {}, "id": call_id}]
    final = answer.get("final") if isinstance(answer, dict) else None
    return json.dumps(final if final is not None else answer), []


def plain_tool_messages(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Tool calls and results as plain turns: the model's chat template has no tool roles."""
    plain: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, AIMessage) and message.tool_calls:
            call = message.tool_calls[0]
            plain.append(AIMessage(content=json.dumps({"tool": call["name"], "args": call["args"]})))
        elif isinstance(message, ToolMessage):
            plain.append(HumanMessage(content=f"Result of {message.name}: {message.content}"))
        else:
            plain.append(message)
    return plain


class LocalGenerator(ChatIRGenerator):
    """Writes the IR with the embedded model; `mode` picks the full grounded IR or the compiled slots."""

    def __init__(
        self,
        *,
        registry: ToolRegistry,
        mode: LocalMode = "full",
        chat: LocalChatModel | None = None,
        temperature: float = 0.0,
        repair_temperature: float = 0.2,
        cache: ResponseCache = SHARED_CACHE,
    ):
        self.model = f"local:{mode}"
        self.mode = mode
        self.accepts_json_schema = mode == "full"  # slots have their own schema
        self._registry = registry
        self._chat = chat or LocalChatModel(max_tokens=MAX_TOKENS[mode])
        self._temperatures = (temperature, repair_temperature)
        self._cache = cache

    def _messages_and_schema(self, request: GenerationRequest) -> tuple[list[dict[str, str]], dict[str, Any]]:
        if self.mode == "slots":
            return slots_messages(request), slots_schema(request.world, zones_to_keep(request))
        schema = request.json_schema or grounded_answer_schema(request.world, self._registry, request.task_id)
        return build_prompt(request, self._registry).messages(), schema

    def _prepare(self, request: GenerationRequest, temperature: float) -> PreparedCall:
        messages, schema = self._messages_and_schema(request)
        response_format = {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "schema": schema}}
        key = ResponseCache.key(self.model, self._chat.model_path, temperature, request.round, schema, messages)

        def run() -> ModelReply:
            try:
                message = self._chat.invoke(
                    messages, response_format=response_format, temperature=temperature, seed=request.round
                )
            except LocalModelError as exc:
                raise LLMTransportError(f"{self.model}: {exc}", model=self.model, retryable=False) from exc
            raw_text, answer = self._answer(message.text, request)
            used = message.usage_metadata or {}
            usage = TokenUsage(
                prompt_tokens=used.get("input_tokens", 0), completion_tokens=used.get("output_tokens", 0)
            )
            version = SLOTS_VERSION if self.mode == "slots" else PROMPT_VERSION
            return ModelReply(raw_text, answer, usage, version, structured_output=True)

        return PreparedCall(key, run)

    def _answer(self, text: str, request: GenerationRequest) -> tuple[str, dict[str, Any] | None]:
        """(what the validator reads, the envelope); slots are compiled, a cut-off answer stays unparsed text."""
        if self.mode == "full":
            return text, extract_answer(text)
        try:
            slots = json.loads(text)
        except json.JSONDecodeError:
            return text, None
        answer = compile_slots(slots, request)
        return json.dumps(answer, ensure_ascii=False), answer
