"""`openai:<model>`: any OpenAI-compatible chat-completions server (OpenAI, vLLM, llama.cpp...) via ChatOpenAI.

The answer schema reaches the server in the most exact mode it accepts (STRUCTURED_MODES: json_schema, then
json_object with the schema, then a forced function call, then plain text), found on the first call from what it
refuses (any 4xx / 5xx whose body names the parameter) and kept per server and model (SERVER_CAPABILITIES);
`--structured-output` picks one. The answer is always extracted tolerantly from the text, since many servers accept
a mode and still answer in prose. A server in trouble (429, 5xx, timeouts) is retried with backoff and jitter; its
/v1/models is read once, so an unreachable server or an unknown model is one clear line. Token counts come from the
server's `usage`; nothing is tokenised locally (that would download encodings): a server that reports none gets a
stated estimate. `chat_openai` is the one place a ChatOpenAI is built, for the IR writer and the baselines alike.
"""

from __future__ import annotations

import json
import os
import random
import time
from typing import Any

import openai
from langchain_openai import ChatOpenAI

from ir.model import llm_answer_schema
from models.base import (
    SHARED_CACHE,
    ChatIRGenerator,
    GenerationRequest,
    LLMBackendUnavailable,
    LLMTransportError,
    ModelReply,
    PreparedCall,
    ResponseCache,
    TokenUsage,
)
from models.factory import Gold, ModelProvider, ModelSettings, default_registry
from models.options import (
    IR_FORMATS,
    STRUCTURED_MODES,
    STRUCTURED_OUTPUT_CHOICES,
    IRFormat,
    ModelSpec,
    StructuredMode,
    UnknownModel,
    parse_model,
)
from models.prompts import PROMPT_VERSION, build_prompt
from models.slots import SLOTS_VERSION, read_answer, slots_request
from tools.registry import ToolRegistry
from tools.world import World

DEFAULT_API_KEY = "EMPTY"  # local servers accept any key; the client refuses to start without one
# A refusal of a mode names the parameter in its body, whatever the status (llama-cpp-python's server answers 500).
_REFUSAL_WORDS: dict[str, tuple[str, ...]] = {
    "json_schema": ("response_format", "json_schema", "guided", "structured output"),
    "json_object": ("response_format", "json_object", "guided"),
    "tools": ("tools", "tool_choice", "function"),
}
RETRYABLE_STATUSES = (408, 409, 429)
BACKOFF_BASE_SEC = 0.5
BACKOFF_CAP_SEC = 8.0
RETRY_AFTER_CAP_SEC = 30.0
CHARS_PER_TOKEN = 4  # the stated estimate when a server reports no usage (nothing is tokenised locally)
ANSWER_TOOL = "answer"
SCHEMA_NAMES = {"full": "LLMAnswer", "slots": "IRSlots"}


class ServerCapabilities:
    """What this process has learned of the OpenAI-compatible servers it talks to: the structured-output mode each
    server accepts for each model (found from its refusals, most exact first), and the models each one lists. One
    instance per process (SERVER_CAPABILITIES): the graph builds a generator per round, and the baselines a chat
    model per task, and a known refusal should not cost one failed request each time."""

    def __init__(self) -> None:
        self._modes: dict[tuple[str | None, str], StructuredMode] = {}
        self._served: dict[str | None, list[str]] = {}  # empty: it lists none, or has no such route

    def mode(self, base_url: str | None, model_name: str) -> StructuredMode | None:
        """The mode settled on for a server and model; None before its first answer or refusal."""
        return self._modes.get((base_url, model_name))

    def accepted(self, base_url: str | None, model_name: str, mode: StructuredMode) -> None:
        """The server answered a request in `mode`."""
        self._modes[(base_url, model_name)] = mode

    def refused(self, base_url: str | None, model_name: str, mode: StructuredMode) -> StructuredMode:
        """The server refused `mode`: the next one is what it is asked for from now on (and is returned); a mode
        already settled further down the list stays."""
        following = STRUCTURED_MODES[STRUCTURED_MODES.index(mode) + 1]
        current = self._modes.get((base_url, model_name), mode)
        if STRUCTURED_MODES.index(following) > STRUCTURED_MODES.index(current):
            self._modes[(base_url, model_name)] = following
        return following

    def served_models(self, base_url: str | None) -> list[str] | None:
        """The model ids the server's /v1/models listed ([] when it lists none); None before it was read."""
        return self._served.get(base_url)

    def note_served_models(self, base_url: str | None, models: list[str]) -> None:
        self._served[base_url] = models


SERVER_CAPABILITIES = ServerCapabilities()


