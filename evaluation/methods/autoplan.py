"""autoplan: AutoPlan (LLM agent planning for UAV swarms): complex-task planning (CTP) into meta-tasks, then progressive ReAct
prompting (PRP) that executes them one at a time.

1. **Planning.** One call splits the request into ordered meta-tasks, each one step a tool can do ("check the
   active no-fly zones", "choose an idle UAV that can lift 2 kg", "plan the route"), the last one always
   "summarise" (the final decision; appended when the model leaves it out).
2. **Progressive ReAct.** Every executor prompt carries the done / in-progress / to-do lists and the results of
   the done meta-tasks (the tools' results, in short), then the current meta-task's own turns. The model calls
   the action tools (`bind_tools`, arguments grounded in this world's ids) until it reports the meta-task done
   with a one-line result; at "summarise" it answers with the decision JSON (an execute with no waypoints flies
   the route of the last successful plan_route, as for react).
3. **Reflexion.** A call to a tool that does not exist or that fails gets one reflexion retry per meta-task: the
   error and a request to reflect on it and try once more. A second failure closes the meta-task as failed.
4. **Step cap.** At most 2 x meta-tasks + 3 model calls (and never more than the budget's).

No IR, no verifier, no simulator, no repair of a route: tool errors are its only feedback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage

from evaluation.methods.base import MethodRun, MethodSetup, MethodTask
from evaluation.methods.chat import bind_tools_and_answer_format
from evaluation.methods.prompts import (
    DECISION_JSON_HINT,
    FLIGHT_RULES,
    ChatBaseline,
    MeteredModel,
    confirmation_run,
    decision_response_format,
    request_block,
    shown_world,
    state_char_budget,
    state_summary,
)
from evaluation.methods.react import Episode, action_registry, tool_definitions
from models.base import LLMTransportError

SUMMARISE = "summarise: give the final decision"
MAX_META_TASKS = 6
META_TASK_CHARS = 120
RESULT_CHARS = 300  # of a done meta-task's result, in later prompts

PLANNING_SYSTEM = f"""You are the planner of a city's drone traffic operations. Split the operator's request into \
ordered meta-tasks, each one step that one of the tools can do: query_airspace (active no-fly zones), assign_uav \
(an idle UAV that can do the task), plan_route (a safe 4D route), query_city_state (places in an area). The last \
meta-task is always "summarise" (give the final decision).
{FLIGHT_RULES}
Answer as JSON: {{"meta_tasks": ["...", "...", "summarise"]}}"""

EXECUTOR_SYSTEM = f"""You are the executor of a city's drone traffic operations. You work through a plan of \
meta-tasks one at a time: do the meta-task IN PROGRESS with the tools, one call at a time, reading each result. \
When it is done, call no tool and answer {{"result": "<what it found, in one line>"}}.
{FLIGHT_RULES}"""

SUMMARY_SYSTEM = f"""You are the executor of a city's drone traffic operations. Every meta-task but the last is \
done; now summarise: give the final decision for the request from the results, as one JSON object: \
{DECISION_JSON_HINT}
To fly the route of the last successful plan_route call, answer "execute" with "waypoints": [].
{FLIGHT_RULES}"""

REFLEXION = (
    "The call failed: {error}. Reflect on why it failed (wrong tool, wrong or missing arguments, an impossible "
    "request) and try once more, or answer the meta-task's result if it cannot be done."
)


def meta_tasks_of(answer: dict[str, Any] | None) -> list[str]:
    """The planned meta-tasks, cleaned: blank and repeated "summarise" entries dropped, capped, and one
    "summarise" last."""
    listed = (answer or {}).get("meta_tasks")
    tasks = [str(t).strip()[:META_TASK_CHARS] for t in listed if str(t).strip()] if isinstance(listed, list) else []
    tasks = [t for t in tasks if not t.lower().startswith("summar")][: MAX_META_TASKS - 1]
    return [*tasks, SUMMARISE]


def step_cap(meta_tasks: list[str]) -> int:
    """The paper's hard cap on executor steps."""
    return 2 * len(meta_tasks) + 3


@dataclass
class Progress:
    """Where the plan stands: the PRP block every executor prompt carries."""

    meta_tasks: list[str]
    results: list[str] = field(default_factory=list)  # one per done meta-task

    @property
    def current(self) -> str:
        return self.meta_tasks[len(self.results)]

    def block(self) -> str:
        done = [f"{i}. {t} -> {r[:RESULT_CHARS]}" for i, (t, r) in enumerate(zip(self.meta_tasks, self.results), 1)]
        todo = self.meta_tasks[len(self.results) + 1 :]
        return "\n".join(
            [
                "DONE:",
                *(done or ["(none yet)"]),
                f"IN PROGRESS: {self.current}",
                "TO DO: " + ("; ".join(todo) if todo else "(nothing after this)"),
            ]
        )


