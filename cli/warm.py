"""`cloudbrain warm`: a resident process that has already imported the agent (LangGraph, Qdrant's client, Spot,
rtamt, the ONNX embedder), so a command typed at a terminal pays for its own work and not for ~3 s of imports.

How it works (a fork server, as Emacs's server, Nailgun or mypy's daemon do): `cloudbrain warm` imports the heavy
modules once and listens on a Unix socket readable by this user only. The `cloudbrain` command (`entry`, below)
connects when that socket exists, passes its own stdin, stdout and stderr (SCM_RIGHTS), its arguments, working folder
and environment; the warm process forks, and the child runs the command exactly as a fresh process would (own
memory, the caller's terminal and files, its exit code sent back; Ctrl-C is forwarded). Nothing is shared between two
commands but what was imported before the fork. A warm process started before the code changed stops at the next
command, which then runs on its own. `CLOUDBRAIN_WARM=0` keeps a command from using it.

The client half (this module's top) imports only the standard library's light modules: `cloudbrain --help` stays
at the interpreter's start-up cost.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import socket
import struct
import sys
from pathlib import Path
from typing import Any

# The commands this module registers, with their one-line help (cli/main.py lists them without importing more)
COMMANDS = {
    "warm": "keep the agent's modules loaded in a resident process, so each command answers in about a second",
}

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DISABLE_ENV = "CLOUDBRAIN_WARM"  # "0": never use a warm process
SOCKET_ENV = "CLOUDBRAIN_WARM_SOCKET"  # another socket path (tests; several installs of one user)
HEADER = struct.Struct("!I")  # a message: its length, then that many bytes of JSON
MAX_MESSAGE = 16 * 1024 * 1024


def socket_path() -> Path:
    """This user's and this install's socket: two checkouts (or two virtual environments) never share one."""
    if os.environ.get(SOCKET_ENV):
        return Path(os.environ[SOCKET_ENV])
    install = hashlib.sha256(f"{sys.executable}\0{PROJECT_ROOT}".encode()).hexdigest()[:12]
    folder = os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("TMPDIR") or "/tmp"
    return Path(folder) / f"cloudbrain-warm-{os.getuid()}-{install}.sock"


def _send(conn: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    data = json.dumps(message).encode()
    framed = HEADER.pack(len(data)) + data
    if fds:
        sent = socket.send_fds(conn, [framed], fds)
        conn.sendall(framed[sent:])
    else:
        conn.sendall(framed)


def _receive(conn: socket.socket, max_fds: int = 0) -> tuple[dict[str, Any] | None, list[int]]:
    """One message (None when the other side closed first) and the descriptors that came with it."""
    fds: list[int] = []
    buffer = b""
    while len(buffer) < HEADER.size or len(buffer) < HEADER.size + HEADER.unpack_from(buffer)[0]:
        if len(buffer) >= HEADER.size and HEADER.unpack_from(buffer)[0] > MAX_MESSAGE:
            raise ValueError("message too long")
        if max_fds and not fds:
            chunk, fds, _flags, _addr = socket.recv_fds(conn, 65536, max_fds)
        else:
            chunk = conn.recv(65536)
        if not chunk:
            return None, fds
        buffer += chunk
    (length,) = HEADER.unpack_from(buffer)
    return json.loads(buffer[HEADER.size : HEADER.size + length]), fds


def _connect(path: Path) -> socket.socket | None:
    if not path.exists():
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
    except OSError:  # a socket file left by a process that is gone
        conn.close()
        return None
    return conn


def forwarded(argv: list[str]) -> int | None:
    """Run `cloudbrain ARGV` in the warm process; its exit code, or None when there is none to use (then the
    caller runs the command itself)."""
    if os.environ.get(DISABLE_ENV) == "0":
        return None
    conn = _connect(socket_path())
    if conn is None:
        return None
    with conn:
        request = {"argv": argv, "argv0": sys.argv[0], "cwd": os.getcwd(), "env": dict(os.environ)}
        request["executable"] = sys.executable
        try:
            _send(conn, {"run": request}, fds=[0, 1, 2])
            reply, _ = _receive(conn)
        except OSError:
            return None
        if reply is None:
            return None
        if "refused" in reply:
            print(f"cloudbrain: {reply['refused']}; this command runs on its own", file=sys.stderr)
            return None
        return _wait_for_exit(conn, int(reply["pid"]))


def _wait_for_exit(conn: socket.socket, pid: int) -> int:
    """Forward the signals a terminal sends to the command's process, and return its exit code."""

    def forward(signum: int, _frame: object) -> None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, forward)
    while True:
        try:
            reply, _ = _receive(conn)
            break
        except InterruptedError:
            continue
    if reply is None:
        print(f"cloudbrain: the warm process's worker {pid} died before it finished", file=sys.stderr)
        return 1
    return int(reply["exit"])