def settled_mode(model: str, base_url: str | None, requested: str) -> str | None:
    """For an `openai:<model>` spec, the structured-output mode its calls use: the one requested, or under "auto"
    the one this process settled on ("not reached" before any call); None for any other model."""
    try:
        spec = parse_model(model)
    except UnknownModel:
        return None
    if spec.provider != "openai":
        return None
    if requested != "auto":
        return requested
    return SERVER_CAPABILITIES.mode(server_url(base_url), spec.name) or "not reached"


def _request_options(mode: StructuredMode, schema: dict[str, Any], name: str) -> dict[str, Any]:
    if mode == "json_schema":
        return {
            "response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}
        }
    if mode == "json_object":
        return {"response_format": {"type": "json_object", "schema": schema}}
    if mode == "tools":
        tool = {
            "type": "function",
            "function": {"name": ANSWER_TOOL, "description": f"the {name}", "parameters": schema},
        }
        return {"tools": [tool], "tool_choice": {"type": "function", "function": {"name": ANSWER_TOOL}}}
    return {}


def refuses_mode(exc: openai.APIStatusError, mode: StructuredMode) -> bool:
    """Any 4xx / 5xx whose body names the parameter this mode sends (not, say, the context length)."""
    message = str(exc).lower()
    return exc.status_code >= 400 and any(word in message for word in _REFUSAL_WORDS.get(mode, ()))


def _backoff_sec(attempt: int, exc: Exception) -> float:
    """Exponential with jitter, or the server's Retry-After (capped)."""
    response = getattr(exc, "response", None)
    after = response.headers.get("retry-after") if response is not None else None
    try:
        return min(float(after), RETRY_AFTER_CAP_SEC)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return min(BACKOFF_CAP_SEC, BACKOFF_BASE_SEC * 2**attempt) * (1 + random.random() / 4)


def _retryable(exc: Exception) -> bool:
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code >= 500 or exc.status_code in RETRYABLE_STATUSES
    return isinstance(exc, openai.APIConnectionError)  # also covers timeouts


# Statuses that say the server, not this request, is at fault (raised after the retries): the run cannot go on.
UNAVAILABLE_STATUSES = (401, 403, 404, *RETRYABLE_STATUSES)
SERVER_FIX = "start the server, or fix --base-url (or OPENAI_BASE_URL)"


def _unreachable(exc: openai.APIConnectionError, model: str, base_url: str | None) -> LLMBackendUnavailable:
    """A server that cannot be connected to (or does not answer in time): no decision can come of the run."""
    where = base_url or "the OpenAI API"
    cause = exc.__cause__ or exc  # httpx's error says why ("[Errno 111] Connection refused")
    said = "did not answer in time" if isinstance(exc, openai.APITimeoutError) else f"cannot be reached ({cause})"
    return LLMBackendUnavailable(f"{model}: the server at {where} {said}: {SERVER_FIX}", model=model, retryable=False)


def openai_transport_error(exc: Exception, model: str, base_url: str | None = None) -> LLMTransportError:
    """What a failed call raises: LLMBackendUnavailable where the server is at fault (unreachable, refusing the key,
    no such model, failing after the retries), LLMTransportError where this request is (a 400, an unusable answer)."""
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if status in UNAVAILABLE_STATUSES or status >= 500:
            fix = "fix --api-key (or OPENAI_API_KEY)" if status in (401, 403) else SERVER_FIX
            where = base_url or "the OpenAI API"
            message = f"{model}: the server at {where} answers HTTP {status} ({exc.message}): {fix}"
            return LLMBackendUnavailable(message, model=model, status_code=status, retryable=False)
        return LLMTransportError(f"{model}: {exc.message}", model=model, status_code=status, retryable=_retryable(exc))
    if isinstance(exc, openai.APIConnectionError):  # also covers timeouts
        return _unreachable(exc, model, base_url)
    return LLMTransportError(f"{model}: unusable response: {type(exc).__name__}: {exc}", model=model)


def server_url(base_url: str | None) -> str | None:
    """The server a model talks to: the one given, else OPENAI_BASE_URL, else (None) the OpenAI API."""
    return base_url or os.environ.get("OPENAI_BASE_URL")


def server_key(api_key: str | None) -> str:
    """The key a model sends: the one given, else OPENAI_API_KEY, else a placeholder local servers accept."""
    return api_key or os.environ.get("OPENAI_API_KEY") or DEFAULT_API_KEY


def chat_openai(
    model_name: str,
    *,
    base_url: str | None,
    api_key: str | None,
    max_tokens: int | None,
    timeout_sec: float,
    max_retries: int,
    **options: Any,
) -> ChatOpenAI:
    """The one place a ChatOpenAI is built (the IR writer's and the baselines' chat model): chat completions, not the
    Responses API, which OpenAI-compatible servers lack; `options` are further ChatOpenAI fields (temperature, seed)."""
    return ChatOpenAI(
        model=model_name,
        base_url=server_url(base_url),
        api_key=server_key(api_key),
        max_tokens=max_tokens,
        timeout=timeout_sec,
        max_retries=max_retries,
        use_responses_api=False,
        **options,
    )


