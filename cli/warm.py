"""`cloudbrain warm`: a resident process that has already imported the agent (LangGraph, Qdrant's client, Spot,
rtamt, the embedding tokenizer), so a command typed at a terminal pays for its own work and not for ~3 s of imports.

How it works (a fork server, as Emacs's server, Nailgun or mypy's daemon do): `cloudbrain warm` imports the heavy
modules once and listens on a Unix socket that only this user can reach (Linux: the peer's uid is checked both
ways). The `cloudbrain` program (`cli.main.entry`) connects when that socket exists and passes its stdin, stdout and
stderr (SCM_RIGHTS), arguments, working folder, environment, umask, nice value and resource limits. The warm process
forks; the child starts a session of its own (so the warm process's terminal and job control never touch it),
becomes the caller's process and runs the command; the warm process reports the child's exit status (its exit code,
or the signal that ended it) once the child has exited, interpreter shutdown included. Signals the caller's terminal
sends (Ctrl-C, Ctrl-Z, hang-up, ...) are forwarded; a caller that dies takes the command with it.

It declines, and the command runs on its own as before, when it cannot be faithful: commands that talk to the
terminal or serve until stopped (NOT_FORWARDED), an environment that differs in what was read at import
(IMPORT_TIME_ENV), another checkout or Python, limits it cannot give, or code or packages changed since it started
(then it also stops). `CLOUDBRAIN_WARM=0` keeps one command from using it.

The client half (this module's top) imports only the standard library's light modules: `cloudbrain --help` stays at
the interpreter's start-up cost.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import signal
import socket
import stat
import struct
import sys
from pathlib import Path
from typing import Any

# The commands this module registers, with their one-line help (cli/main.py lists them without importing more)
COMMANDS = {
    "warm": "keep the agent's modules loaded in a resident process, so each command answers in about a second",
}

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DISABLE_ENV = "CLOUDBRAIN_WARM"  # 0 / false / no / off: never use a warm process
SOCKET_ENV = "CLOUDBRAIN_WARM_SOCKET"  # another socket path (tests; several installs of one user)
# step and ops ask the operator at the terminal (/dev/tty, which a process of another session cannot open); ui and
# mcp serve until stopped: they gain nothing from a warm start
NOT_FORWARDED = frozenset({"warm", "step", "ops", "ui", "mcp"})
# Read when a module is imported (encodings, thread pools, tracing, the embedding model's folder): a caller whose
# values differ would get the warm process's, so such a command runs on its own
IMPORT_TIME_ENV = (
    "PYTHON",
    "LANG",
    "LC_",
    "TZ",
    "LANGSMITH_",
    "LANGCHAIN_",
    "CLOUDBRAIN_EMBEDDINGS",
    "OMP_",
    "OPENBLAS_",
    "MKL_",
    "ORT_",
    "HF_",
    "TRANSFORMERS_",
    "TOKENIZERS_",
    "GRPC_",
)
LIMITS = ("RLIMIT_AS", "RLIMIT_CORE", "RLIMIT_CPU", "RLIMIT_DATA", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_STACK")
REPLY_TIMEOUT_SEC = 10.0
HEADER = struct.Struct("!I")  # a message: its length, then that many bytes of JSON
MAX_MESSAGE = 16 * 1024 * 1024


class WarmUnavailable(Exception):
    """Why no warm process can be used or started here."""


def socket_path() -> Path:
    """This user's and this install's socket: two checkouts (or two virtual environments) never share one. Without
    XDG_RUNTIME_DIR (a per-user folder), a folder of this user's own under the temporary folder, mode 0700."""
    if os.environ.get(SOCKET_ENV):
        return Path(os.environ[SOCKET_ENV])
    install = hashlib.sha256(f"{sys.prefix}\0{PROJECT_ROOT}".encode()).hexdigest()[:12]
    if os.environ.get("XDG_RUNTIME_DIR"):
        return Path(os.environ["XDG_RUNTIME_DIR"]) / f"cloudbrain-warm-{install}.sock"
    folder = Path(os.environ.get("TMPDIR") or "/tmp") / f"cloudbrain-{os.getuid()}"
    return folder / f"warm-{install}.sock"


