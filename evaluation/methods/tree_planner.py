"""tree_planner: Tree-Planner (Hu et al., ICLR 2024) in this domain: plan sampling, action-tree construction and
grounded deciding with backtracking.

1. **Plan sampling.** One sampling call draws N candidate plans (`Budget.plan_samples`, the paper's N = 25, at
   temperature 0.8, top-p 0.95) from one prompt: instruction, global information (the state summary and the action
   space), an in-context example. A plan is a sequence of actions (a tool call with its arguments, the ids enums of
   this world) ending in a final action: execute, safe_refusal or human_confirm.
2. **Action tree.** The plans are merged on their shared prefixes (the paper's Algorithm 1): a node is an action
   at a time step, its children the distinct next actions of the plans through it.
3. **Grounded deciding.** From the root, the model chooses among the valid children of the current node given the
   request, the actions executed so far and their observations (the tools' results): the paper's n = 20 votes
   at temperature 0.7, majority wins (`min(20, N)` votes). A node with one valid child needs no choice. A chosen
   tool action runs on the world; a final `execute` flies the route of the last plan_route on the executed path.
   **Correction**: an action that fails (a tool error, or an execute with no route on the path) marks its subtree
   invalid, and the search backtracks to the nearest branching node that still has a valid child, a node whose
   children are all invalid becoming invalid itself; the observations after that node are dropped (its tools
   are queries, so undoing an action is forgetting its result). At most 10 corrections (the paper's cap).

Each plan's arguments are written before any tool runs, so an argument the project's data flow links to an
earlier result (ir/plan_execution.FLOWS: plan_route's UAV from assign_uav) is taken from the executed path when
the plan leaves it out, as the environment's state would carry it. Sampling costs one model call: the prompt is
counted once, as one n-sample request bills it (the local model keeps it in its KV cache between draws).
No IR, verifier, simulator or repair: tool errors are its only feedback, as in the paper.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from evaluation.methods.base import MethodRun, MethodSetup, MethodTask, TracedToolCall
from evaluation.methods.prompts import (
    FLIGHT_RULES,
    ChatBaseline,
    MeteredModel,
    confirmation_run,
    method_run,
    request_block,
    shown_world,
    state_char_budget,
    state_summary,
)
from evaluation.methods.react import action_registry, tool_definitions
from evaluation.records import Stage
from ir.decision import Decision, Status
from ir.plan_execution import FLOWS
from models.base import LLMTransportError
from models.grounded_schema import string_enum
from models.rules_chat import compact_json
from tools.registry import ToolRegistry
from tools.world import World

SAMPLING_TEMPERATURE = 0.8
SAMPLING_TOP_P = 0.95
DECIDING_TEMPERATURE = 0.7
DECIDING_VOTES = 20
MAX_CORRECTIONS = 10
MAX_PLAN_STEPS = 5  # tool actions per plan, before its final action
FINALS: tuple[Status, ...] = ("execute", "safe_refusal", "human_confirm")
GAVE_UP = "no plan carried through"
OBSERVATION_CHARS = 400  # of a tool result, in the deciding prompt's history

SAMPLING_SYSTEM = f"""You are the dispatcher of a city's drone traffic. Write a complete plan for the operator's \
request before anything runs: the tool calls to make, in order, then the final action. Tools: query_airspace \
(active no-fly zones), assign_uav (an idle UAV that can do the task), plan_route (a safe 4D route between two \
places, for a UAV), query_city_state (places in an area). Final actions: execute (fly the route of the last \
plan_route), safe_refusal (impossible or unsafe), human_confirm (ambiguous or missing information).
{FLIGHT_RULES}
Example plan for "fly a camera drone from depot_1 to park_2 avoiding nfz_1": {{"steps": [{{"tool": "assign_uav", \
"args": {{"origin": "depot_1", "destination": "park_2"}}}}, {{"tool": "plan_route", "args": {{"start": "depot_1", \
"goal": "park_2", "avoid_zones": ["nfz_1"]}}}}], "final": "execute"}}
Answer with one plan as JSON."""

DECIDING_SYSTEM = """You are the dispatcher of a city's drone traffic, carrying out a plan step by step. Given the \
request, the actions done so far and what they returned, choose the best next action among the options. Answer \
with {"choice": <option number>}."""


