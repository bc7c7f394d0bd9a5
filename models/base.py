"""The one interface every IR writer implements (LLM backends and the non-LLM references), and what it exchanges.

A generator turns a `GenerationRequest` (instruction, world, retrieved context, repair feedback) into a
`GenerationResult` carrying the raw text and, when it could be extracted, the answer envelope
`{low_altitude_ir, rationale_summary, uncertainty}` as a plain dict: judging that dict is the validator's job.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ir.failure import ComponentUnavailable
from ir.fidelity import StatedConstraints
from tools.sqlite_wal import connect_wal
from tools.world import World


class LLMTransportError(Exception):
    """The model could not be reached or refused the request; the graph retries it with a RetryPolicy.

    `retryable` is False where repeating the same request cannot help (bad key, unknown model, bad request).
    """

    error_type = "llm_transport_error"  # the failure's error_type when it ends a graph run

    def __init__(self, message: str, *, model: str, status_code: int | None = None, retryable: bool = True):
        super().__init__(message)
        self.model = model
        self.status_code = status_code
        self.retryable = retryable


class LLMBackendUnavailable(LLMTransportError, ComponentUnavailable):
    """The backend cannot answer any request: its server cannot be reached or keeps failing, refuses the key or does
    not serve the model, or its runtime died. The request is not at fault and no decision can come of the run: the
    graph lets it through its error handler (no fallback, no refusal recorded) and the CLI exits 2 with the message,
    which says what to fix. Raised with retryable=False: the backend has already retried what retrying can help."""

    error_type = "llm_backend_unavailable"


class LLMBackendDied(LLMBackendUnavailable):
    """The model's runtime process died (a signal, out of memory): the request is not at fault and the run cannot
    go on with this backend; the message names the backend and how it died."""

    error_type = "llm_backend_died"


class RetrievedContext(BaseModel):
    """What the retrieve node (RAG) found; plain texts, already formatted for a prompt."""

    rules: list[str] = Field(default_factory=list, description="rule / airspace rule texts")
    entities: list[str] = Field(default_factory=list, description="entities relevant to the instruction")
    repair_cases: list[str] = Field(default_factory=list, description="similar past repairs, few-shot examples")


class RepairFeedback(BaseModel):
    """Why the previous IR failed: a compressed counterexample, a validation report or a tool error."""

    counterexample: dict[str, Any]
    allowed: list[Any] = Field(default_factory=list, description="the validator's nearest valid values")
    previous_ir: dict[str, Any] | None = None


class GenerationRequest(BaseModel):
    instruction: str
    world: World
    task_id: str
    retrieved: RetrievedContext = Field(default_factory=RetrievedContext)
    feedback: RepairFeedback | None = Field(default=None, description="None on the first round")
    round: int = Field(default=0, ge=0, description="0 = first generation, k = k-th repair")
    json_schema: dict[str, Any] | None = Field(
        default=None, description="answer schema offered to the server instead of LLMAnswer's (e.g. ids as enums)"
    )
    reading: StatedConstraints | None = Field(
        default=None, description="the run's reading of the request (nodes/reading.py); None: read from the text"
    )


class TokenUsage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = Field(default=False, description="the server reported no usage: counted from the characters")


class GenerationResult(BaseModel):
    raw_text: str
    answer: dict[str, Any] | None = Field(description="the parsed envelope, None when no JSON object was found")
    usage: TokenUsage = Field(default_factory=TokenUsage)
    latency_sec: float = 0.0
    model: str
    prompt_version: str
    cached: bool = Field(default=False, description="served from the cache; usage and latency are the original call's")
    structured_output: bool = Field(default=False, description="the server was asked for JSON-schema output")


class IRGenerator(ABC):
    """Writes LowAltitudeIR answers. `model` names the backend in traces (e.g. 'openai:qwen3-14b', 'rules')."""

    model: str

    @abstractmethod
    def generate(self, request: GenerationRequest) -> GenerationResult: ...


@dataclass(frozen=True)
class ModelReply:
    """What one chat completion yields for a GenerationResult."""

    raw_text: str
    answer: dict[str, Any] | None
    usage: TokenUsage
    prompt_version: str
    structured_output: bool


@dataclass(frozen=True)
class PreparedCall:
    """A completion ready to run, and the cache key of everything that determines its answer."""

    cache_key: str
    run: Callable[[], ModelReply]


class ChatIRGenerator(IRGenerator):
    """The steps every chat-model backend shares (template method): temperature by round, the response cache,
    timing, the result record. A backend says how to prepare one completion for a request, and how to complete
    messages under a JSON Schema (for the grounded repair choice, models/repair_choice.py)."""

    _cache: ResponseCache
    _temperatures: tuple[float, float]  # first answer, repair rounds

    @abstractmethod
    def _prepare(self, request: GenerationRequest, temperature: float) -> PreparedCall: ...

    @abstractmethod
    def _identity(self) -> tuple[Any, ...]:
        """What besides the prompt decides an answer (model, server or file, token cap): part of every cache key."""

    @abstractmethod
    def _complete_json(
        self, messages: list[dict[str, str]], schema: dict[str, Any], temperature: float
    ) -> tuple[str, TokenUsage, bool]:
        """(text, usage, whether the server was held to the schema) of one completion."""

    def _prepare_choice(self, request: GenerationRequest, temperature: float) -> PreparedCall | None:
        """A repair round with candidates: the model only chooses one, code applies it; None = no candidates."""
        from models import repair_choice  # imports ir.repairs, which the first rounds never need

        candidates = repair_choice.offered(request)
        if not candidates:
            return None
        messages = repair_choice.choice_messages(request, candidates)
        schema = repair_choice.choice_schema(candidates)
        previous = request.feedback.previous_ir if request.feedback else None
        key = ResponseCache.key(*self._identity(), repair_choice.REPAIR_CHOICE_VERSION, temperature, messages, previous)

        def run() -> ModelReply:
            text, usage, structured = self._complete_json(messages, schema, temperature)
            chosen, named = repair_choice.read_choice(text, candidates)
            answer = repair_choice.repaired_answer(request, chosen, named=named)
            # what the validator reads is the repaired answer, as for compiled slots; the choice is its rationale
            raw = json.dumps(answer, ensure_ascii=False)
            return ModelReply(raw, answer, usage, repair_choice.REPAIR_CHOICE_VERSION, structured)

        return PreparedCall(key, run)

    def generate(self, request: GenerationRequest) -> GenerationResult:
        temperature = self._temperatures[0 if request.round == 0 else 1]
        call = self._prepare_choice(request, temperature) or self._prepare(request, temperature)
        if (hit := self._cache.get(call.cache_key)) is not None:
            return hit.model_copy(update={"cached": True})
        started = time.perf_counter()
        completion = call.run()
        result = GenerationResult(
            raw_text=completion.raw_text,
            answer=completion.answer,
            usage=completion.usage,
            latency_sec=time.perf_counter() - started,
            model=self.model,
            prompt_version=completion.prompt_version,
            structured_output=completion.structured_output,
        )
        self._cache.put(call.cache_key, result)
        return result


class ResponseCache:
    """Thread-safe in-process LRU of generation results, keyed by everything that determines the answer; with
    `share_through`, also a SQLite file that processes share (the benchmark's workers: the ablations of a sample
    ask the same first prompt, and whichever worker answers it first answers it for all)."""

    def __init__(self, max_entries: int = 4096):
        self._entries: OrderedDict[str, GenerationResult] = OrderedDict()
        self._max_entries = max_entries
        self._lock = threading.Lock()
        self._shared: sqlite3.Connection | None = None

    def share_through(self, path: Path) -> None:
        """Also read and write answers in the SQLite file at `path` (created if missing)."""
        connection = connect_wal(path, check_same_thread=False, isolation_level=None)
        connection.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, result TEXT NOT NULL)")
        with self._lock:
            self._shared = connection

    @staticmethod
    def key(*parts: Any) -> str:
        blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def get(self, key: str) -> GenerationResult | None:
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                return hit
            if self._shared is None:
                return None
            row = self._shared.execute("SELECT result FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        hit = GenerationResult.model_validate_json(row[0])
        self.put(key, hit, share=False)
        return hit

    def put(self, key: str, result: GenerationResult, *, share: bool = True) -> None:
        with self._lock:
            self._entries[key] = result
            self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
            if share and self._shared is not None:
                self._shared.execute("INSERT OR IGNORE INTO responses VALUES (?, ?)", (key, result.model_dump_json()))

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


SHARED_CACHE = ResponseCache()


def json_objects(text: str) -> list[Any]:
    """Every JSON object that starts at some '{' in the text, outermost first."""
    decoder = json.JSONDecoder()
    found, position = [], text.find("{")
    while position != -1:
        try:
            obj, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            position = text.find("{", position + 1)
            continue
        found.append(obj)
        position = text.find("{", end)
    return found
