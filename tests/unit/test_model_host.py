"""The embedded model runs in a process of its own: a native crash there is a typed error naming the backend and
the signal, never the end of the agent's process; `cloudbrain selftest` (the end of `make install`) checks the real
runtime and reports a dead one in one line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from graph.runner import run_task
from models import model_host
from models.base import LLMBackendDied, LLMTransportError
from models.local_model import LocalModelError, packaged_model_path
from models.model_host import HostedModel, ModelRuntimeDied, describe_exit, self_test, shared_model, transport_error
from nodes.context import Context
from tests.support.cli import DOWNTOWN, run_cli
from tests.support.paths import ROOT

DYING_HOST = "tests.support.dying_model_host"
INSTRUCTION = "Send a drone from hospital_A to accident_site_3 within 10 minutes."


@pytest.fixture
def dying_host(monkeypatch: pytest.MonkeyPatch):
    """Every model process started from here on is one that dies with SIGSEGV on its first call."""
    monkeypatch.setattr(model_host, "HOST_MODULE", DYING_HOST)
    shared_model.cache_clear()  # a cached model would still be a healthy one
    yield
    shared_model.cache_clear()


def test_exit_codes_read_as_signals_or_codes():
    assert describe_exit(-signal.SIGSEGV) == "signal 11 (SIGSEGV)"
    assert describe_exit(-signal.SIGKILL) == "signal 9 (SIGKILL)"
    assert describe_exit(1) == "exit code 1"


def test_a_runtime_that_dies_is_a_typed_error_and_the_next_call_starts_a_fresh_one(dying_host):
    model = HostedModel(packaged_model_path())
    for _ in range(2):  # the second call starts a new process (which dies again)
        with pytest.raises(ModelRuntimeDied) as died:
            model.complete("hello", max_tokens=1)
        assert died.value.returncode == -signal.SIGSEGV
        assert "died with signal 11 (SIGSEGV) while answering complete" in str(died.value)
        assert "make rebuild-model-runtime" in str(died.value)
    model.close()


def test_a_dead_runtime_becomes_a_backend_died_transport_error_and_other_failures_do_not():
    died = transport_error(ModelRuntimeDied("the runtime died", -11), "local")
    assert isinstance(died, LLMBackendDied) and not died.retryable and str(died) == "local: the runtime died"
    other = transport_error(LocalModelError("prompt exceeds the context"), "local")
    assert type(other) is LLMTransportError and other.error_type == "llm_transport_error"


def test_a_graph_run_whose_backend_dies_stops_without_a_decision(dying_host, downtown):
    with pytest.raises(LLMBackendDied) as died:
        run_task(downtown, INSTRUCTION, context=Context(model="local", without=frozenset({"memory"})), db=None)
    assert str(died.value).startswith("local:slots: the embedded model runtime (llama.cpp) died with signal 11")


def test_cloudbrain_run_whose_backend_dies_prints_one_line_and_exits_2(dying_host, capsys, tmp_path):
    code, out, err = run_cli(
        capsys, "run", "--world", DOWNTOWN, "--instruction", INSTRUCTION, "--model", "local",
        "--without", "memory", "--db", str(tmp_path / "runs.sqlite"),
    )  # fmt: skip
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("cloudbrain run: model backend local:slots: the embedded model runtime (llama.cpp) died")
    assert "signal 11 (SIGSEGV)" in lines[0] and "(no decision: the run stopped, thread run-" in lines[0]


def test_the_install_self_test_names_a_dead_runtime_in_one_line():
    """As `make install` runs it, in a process of its own: no bare 'Segmentation fault', no traceback."""
    program = (
        "import models.model_host as host; "
        f"host.HOST_MODULE = {DYING_HOST!r}; "
        "from cli.main import main; raise SystemExit(main(['selftest']))"
    )
    done = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "cloudbrain selftest: the embedded model failed its self-test: the embedded model runtime (llama.cpp) died "
        "with signal 11 (SIGSEGV) while answering chat_prompt; rebuild the runtime for this machine: "
        "make rebuild-model-runtime"
    ]


def test_the_self_test_of_the_real_runtime_decodes_free_and_under_a_schema():
    report = self_test(decode_tokens=8)
    assert report.decode_tokens == 8 and report.decode_tokens_per_sec > 0 and report.prompt_tokens_per_sec > 0
    assert json.loads(report.constrained_answer)["status"] in ("execute", "safe_refusal", "human_confirm")
    assert report.runtime.startswith("llama-cpp-python ")
    # the portable build: no instruction set that a machine of the project's kind may refuse
    assert not any(flag.startswith(("AMX", "AVX512")) for flag in report.instruction_sets), report.instruction_sets