# --- the action tree ------------------------------------------------------------------------------------------
def action_key(action: dict[str, Any]) -> str:
    """Two actions are the same node when their canonical JSON is equal (argument order does not matter)."""
    return json.dumps(action, sort_keys=True, separators=(",", ":"))


@dataclass(eq=False)
class TreeNode:
    """An action at a time step; the root has none. `plans`: how many sampled plans pass through it."""

    action: dict[str, Any] | None = None
    parent: TreeNode | None = None
    children: list[TreeNode] = field(default_factory=list)
    plans: int = 0
    invalid: bool = False

    def child(self, action: dict[str, Any]) -> TreeNode | None:
        key = action_key(action)
        return next((c for c in self.children if action_key(c.action or {}) == key), None)

    def valid_children(self) -> list[TreeNode]:
        return [c for c in self.children if not c.invalid]

    def invalidate(self) -> None:
        """This node and its whole subtree."""
        self.invalid = True
        for child in self.children:
            child.invalidate()

    def path(self) -> list[TreeNode]:
        """The nodes from the root's child down to this one."""
        nodes, node = [], self
        while node.parent is not None:
            nodes.append(node)
            node = node.parent
        return nodes[::-1]


def build_action_tree(plans: list[list[dict[str, Any]]]) -> TreeNode:
    """Merge the plans on shared prefixes: children keep the order in which plans first reached them."""
    root = TreeNode()
    for plan in plans:
        node = root
        node.plans += 1
        for action in plan:
            following = node.child(action)
            if following is None:
                following = TreeNode(action=action, parent=node)
                node.children.append(following)
            following.plans += 1
            node = following
    return root


def backtrack(failed: TreeNode) -> TreeNode | None:
    """Mark `failed`'s subtree invalid and climb to the nearest ancestor with a valid child (None: the whole
    tree is spent). Ancestors passed on the way, all of whose children are invalid, become invalid too."""
    failed.invalidate()
    node = failed.parent
    while node is not None and not node.valid_children():
        if node.parent is None:
            return None
        node.invalid = True
        node = node.parent
    return node


def plan_actions(answer: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A sampled plan's actions (tool actions, then its final one); None for an answer that is no plan."""
    steps, final = answer.get("steps"), answer.get("final")
    if not isinstance(steps, list) or final not in FINALS:
        return None
    tools = [
        {"tool": s["tool"], "args": s.get("args") or {}}
        for s in steps
        if isinstance(s, dict) and isinstance(s.get("tool"), str) and isinstance(s.get("args", {}), dict)
    ]
    return [*tools, {"final": final}]


def plan_schema(world: World, registry: ToolRegistry) -> dict[str, Any]:
    """One plan: tool actions whose arguments are grounded in this world, then a final action."""
    actions = [
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {"tool": {"const": d["function"]["name"]}, "args": d["function"]["parameters"]},
            "required": ["tool", "args"],
        }
        for d in tool_definitions(world, registry)
    ]
    return {
        "title": "Plan",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "steps": {"type": "array", "items": {"anyOf": actions}, "maxItems": MAX_PLAN_STEPS},
            "final": string_enum(list(FINALS)),
        },
        "required": ["steps", "final"],
    }


def _json_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}