# ----------------------------------------------------------------------------------------------------------------
# The server half: imports are heavy on purpose, and happen only in `cloudbrain warm`.

# What a command of this tool imports before it does its work (`-X importtime` of run, trace, certify and export);
# an optional one missing on this install (spot, llama_cpp) is skipped.
PRELOAD = (
    "cli.agent",
    "cli.tools",
    "cli.standards",
    "cli.memory",
    "cli.ops",
    "cli.bench",
    "graph.runner",
    "graph.history",
    "graph.checkpoint",
    "langgraph.checkpoint.sqlite",
    "memory.access",
    "memory.store",
    "memory.embeddings",
    "memory.rule_vectors",
    "tools.verifier",
    "tools.simulator",
    "tools.certificate",
    "standards.flight_plans",
    "spot",
    "rtamt",
    "onnxruntime",
    "tokenizers",
    "pint",
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "warm",
        help=COMMANDS["warm"],
        description=COMMANDS["warm"].capitalize()
        + ". Runs in the foreground (`cloudbrain warm &` for the background); every `cloudbrain` command of this user "
        "and install goes through it while it runs. CLOUDBRAIN_WARM=0 keeps one command from using it.",
    )
    action = p.add_mutually_exclusive_group()
    action.add_argument("--stop", action="store_true", help="stop the running warm process")
    action.add_argument("--status", action="store_true", help="say whether one runs, since when, how many commands")
    p.add_argument(
        "--idle-minutes",
        type=float,
        default=120.0,
        help="stop after this long without a command (default %(default)s)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable JSON on stdout (--status, --stop)")
    p.set_defaults(run=run_warm)


def run_warm(args: argparse.Namespace) -> int:
    from cli.common import EXIT_OK, CommandError, emit

    path = socket_path()
    if args.stop or args.status:
        conn = _connect(path)
        if conn is None:
            if args.stop:
                raise CommandError(f"no warm process is listening on {path}")
            emit({"running": False, "socket": str(path)}, args.json, f"no warm process (socket {path})")
            return EXIT_OK
        with conn:
            _send(conn, {"stop" if args.stop else "status": True})
            reply, _ = _receive(conn)
        reply = reply or {}
        if args.stop:
            emit(reply, args.json, f"warm process {reply.get('pid')} stopped")
        else:
            emit(
                reply,
                args.json,
                f"warm process {reply.get('pid')} on {path}: up {reply.get('up_s', 0):.0f} s, "
                f"{reply.get('commands', 0)} command(s) served",
            )
        return EXIT_OK
    if args.idle_minutes <= 0:
        raise CommandError("--idle-minutes must be positive")
    if _connect(path) is not None:
        raise CommandError(f"a warm process already listens on {path} (`cloudbrain warm --status`)")
    WarmServer(path, idle_s=args.idle_minutes * 60).serve()
    return EXIT_OK