def _private_folder(path: Path, create: bool) -> None:
    """The socket's folder must be this user's alone (else another user could listen in our place)."""
    if os.environ.get(SOCKET_ENV) or os.environ.get("XDG_RUNTIME_DIR"):
        return
    folder = path.parent
    if create:
        folder.mkdir(mode=0o700, exist_ok=True)
    try:
        info = folder.lstat()
    except FileNotFoundError:
        raise WarmUnavailable(f"{folder} does not exist") from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise WarmUnavailable(f"{folder} is not a folder of this user's alone (mode 0700)")


def _peer_uid(conn: socket.socket) -> int:
    return struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[1]


def _send(conn: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    data = json.dumps(message).encode()
    framed = HEADER.pack(len(data)) + data
    if fds:
        sent = socket.send_fds(conn, [framed], fds)
        conn.sendall(framed[sent:])
    else:
        conn.sendall(framed)


class MessageReader:
    """Length-prefixed JSON messages from a stream socket; bytes past one message are kept for the next."""

    def __init__(self, conn: socket.socket):
        self.conn = conn
        self.buffer = b""
        self.fds: list[int] = []

    def next(self, max_fds: int = 0) -> dict[str, Any] | None:
        """The next message (None when the other side closed first); descriptors that came with it in self.fds."""
        while True:
            if len(self.buffer) >= HEADER.size:
                (length,) = HEADER.unpack_from(self.buffer)
                if length > MAX_MESSAGE:
                    raise ValueError("message too long")
                if len(self.buffer) >= HEADER.size + length:
                    data = self.buffer[HEADER.size : HEADER.size + length]
                    self.buffer = self.buffer[HEADER.size + length :]
                    return json.loads(data)
            if max_fds and not self.fds:
                chunk, fds, _flags, _addr = socket.recv_fds(self.conn, 65536, max_fds)
                self.fds = list(fds)
            else:
                chunk = self.conn.recv(65536)
            if not chunk:
                return None
            self.buffer += chunk


def _connect(path: Path) -> socket.socket | None:
    """A connection to this user's warm process at `path`, if one listens there."""
    if not hasattr(socket, "SO_PEERCRED") or not path.exists():
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
        if _peer_uid(conn) != os.getuid():
            raise PermissionError("not this user's")
    except OSError:  # nobody listens (a socket file left behind), or somebody else does
        conn.close()
        return None
    return conn


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _python() -> list[str]:
    return [os.path.realpath(sys.executable), sys.prefix]


def forwarded(argv: list[str], command: str | None) -> int | None:
    """Run `cloudbrain ARGV` in the warm process; its exit code, or None when there is none to use or it declines
    (then the caller runs the command itself)."""
    if os.environ.get(DISABLE_ENV, "").lower() in ("0", "false", "no", "off"):
        return None
    if command is None or command in NOT_FORWARDED:
        return None
    path = socket_path()
    try:
        _private_folder(path, create=False)
        cwd = os.getcwd()
        for fd in (0, 1, 2):
            os.fstat(fd)  # a closed stdin / stdout / stderr: the socket would take its number
        if _passes_other_descriptors() or _background_job_at_a_terminal():
            return None
    except (OSError, WarmUnavailable):
        return None
    conn = _connect(path)
    if conn is None:
        return None
    relay = SignalRelay()  # from here on a Ctrl-C is held, then the command's (or given back, if it runs here)
    code = None
    try:
        code = _run_through(conn, relay, argv, cwd)
        return code
    finally:
        conn.close()
        if code is None:
            relay.give_back()


def _run_through(conn: socket.socket, relay: SignalRelay, argv: list[str], cwd: str) -> int | None:
    """Send the request; the command's exit status, or None when the warm process declines or cannot answer."""
    request = {
        "argv": argv,
        "argv0": sys.argv[0],
        "cwd": cwd,
        "env": dict(os.environ),
        "umask": _umask(),
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "limits": {name: resource.getrlimit(getattr(resource, name)) for name in LIMITS},
        "root": str(PROJECT_ROOT),
        "python": _python(),
        "interpreter": _interpreter_options(),
        "ignored_signals": relay.ignored,  # nohup, a script's background job: the command ignores them too
    }
    reader = MessageReader(conn)
    try:
        _send(conn, {"run": request}, fds=[0, 1, 2])
        conn.settimeout(REPLY_TIMEOUT_SEC)  # a warm process that is stopped (Ctrl-Z) or hung: run here instead
        reply = reader.next()
        conn.settimeout(None)
    except OSError:
        return None
    if reply is None:
        return None
    if "refused" in reply:
        print(f"cloudbrain: {reply['refused']}; this command runs on its own", file=sys.stderr)
        return None
    pid = reply.get("pid")
    if not isinstance(pid, int) or pid <= 1:
        return None
    relay.start(pid)
    return _wait_for_exit(reader, pid)


def _passes_other_descriptors() -> bool:
    """Whether this process holds descriptors a command may name beyond stdio (`--ir <(...)`, `4<file`): only 0-2
    travel, so such a command runs here."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return True
    for fd in (int(name) for name in names):
        try:
            if fd > 2 and os.get_inheritable(fd):
                return True
        except OSError:  # the listing's own descriptor, closed by now
            continue
    return False


def _background_job_at_a_terminal() -> bool:
    """A background job that would read its terminal: the shell stops it (SIGTTIN) only if it runs here."""
    try:
        return os.isatty(0) and os.tcgetpgrp(0) != os.getpgrp()
    except OSError:
        return False


def _interpreter_options() -> list[Any]:
    """-X, -W, -O, -u and the like: a command run with other ones than the warm process's runs here."""
    return [list(sys.flags), list(sys.warnoptions), sorted(map(str, sys._xoptions.items()))]


class SignalRelay:
    """The signals a terminal sends (Ctrl-C, Ctrl-Z, Ctrl-\\, hang-up, kill), taken over before the request goes
    out: held until the command's pid is known, then forwarded to its process group; given back to this process
    (its own handlers, and what was held, delivered again) when the command runs here after all."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGTSTP, signal.SIGCONT)

    def __init__(self) -> None:
        self.pid: int | None = None
        self.held: list[int] = []
        self.ignored = [int(s) for s in self.SIGNALS if signal.getsignal(s) == signal.SIG_IGN]
        self.previous = {s: signal.getsignal(s) for s in self.SIGNALS if s not in self.ignored}
        for signum in self.previous:
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, _frame: object) -> None:
        if self.pid is None:
            if signum != signal.SIGCONT:
                self.held.append(signum)
            return
        try:
            if signum == signal.SIGTSTP:  # Ctrl-Z: the command stops, then this process, as one job
                os.killpg(self.pid, signal.SIGSTOP)
                signal.signal(signal.SIGTSTP, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGTSTP)
                signal.signal(signal.SIGTSTP, self._on_signal)
            else:
                os.killpg(self.pid, signum)
        except ProcessLookupError:
            pass

    def start(self, pid: int) -> None:
        self.pid = pid
        while self.held:
            self._on_signal(self.held.pop(0), None)

    def give_back(self) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        while self.held:
            os.kill(os.getpid(), self.held.pop(0))


def _wait_for_exit(reader: MessageReader, pid: int) -> int:
    """The command's exit status, as the caller's own (its signals are forwarded by the SignalRelay)."""
    reply = reader.next()
    if reply is None:
        print(f"cloudbrain: the warm process ended before its command {pid} did", file=sys.stderr)
        return 1
    if "signal" in reply:  # die of it, as the command did (its core, if any, is the command's: not this one's)
        signum = int(reply["signal"])
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
        if signum not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return 128 + signum
    return int(reply["exit"])


# ----------------------------------------------------------------------------------------------------------------
# The server half: imports are heavy on purpose, and happen only in `cloudbrain warm`.

# What a command of this tool imports before it does its work (`-X importtime` of run, trace, certify and export);
# an optional one missing on this install (spot) is skipped. Not ONNX Runtime: a process forked after importing it
# hangs in the interpreter's exit (its threads' teardown), so each command loads the embedding model itself (0.3 s).
PRELOAD = (
    "cli.agent",
    "cli.tools",
    "cli.standards",
    "cli.memory",
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
    "tokenizers",
    "pint",
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "warm",
        help=COMMANDS["warm"],
        description=COMMANDS["warm"].capitalize()
        + ". Runs in the foreground (`cloudbrain warm &` for the background); while it runs, this user's `cloudbrain` "
        f"commands of this install go through it, except {', '.join(sorted(NOT_FORWARDED - {'warm'}))}. "
        "CLOUDBRAIN_WARM=0 keeps one command from using it. Linux only.",
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

    if not hasattr(socket, "SO_PEERCRED"):
        raise CommandError("the warm process needs Linux (it checks who is at the other end of its socket)")
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
            reply = MessageReader(conn).next() or {}
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
    try:
        _private_folder(path, create=True)
        WarmServer(path, idle_s=args.idle_minutes * 60).serve()
    except (WarmUnavailable, OSError) as exc:
        raise CommandError(f"cannot listen on {path}: {exc}") from None
    return EXIT_OK


class WarmServer:
    """Imports once, forks once per command, reports each command's exit status when its process has exited."""

    def __init__(self, path: Path, idle_s: float) -> None:
        self.path = path
        self.idle_s = idle_s
        self.pid = os.getpid()
        self.children: dict[int, socket.socket] = {}  # a command's pid -> its caller's connection
        self.commands = 0

    def serve(self) -> None:
        import selectors
        import time

        self.started = time.time()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.path.unlink(missing_ok=True)  # left by a warm process that is gone (_connect found no listener)
        old_umask = os.umask(0o077)  # the socket: this user only
        try:
            listener.bind(str(self.path))  # before the imports: a path that cannot be is said at once
        finally:
            os.umask(old_umask)
        inode = self.path.stat().st_ino
        wakeup_read, wakeup_write = os.pipe()  # SIGCHLD wakes the loop: a command's status goes out at once
        os.set_blocking(wakeup_write, False)
        signal.set_wakeup_fd(wakeup_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.selector = selectors.DefaultSelector()
        self.own_fds = [wakeup_read, wakeup_write]
        listening = True
        try:
            skipped = self._preload()
            self.code = _code_stamp()
            listener.listen(16)
            note = f" (not installed, skipped: {', '.join(skipped)})" if skipped else ""
            print(
                f"cloudbrain warm: pid {self.pid}, listening on {self.path}{note}; `cloudbrain warm --stop` stops it",
                file=sys.stderr,
                flush=True,
            )
            self.selector.register(listener, selectors.EVENT_READ, "listener")
            self.selector.register(wakeup_read, selectors.EVENT_READ, "wakeup")
            last_command = time.monotonic()
            while listening or self.children:
                events = self.selector.select(timeout=5.0)
                self._reap()
                if self.children:
                    last_command = time.monotonic()
                elif listening and time.monotonic() - last_command > self.idle_s:
                    print(f"cloudbrain warm: idle for {self.idle_s / 60:g} min, stopping", file=sys.stderr)
                    return
                for key, _ in events:
                    if key.data == "wakeup":
                        os.read(wakeup_read, 4096)
                    elif key.data == "listener":
                        conn, _ = listener.accept()
                        last_command = time.monotonic()
                        if not self._handle(conn, listener):
                            listening = self._stop_listening(listener, inode)
                    else:  # a caller's connection: it never writes, so readable means it is gone
                        self._caller_gone(key.data, key.fileobj)
        except KeyboardInterrupt:
            if os.getpid() != self.pid:
                raise  # a command's late Ctrl-C is the command's
            self._stop_listening(listener, inode)
            self._finish_running_commands()
        finally:
            if os.getpid() == self.pid:  # a command's process unwinds through here too: nothing of the server's
                signal.set_wakeup_fd(-1)
                self._stop_listening(listener, inode)

    def _stop_listening(self, listener: socket.socket, inode: int) -> bool:
        """No new command (the socket removed); the running ones still get their exit status. Returns False."""
        if listener.fileno() != -1:
            try:
                self.selector.unregister(listener)
            except (KeyError, ValueError):
                pass
            listener.close()
            try:
                if self.path.stat().st_ino == inode:  # never remove a socket another warm process made since
                    self.path.unlink()
            except FileNotFoundError:
                pass
        return False

    def _finish_running_commands(self) -> None:
        """After a Ctrl-C at the warm process's terminal: the commands are in sessions of their own and run on; their
        callers still get their exit status."""
        while self.children:
            try:
                os.waitpid(next(iter(self.children)), 0)
            except ChildProcessError:
                pass
            except KeyboardInterrupt:
                continue
            self._reap()

    def _preload(self) -> list[str]:
        import importlib

        skipped = []
        for name in PRELOAD:
            try:
                importlib.import_module(name)
            except ImportError:
                skipped.append(name)
        if "onnxruntime" in sys.modules:
            raise WarmUnavailable("a preloaded module imported ONNX Runtime, which cannot be forked")
        import gc

        gc.freeze()  # what is imported stays out of the commands' collections: their exit walks 4x less (0.57 -> 0.13 s)
        return skipped

    def _caller_gone(self, pid: int, conn: socket.socket) -> None:
        """A caller that hung up before its command ended (killed, even with SIGKILL): the command goes with it, as it
        would have, stopped (Ctrl-Z) or not."""
        try:
            still_there = conn.recv(1, socket.MSG_DONTWAIT | socket.MSG_PEEK)
        except BlockingIOError:
            return
        except OSError:
            still_there = b""
        if not still_there:
            try:
                self.selector.unregister(conn)
                os.killpg(pid, signal.SIGKILL)
            except (KeyError, ValueError, ProcessLookupError, PermissionError):
                pass

    def _reap(self) -> None:
        """Each command's process that has exited: its status to its caller."""
        for pid in list(self.children):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done, status = pid, 1 << 8
            if not done:
                continue
            conn = self.children.pop(pid)
            try:
                self.selector.unregister(conn)
            except (KeyError, ValueError):
                pass
            if os.WIFSIGNALED(status):
                message = {"signal": os.WTERMSIG(status)}
            else:
                message = {"exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1}
            try:
                _send(conn, message)
            except OSError:  # the caller is gone
                pass
            conn.close()

    def _refusal(self, request: dict[str, Any]) -> tuple[str | None, bool]:
        """(why this process cannot run the request as the caller's own, whether it should stop)."""
        if _code_stamp() != self.code:
            return f"the warm process (pid {self.pid}) stopped: its code or packages changed since it started", True
        if request.get("root") != str(PROJECT_ROOT) or request.get("python") != _python():
            return f"the warm process (pid {self.pid}) runs another checkout or Python ({PROJECT_ROOT})", False
        if request.get("interpreter") != _interpreter_options():
            return f"the warm process (pid {self.pid}) runs with other interpreter options (-X, -W, -O, -u)", False
        env = request["env"]
        differs = sorted(
            key
            for key in set(env) | set(os.environ)
            if key.startswith(IMPORT_TIME_ENV) and env.get(key) != os.environ.get(key)
        )
        if differs:
            return f"the warm process (pid {self.pid}) started with other values of {', '.join(differs)}", False
        if request["nice"] < os.getpriority(os.PRIO_PROCESS, 0):
            return f"the warm process (pid {self.pid}) runs at a higher nice value than this command", False
        for name, (_soft, hard) in request["limits"].items():
            own = resource.getrlimit(getattr(resource, name))[1]
            if own != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or hard > own):
                return f"the warm process (pid {self.pid}) cannot give this command its {name}", False
        return None, False

    def _handle(self, conn: socket.socket, listener: socket.socket) -> bool:
        """One connection; False when the warm process should stop taking commands."""
        import selectors
        import time

        reader = MessageReader(conn)
        keep = False
        try:
            conn.settimeout(2.0)
            if _peer_uid(conn) != os.getuid():
                return True
            message = reader.next(max_fds=3)
            if message is None:
                return True
            if message.get("status"):
                reply = {"pid": self.pid, "socket": str(self.path), "commands": self.commands, "running": True}
                reply["children"] = sorted(self.children)  # the commands running now
                _send(conn, reply | {"up_s": time.time() - self.started})
                return True
            if message.get("stop"):
                _send(conn, {"pid": self.pid, "stopped": True})
                return False
            request = message["run"]
            if len(reader.fds) != 3:
                _send(conn, {"refused": "the warm process did not receive the command's stdin, stdout and stderr"})
                return True
            why, stop = self._refusal(request)
            if why:
                _send(conn, {"refused": why})
                return not stop
            conn.setblocking(False)
            try:  # a caller that gave up waiting (this process was stopped) runs the command itself: not twice
                gone = conn.recv(1, socket.MSG_PEEK) == b""
            except BlockingIOError:
                gone = False
            conn.setblocking(True)
            if gone:
                return True
            pid = os.fork()
            if pid == 0:  # the warm process's own descriptors, and other commands' callers, are not the command's
                self.selector.close()
                listener.close()
                for other in self.children.values():
                    other.close()
                for fd in self.own_fds:
                    os.close(fd)
                _become_the_command(conn, request, reader.fds)  # raises SystemExit when the command is done
            self.children[pid] = conn
            self.selector.register(conn, selectors.EVENT_READ, pid)
            keep = True
            self.commands += 1
        except (OSError, ValueError, KeyError, TypeError) as exc:
            if os.getpid() == self.pid:
                print(f"cloudbrain warm: a connection failed: {exc}", file=sys.stderr)
        finally:
            if os.getpid() == self.pid:
                for fd in reader.fds:
                    os.close(fd)
                if not keep:
                    conn.close()
        return True


def _code_stamp() -> tuple[dict[str, int], dict[str, int]]:
    """This project's imported source files, and the installed packages' and embedding model's folders, with their
    modification times: a change means the warm process runs old code or data, and stops."""
    files = []
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and file.startswith(str(PROJECT_ROOT)) and ".venv" not in file:
            files.append(file)
    folders = {path for path in sys.path if path.endswith("site-packages")}  # a package installed or removed
    embeddings = sys.modules.get("memory.embeddings")
    if embeddings is not None:
        folder = embeddings.default_embeddings_dir()
        folders |= {str(folder), *(str(p) for p in embeddings.onnx_paths(folder))}

    def mtimes(paths: Any) -> dict[str, int]:
        found = {}
        for path in paths:
            try:
                found[path] = os.stat(path).st_mtime_ns
            except OSError:
                found[path] = -1
        return found

    return mtimes(files), mtimes(folders)


def _caller_stdio(unbuffered: bool) -> None:
    """sys.stdin / stdout / stderr over the caller's descriptors, buffered as the interpreter buffers them (stdout by
    line at a terminal, else by block; stderr by line; neither under PYTHONUNBUFFERED), with its encodings and error
    handlers (surrogateescape under a C or POSIX locale)."""
    import io

    def text(fd: int, mode: str, like: Any, line: bool) -> io.TextIOWrapper:
        raw = io.FileIO(fd, mode, closefd=False)
        if mode == "r":
            return io.TextIOWrapper(io.BufferedReader(raw), like.encoding, like.errors, line_buffering=line)
        if unbuffered:  # as the interpreter's -u: the text layer writes straight to the descriptor
            return io.TextIOWrapper(raw, like.encoding, like.errors, line_buffering=line, write_through=True)  # type: ignore[arg-type]
        return io.TextIOWrapper(io.BufferedWriter(raw), like.encoding, like.errors, line_buffering=line)

    sys.stdin = text(0, "r", sys.__stdin__, line=False)
    sys.stdout = text(1, "w", sys.__stdout__, line=os.isatty(1))
    sys.stderr = text(2, "w", sys.__stderr__, line=True)


def _become_the_command(conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """The child: a session of its own, the caller's stdio, folder, environment, umask, nice value, limits and ignored
    signals; run the command; leave through the interpreter's own exit (buffers flushed, files closed, exit code 120
    when stdout cannot be flushed), whose status the warm process reports. A caller that hangs up takes it with it
    (WarmServer._caller_gone)."""
    code: Any = 1
    try:
        os.setsid()  # the warm process's terminal, its Ctrl-C and its hang-up never reach the command
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGTSTP):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for signum in request.get("ignored_signals", []):
            signal.signal(signum, signal.SIG_IGN)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)  # received without close-on-exec: a subprocess of the command must not hold them
        _caller_stdio(unbuffered=bool(request["env"].get("PYTHONUNBUFFERED")))
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.umask(request["umask"])
        own_nice = os.getpriority(os.PRIO_PROCESS, 0)
        os.setpriority(os.PRIO_PROCESS, 0, max(request["nice"], own_nice))
        for name, (soft, hard) in request["limits"].items():
            resource.setrlimit(getattr(resource, name), (soft, hard))
        sys.argv = [request["argv0"], *request["argv"]]
        try:
            _send(conn, {"pid": os.getpid()})
        except OSError:  # the caller is already gone: nothing to run for it
            os._exit(1)
        from cli.main import main

        code = main(request["argv"])
    except SystemExit as exc:  # argparse's errors and --help
        code = exc.code
    except BaseException:  # noqa: BLE001 (printed as the interpreter would, with the exit code it would give)
        import traceback

        traceback.print_exc()
        code = 1
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a late Ctrl-C must not turn into a traceback at shutdown
    raise SystemExit(code)