def _answer_json(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


# --- grounded deciding ----------------------------------------------------------------------------------------
@dataclass
class Observation:
    node: TreeNode
    result: dict[str, Any] | None  # the tool's result; None for a final action


class TreeSearch:
    """Grounded deciding over an action tree: executes chosen actions on the world, backtracks on failures."""

    def __init__(self, task: MethodTask, registry: ToolRegistry, model: MeteredModel, setup: MethodSetup):
        self.task, self.registry, self.model, self.budget = task, registry, model, setup.budget
        self.votes = min(DECIDING_VOTES, setup.budget.plan_samples)
        self.calls: list[TracedToolCall] = []
        self.path: list[Observation] = []
        self.corrections = 0
        self.failed_stage: Stage | None = None
        self.choices: list[dict[str, Any]] = []
        self.gave_up = False  # ended without a final action of a plan (budget, corrections, every plan failed)

    def _linked_args(self, action: dict[str, Any]) -> dict[str, Any]:
        """The action's arguments, plus what FLOWS links from the executed path's latest results when absent."""
        args = dict(action.get("args") or {})
        for flow in (f for f in FLOWS if f.consumer == action["tool"] and f.arg not in args):
            produced = [o.result for o in self.path if o.node.action and o.node.action.get("tool") == flow.producer]
            if produced and produced[-1] and flow.key in produced[-1]:
                args[flow.arg] = produced[-1][flow.key]
        return args

    def _route(self) -> dict[str, Any] | None:
        routes = [o.result for o in self.path if o.node.action and o.node.action.get("tool") == "plan_route"]
        return routes[-1] if routes else None

    def _history(self) -> str:
        lines = []
        for step, observed in enumerate(self.path, 1):
            result = compact_json(observed.result)[:OBSERVATION_CHARS] if observed.result is not None else ""
            lines.append(f"{step}. {compact_json(observed.node.action)} -> {result}")
        return "\n".join(lines) or "(nothing yet)"

    def choose(self, options: list[TreeNode]) -> TreeNode:
        """The model's choice among `options` by majority of its votes (ties: the option more plans share)."""
        listing = "\n".join(f"{i}. {compact_json(o.action)}" for i, o in enumerate(options, 1))
        messages = [
            SystemMessage(DECIDING_SYSTEM),
            HumanMessage(
                f"{request_block(self.task)}\nDONE SO FAR:\n{self._history()}\nOPTIONS FOR THE NEXT ACTION:\n{listing}"
            ),
        ]
        schema = {
            "type": "object",
            "additionalProperties": False,
            "properties": {"choice": {"type": "integer", "enum": list(range(1, len(options) + 1))}},
            "required": ["choice"],
        }
        replies = self.model.sample(
            messages,
            self.votes,
            response_format=_json_format("Choice", schema),
            temperature=DECIDING_TEMPERATURE,
        )
        picked = [(_answer_json(r.text) or {}).get("choice") for r in replies]
        counts = Counter(p for p in picked if isinstance(p, int) and 1 <= p <= len(options))
        best = max(range(1, len(options) + 1), key=lambda i: (counts[i], options[i - 1].plans, -i))
        self.choices.append({"options": len(options), "votes": dict(counts), "chosen": best})
        return options[best - 1]

    def execute(self, node: TreeNode) -> Decision | None:
        """Run a chosen action. A decision when the search ends here; None to go on (or after a backtrack)."""
        action = node.action or {}
        if "final" in action:
            status: Status = action["final"]
            if status != "execute":
                return Decision(status=status, reason=f"the plan ends in {status}")
            route = self._route()
            if route is not None:
                reason = f"tree plan: route {route.get('start')} -> {route.get('goal')}"
                return Decision(
                    status="execute", uav_id=route.get("uav_id"), waypoints=route["waypoints"], reason=reason
                )
            self.failed_stage = self.failed_stage or "planning"
            return None  # an execute with no route on the path fails like a tool
        args = self._linked_args(action)
        result = self.registry.call(action["tool"], self.task.world, args)
        self.calls.append(
            TracedToolCall(
                tool=action["tool"],
                ok=result.ok,
                error_type=result.error.type if result.error else None,
                args=args,
                latency_sec=result.latency_sec,
            )
        )
        if result.ok:
            self.path.append(Observation(node, result.result))
            return None
        if self.failed_stage is None:
            self.failed_stage = "planning" if action["tool"] in ("assign_uav", "plan_route") else "tool"
        return None

    def run(self, root: TreeNode) -> Decision:
        decision = self._search(root)
        self.gave_up = decision.reason.startswith(GAVE_UP)
        return decision

    def _search(self, root: TreeNode) -> Decision:
        node = root
        while True:
            options = node.valid_children()
            if not options:
                return Decision(status="human_confirm", reason=f"{GAVE_UP}: every sampled plan failed")
            if len(options) > 1 and self.model.usage.llm_calls >= self.budget.max_llm_calls:
                return Decision(status="human_confirm", reason=f"{GAVE_UP}: no model call left to decide")
            chosen = options[0] if len(options) == 1 else self.choose(options)
            path_before = len(self.path)
            if len(self.calls) >= self.budget.max_tool_calls and "tool" in (chosen.action or {}):
                return Decision(status="human_confirm", reason=f"{GAVE_UP}: {len(self.calls)} tool calls")
            decision = self.execute(chosen)
            if decision is not None:
                return decision
            if len(self.path) > path_before:
                node = chosen  # the action held: go down
                continue
            # The action failed: a correction.
            self.corrections += 1
            if self.corrections > MAX_CORRECTIONS:
                return Decision(status="human_confirm", reason=f"{GAVE_UP}: more than {MAX_CORRECTIONS} corrections")
            branch = backtrack(chosen)
            if branch is None:
                return Decision(status="human_confirm", reason=f"{GAVE_UP}: every sampled plan failed on the world")
            kept = {id(n) for n in branch.path()}
            self.path = [o for o in self.path if id(o.node) in kept]
            node = branch


class TreePlanner(ChatBaseline):
    name = "tree_planner"
    summary = (
        "Tree-Planner: N plans sampled in one call, merged into an action tree, grounded deciding with backtracking"
    )
    model_kinds = frozenset({"llm"})  # prompts of its own that the rules chat model cannot answer

    def run(self, task: MethodTask, setup: MethodSetup) -> MethodRun:
        budget = setup.budget
        registry = action_registry()
        model = MeteredModel(self.chat_model(task, setup), setup.model)
        view = state_summary(shown_world(task), state_char_budget(budget))
        messages = [SystemMessage(SAMPLING_SYSTEM), HumanMessage(f"{request_block(task)}\nSTATE:\n{view}")]
        try:
            replies = model.sample(
                messages,
                budget.plan_samples,
                response_format=_json_format("Plan", plan_schema(task.world, registry)),
                temperature=SAMPLING_TEMPERATURE,
                top_p=SAMPLING_TOP_P,
            )
        except LLMTransportError as exc:
            return confirmation_run(f"model unavailable: {exc}", model.usage, failed_stage="ir")
        plans = [p for p in (plan_actions(_answer_json(r.text) or {}) for r in replies) if p is not None]
        trace: dict[str, Any] = {"plans_sampled": len(replies), "plans_usable": len(plans)}
        if not plans:
            return confirmation_run("no usable plan was sampled", model.usage, failed_stage="ir", trace=trace)
        root = build_action_tree(plans)
        search = TreeSearch(task, registry, model, setup)
        try:
            decision = search.run(root)
        except LLMTransportError as exc:
            decision = Decision(status="human_confirm", reason=f"model unavailable: {exc}")
        trace.update(
            tree_nodes=_count_nodes(root) - 1,
            branching_nodes=_count_nodes(root, branching=True),
            choices=search.choices,
            executed=[compact_json(o.node.action) for o in search.path],
        )
        return method_run(
            decision,
            model.usage,
            failed_stage=search.failed_stage,
            tool_calls=search.calls,
            trace=trace,
            corrections=search.corrections,
        ).model_copy(update={"answered": not search.gave_up})


def _count_nodes(node: TreeNode, *, branching: bool = False) -> int:
    own = (len(node.children) > 1) if branching else 1
    return own + sum(_count_nodes(c, branching=branching) for c in node.children)
