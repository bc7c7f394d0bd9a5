"""The embedded model in a process of its own, so that a native crash of llama.cpp ends that process, not the agent.

`HostedModel` offers what the backends use of `EmbeddedModel` (chat_prompt, complete, n_ctx) and forwards each
call over a pipe (pickled messages, multiprocessing.connection) to a child, `python -m models.model_host`, that
loads the GGUF once and keeps its KV cache between calls. A child that dies (a signal such as SIGSEGV or SIGILL from
an instruction the CPU refuses, the kernel's out-of-memory killer) raises `ModelRuntimeDied` naming how it died;
the next call starts a fresh child. The child inherits the parent's `sys.path`, so it runs the same code.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import re
import signal
import subprocess
import sys
import threading
from functools import cache
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from models.base import LLMBackendDied, LLMTransportError
from models.local_model import (
    DEFAULT_CONTEXT_TOKENS,
    MODEL_NAME,
    Completion,
    EmbeddedModel,
    LocalModelError,
    packaged_model_path,
)

HOST_MODULE = "models.model_host"
REBUILD_HINT = "rebuild the runtime for this machine: make rebuild-model-runtime"
CALLS = ("chat_prompt", "complete")  # what the child answers; anything else is a defect of the caller
EXIT_WAIT_SEC = 10.0
SELF_TEST_PROMPT = "Describe the city's drone traffic rules. " * 12
SELF_TEST_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"status": {"enum": ["execute", "safe_refusal", "human_confirm"]}},
    "required": ["status"],
}


class ModelRuntimeDied(LocalModelError):
    """The model's process ended without answering: `returncode` < 0 is the signal that killed it."""

    def __init__(self, message: str, returncode: int | None):
        super().__init__(message)
        self.returncode = returncode


def describe_exit(returncode: int | None) -> str:
    """'signal 11 (SIGSEGV)', 'exit code 1': how a child process ended, in the words of the error lines."""
    if returncode is None:
        return "an unknown cause"
    if returncode < 0:
        try:
            return f"signal {-returncode} ({signal.Signals(-returncode).name})"
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


class HostedModel:
    """A GGUF model served by a child process; one call at a time (a lock), as EmbeddedModel."""

    def __init__(self, path: Path, n_ctx: int = DEFAULT_CONTEXT_TOKENS, n_threads: int | None = None):
        self.path = path
        self._n_ctx = n_ctx
        self._n_threads = n_threads
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._to_child: Connection | None = None
        self._from_child: Connection | None = None
        self.info: dict[str, Any] = {}  # what the child reported once loaded: load_seconds, system_info, n_ctx
        atexit.register(self.close)

    @property
    def n_ctx(self) -> int:
        with self._lock:
            self._ensure_started()
            return int(self.info["n_ctx"])

    @property
    def load_seconds(self) -> float:
        with self._lock:
            self._ensure_started()
            return float(self.info["load_seconds"])

    def chat_prompt(self, messages: list[dict[str, str]]) -> str:
        """The model's own chat template (from the GGUF) applied to role/content messages."""
        return self._call("chat_prompt", messages=messages)

    def complete(self, prompt: str, **options: Any) -> Completion:
        """EmbeddedModel.complete in the child: schema, max_tokens, temperature, seed."""
        return self._call("complete", prompt=prompt, **options)

    def _call(self, name: str, **kwargs: Any) -> Any:
        with self._lock:
            self._ensure_started()
            try:
                self._to_child.send((name, kwargs))
                kind, payload = self._from_child.recv()
            except (EOFError, OSError):
                raise self._died(f"while answering {name}") from None
            if kind == "error":
                raise LocalModelError(payload)
            return payload

    def _ensure_started(self) -> None:
        if self._process is not None:
            return
        parent_reads, child_writes = os.pipe()
        child_reads, parent_writes = os.pipe()
        # The parent's import path ('' being its working directory then), so the child imports the same code (an
        # editable install, a test's support modules); -P keeps the child's own working directory off it.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p or os.getcwd() for p in sys.path)}
        command = [sys.executable, "-P", "-m", HOST_MODULE, "--fds", f"{child_reads},{child_writes}"]
        command += ["--model", str(self.path), "--n-ctx", str(self._n_ctx)]
        command += ["--threads", str(self._n_threads)] if self._n_threads else []
        self._process = subprocess.Popen(
            command, pass_fds=(child_reads, child_writes), stdin=subprocess.DEVNULL, env=env
        )
        os.close(child_reads)
        os.close(child_writes)
        self._to_child = Connection(parent_writes, readable=False)
        self._from_child = Connection(parent_reads, writable=False)
        try:
            kind, payload = self._from_child.recv()
        except (EOFError, OSError):
            raise self._died("while loading the model") from None
        if kind == "error":
            self._stop()
            raise LocalModelError(payload)
        self.info = payload

    def _died(self, doing: str) -> ModelRuntimeDied:
        process = self._process
        returncode = None
        if process is not None:
            try:
                returncode = process.wait(timeout=EXIT_WAIT_SEC)
            except subprocess.TimeoutExpired:
                process.kill()
        self._stop()
        return ModelRuntimeDied(
            f"the embedded model runtime (llama.cpp) died with {describe_exit(returncode)} {doing}; {REBUILD_HINT}",
            returncode,
        )

    def _stop(self) -> None:
        for connection in (self._to_child, self._from_child):
            if connection is not None:
                connection.close()
        if self._process is not None and self._process.poll() is None:
            try:
                self._process.wait(timeout=EXIT_WAIT_SEC)  # it exits on the closed pipe
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = self._to_child = self._from_child = None

    def close(self) -> None:
        with self._lock:
            self._stop()


