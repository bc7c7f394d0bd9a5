"""`cloudbrain step`: the graph paused before every node; the operator reads, edits and advances it.

Keys: next (n) runs one node and shows what it changed; continue (c) runs to the end (still stopping for the
fallback's interrupt); show PATH prints a state value; edit PATH=VALUE sets one; quit (q) leaves the run
checkpointed (replay / fork can pick it up).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TextIO

from graph.checkpoint import DEFAULT_DB
from graph.history import NoStateValue, get_path, node_reads
from graph.session import EditError, Session, parse_edit
from tools.world import World

PREVIEW_CHARS = 240
HELP = "commands: next | continue | show PATH | edit PATH=VALUE | quit"


def preview(value: Any) -> str:
    if isinstance(value, dict) and "world_id" in value and "grid" in value:
        return f"<world {value['world_id']}: {len(value.get('entities', []))} entities, {len(value.get('fleet', []))} UAVs>"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + f"... ({len(text)} chars)"


@dataclass
class Stepper:
    session: Session
    world: World
    instruction: str
    thread_id: str
    task_id: str | None
    gold_ir: dict[str, Any] | None
    world_path: str | None = None
    db: str = DEFAULT_DB  # as shown in the commands it prints (graph.checkpoint.display_name)

    def _ask_operator(self, interrupt_value: dict[str, Any], stdin: TextIO, out: TextIO) -> dict[str, Any] | None:
        out.write(f"\nOPERATOR DECISION NEEDED: {interrupt_value.get('reason')}\n")
        out.write(f"best candidate: {preview(interrupt_value.get('best_candidate'))}\n")
        while True:
            out.write("approve | refuse | edit IR_JSON > ")
            out.flush()
            line = stdin.readline()
            if not line:
                return None
            action, _, rest = line.strip().partition(" ")
            if action in ("approve", "refuse"):
                return {"action": action}
            if action == "edit":
                try:
                    return {"action": "edit", "ir": json.loads(rest)}
                except json.JSONDecodeError as exc:
                    out.write(f"edit needs the IR as JSON: {exc.msg}\n")
                    continue
            out.write("answer approve, refuse or edit IR_JSON\n")

    def loop(self, stdin: TextIO, out: TextIO) -> dict[str, Any] | None:
        """Drive the run from `stdin` commands; returns the final state values, or None if the operator quit."""
        session, thread_id = self.session, self.thread_id
        session.start(
            self.world,
            self.instruction,
            thread_id=thread_id,
            task_id=self.task_id,
            gold_ir=self.gold_ir,
            world_path=self.world_path,
            stepping=True,
        )
        out.write(f"thread {thread_id}. {HELP}\n")
        running = False
        while True:
            snapshot = session.state(thread_id)
            if snapshot.interrupts:
                answer = self._ask_operator(snapshot.interrupts[0].value, stdin, out)
                if answer is None:  # the input ended before an answer: the question stays pending in the thread
                    out.write(f"\nleft thread {thread_id} waiting for the operator's decision\n")
                    return None
                session.step(thread_id, resume=answer)
                continue
            if not snapshot.next:
                out.write("run finished\n")
                return snapshot.values
            node = snapshot.next[0]
            if not running:
                reads = {key: snapshot.values.get(key) for key in node_reads(node) if key in snapshot.values}
                out.write(f"\n[before {node}] reads:\n")
                for key, value in reads.items():
                    out.write(f"  {key} = {preview(value)}\n")
                out.write(f"{node}> ")
                out.flush()
                line = stdin.readline()
                if not line:  # the input ended: as `quit`, which says how to resume
                    out.write("\n")
                    line = "quit"
                command, _, argument = line.strip().partition(" ")
            else:
                command, argument = "next", ""
            if command in ("next", "n"):
                before = snapshot.values
                session.step(thread_id)
                after = session.state(thread_id).values
                changed = [k for k in after if after.get(k) != before.get(k)]
                if not running:
                    out.write(f"[after {node}] changed:\n")
                    for key in changed:
                        out.write(f"  {key} = {preview(after[key])}\n")
            elif command in ("continue", "c"):
                running = True
            elif command == "show":
                try:
                    value = get_path(snapshot.values, argument)
                except NoStateValue as exc:
                    out.write(f"{exc}\n")
                else:
                    out.write(f"{argument} = {json.dumps(value, indent=2, ensure_ascii=False, default=str)}\n")
            elif command == "edit":
                try:
                    path, raw = parse_edit(argument)
                    session.edit(thread_id, [(path, raw)])  # the pending step stays the same
                except EditError as exc:
                    out.write(f"cannot edit: {exc}\n")
                    continue
                out.write(f"set {path}\n")
            elif command in ("quit", "q"):
                checkpoint = snapshot.config["configurable"]["checkpoint_id"]
                out.write(
                    f"left thread {thread_id} at {node}; resume with: cloudbrain replay --db {self.db} "
                    f"--thread {thread_id} --checkpoint {checkpoint}\n"
                )
                return None
            else:
                out.write(HELP + "\n")
