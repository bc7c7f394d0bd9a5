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
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cli.warm import DISABLE_ENV, HEADER, SOCKET_ENV, MessageReader, forwarded
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


def _start_warm(sock: Path, *options: str) -> subprocess.Popen:
    """`cloudbrain warm` on `sock`, once it listens (lines a library prints before that are skipped)."""
    server = subprocess.Popen(
        [CLOUDBRAIN, "warm", *options], env=_env(sock), stderr=subprocess.PIPE, text=True, cwd=ROOT
    )
    seen = []
    while not seen or "listening on" not in seen[-1]:
        ready, _, _ = select.select([server.stderr], [], [], 120)
        line = server.stderr.readline() if ready else ""
        if not line:
            server.kill()
            raise AssertionError(f"cloudbrain warm did not start: {seen}")
        seen.append(line)
    return server


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A warm process on a socket of this module's own; yields the socket's path."""
    sock = tmp_path_factory.mktemp("warm") / "w.sock"
    server = _start_warm(sock, "--idle-minutes", "10")
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
    # the command closed its checkpoint file as a fresh process does: the write-ahead log folded into it
    assert not (tmp_path / "runs.sqlite-wal").exists()
    # the child wrote into the caller's folder: the thread is stored where the caller said
    trace = _cloudbrain(warm, "trace", "--db", str(tmp_path / "runs.sqlite"), "--thread", "warm")
    assert trace.returncode == 0 and "final: execute" in trace.stdout


def test_usage_errors_and_exit_codes_come_back_as_they_would(warm: Path):
    bad = _cloudbrain(warm, "run", "--no-such-flag")
    assert bad.returncode == 2
    assert "the following arguments are required: --world, --instruction" in bad.stderr
    missing = _cloudbrain(warm, "trace", "--db", "/nonexistent/runs.sqlite", "--thread", "t")
    assert missing.returncode == 2 and "cloudbrain trace:" in missing.stderr


def _interactive_signals(ignore_ctrl_c: bool = False) -> Callable[[], None]:
    """The caller's Ctrl-C as at a terminal, whatever the test runner's: a runner started in a script's background
    (`make test &`) ignores SIGINT, and its children inherit that."""

    def set_them() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN if ignore_ctrl_c else signal.SIG_DFL)

    return set_them


def _blocked_on_stdin(warm: Path, ignore_ctrl_c: bool = False) -> tuple[subprocess.Popen, int]:
    """A command through the warm process that waits on its stdin (kept open); (the caller, the command's pid)."""
    served = _status(warm)["commands"]
    caller = subprocess.Popen(
        [CLOUDBRAIN, "validate", "--world", str(DOWNTOWN), "--ir", "/dev/stdin"],
        env=_env(warm), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        preexec_fn=_interactive_signals(ignore_ctrl_c),
    )  # fmt: skip
    for _ in range(100):
        status = _status(warm)
        if status["commands"] > served and status["children"]:
            return caller, status["children"][-1]
        time.sleep(0.1)
    caller.kill()
    raise AssertionError("the command did not start in the warm process")


def _session_and_group(pid: int) -> tuple[int, int]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[3]), int(fields[2])  # session, process group


def _gone(pid: int, within_s: float = 10.0) -> bool:
    for _ in range(int(within_s * 10)):
        if not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]:
            return True
        time.sleep(0.1)
    return False


def test_the_command_reads_the_callers_stdin_in_a_session_of_its_own(warm: Path):
    caller, command = _blocked_on_stdin(warm)
    server = _status(warm)["pid"]
    assert _session_and_group(command) == (command, command)  # its own: the warm process's terminal cannot reach it
    assert _session_and_group(command)[0] != _session_and_group(server)[0]
    out, err = caller.communicate(json.dumps({"not": "an ir"}), timeout=60)
    assert caller.returncode == 3 and "invalid" in (out + err).lower(), (out, err)


def test_ctrl_c_reaches_the_command(warm: Path):
    """The terminal's SIGINT goes to the `cloudbrain` it started; the command itself is the warm process's child."""
    caller, command = _blocked_on_stdin(warm)
    caller.send_signal(signal.SIGINT)
    caller.wait(timeout=60)  # stdin still open: the command ends because of the signal, not of the input's end
    assert caller.returncode == 130 and "interrupted" in caller.stderr.read()
    assert _gone(command)


def test_a_ctrl_c_the_caller_ignores_the_command_ignores(warm: Path):
    """`nohup`, a script's background job: an ignored SIGINT stays ignored, as in a fresh process."""
    caller, command = _blocked_on_stdin(warm, ignore_ctrl_c=True)
    caller.send_signal(signal.SIGINT)
    time.sleep(1.0)
    assert caller.poll() is None and not _gone(command, within_s=0.5)
    out, err = caller.communicate(json.dumps({"not": "an ir"}), timeout=60)
    assert caller.returncode == 3, (out, err)


def test_a_caller_killed_by_a_signal_takes_the_command_with_it(warm: Path):
    caller, command = _blocked_on_stdin(warm)
    caller.send_signal(signal.SIGTERM)
    assert caller.wait(timeout=60) == -signal.SIGTERM  # it died of the signal, as the command did
    assert _gone(command)
    caller, command = _blocked_on_stdin(warm)
    caller.kill()  # SIGKILL cannot be forwarded: the command sees its caller gone
    caller.wait(timeout=60)
    assert _gone(command)