class OpenAIGenerator(ChatIRGenerator):
    def __init__(
        self,
        model_name: str,
        *,
        registry: ToolRegistry,
        base_url: str | None = None,
        api_key: str | None = None,
        structured_output: str = "auto",
        ir_format: IRFormat = "full",
        temperature: float = 0.0,
        repair_temperature: float = 0.2,
        max_tokens: int = 4096,
        timeout_sec: float = 120.0,
        max_retries: int = 2,
        cache: ResponseCache = SHARED_CACHE,
    ):
        """`structured_output`: "auto" tries STRUCTURED_MODES in order on the first call and keeps the first the
        server accepts (once per server and model); a mode name uses that mode only. `ir_format`: the full IR under
        the world-grounded schema, or the compact slots a small model can fill (models/slots.py), compiled here."""
        if structured_output not in STRUCTURED_OUTPUT_CHOICES:
            raise ValueError(f"structured_output {structured_output!r}: choose one of {STRUCTURED_OUTPUT_CHOICES}")
        if ir_format not in IR_FORMATS:
            raise ValueError(f"ir_format {ir_format!r}: choose one of {IR_FORMATS}")
        self.model = f"openai:{model_name}"
        self.ir_format = ir_format
        self.accepts_json_schema = ir_format == "full"  # slots have their own schema
        self.model_name = model_name
        self.base_url = server_url(base_url)
        self._api_key = server_key(api_key)
        self._registry = registry
        self._server_key = (self.base_url, model_name)
        self._probing = structured_output == "auto"
        self._mode: StructuredMode = (
            (SERVER_CAPABILITIES.mode(*self._server_key) or "json_schema") if self._probing else structured_output  # type: ignore[assignment]
        )
        self._temperatures = (temperature, repair_temperature)
        self._max_tokens = max_tokens
        self._timeout_sec = timeout_sec
        self._max_retries = max_retries
        self._cache = cache
        self._chat = chat_openai(
            model_name,
            base_url=self.base_url,
            api_key=self._api_key,
            max_tokens=max_tokens,
            timeout_sec=timeout_sec,
            max_retries=0,  # retried here, where a capability refusal is told apart from a server in trouble
        )

    @property
    def structured_mode(self) -> StructuredMode:
        return self._mode

    def _identity(self) -> tuple[Any, ...]:
        return (self.model, self.base_url, self._max_tokens, self.ir_format)

    def _prepare(self, request: GenerationRequest, temperature: float) -> PreparedCall:
        if self.ir_format == "slots":
            messages, schema = slots_request(request)
            version = SLOTS_VERSION
        else:
            messages = build_prompt(request, self._registry).messages()
            schema = request.json_schema or llm_answer_schema()
            version = PROMPT_VERSION
        key = ResponseCache.key(*self._identity(), temperature, self._mode, schema, messages)

        def run() -> ModelReply:
            text, usage, structured = self._complete(messages, temperature, schema, SCHEMA_NAMES[self.ir_format])
            raw_text, answer = read_answer(self.ir_format, text, schema, request)
            return ModelReply(raw_text, answer, usage, version, structured)

        return PreparedCall(key, run)

    def _complete_json(
        self, messages: list[dict[str, str]], schema: dict[str, Any], temperature: float
    ) -> tuple[str, TokenUsage, bool]:
        return self._complete(messages, temperature, schema, "choice")

    def _complete(
        self, messages: list[dict[str, str]], temperature: float, schema: dict[str, Any], name: str
    ) -> tuple[str, TokenUsage, bool]:
        """One completion in the settled mode; under "auto", a refusal moves to the next mode for good."""
        self._check_model_served()
        while True:
            mode = self._mode
            try:
                text, usage = self._with_retries(messages, temperature, mode, _request_options(mode, schema, name))
            except openai.APIStatusError as exc:
                if not (self._probing and mode != "text" and refuses_mode(exc, mode)):
                    raise openai_transport_error(exc, self.model, self.base_url) from exc
                self._mode = SERVER_CAPABILITIES.refused(self.base_url, self.model_name, mode)
                continue
            except (openai.OpenAIError, ValueError, KeyError) as exc:
                raise openai_transport_error(exc, self.model, self.base_url) from exc
            SERVER_CAPABILITIES.accepted(*self._server_key, mode)
            return text, usage, mode != "text"

    def _with_retries(
        self, messages: list[dict[str, str]], temperature: float, mode: StructuredMode, options: dict[str, Any]
    ) -> tuple[str, TokenUsage]:
        """Retries a server in trouble (429, 5xx, timeouts, dropped connections) with backoff and jitter; a
        capability refusal (a body naming the parameter sent) is raised at once for `_complete` to move on."""
        for attempt in range(self._max_retries + 1):
            try:
                return self._invoke(messages, temperature=temperature, **options)
            except (openai.APIStatusError, openai.APIConnectionError) as exc:
                refused = isinstance(exc, openai.APIStatusError) and refuses_mode(exc, mode)
                if refused or not _retryable(exc) or attempt == self._max_retries:
                    raise
                time.sleep(_backoff_sec(attempt, exc))
        raise AssertionError("unreachable")  # the loop returns or raises

    def _check_model_served(self) -> None:
        """Reads the server's /v1/models once: an unreachable server or a model it does not serve is one clear
        error line, not a failure deep in the first completion. A server without the route is taken on trust."""
        served = SERVER_CAPABILITIES.served_models(self.base_url)
        if served is None:
            client = openai.OpenAI(base_url=self.base_url, api_key=self._api_key, max_retries=0, timeout=10.0)
            try:
                served = [m.id for m in client.models.list()]
            except openai.APITimeoutError:
                return  # busy (a one-slot server answers the list after the completion it is on): ask next time
            except openai.APIConnectionError as exc:
                raise _unreachable(exc, self.model, self.base_url) from exc
            except (openai.OpenAIError, ValueError, KeyError, TypeError):
                served = []
            SERVER_CAPABILITIES.note_served_models(self.base_url, served)
        if served and self.model_name not in served:
            message = (
                f"{self.model}: the server at {self.base_url} does not serve {self.model_name}; it serves "
                f"{', '.join(served[:10])}: fix --model, or --base-url"
            )
            raise LLMBackendUnavailable(message, model=self.model, status_code=404, retryable=False)

    def _invoke(self, messages: list[dict[str, str]], **kwargs: Any) -> tuple[str, TokenUsage]:
        try:
            message = self._chat.invoke(messages, **kwargs)
        except openai.LengthFinishReasonError as exc:
            # the structured-output client refuses truncated answers; the text still goes to the validator
            return _completion_text_and_usage(exc.completion)
        calls = getattr(message, "tool_calls", None) or []
        text = json.dumps(calls[0]["args"]) if calls else message.text
        usage = message.usage_metadata or {}
        if not (usage.get("input_tokens") or usage.get("output_tokens")):
            return text, _estimated_usage(messages, text)
        return text, TokenUsage(prompt_tokens=usage["input_tokens"], completion_tokens=usage.get("output_tokens", 0))


