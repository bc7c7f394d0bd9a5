"""A chat model whose replies a test scripts: fixed messages, or functions of the conversation it is shown."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.messages.tool import tool_call
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

Reply = AIMessage | Callable[[list[BaseMessage]], AIMessage]


class ScriptedChat(BaseChatModel):
    """Answers with its replies in order (a callable reply is computed from the conversation it is shown) and
    records every conversation and the call options it got."""

    replies: list[Any]
    seen: list[list[BaseMessage]] = Field(default_factory=list)
    options: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.seen.append(list(messages))
        self.options.append(kwargs)
        reply = self.replies[min(len(self.seen), len(self.replies)) - 1]
        message = reply(messages) if callable(reply) else reply
        return ChatResult(generations=[ChatGeneration(message=message)])


def scripted(*replies: Reply) -> tuple[ScriptedChat, Callable[..., BaseChatModel]]:
    chat = ScriptedChat(replies=list(replies))
    return chat, lambda *args, **kwargs: chat


def calls(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[tool_call(name=name, args=args, id=call_id)])


def answer(**fields: Any) -> AIMessage:
    return AIMessage(content=json.dumps({"status": "execute", "uav_id": None, "waypoints": [], "reason": "", **fields}))


def last_tool_output(messages: list[BaseMessage]) -> dict[str, Any]:
    return json.loads(next(m for m in reversed(messages) if isinstance(m, ToolMessage)).text)
