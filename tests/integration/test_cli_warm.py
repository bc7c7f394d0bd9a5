"""`cloudbrain warm`: commands typed while it runs go through it and behave as a fresh process would (same output,
exit code, stdin, Ctrl-C), and a warm process that outlived a code change stops instead of running old code."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.warm import DISABLE_ENV, SOCKET_ENV, forwarded
from tests.support.paths import DOWNTOWN

ROOT = Path(__file__).resolve().parents[2]
CLOUDBRAIN = str(Path(sys.executable).with_name("cloudbrain"))
REQUEST = "Send a drone with the defibrillator (1 kg) from hospital_A to accident_site_3 within 10 minutes."


def _env(sock: Path, use_warm: bool = True) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != DISABLE_ENV}
    env[SOCKET_ENV] = str(sock)
    if not use_warm:
        env[DISABLE_ENV] = "0"
    return env


def _cloudbrain(sock: Path, *argv: str, use_warm: bool = True, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CLOUDBRAIN, *argv], env=_env(sock, use_warm), capture_output=True, text=True, timeout=180, cwd=ROOT, **kwargs
    )


def _status(sock: Path) -> dict:
    return json.loads(_cloudbrain(sock, "warm", "--status", "--json").stdout)


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A warm process on a socket of this module's own; yields the socket's path."""
    sock = tmp_path_factory.mktemp("warm") / "w.sock"
    server = subprocess.Popen(
        [CLOUDBRAIN, "warm", "--idle-minutes", "10"], env=_env(sock), stderr=subprocess.PIPE, text=True, cwd=ROOT
    )
    ready, _, _ = select.select([server.stderr], [], [], 120)
    assert ready and "listening on" in server.stderr.readline()
    yield sock
    if server.poll() is None:
        _cloudbrain(sock, "warm", "--stop")
        server.wait(timeout=30)
    assert not sock.exists()


def _run_args(tmp_path: Path, thread: str) -> list[str]:
    return [
        "run", "--model", "rules", "--world", str(DOWNTOWN), "--instruction", REQUEST, "--json",
        "--db", str(tmp_path / "runs.sqlite"), "--memory-path", str(tmp_path / "memory"), "--thread", thread,
    ]  # fmt: skip


def test_a_run_through_the_warm_process_decides_as_a_fresh_process_does(warm: Path, tmp_path: Path):
    served = _status(warm)["commands"]
    through_warm = _cloudbrain(warm, *_run_args(tmp_path, "warm"))
    assert _status(warm)["commands"] == served + 1  # it went through the warm process
    alone = _cloudbrain(warm, *_run_args(tmp_path, "alone"), use_warm=False)
    assert _status(warm)["commands"] == served + 1  # CLOUDBRAIN_WARM=0: it did not
    assert through_warm.returncode == alone.returncode == 0, through_warm.stderr
    warm_run, alone_run = json.loads(through_warm.stdout), json.loads(alone.stdout)
    for key in ("status", "uav_id", "waypoints", "eta_sec", "energy_wh"):
        assert warm_run["decision"][key] == alone_run["decision"][key]
    # the child wrote into the caller's folder: the thread is stored where the caller said
    trace = _cloudbrain(warm, "trace", "--db", str(tmp_path / "runs.sqlite"), "--thread", "warm")
    assert trace.returncode == 0 and "final: execute" in trace.stdout


def test_usage_errors_and_exit_codes_come_back_as_they_would(warm: Path):
    bad = _cloudbrain(warm, "run", "--no-such-flag")
    assert bad.returncode == 2
    assert "the following arguments are required: --world, --instruction" in bad.stderr
    missing = _cloudbrain(warm, "trace", "--db", "/nonexistent/runs.sqlite", "--thread", "t")
    assert missing.returncode == 2 and "cloudbrain trace:" in missing.stderr


def test_the_command_reads_the_callers_stdin(warm: Path, tmp_path: Path):
    stepped = _cloudbrain(
        warm, "step", "--model", "rules", "--world", str(DOWNTOWN), "--instruction", REQUEST,
        "--db", str(tmp_path / "s.sqlite"), "--memory-path", str(tmp_path / "memory"), "--thread", "stepped",
        input="next\nquit\n",
    )  # fmt: skip
    assert stepped.returncode == 0, stepped.stderr
    assert "left thread stepped at" in stepped.stdout


def test_ctrl_c_reaches_the_command(warm: Path, tmp_path: Path):
    """The terminal's SIGINT goes to the `cloudbrain` it started; the command itself is the warm process's child."""
    stepper = subprocess.Popen(
        [CLOUDBRAIN, "step", "--model", "rules", "--world", str(DOWNTOWN), "--instruction", REQUEST,
         "--db", str(tmp_path / "c.sqlite"), "--memory-path", str(tmp_path / "memory")],
        env=_env(warm), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    ready, _, _ = select.select([stepper.stdout], [], [], 60)  # waiting at its first prompt, stdin left open
    assert ready
    time.sleep(0.5)
    stepper.send_signal(signal.SIGINT)
    stepper.wait(timeout=60)  # stdin still open: the command ends because of the signal, not of the input's end
    out, err = stepper.communicate()
    assert stepper.returncode == 130, (out, err)
    assert "interrupted" in err


def test_a_stale_socket_file_is_not_a_warm_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    sock = tmp_path / "gone.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(sock))
    listener.close()  # the file stays, nobody listens
    monkeypatch.setenv(SOCKET_ENV, str(sock))
    monkeypatch.delenv(DISABLE_ENV, raising=False)
    assert forwarded(["--help"]) is None


def test_a_code_change_stops_the_warm_process_and_the_command_runs_on_its_own(tmp_path: Path):
    sock = tmp_path / "w.sock"
    server = subprocess.Popen([CLOUDBRAIN, "warm"], env=_env(sock), stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        ready, _, _ = select.select([server.stderr], [], [], 120)
        assert ready and "listening on" in server.stderr.readline()
        source = ROOT / "cli" / "warm.py"  # imported by the warm process; its time moves, its text does not
        before = source.stat()
        os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
        try:
            checked = _cloudbrain(sock, "schemas", "--help")
        finally:
            os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert checked.returncode == 0 and "usage: cloudbrain schemas" in checked.stdout
        assert "the code changed since it started; this command runs on its own" in checked.stderr
        assert server.wait(timeout=30) == 0
        assert not sock.exists()
    finally:
        if server.poll() is None:
            server.kill()
