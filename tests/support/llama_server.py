"""llama-cpp-python's own OpenAI-compatible server on the packaged SmolLM2 GGUF: a real HTTP server, built from the
same portable llama.cpp as the embedded model, for the tests of the openai:<model> path."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from models.local_model import DEFAULT_CONTEXT_TOKENS, packaged_model_path

MODEL_ALIAS = "smollm2"
START_TIMEOUT_SEC = 90.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def llama_server(n_ctx: int = DEFAULT_CONTEXT_TOKENS) -> Iterator[str]:
    """Starts the server, yields its base URL (ends in /v1) once /v1/models answers, stops it on exit."""
    port = _free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(packaged_model_path()),
        "--model_alias", MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
        "--verbose", "False",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_TIMEOUT_SEC
        while True:
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                if process.poll() is not None:
                    raise RuntimeError(f"llama_cpp.server exited: {process.stderr.read().decode()[-2000:]}") from None
                if time.monotonic() > deadline:
                    raise TimeoutError(f"llama_cpp.server did not answer in {START_TIMEOUT_SEC:.0f} s") from None
                time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
