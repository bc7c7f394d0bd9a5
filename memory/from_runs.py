"""Repair cases from an agent run: one case per failed round that the run went on to repair (or not)."""

from __future__ import annotations

from typing import Any

import jsonpatch

from memory.cases import RepairCase

MAX_DIFF_OPS = 6


def summarise_ir(ir: dict[str, Any] | None) -> str:
    """One line: what the IR asked for (enough to recognise the task, short enough for a prompt)."""
    if not ir:
        return "no parsable IR"
    entities, constraints = ir.get("entities") or {}, ir.get("constraints") or {}
    parts = [
        f"{ir.get('intent')}/{ir.get('priority')} {entities.get('origin')} -> {entities.get('destination')}",
        f"uavs={entities.get('candidate_uavs') or 'any'}",
        f"avoid={entities.get('avoid_zones') or []}",
        f"alt={constraints.get('altitude_min_m')}-{constraints.get('altitude_max_m')}",
    ]
    if constraints.get("deadline_sec"):
        parts.append(f"deadline={constraints['deadline_sec']}s")
    return " ".join(parts)


def ir_diff_lines(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str:
    ops = list(jsonpatch.make_patch(before or {}, after or {}))
    lines = [f"{op['op']} {op['path']} = {op.get('value')!r}"[:160] for op in ops if op["path"] != "/task_id"]
    return "\n".join(lines[:MAX_DIFF_OPS])


def cases_from_run(values: dict[str, Any], *, thread_id: str, model: str, scenario_type: str = "") -> list[RepairCase]:
    """Every failed attempt followed by another attempt, as a RepairCase; the outcome is the run's."""
    attempts = values.get("attempts") or []
    outcome = values.get("status") or "unfinished"
    cases = []
    for failed, repaired in zip(attempts, attempts[1:]):
        failure = failed.get("failure")
        if not failure:
            continue
        counterexample = failure.get("counterexample") or {}
        cases.append(
            RepairCase(
                instruction=values.get("instruction") or "?",
                scenario_type=scenario_type,
                failure_stage=failure.get("stage") or "unknown",
                failure_type=failure.get("error_type") or "unknown",
                violated_rule=counterexample.get("violated_rule"),
                counterexample=counterexample,
                failing_ir_summary=summarise_ir(failed.get("ir")),
                repaired_ir_diff=ir_diff_lines(failed.get("ir"), repaired.get("ir")),
                outcome="repaired" if outcome == "execute" else outcome,
                model=model,
                thread_id=thread_id,
                round=failed.get("round", 0),
            )
        )
    return cases