def _result_format() -> dict[str, Any]:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"result": {"type": "string", "maxLength": RESULT_CHARS}},
        "required": ["result"],
    }
    return {"type": "json_schema", "json_schema": {"name": "MetaTaskResult", "schema": schema, "strict": False}}


def _plan_format() -> dict[str, Any]:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "meta_tasks": {
                "type": "array",
                "items": {"type": "string", "maxLength": META_TASK_CHARS},
                "minItems": 1,
                "maxItems": MAX_META_TASKS,
            }
        },
        "required": ["meta_tasks"],
    }
    return {"type": "json_schema", "json_schema": {"name": "MetaTasks", "schema": schema, "strict": False}}


def _reported_result(text: str) -> str:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text.strip()
    return str(value.get("result", text)).strip() if isinstance(value, dict) else text.strip()


class AutoPlan(ChatBaseline):
    name = "autoplan"
    summary = "AutoPlan: the request planned into meta-tasks, executed by progressive ReAct with one reflexion retry"
    model_kinds = frozenset({"llm"})  # prompts of its own that the rules chat model cannot answer

    def run(self, task: MethodTask, setup: MethodSetup) -> MethodRun:
        budget = setup.budget
        registry = action_registry()
        chat = self.chat_model(task, setup)
        model = MeteredModel(chat, setup.model)
        executor = MeteredModel(
            bind_tools_and_answer_format(chat, tool_definitions(task.world, registry), _result_format()), setup.model
        )
        executor.usage = model.usage  # one account for the run
        episode = Episode(task.world, registry)
        context = f"{request_block(task)}\nSTATE:\n{state_summary(shown_world(task), state_char_budget(budget))}"
        trace: dict[str, Any] = {}
        try:
            plan = model.invoke([SystemMessage(PLANNING_SYSTEM), HumanMessage(context)], response_format=_plan_format())
        except LLMTransportError as exc:
            return confirmation_run(f"model unavailable: {exc}", model.usage, failed_stage="ir")
        try:
            planned = json.loads(plan.text)
        except json.JSONDecodeError:
            planned = None
        progress = Progress(meta_tasks_of(planned if isinstance(planned, dict) else None))
        trace.update(meta_tasks=progress.meta_tasks, results=progress.results)
        cap = min(step_cap(progress.meta_tasks), budget.max_llm_calls - 1)  # executor calls, the summary's included
        steps, corrections = 0, 0
        turns: list[BaseMessage] = []  # the current meta-task's own calls and results
        reflected = False
        try:
            while progress.current != SUMMARISE:
                if steps >= cap - 1:  # the last call is kept for the summary
                    return self._gave_up(episode, model, f"step cap reached: {cap} executor steps", corrections, trace)
                steps += 1
                prompt = [SystemMessage(EXECUTOR_SYSTEM), HumanMessage(f"{context}\n{progress.block()}"), *turns]
                reply = executor.invoke(prompt)
                if not reply.tool_calls:
                    progress.results.append(_reported_result(reply.text))
                    turns, reflected = [], False
                    continue
                turns.append(reply)
                for call in reply.tool_calls:
                    if len(episode.calls) >= budget.max_tool_calls:
                        reason = f"budget exhausted: {budget.max_tool_calls} tool calls"
                        return self._gave_up(episode, model, reason, corrections, trace)
                    outcome = episode.run_tool(call)
                    turns.append(outcome)
                    if episode.calls[-1].ok:
                        continue
                    if reflected:  # the retry failed too: the meta-task is closed as failed
                        progress.results.append(f"failed: {_error_of(outcome)}")
                        turns, reflected = [], False
                        break
                    turns.append(HumanMessage(REFLEXION.format(error=_error_of(outcome))))
                    corrections, reflected = corrections + 1, True
            summary = model.invoke(
                [SystemMessage(SUMMARY_SYSTEM), HumanMessage(f"{context}\n{progress.block()}")],
                response_format=decision_response_format(task.world),
            )
        except LLMTransportError as exc:
            return self._gave_up(episode, model, f"model unavailable: {exc}", corrections, trace)
        run = episode.answered(summary.text, model.usage)
        trace = {**run.trace, **trace, "executor_steps": steps}
        return run.model_copy(update={"corrections": corrections, "trace": trace})

    @staticmethod
    def _gave_up(
        episode: Episode, model: MeteredModel, reason: str, corrections: int, trace: dict[str, Any] | None = None
    ) -> MethodRun:
        run = episode.unanswered(reason, model.usage, trace)
        return run.model_copy(update={"corrections": corrections})


def _error_of(message: ToolMessage) -> str:
    try:
        error = json.loads(message.text).get("error") or {}
    except (json.JSONDecodeError, AttributeError):
        return message.text[:RESULT_CHARS]
    return f"{error.get('type', 'error')}: {error.get('message', '')}"[:RESULT_CHARS]