def test_a_command_killed_from_outside_ends_its_caller_the_same_way(warm: Path):
    caller, command = _blocked_on_stdin(warm)
    os.kill(command, signal.SIGKILL)  # e.g. the out-of-memory killer
    assert caller.wait(timeout=60) == -signal.SIGKILL
    assert "Traceback" not in caller.stderr.read()


def test_stopping_the_warm_process_lets_running_commands_finish_and_report(tmp_path: Path):
    sock = tmp_path / "w.sock"
    server = _start_warm(sock)
    try:
        caller, _command = _blocked_on_stdin(sock)
        assert _cloudbrain(sock, "warm", "--stop").returncode == 0
        assert not sock.exists()  # no new command is taken
        out, err = caller.communicate(json.dumps({"not": "an ir"}), timeout=60)
        assert caller.returncode == 3, (out, err)  # the command's own exit code, after the stop
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()


def test_a_command_given_more_descriptors_than_stdio_runs_on_its_own(warm: Path, tmp_path: Path):
    """`--ir <(...)`: only stdin, stdout and stderr travel to the warm process, so the command runs here."""
    served = _status(warm)["commands"]
    read_end, write_end = os.pipe()
    os.write(write_end, json.dumps({"not": "an ir"}).encode())
    os.close(write_end)
    done = subprocess.run(
        [CLOUDBRAIN, "validate", "--world", str(DOWNTOWN), "--ir", f"/dev/fd/{read_end}"],
        env=_env(warm), capture_output=True, text=True, cwd=ROOT, pass_fds=(read_end,), timeout=120,
    )  # fmt: skip
    os.close(read_end)
    assert done.returncode == 3, done.stderr
    assert _status(warm)["commands"] == served


def test_the_callers_umask_applies_to_what_the_command_writes(warm: Path, tmp_path: Path):
    served = _status(warm)["commands"]
    done = _cloudbrain(warm, "schemas", "--out", str(tmp_path / "schemas"), preexec_fn=lambda: os.umask(0o077))
    assert done.returncode == 0, done.stderr
    assert _status(warm)["commands"] == served + 1
    assert (tmp_path / "schemas").stat().st_mode & 0o777 == 0o700
    assert {p.stat().st_mode & 0o777 for p in (tmp_path / "schemas").iterdir()} == {0o600}


def test_an_environment_read_at_import_that_differs_runs_on_its_own(warm: Path):
    served = _status(warm)["commands"]
    env = _env(warm) | {"LANGSMITH_TRACING": "false"}  # langsmith caches it when imported
    done = subprocess.run([CLOUDBRAIN, "graph", "--json"], env=env, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0 and json.loads(done.stdout)["nodes"]
    assert "started with other values of LANGSMITH_TRACING; this command runs on its own" in done.stderr
    assert _status(warm)["commands"] == served


def test_a_write_error_on_stdout_gives_the_exit_code_a_fresh_process_gives(warm: Path):
    with open("/dev/full", "w") as full:
        through_warm = subprocess.run([CLOUDBRAIN, "graph"], env=_env(warm), stdout=full, stderr=subprocess.PIPE)
        alone = subprocess.run(
            [CLOUDBRAIN, "graph"], env=_env(warm, use_warm=False), stdout=full, stderr=subprocess.PIPE
        )
    assert alone.returncode != 0
    assert through_warm.returncode == alone.returncode, through_warm.stderr


def test_the_terminal_commands_run_on_their_own(warm: Path, tmp_path: Path):
    served = _status(warm)["commands"]
    stepped = _cloudbrain(
        warm, "step", "--model", "rules", "--world", str(DOWNTOWN), "--instruction", REQUEST,
        "--db", str(tmp_path / "s.sqlite"), "--memory-path", str(tmp_path / "memory"), "--thread", "stepped",
        input="next\nquit\n",
    )  # fmt: skip
    assert stepped.returncode == 0 and "left thread stepped at" in stepped.stdout, stepped.stderr
    assert _status(warm)["commands"] == served  # step asks the operator at the terminal: not through warm


def test_two_messages_in_one_read_are_two_messages():
    left, right = socket.socketpair()
    with left, right:
        left.sendall(b"".join(HEADER.pack(len(m)) + m for m in (b'{"pid": 7}', b'{"exit": 3}')))
        reader = MessageReader(right)
        assert reader.next() == {"pid": 7} and reader.next() == {"exit": 3}


def test_a_stale_socket_file_is_not_a_warm_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    sock = tmp_path / "gone.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(sock))
    listener.close()  # the file stays, nobody listens
    monkeypatch.setenv(SOCKET_ENV, str(sock))
    monkeypatch.delenv(DISABLE_ENV, raising=False)
    assert forwarded(["trace", "--thread", "t"], "trace") is None


def test_a_code_change_stops_the_warm_process_and_the_command_runs_on_its_own(tmp_path: Path):
    sock = tmp_path / "w.sock"
    server = _start_warm(sock)
    try:
        source = ROOT / "cli" / "warm.py"  # imported by the warm process; its time moves, its text does not
        before = source.stat()
        os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
        try:
            checked = _cloudbrain(sock, "graph", "--json")
        finally:
            os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert checked.returncode == 0 and json.loads(checked.stdout)["nodes"], checked.stderr
        assert "its code or packages changed since it started; this command runs on its own" in checked.stderr, (
            checked.stderr
        )
        assert server.wait(timeout=30) == 0
        assert not sock.exists()
    finally:
        if server.poll() is None:
            server.kill()