class WarmServer:
    """Imports once, forks once per command."""

    def __init__(self, path: Path, idle_s: float) -> None:
        self.path = path
        self.idle_s = idle_s
        self.children: set[int] = set()
        self.commands = 0

    def serve(self) -> None:
        import time

        self.started = time.time()
        skipped = self._preload()
        self.code = _code_stamp()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.path.unlink(missing_ok=True)  # left by a warm process that is gone (_connect found no listener)
        old_umask = os.umask(0o077)  # the socket: this user only
        try:
            listener.bind(str(self.path))
        finally:
            os.umask(old_umask)
        listener.listen(16)
        listener.settimeout(1.0)
        inode = self.path.stat().st_ino
        note = f" (not installed, skipped: {', '.join(skipped)})" if skipped else ""
        print(
            f"cloudbrain warm: pid {os.getpid()}, listening on {self.path}{note}; `cloudbrain warm --stop` stops it",
            file=sys.stderr,
            flush=True,
        )
        last_command = time.monotonic()
        try:
            while True:
                self._reap()
                if self.children:
                    last_command = time.monotonic()
                elif time.monotonic() - last_command > self.idle_s:
                    print(f"cloudbrain warm: idle for {self.idle_s / 60:g} min, stopping", file=sys.stderr)
                    return
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    continue
                last_command = time.monotonic()
                if not self._handle(conn, listener):
                    return
        except KeyboardInterrupt:
            return
        finally:
            listener.close()
            try:
                if self.path.stat().st_ino == inode:  # never remove a socket another warm process made since
                    self.path.unlink()
            except FileNotFoundError:
                pass

    def _preload(self) -> list[str]:
        import importlib

        skipped = []
        for name in PRELOAD:
            try:
                importlib.import_module(name)
            except ImportError:
                skipped.append(name)
        try:  # the embedding model's session survives a fork (one intra-op thread, no pool to lose)
            from memory.embeddings import shared_embedder

            shared_embedder().encode_one("warm")
        except Exception:  # noqa: BLE001 (a missing model is reported by the command that needs it, as without warm)
            pass
        return skipped

    def _reap(self) -> None:
        for pid in list(self.children):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                self.children.discard(pid)

    def _handle(self, conn: socket.socket, listener: socket.socket) -> bool:
        """One connection; False when the warm process should stop."""
        import time

        fds: list[int] = []
        with conn:
            conn.settimeout(10.0)
            try:
                uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
                if uid != os.getuid():
                    return True
                message, fds = _receive(conn, max_fds=3)
                if message is None:
                    return True
                if message.get("status"):
                    reply = {"pid": os.getpid(), "socket": str(self.path), "commands": self.commands}
                    _send(conn, reply | {"up_s": time.time() - self.started, "running": True})
                    return True
                if message.get("stop"):
                    _send(conn, {"pid": os.getpid(), "stopped": True})
                    return False
                request = message["run"]
                if len(fds) != 3:
                    _send(conn, {"refused": "the warm process did not receive the command's stdin, stdout, stderr"})
                    return True
                changed = _code_stamp() != self.code
                if changed or request.get("executable") != sys.executable:
                    why = "the code changed since it started" if changed else "it runs another Python"
                    _send(conn, {"refused": f"the warm process (pid {os.getpid()}) stopped: {why}"})
                    return not changed
                conn.settimeout(None)
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    _run_forked(conn, request, fds)  # never returns
                self.children.add(pid)
                self.commands += 1
            except (OSError, ValueError, KeyError, TypeError) as exc:
                print(f"cloudbrain warm: a connection failed: {exc}", file=sys.stderr)
            finally:
                for fd in fds:
                    os.close(fd)
        return True


def _code_stamp() -> dict[str, int]:
    """This project's imported source files and their modification times: a change means the warm process runs
    old code, and stops."""
    stamp = {}
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and file.startswith(str(PROJECT_ROOT)) and ".venv" not in file:
            try:
                stamp[file] = os.stat(file).st_mtime_ns
            except OSError:
                stamp[file] = -1
    return stamp


def _run_forked(conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """The child: become the caller's process (its stdio, folder, environment, arguments), run, report, exit."""
    import atexit
    import traceback

    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)  # received without close-on-exec: a subprocess of the command must not hold them
        encoding = sys.stdout.encoding
        sys.stdin = open(0, encoding=encoding, closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", encoding=encoding, closefd=False, buffering=1 if os.isatty(1) else -1)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding=encoding, errors="backslashreplace", closefd=False, buffering=1)  # noqa: SIM115
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [request["argv0"], *request["argv"]]
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(signum, signal.SIG_DFL)
        _send(conn, {"pid": os.getpid()})
        from cli.main import main

        try:
            code = main(request["argv"])
        except SystemExit as exc:  # argparse's errors and --help
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except BaseException:  # noqa: BLE001 (printed as the interpreter would, then the exit code it would give)
            traceback.print_exc()
            code = 1
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a late Ctrl-C must not keep the exit code from the caller
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        _send(conn, {"exit": code})
    finally:
        os._exit(code if isinstance(code, int) else 1)