def _estimated_usage(messages: list[dict[str, str]], text: str) -> TokenUsage:
    """The server reported no usage: CHARS_PER_TOKEN characters a token, marked as an estimate."""
    prompt_chars = sum(len(m.get("content") or "") for m in messages)
    return TokenUsage(
        prompt_tokens=-(-prompt_chars // CHARS_PER_TOKEN),
        completion_tokens=-(-len(text) // CHARS_PER_TOKEN),
        estimated=True,
    )


def _completion_text_and_usage(completion: Any) -> tuple[str, TokenUsage]:
    text = (completion.choices[0].message.content or "") if completion.choices else ""
    usage = completion.usage
    return text, TokenUsage(
        prompt_tokens=usage.prompt_tokens if usage else 0, completion_tokens=usage.completion_tokens if usage else 0
    )


class OpenAIProvider(ModelProvider):
    """`openai:<model>`: a model of any OpenAI-compatible chat-completions server."""

    def ir_writer(
        self, spec: ModelSpec, settings: ModelSettings, *, registry: ToolRegistry | None, sample_gold: Gold | None
    ) -> OpenAIGenerator:
        return OpenAIGenerator(
            spec.name,
            registry=registry if registry is not None else default_registry(),
            base_url=settings.base_url,
            api_key=settings.api_key,
            structured_output=settings.structured_output,
            ir_format=settings.ir_format,
            max_retries=settings.max_retries,
            timeout_sec=settings.timeout_sec,
            **({"max_tokens": settings.max_new_tokens} if settings.max_new_tokens else {}),
        )

    def chat_model(self, spec: ModelSpec, settings: ModelSettings, *, world: World, instruction: str) -> ChatOpenAI:
        return chat_openai(
            spec.name,
            base_url=settings.base_url,
            api_key=settings.api_key,
            max_tokens=settings.max_new_tokens,
            timeout_sec=settings.timeout_sec,
            max_retries=settings.max_retries,
            temperature=0,
            seed=settings.seed,
        )
