#!/usr/bin/env python3
"""Runs the real LangGraph loop, as LangChain's `create_agent` builds it, against
`loopsim serve`.

Usage: live.py SPEC.json

SPEC (written by `loopsim live --runtime langgraph`): {
  "server": "http://127.0.0.1:PORT",   # loopsim's server (model at /v1, tools at /loopsim/v1)
  "model": "main",                     # the parent's model name
  "tools": ["terminal", ...],          # the scenario's tools, offered as LangChain tools
  "cap": 9999,                         # the run's recursion_limit (null: create_agent's own)
  "limits": {                          # LangChain's call-limit middleware (null: none)
    "model_call_limit": {"run_limit": 5, "exit_behavior": "end"},
    "tool_call_limit": {"tool_name": null, "run_limit": 3, "exit_behavior": "continue"}
  },
  "task": "the first user message",
  "user_turns": ["..."],               # later user messages, each a run of its own
  "streamed": false                    # unused: a user's stop ends the run at its next model call
}

Each scenario tool is a LangChain tool whose handler asks loopsim for the scripted result (under
the model's call id), so no real tool runs; an audit hook refuses any connection that is not to
loopback and any process start, and LangSmith tracing is off. The handler blocks the event loop
while it asks, so the calls of one reply reach loopsim one after another in the reply's order;
what the model sees is unchanged. A callback counts the model calls and, once the user has
stopped, ends the run before the next one. The spec's call limits are LangChain's own
`ModelCallLimitMiddleware` and `ToolCallLimitMiddleware`, in that order. Each run's end (its
final message, the middleware's message, or the exception it raised) and its model calls are
posted to loopsim's event endpoint.

What every bridge shares (the spec, the loopback guard, the endpoints, the exit codes) is
`bridges/sdk_bridge.py`.
"""

import sdk_bridge

SPEC = sdk_bridge.start({k: "false" for k in (
    "LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING")})

try:
    from langchain.agents import create_agent
    from langchain.agents.middleware import ModelCallLimitMiddleware, ToolCallLimitMiddleware
    from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
    from langchain.agents.middleware.tool_call_limit import ToolCallLimitExceededError
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import BaseTool
    from langchain_openai import ChatOpenAI
    from langgraph.errors import GraphRecursionError
except ImportError as e:
    sdk_bridge.missing("LangGraph", "langchain langgraph langchain-openai", e)

STOP = {"requested": False}


class UserStop(Exception):
    """The scenario's user stopped the run: no further model call."""


class ScenarioTool(BaseTool):
    """A scenario tool: takes any JSON object, and answers with loopsim's scripted result."""

    args_schema: dict = {"type": "object", "additionalProperties": True}

    def _answer(self, call):
        result, stop = sdk_bridge.tool_result(call.get("id"), self.name, call.get("args") or {})
        if stop:
            STOP["requested"] = True
        return ToolMessage(content=result, tool_call_id=call.get("id"), name=self.name)

    def invoke(self, input, config=None, **kwargs):
        return self._answer(input)

    async def ainvoke(self, input, config=None, **kwargs):
        return self._answer(input)

    def _run(self, *args, **kwargs):
        raise NotImplementedError("ScenarioTool answers tool calls only")


class ModelCalls(BaseCallbackHandler):
    """Counts the run's model calls; after the user's stop, ends the run before the next."""

    raise_error = True

    def __init__(self):
        self.calls = 0

    def on_chat_model_start(self, serialized, messages, **kwargs):
        if STOP["requested"]:
            raise UserStop()
        self.calls += 1


def middleware():
    """The spec's call limits as LangChain's middleware (model calls first, as the bridge's
    simulation counts their graph hooks)."""
    limits = SPEC.get("limits") or {}
    out = []
    if limits.get("model_call_limit"):
        m = limits["model_call_limit"]
        out.append(ModelCallLimitMiddleware(run_limit=m["run_limit"],
                                            exit_behavior=m["exit_behavior"]))
    if limits.get("tool_call_limit"):
        t = limits["tool_call_limit"]
        out.append(ToolCallLimitMiddleware(tool_name=t.get("tool_name"), run_limit=t["run_limit"],
                                           exit_behavior=t["exit_behavior"]))
    return out


def ended_by_middleware(messages):
    """Which middleware wrote the run's last message, if one did: the model's own messages
    carry its response metadata, the middleware's do not. A tool-call limit that ends the run
    writes it right after the error results it gave the reply's calls; the scenario's tools
    never answer with an error status, and a tool-call limit that ends runs blocks no call
    otherwise, so error results before it are the tool-call limit's."""
    last = messages[-1] if messages else None
    if not isinstance(last, AIMessage) or last.response_metadata:
        return None
    before = messages[-2] if len(messages) > 1 else None
    tool_limit = (SPEC.get("limits") or {}).get("tool_call_limit") or {}
    if (tool_limit.get("exit_behavior") == "end" and isinstance(before, ToolMessage)
            and before.status == "error"):
        return "tool_call_limit_reached"
    return "model_call_limit_reached"


async def run_turn(agent, messages, cap):
    counter = ModelCalls()
    config = {"callbacks": [counter]}
    if cap is not None:
        config["recursion_limit"] = cap
    STOP["requested"] = False
    try:
        result = await agent.ainvoke({"messages": messages}, config)
        after = result["messages"]
        exit_reason = ended_by_middleware(after) or "text_response(finish_reason=stop)"
    except GraphRecursionError:
        exit_reason = "raised(GraphRecursionError)"
        after = messages
    except (ModelCallLimitExceededError, ToolCallLimitExceededError) as e:
        exit_reason = f"raised({type(e).__name__})"
        after = messages
    except UserStop:
        exit_reason = "interrupted_by_user"
        after = messages
    sdk_bridge.report("turn_end", detail=exit_reason, budget_used=counter.calls,
                      api_calls=counter.calls)
    return exit_reason, list(after)


async def main():
    model = ChatOpenAI(model=SPEC["model"], base_url=sdk_bridge.SERVER + "/v1", api_key="loopsim")
    agent = create_agent(
        model,
        tools=[ScenarioTool(name=t, description=f"The scenario's {t} tool.") for t in SPEC["tools"]],
        system_prompt="You are the agent of a loopsim scenario.",
        middleware=middleware(),
    )
    turns = []
    history = []
    for text in [SPEC.get("task") or "Do the task."] + list(SPEC.get("user_turns") or []):
        messages = history + [{"role": "user", "content": text}]
        exit_reason, history = await run_turn(agent, messages, SPEC.get("cap"))
        turns.append(exit_reason)
    return turns


sdk_bridge.finish(main(), "LangGraph", "langgraph")