@cache
def shared_model(path: Path, n_ctx: int = DEFAULT_CONTEXT_TOKENS) -> HostedModel:
    """One model process per file and context size per process (loading costs about a second, on first use)."""
    return HostedModel(path, n_ctx)


def transport_error(exc: LocalModelError, model: str) -> LLMTransportError:
    """How a backend reports a local model that cannot answer: never retried (the same request fails the same
    way); a dead runtime as LLMBackendDied, which ends a CLI run with exit 2 instead of an agent decision."""
    kind = LLMBackendDied if isinstance(exc, ModelRuntimeDied) else LLMTransportError
    return kind(f"{model}: {exc}", model=model, retryable=False)


class SelfTest(BaseModel):
    """What `cloudbrain selftest` measured: the runtime loads, decodes and constrains, and how fast."""

    model: str
    runtime: str = Field(description="the llama-cpp-python version that answered")
    instruction_sets: list[str] = Field(description="the CPU features llama.cpp was built to use")
    load_sec: float
    prompt_tokens: int
    prompt_tokens_per_sec: float = Field(description="prompt evaluation (one call, 1 new token)")
    decode_tokens: int
    decode_tokens_per_sec: float = Field(description="unconstrained decoding after the cached prompt")
    constrained_answer: str = Field(description="a schema-constrained answer (llguidance)")


def self_test(path: Path | None = None, decode_tokens: int = 32) -> SelfTest:
    """Loads the model in its own process, evaluates a prompt, decodes a few tokens free and a few under a schema.

    Raises LocalModelError (ModelRuntimeDied when the runtime crashed) naming what failed. The rates are
    approximate: the prompt call also samples one token and the decode call re-evaluates the prompt's last one.
    """
    model = HostedModel(path or packaged_model_path())
    try:
        prompt = model.chat_prompt([{"role": "user", "content": SELF_TEST_PROMPT}])
        first = model.complete(prompt, max_tokens=1)
        decoded = model.complete(prompt, max_tokens=decode_tokens)  # the prompt comes from the KV cache
        constrained = model.complete(prompt, schema=SELF_TEST_SCHEMA, max_tokens=16)
        info = model.info
    finally:
        model.close()
    try:
        status = json.loads(constrained.text).get("status")
    except (json.JSONDecodeError, AttributeError):
        status = None
    if status not in SELF_TEST_SCHEMA["properties"]["status"]["enum"]:
        raise LocalModelError(f"constrained decoding answered {constrained.text!r}, outside its schema")
    flags = re.findall(r"(\w+) = 1", info.get("system_info", ""))
    return SelfTest(
        model=MODEL_NAME if path is None else str(path),
        runtime=info.get("runtime", ""),
        instruction_sets=list(dict.fromkeys(flags)),
        load_sec=round(info["load_seconds"], 3),
        prompt_tokens=first.prompt_tokens,
        prompt_tokens_per_sec=round(first.prompt_tokens / first.seconds, 1),
        decode_tokens=decoded.completion_tokens,
        decode_tokens_per_sec=round(decoded.completion_tokens / decoded.seconds, 1),
        constrained_answer=constrained.text,
    )


def serve(reader: Connection, writer: Connection, model: EmbeddedModel) -> None:
    """Answer calls until the parent closes its end; a LocalModelError is an answer, any other error a defect."""
    while True:
        try:
            name, kwargs = reader.recv()
        except EOFError:
            return
        if name not in CALLS:
            writer.send(("error", f"the model host has no call {name!r}"))
            continue
        try:
            writer.send(("ok", getattr(model, name)(**kwargs)))
        except LocalModelError as exc:
            writer.send(("error", str(exc)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="serve the embedded model to the parent process (internal)")
    parser.add_argument("--fds", required=True, help="READ,WRITE: the pipe ends the parent passed")
    parser.add_argument("--model", required=True, type=Path)
    parser.add_argument("--n-ctx", type=int, default=DEFAULT_CONTEXT_TOKENS)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it closes the pipe
    read_fd, write_fd = (int(fd) for fd in args.fds.split(","))
    reader, writer = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    try:
        model = EmbeddedModel(args.model, args.n_ctx, args.threads)
    except LocalModelError as exc:
        writer.send(("error", str(exc)))
        return
    writer.send(("ready", {"n_ctx": model.n_ctx, "load_seconds": model.load_seconds, **model.build_info()}))
    serve(reader, writer, model)


if __name__ == "__main__":
    main()
