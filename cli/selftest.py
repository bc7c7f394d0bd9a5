"""`selftest`: the embedded model loads, decodes and decodes under a schema on this machine (`make install` ends
with it, so a runtime built for another CPU is one clear line at install time, not a crash in the first run)."""

from __future__ import annotations

import argparse

from cli.common import EXIT_OK, CommandError, add_json_flag, emit

# The commands this module registers, with their one-line help (cli/main.py lists them without importing more)
COMMANDS = {
    "selftest": "check that the embedded model runs on this machine, and how fast",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("selftest", help=COMMANDS["selftest"])
    add_json_flag(p)
    p.set_defaults(run=run_selftest)


def run_selftest(args: argparse.Namespace) -> int:
    from models.local_model import LocalModelError
    from models.model_host import self_test

    try:
        report = self_test()
    except LocalModelError as exc:
        raise CommandError(f"the embedded model failed its self-test: {exc}") from None
    text = (
        f"embedded model ok: {report.model} on {report.runtime} (built for {' '.join(report.instruction_sets)}); "
        f"load {report.load_sec:.2f} s, prompt {report.prompt_tokens_per_sec:.0f} tok/s, "
        f"decode {report.decode_tokens_per_sec:.0f} tok/s"
    )
    emit(report, args.json, text)
    return EXIT_OK
