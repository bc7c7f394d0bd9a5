"""`openai:<model>`: any OpenAI-compatible chat-completions server (OpenAI, vLLM, llama.cpp...) via ChatOpenAI.

The answer schema is offered as a non-strict `response_format` json_schema (free-form tool args cannot be strict);
a server that rejects response_format gets plain requests from then on, and the answer is always extracted
tolerantly from the text, since many servers accept the parameter and still answer in prose.
Token counts come from the server's `usage`; nothing is tokenised locally (that would download encodings).
"""

from __future__ import annotations

import os
from typing import Any

import openai
from langchain_openai import ChatOpenAI

from ir.model import LLMAnswer
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
from models.prompts import PROMPT_VERSION, build_prompt
from tools.registry import ToolRegistry

DEFAULT_API_KEY = "EMPTY"  # local servers accept any key; the client refuses to start without one
REJECTED_FORMAT_STATUSES = (400, 422)
FORMAT_ERROR_WORDS = ("response_format", "json_schema", "schema", "guided", "structured")
RETRYABLE_STATUSES = (408, 409, 429)
# (base_url, model) of servers that rejected response_format: the graph builds a generator per round, and a
# known refusal should not cost one failed request each time.
_FORMAT_REJECTED: set[tuple[str | None, str]] = set()


def answer_response_format(schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": "LLMAnswer", "schema": schema or LLMAnswer.model_json_schema(), "strict": False},
    }


def _rejects_response_format(exc: openai.APIStatusError) -> bool:
    """A 400/422 about the output format (not, say, about the context length)."""
    message = str(exc).lower()
    return exc.status_code in REJECTED_FORMAT_STATUSES and any(word in message for word in FORMAT_ERROR_WORDS)


def _transport_error(exc: Exception, model: str) -> LLMTransportError:
    if isinstance(exc, openai.APIStatusError):
        retryable = exc.status_code >= 500 or exc.status_code in RETRYABLE_STATUSES
        return LLMTransportError(
            f"{model}: {exc.message}", model=model, status_code=exc.status_code, retryable=retryable
        )
    if isinstance(exc, openai.APIConnectionError):  # also covers timeouts
        return LLMTransportError(f"{model}: cannot reach the server: {exc}", model=model)
    return LLMTransportError(f"{model}: unusable response: {type(exc).__name__}: {exc}", model=model)


class OpenAIGenerator(ChatIRGenerator):
    accepts_json_schema = True  # request.json_schema (the world-grounded schema) becomes the response_format

    def __init__(
        self,
        model_name: str,
        *,
        registry: ToolRegistry,
        base_url: str | None = None,
        api_key: str | None = None,
        structured_output: bool = True,
        temperature: float = 0.0,
        repair_temperature: float = 0.2,
        max_tokens: int = 4096,
        timeout_sec: float = 120.0,
        max_retries: int = 2,
        cache: ResponseCache = SHARED_CACHE,
    ):
        self.model = f"openai:{model_name}"
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        self._registry = registry
        self._server_key = (self.base_url, model_name)
        self._structured_output = structured_output and self._server_key not in _FORMAT_REJECTED
        self._temperatures = (temperature, repair_temperature)
        self._max_tokens = max_tokens
        self._cache = cache
        self._chat = ChatOpenAI(
            model=model_name,
            base_url=self.base_url,
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or DEFAULT_API_KEY,
            max_tokens=max_tokens,
            timeout=timeout_sec,
            max_retries=max_retries,
            use_responses_api=False,
        )

    def _identity(self) -> tuple[Any, ...]:
        return (self.model, self.base_url, self._max_tokens)

    def _prepare(self, request: GenerationRequest, temperature: float) -> PreparedCall:
        prompt = build_prompt(request, self._registry)
        response_format = answer_response_format(request.json_schema) if self._structured_output else None
        key = ResponseCache.key(*self._identity(), temperature, response_format, prompt.text)

        def run() -> ModelReply:
            raw_text, usage, structured = self._complete(prompt.messages(), temperature, response_format)
            return ModelReply(raw_text, extract_answer(raw_text), usage, PROMPT_VERSION, structured)

        return PreparedCall(key, run)

    def _complete_json(
        self, messages: list[dict[str, str]], schema: dict[str, Any], temperature: float
    ) -> tuple[str, TokenUsage, bool]:
        response_format = {"type": "json_schema", "json_schema": {"name": "choice", "schema": schema, "strict": True}}
        return self._complete(messages, temperature, response_format if self._structured_output else None)

    def _complete(
        self, messages: list[dict[str, str]], temperature: float, response_format: dict[str, Any] | None
    ) -> tuple[str, TokenUsage, bool]:
        """One completion; falls back to a plain request (for good) when the server rejects response_format."""
        if response_format is not None:
            try:
                return (*self._invoke(messages, temperature=temperature, response_format=response_format), True)
            except openai.APIStatusError as exc:
                if not _rejects_response_format(exc):
                    raise _transport_error(exc, self.model) from exc
                self._structured_output = False
                _FORMAT_REJECTED.add(self._server_key)
            except (openai.OpenAIError, ValueError, KeyError) as exc:
                raise _transport_error(exc, self.model) from exc
        try:
            return (*self._invoke(messages, temperature=temperature), False)
        except (openai.OpenAIError, ValueError, KeyError) as exc:
            raise _transport_error(exc, self.model) from exc

    def _invoke(self, messages: list[dict[str, str]], **kwargs: Any) -> tuple[str, TokenUsage]:
        try:
            message = self._chat.invoke(messages, **kwargs)
        except openai.LengthFinishReasonError as exc:
            # the structured-output client refuses truncated answers; the text still goes to the validator
            return _completion_text_and_usage(exc.completion)
        usage = message.usage_metadata or {}
        return message.text, TokenUsage(
            prompt_tokens=usage.get("input_tokens", 0), completion_tokens=usage.get("output_tokens", 0)
        )


def _completion_text_and_usage(completion: Any) -> tuple[str, TokenUsage]:
    text = (completion.choices[0].message.content or "") if completion.choices else ""
    usage = completion.usage
    return text, TokenUsage(
        prompt_tokens=usage.prompt_tokens if usage else 0, completion_tokens=usage.completion_tokens if usage else 0
    )
