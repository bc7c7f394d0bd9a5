"""A model host that dies as a native crash would: it reports itself loaded, then kills its own process with
SIGSEGV on the first call (as llama.cpp did in an AMX kernel the CPU refused). Used in place of models.model_host
by pointing models.model_host.HOST_MODULE here."""

from __future__ import annotations

import argparse
import os
import signal
from multiprocessing.connection import Connection


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fds", required=True)
    args, _ = parser.parse_known_args()
    read_fd, write_fd = (int(fd) for fd in args.fds.split(","))
    reader, writer = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    writer.send(("ready", {"n_ctx": 8192, "load_seconds": 0.0, "runtime": "none", "system_info": ""}))
    reader.recv()
    os.kill(os.getpid(), signal.SIGSEGV)


if __name__ == "__main__":
    main()
